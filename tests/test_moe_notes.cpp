// What a published row's notes say about its MoE layout and routing (validate/moe_notes.hpp), on the phrasings of the
// development files' rows and on near misses.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "stepsim/validate/moe_notes.hpp"

namespace stepsim::validate {
namespace {

TEST(MoeNotes, ExpertTensorParallelSizeAsTheNotesWriteIt) {
  EXPECT_EQ(stated_expert_tensor("TP1 PP2 CP1 EP64 VP12 ETP1 MBS1"), 1);
  EXPECT_EQ(stated_expert_tensor("the v2.2.0 csv row: mbs 1, gbs 64, etp 1)"), 1);
  EXPECT_EQ(stated_expert_tensor("TP4 PP8 EP8 ETP4."), 4);
  EXPECT_EQ(stated_expert_tensor("(ETP 2)"), 2);
  // Not a size: another word ending in etp, ETP without a number, a number run into letters.
  EXPECT_FALSE(stated_expert_tensor("SETP2 GETP4"));
  EXPECT_FALSE(stated_expert_tensor("ETP unknown"));
  EXPECT_FALSE(stated_expert_tensor("ETP2x"));
  EXPECT_FALSE(stated_expert_tensor("ETP0"));
  EXPECT_FALSE(stated_expert_tensor(""));
}

// The token-drop setting the notes give, as (capacity factor, padded), or (0, false) when they name none.
std::pair<double, bool> drop(const std::string& notes) {
  const auto d = stated_token_drop(notes);
  return d ? std::pair{d->capacity_factor, d->pad_to_capacity} : std::pair{0.0, false};
}

TEST(MoeNotes, TokenDropAsNeMosCallbackSetsIt) {
  using P = std::pair<double, bool>;
  EXPECT_EQ(drop("TOKEN-DROP routing (MegatronTokenDropCallback, capacity 1.0, padded), no recompute"), P(1.0, true));
  EXPECT_EQ(drop("TOKEN-DROP routing (MegatronTokenDropCallback: capacity factor 1.0, pad to capacity)"), P(1.0, true));
  // The callback's defaults where the notes name it only.
  EXPECT_EQ(drop("Token-drop routing (recipe callback), CUDA graphs off."), P(1.0, true));
  EXPECT_EQ(drop("token drop (capacity factor 2.5, no padding)"), P(2.5, false));
  // A capacity named after the phrase's parenthesis is another setting's.
  EXPECT_EQ(drop("token-drop (recipe callback). KV cache capacity 4.0"), P(1.0, true));
  // Not token-drop routing: dropless, or negated.
  for (const char* none : {"token-dropless (page footnote; moe_router_force_load_balancing True)",
                           "dropless: no token drop, without token-drop", "dropless MoE"}) {
    EXPECT_EQ(drop(none), P(0.0, false)) << none;
  }
  // Padding off however it is written; a factor that is not a plain number in Megatron's range keeps the default.
  for (const char* off : {"token drop (not padded)", "token drop, without padding.", "token drop, padding off"}) {
    EXPECT_EQ(drop(off), P(1.0, false)) << off;
  }
  for (const char* odd : {"token drop (capacity inf)", "token drop (capacity 0x10)", "token drop (capacity 0.001)"}) {
    EXPECT_EQ(drop(odd), P(1.0, true)) << odd;
  }
}

}  // namespace
}  // namespace stepsim::validate

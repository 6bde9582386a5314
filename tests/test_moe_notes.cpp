// What a published row's notes say about its MoE layout and routing (validate/moe_notes.hpp), on the phrasings of the
// development files' rows and on near misses.
#include <gtest/gtest.h>

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

TEST(MoeNotes, TokenDropAsNeMosCallbackSetsIt) {
  auto d = stated_token_drop("TOKEN-DROP routing (MegatronTokenDropCallback, capacity 1.0, padded), no recompute");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->capacity_factor, 1.0);
  EXPECT_TRUE(d->pad_to_capacity);
  d = stated_token_drop("TOKEN-DROP routing (MegatronTokenDropCallback: capacity factor 1.0, pad to capacity)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->capacity_factor, 1.0);
  EXPECT_TRUE(d->pad_to_capacity);
  // The callback's defaults where the notes name it only.
  d = stated_token_drop("Token-drop routing (recipe callback), CUDA graphs off.");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->capacity_factor, 1.0);
  EXPECT_TRUE(d->pad_to_capacity);
  d = stated_token_drop("token drop (capacity factor 2.5, no padding)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->capacity_factor, 2.5);
  EXPECT_FALSE(d->pad_to_capacity);
  // A capacity named after the phrase's parenthesis is another setting's.
  d = stated_token_drop("token-drop (recipe callback). KV cache capacity 4.0");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->capacity_factor, 1.0);
  EXPECT_FALSE(stated_token_drop("token-dropless (page footnote; moe_router_force_load_balancing True)"));
  EXPECT_FALSE(stated_token_drop("dropless: no token drop, without token-drop"));
  // Padding off however it is written; a factor that is not a plain number in Megatron's range keeps the default.
  for (const char* off : {"token drop (not padded)", "token drop, without padding.", "token drop, padding off"}) {
    ASSERT_TRUE(stated_token_drop(off)) << off;
    EXPECT_FALSE(stated_token_drop(off)->pad_to_capacity) << off;
  }
  for (const char* odd : {"token drop (capacity inf)", "token drop (capacity 0x10)", "token drop (capacity 0.001)"}) {
    ASSERT_TRUE(stated_token_drop(odd)) << odd;
    EXPECT_EQ(stated_token_drop(odd)->capacity_factor, 1.0) << odd;
  }
  EXPECT_FALSE(stated_token_drop("dropless MoE"));
}

}  // namespace
}  // namespace stepsim::validate

#pragma once
// What a published row's notes state about its MoE routing and expert layout, where the CSV has no column for it:
// NVIDIA's benchmark pages give the expert tensor parallel size with the layout ("EP64 ETP1") and name NeMo's
// token-drop callback in their performance recipes.
#include <optional>
#include <string>

namespace stepsim::validate {

// Expert tensor parallel size written as "ETP<n>" or "ETP <n>" (any case); none when the notes do not say.
std::optional<int> stated_expert_tensor(const std::string& notes);

// Token-drop routing: the capacity factor and whether each expert's input is padded to its capacity.
struct TokenDrop {
  double capacity_factor = 1.0;
  bool pad_to_capacity = true;
};

// "token-drop" or "token drop" (not "token-dropless") in the notes. NeMo's MegatronTokenDropCallback
// (nemo/lightning/pytorch/callbacks/moe_token_drop.py) sets moe_expert_capacity_factor 1.0 and
// moe_pad_expert_input_to_capacity True unless given others: a "capacity <x>" or "capacity factor <x>" in the phrase
// (digits, in [0.01, 1000]) replaces the factor; "no pad", "not pad", "without pad", "unpadded" or "padding off" turns
// the padding off. A negated mention ("no token drop", "without token-drop") is not one.
std::optional<TokenDrop> stated_token_drop(const std::string& notes);

}  // namespace stepsim::validate

#pragma once
// How many places one token's top-k routed experts land on, for the deduplicating dispatchers (DeepEP, Megatron-Core's
// flex dispatcher): it sends a token once per destination rank and, across nodes, once per destination node, where
// the all-to-all dispatcher sends one copy per expert.
#include <cstdint>

namespace stepsim::workload {

struct ExpertRouting {
  int64_t experts = 0;     // E, laid out in contiguous blocks of E / blocks per rank (node)
  int64_t topk = 0;        // k distinct experts per token
  int64_t groups = 0;      // group-limited routing (DeepSeek-V3's device/node limit): E in `groups` contiguous groups,
  int64_t group_topk = 0;  // a token's k experts taken from its best `group_topk` groups; 0 = no limit
};

// Expected number of the `blocks` equal contiguous expert blocks that receive at least one of a token's experts, the
// token's experts (and groups) drawn uniformly: what force-balanced routing (Megatron's
// --moe-router-force-load-balancing, the benchmark recipes') gives, and what balanced routing gives on average.
// Closed form: blocks x (1 - P(a block gets none)), P from the hypergeometric draws of groups then experts.
double expected_blocks_reached(const ExpertRouting& r, int64_t blocks);

}  // namespace stepsim::workload

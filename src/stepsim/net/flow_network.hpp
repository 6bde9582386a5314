#pragma once
// FlowNetwork: event-driven flow-level network simulator (TrioSim §4.5). Transfers are routed over the
// topology graph (shortest hops, ECMP), links are shared max-min fairly, and rates are recomputed whenever
// a transfer starts or drains — only for the transfers that share links with it, transitively. On a
// photonic fabric (TrioSim §7.1) inter-node traffic rides circuits that are set up on demand. Semantics,
// formulas and what is not modelled: docs/NETWORK.md.
#include <cstdint>
#include <memory>
#include <vector>

#include "stepsim/topology/topology.hpp"

namespace stepsim::cost {

// An endpoint that is the NVSwitch of the other endpoint's node (NVLS: GPU <-> switch traffic).
inline constexpr int kNodeSwitch = -1;

struct FlowSpec {
  int src_rank = 0;
  int dst_rank = 0;
  double bytes = 0;
};

// A set of flows started together. Coupled: the flows move at ONE common pace (a pipelined ring or tree
// moves at the pace of its slowest link): the group's rate r is the rate of its largest flow, every other
// flow runs at r x its bytes / largest bytes, so on each link the group uses r x (sum over its crossings of
// bytes / largest bytes). Not coupled: every flow is its own max-min participant (all-to-all pairs).
// The phase ends when all its bytes are delivered + the largest path latency of its flows + extra_latency_ns.
struct FlowPhase {
  std::vector<FlowSpec> flows;
  bool coupled = true;
  int64_t extra_latency_ns = 0;
};

// Seconds to integer ns, rounded up (nothing ends early) with a 1e-6 ns + 1e-12 relative tolerance that only
// absorbs floating-point noise. FlowNetwork rounds every duration and latency this way.
int64_t ceil_ns(double seconds);

struct LinkLoad {
  int link = 0;
  double bytes = 0;
};

class FlowNetwork {
 public:
  explicit FlowNetwork(const hw::Topology& topology);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // One phase at t_ns (>= now_ns()); `tag` is reported by advance() when it ends. Throws
  // std::invalid_argument / std::out_of_range for a bad call (time in the past, unknown rank) and InputError
  // for a photonic transfer needing more circuits at a node than it has ports; after a throw, reset().
  void start(int64_t t_ns, std::vector<FlowSpec> flows, bool coupled, uint64_t tag, int64_t extra_latency_ns = 0);
  // Several phases at t_ns that run concurrently and end together under one tag (a collective's channels).
  void start(int64_t t_ns, std::vector<FlowPhase> phases, uint64_t tag);

  // Time of the next thing the network must do: a completion, or an internal event (a transfer draining its
  // last byte, a circuit becoming ready) after which advance() may report nothing. INT64_MAX when idle.
  int64_t next_completion_ns() const;
  // Advances the clock to t_ns, completing everything that ends at or before t_ns; appends the tags in
  // completion order (equal times: ascending tag) to `done`.
  void advance(int64_t t_ns, std::vector<uint64_t>& done);

  int64_t now_ns() const;
  bool idle() const;  // nothing in flight and nothing left to report
  // Forgets every transfer and statistic (the routing cache stays).
  void reset();

  // --- statistics
  double link_bytes(int link) const;                 // bytes carried so far (counted when a transfer drains)
  std::vector<LinkLoad> busiest_links(size_t k) const;  // most bytes first; equal bytes: lower link id
  uint64_t rate_recomputations() const;              // max-min solves (one per changed component)
  uint64_t rerated_transfers() const;                // participants re-rated over all solves
  uint64_t circuits_established() const;             // photonic only
  uint64_t circuits_evicted() const;                 // photonic only

  const hw::Topology& topology() const;
  hw::Router& router();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepsim::cost

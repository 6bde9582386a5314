#pragma once
// ContendedNetwork: a network whose transfers share links, so a collective's end is known only as the network
// runs (flow model). The engine hands it every collective once all members have arrived and every matched
// send/recv, and asks it for its next completion alongside its own event queue.
#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/workload/op.hpp"

namespace stepsim::sim {

class ContendedNetwork {
 public:
  virtual ~ContendedNetwork() = default;
  // A collective over global `ranks` (in group order) starting at t_ns; `tag` comes back when it ends.
  virtual void start_collective(uint64_t tag, workload::CollType coll, uint64_t bytes, std::span<const int> ranks,
                                int64_t t_ns) = 0;
  virtual void start_p2p(uint64_t tag, int src, int dst, uint64_t bytes, int64_t t_ns) = 0;
  // Time of the next completion, INT64_MAX when idle.
  virtual int64_t next_event_ns() const = 0;
  // Runs the network to t_ns and appends the tags that completed, in a deterministic order.
  virtual void advance(int64_t t_ns, std::vector<uint64_t>& done) = 0;
};

}  // namespace stepsim::sim

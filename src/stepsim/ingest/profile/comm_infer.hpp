#pragma once
// Communicator inference (thesis §4.2.3): which (rank, comm pointer) pairs of the log are one communicator, and
// which parallelism it serves. Evidence, strongest first: the commId of the init lines (exact membership), the
// rank inside the communicator from the init lines, the rank stride of the members under Megatron's rank order
// (tp fastest, then cp, dp/ep, pp), the op types (point-to-point to every peer = all-to-all = EP, other
// point-to-point = PP), and as a last resort the call frequency (TP talks every layer, DP once per step).
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "stepsim/ingest/profile/profile.hpp"

namespace stepsim::profile {

// One communicator as one rank saw it.
struct CommEntry {
  int rank = -1;
  uint64_t ptr = 0;
  std::vector<std::tuple<int, int64_t, int>> seq;  // (op, count, type); p2p as (SendRecv, 0, type)
  int nranks = -1;                                 // -1 when neither the calls nor an init line said
  bool p2p = false;                                // only Send/Recv on it
  int64_t calls = 0;
  int peers = 0;          // distinct Send/Recv peers (the "root" of p2p lines)
  int local_rank = -1;    // rank inside the communicator, from its init line
  uint64_t comm_id = 0;   // commId of its init line, 0 when not logged
  // The process's GPU (log host, CUDA device; -1 = unknown): NCCL refuses two ranks of one communicator on one GPU, so
  // processes sharing a GPU (two runs in one log) belong to different communicators.
  std::string host;
  int device = -1;
};

struct InferredComm {
  std::string parallelism;  // "TP", "PP", "DP", "EP", "CP" or "collective"
  int size = 0;
  std::vector<std::pair<int, uint64_t>> members;  // (rank, ptr), rank order
};

// Megatron-Core rank order rank = tp + t·(cp + c·(dp + d·pp)): the stride of a dimension ("TP", …, "PP").
int megatron_stride(const std::string& dim, const ParallelismSizes& p);

// With no size given (`p` all 0), the sizes are inferred from the communicators first (infer_sizes) and `p` is set
// to them; given sizes are used as they are.
std::vector<InferredComm> infer_comms(std::vector<CommEntry> entries, int world, ParallelismSizes& p);

}  // namespace stepsim::profile

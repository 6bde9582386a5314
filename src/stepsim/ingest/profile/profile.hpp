#pragma once
// The NCCL trace profiler pipeline (thesis Fig. 4.1): log calls per process → global ranks (eq. 4.6) → kernels of
// the same process from the Nsight Systems exports → per-process alignment (§4.2.2, with Send/Recv pairs fused
// into SendRecv kernels and the rank-dependent 2:1 batching of §4.1.1 folded) → logical communicators from
// operation sequences (§4.2.3) → clock offsets (§4.2.4) → bandwidth, bottleneck and efficiency (§4.2.5).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/ingest/profile/align.hpp"
#include "stepsim/ingest/profile/nccl_log.hpp"
#include "stepsim/ingest/profile/nsys_db.hpp"
#include "stepsim/ingest/profile/parallelism_sizes.hpp"
#include "stepsim/ingest/profile/volume_model.hpp"

namespace stepsim::profile {

struct ProfileOptions {
  ParallelismSizes parallelism;
  std::optional<ModelShape> model;  // --model / --model-config: the §2.4 volume models next to the measured
  bool sync_clocks = false;
  bool nvtx = false;
  AlignParams align;
};

struct RankProcess {
  int rank = -1;
  std::string host;
  int64_t pid = 0;
  int cuda_dev = -1;
  std::string bus_id;              // from an init line of this process, when there is one
  std::vector<size_t> calls;       // indices into NcclLog::calls, log order
  std::vector<size_t> kernels;     // indices into ProfileResult::kernels, start order
  bool batched = false;            // 2:1 batching detected and folded (§4.1.1)
  int64_t clock_offset_ns = 0;
  int64_t mismatches = 0;
};

struct LogicalComm {
  std::string name;         // "TP_Group_0", "DP_Group_1", … ("COMM_Group_k" when unclassified)
  std::string parallelism;  // "TP", "PP", "DP", "EP", "CP", "collective"
  int size = 0;             // nranks
  std::vector<int> ranks;
  std::string bottleneck_link;  // "NVL", "PCI", "SYS", "NET", or "Estimated (min: X GB/s)"
  double bottleneck_GBps = 0;   // 0 when no topology was logged
};

struct ProfiledCall {
  size_t call = 0;         // index into NcclLog::calls
  int rank = -1;
  int comm = -1;           // index into ProfileResult::comms
  int64_t kernel = -1;     // index into ProfileResult::kernels, -1 when unmatched or logs only
  int64_t start_ns = 0, end_ns = 0;  // kernel times after clock synchronisation
  double algbw_GBps = 0, busbw_GBps = 0, bus_factor = 0;
  double theo_algbw_GBps = 0, theo_busbw_GBps = 0, efficiency_pct = 0, bus_efficiency_pct = 0;
};

struct ProfileResult {
  NcclLog log;
  std::vector<NsysKernel> kernels;  // NCCL kernels of every --nsys file
  std::vector<NvtxRange> nvtx;
  bool timing = false;              // at least one --nsys file
  std::vector<RankProcess> ranks;   // rank order
  std::vector<LogicalComm> comms;
  std::vector<ProfiledCall> calls;  // one per log call, log order
  std::vector<int64_t> unmatched_kernels;
  int64_t matched = 0;
  ParallelismSizes parallelism;     // as given, or inferred from the communicators when none was given
  bool parallelism_inferred = false;
  std::optional<ModelShape> model;  // as given
};

ProfileResult run_profile(NcclLog log, std::vector<NsysDb> dbs, const ProfileOptions& opt);

// Bus factor γ of §4.2.5 and the theoretical factors α, β of eq. 4.13-4.14 for an op of n ranks.
struct BusFactors {
  double gamma, alpha, beta;
};
BusFactors bus_factors(NcclOp op, const std::string& algorithm, int n);
// Bytes an op moves in the nccl-tests sense (what algbw divides): the logged count × type size (eq. 4.9), times n
// for AllGather (count is per rank) and ReduceScatter (count is the per-rank result).
int64_t algbw_bytes(const NcclCall& c, int n);
// The parallelism a call's bytes count for: its communicator's, except point-to-point calls, which are pipeline
// traffic (§4.2.3) unless they are the all-to-all of an expert-parallel communicator; "unknown" without one.
std::string call_parallelism(const ProfileResult& r, const ProfiledCall& c);

}  // namespace stepsim::profile

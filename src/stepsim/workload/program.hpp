#pragma once
// Program: the ops one rank role issues in one step, in issue order, shared by every rank with that
// role (Megatron ranks of the same pipeline stage run identical programs). Workload: programs + layout.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/op.hpp"
#include "stepsim/workload/rank_layout.hpp"

namespace stepsim::workload {

// Static memory of one rank role, bytes.
struct StaticMemory {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t overhead = 0;  // CUDA context and cuBLAS workspaces, NCCL buffers (documented constants)
  int64_t fp8_weight_cache = 0;  // Transformer Engine's fp8 weight copies (fp8 jobs)
  // Parameters held unsharded beside their shards: the units ZeRO-3 / FSDP has gathered (the one running and the next),
  // FSDP2's root module, or a pipeline stage's whole set that FSDP2 keeps gathered across its micro-batches.
  int64_t gathered = 0;
  // Static bytes a trace gives without saying what they hold (counted as allocated).
  int64_t traced = 0;
  // What PyTorch's caching allocator reserves beyond what it hands out (fragmentation), in proportion to the
  // activation peak; static here because it is held for the whole step once reached.
  int64_t allocator_reserve = 0;
  // Blocks the caching allocator keeps for FSDP2's communication streams, idle at the activation peak: its pools are
  // per stream, so the default stream's activations cannot reuse them (docs/MODEL.md §8, "Stream pools").
  int64_t stream_pools = 0;
  // What torch.cuda.max_memory_reserved counts beyond max_memory_allocated.
  int64_t reserved_extra() const { return allocator_reserve + stream_pools; }
  int64_t total() const { return allocated() + reserved_extra() + overhead; }
  // What PyTorch's torch.cuda.max_memory_allocated counts of it (not the CUDA context, NCCL's buffers or the reserve).
  int64_t allocated() const { return weights + gradients + optimizer + fp8_weight_cache + gathered + traced; }
};

// One transfer of a trace-driven P2P op: to or from `peer`, an index into the rank's RankBinding::peers.
struct P2PPart {
  uint32_t peer = 0;
  bool send = false;
  uint64_t bytes = 0;
};

struct Program {
  int stage = 0;
  std::vector<Op> ops;
  std::vector<Wait> waits;
  std::vector<std::string> names;
  std::array<std::vector<uint32_t>, kNumStreams> stream_ops;  // op indices per stream, FIFO order
  std::vector<P2PPart> p2p_parts;  // trace-driven P2P transfers (Op::part_begin)
  // Trace-driven sends complete on their own (Chakra's semantics as ASTRA-sim runs them): a send's data leaves when it
  // is issued and waits at the receiver; a receive completes when it is posted and the data is there. Otherwise a send
  // and its receive start together (NCCL's rendezvous).
  bool eager_sends = false;
  // Host issue model (cost/host_issue.hpp), empty when off: host_prefix[i] = the host time to issue ops [0, i) in
  // program order (size ops + 1), host_syncs = indices of the ops after which the host waits for the GPU (ascending).
  std::vector<int64_t> host_prefix;
  std::vector<uint32_t> host_syncs;
  StaticMemory static_memory;
  int64_t dense_parameters = 0;   // parameters held by this rank, reduced over the DP(-with-CP) group
  int64_t expert_parameters = 0;  // expert parameters held by this rank, reduced over the expert-DP group
  int64_t bf16_layer_parameters = 0;  // fp8 jobs: parameters of this rank's layers kept in bf16 (no fp8 copies)
  int64_t activation_peak = 0;    // analytic peak of stored activations and working buffers (schedule-aware), bytes
  int64_t stored_activation_peak = 0;  // the same without the working buffers (Op::mem_transient)

  const std::string& name(const Op& op) const { return names[op.name]; }
};

// Trace-driven workloads: which program a rank runs and what its program-local communicator and peer indices
// mean for it (a traced rank's program is reused by its data-parallel peers with their own groups).
struct RankBinding {
  int program = 0;
  std::vector<int> comms;  // Op::comm -> index into Workload::communicators
  std::vector<int> peers;  // P2PPart::peer -> global rank
};

struct Workload {
  spec::JobSpec job;
  RankLayout layout;
  std::vector<Program> programs;  // indexed by role
  std::vector<int> role_of_stage; // pipeline stage -> program index (trace-driven: its tp = cp = dp = 0 rank's)
  double model_flops_per_step = 0;  // whole job, one step, no recompute (for TFLOP/s and MFU)
  std::vector<RankBinding> bindings;            // per rank; empty for Megatron-built workloads
  std::vector<std::vector<int>> communicators;  // explicit groups: sorted global ranks

  const Program& program_of_rank(int rank) const {
    if (!bindings.empty()) return programs[bindings[rank].program];
    return programs[role_of_stage[layout.coord(rank).pp]];
  }
  // Members of the group a collective of `rank` runs on.
  int group_size_of(int rank, const Op& op) const {
    if (op.comm >= 0) return static_cast<int>(communicators[bindings[rank].comms[op.comm]].size());
    return layout.group_size(op.group);
  }
};

// Appends ops to a Program, resolving cross-stream dependencies to stream counts.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(Program& p) : p_(p) {}

  // A handle meaning "op done": the op's stream has completed at least `count` ops.
  struct Ref {
    Stream stream = Stream::Compute;
    uint32_t count = 0;
  };

  // Appends `op` on op.stream; it waits for every ref in deps (same-stream order is implicit).
  Ref emit(Op op, std::string_view name, std::initializer_list<Ref> deps = {});
  Ref emit(Op op, std::string_view name, const std::vector<Ref>& deps);
  // Ref to the last op issued on a stream (count 0 = nothing yet).
  Ref last(Stream s) const { return Ref{s, counts_[static_cast<int>(s)]}; }
  Op& back() { return p_.ops.back(); }
  // Re-issues the ops appended since op index `begin` in the order of `keys` (one per op; stable), every wait still
  // naming the op it named. Refs taken to those ops before the call are stale. Throws std::logic_error if an op
  // would come before an op it waits for on another stream (same-stream order is the caller's to keep).
  void reorder_since(size_t begin, const std::vector<int64_t>& keys);

 private:
  Ref emit_after(Op op, std::string_view name, const Ref* deps, size_t count);
  uint16_t intern(std::string_view name);
  // Names are looked up as they are passed (most are literals): no std::string is built for a name already known.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  Program& p_;
  std::array<uint32_t, kNumStreams> counts_{};
  std::unordered_map<std::string, uint16_t, NameHash, std::equal_to<>> name_ids_;
};

}  // namespace stepsim::workload

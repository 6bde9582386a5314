#pragma once
// Op: one unit of work a rank issues in one training step — a kernel, a collective or a batched
// point-to-point exchange — as Megatron-LM issues it. Ops live in a Program shared by every rank
// with the same role, so an Op holds no rank-specific data (peers are relative: previous/next stage).
#include <cstdint>

namespace stepsim::workload {

// CUDA-stream-like FIFO queues of a rank. Communication of each parallelism has its own stream, as
// Megatron-LM/NCCL use separate communicators; compute waits on them where Megatron waits. Pipeline exchanges run on
// Pp, except that unbatched ones (Megatron's overlap_p2p_comm: one isend/irecv per peer, each on PyTorch's own
// communicator for that pair of ranks) to and from the previous stage run on PpPrev, beside those to the next stage.
enum class Stream : uint8_t { Compute = 0, Tp, Cp, Ep, Pp, Dp, Memcpy, PpPrev, kCount };
constexpr int kNumStreams = static_cast<int>(Stream::kCount);

// Process groups a collective can run on (rank-layout dimensions). Edp = expert-data-parallel group
// that reduces expert gradients (data*context/expert ranks). World = every rank, where that is no single dimension's
// group (a traced run's world-wide all-reduce, such as the gradient norm's when DP = 1).
// Etp = expert-tensor-parallel group (expert_tensor consecutive ranks of a stage), used only when it is not the TP group.
// HcpA2a, HcpRing = hierarchical context parallelism's levels (cp_comm_type a2a+p2p): a adjacent CP ranks, and the CP
// ranks a apart.
enum class GroupKind : uint8_t { Tp = 0, Cp, Ep, Pp, Dp, Edp, Etp, HcpA2a, HcpRing, World, kCount };
// The stream a group's communication runs on: one per group kind, the expert-data-parallel gradients and world-wide
// collectives sharing the data-parallel stream.
constexpr Stream stream_of(GroupKind g) {
  switch (g) {
    case GroupKind::Tp:
    case GroupKind::Etp: return Stream::Tp;
    case GroupKind::Cp:
    case GroupKind::HcpA2a:
    case GroupKind::HcpRing: return Stream::Cp;
    case GroupKind::Ep: return Stream::Ep;
    case GroupKind::Pp: return Stream::Pp;
    case GroupKind::Dp:
    case GroupKind::Edp:
    case GroupKind::World:
    case GroupKind::kCount: break;
  }
  return Stream::Dp;
}
constexpr int kNumGroupKinds = static_cast<int>(GroupKind::kCount);

enum class OpKind : uint8_t { Compute, Collective, P2P };

// SendRecv: a ring exchange over the group, every member sending `bytes` to its successor and receiving as many from
// its predecessor at once (context parallelism's K/V ring, one step); timed as one point-to-point transfer over the
// group's slowest hop.
enum class CollType : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv };

// What kind of kernel a compute op is; selects the efficiency curve of the compute model.
enum class ComputeCategory : uint8_t {
  Gemm,          // dense matmul (shape in m,n,k)
  GroupedGemm,   // MoE expert matmuls
  Attention,     // flash-style attention core
  Elementwise,   // memory-bound: activation, dropout, residual add, permutation, rope
  Norm,          // layernorm / rmsnorm (memory-bound)
  Embedding,     // lookup / gradient scatter (memory-bound)
  Loss,          // softmax cross-entropy over the vocabulary (memory-bound)
  Optimizer,     // Adam update (memory-bound)
  ScatterAdd,    // rows added into a tensor at indices with atomics (MoE unpermute, permute backward; memory-bound)
  Offload,       // host<->device copy (PCIe)
  CpuOptimizer,  // optimizer step run by the host CPU on offloaded states (bytes = host-DRAM traffic)
  Host,          // trace-driven: the GPU idle while the CPU was late to launch (a measured gap, never modelled)
};

// Phase of the step an op belongs to, for the breakdown and the trace.
enum class Phase : uint8_t { Forward, Backward, Recompute, Optimizer };

// The model unit whose pass built an op (its forward, backward or recompute), for consumers that attribute ops to
// units without reading names (the planner's per-layer probe). None: what runs between units (parameter gathers,
// gradient reductions, pipeline exchanges, the optimizer) and trace-driven ops.
enum class UnitKind : uint8_t { None, Embedding, Layer, Mtp, Head };

// A stream dependency: the op may start only once `stream` has completed `count` ops (a CUDA event).
struct Wait {
  Stream stream;
  uint32_t count;
};

struct Op {
  OpKind kind = OpKind::Compute;
  Stream stream = Stream::Compute;
  Phase phase = Phase::Forward;
  ComputeCategory category = ComputeCategory::Elementwise;
  CollType coll = CollType::AllReduce;
  GroupKind group = GroupKind::Tp;
  UnitKind unit = UnitKind::None;
  uint16_t name = 0;          // index into Program::names
  int16_t layer = -1;         // global transformer layer, -1 = none (embedding, head, optimizer)
  int32_t microbatch = -1;    // -1 = not tied to a micro-batch
  int16_t chunk = 0;          // virtual pipeline chunk (model chunk) index on this rank
  int32_t comm = -1;          // trace-driven: communicator index local to the Program (Workload::bindings maps it
                              // per rank); -1 = the layout's group `group`

  double flops = 0;           // floating-point operations executed
  uint64_t bytes = 0;         // compute: HBM traffic; collective: message size S (nccl-tests convention)
  // GEMM shape (per expert for GroupedGemm); a flash-attention op: gemm_n = key/value tokens one kernel walks,
  // gemm_k = head dimension (gemm_m unused), for the attention efficiency's shape curves.
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;
  int32_t gemm_batch = 1;                      // experts in a grouped GEMM
  // SMs that communication kernels hold while this kernel runs (Transformer Engine's userbuffers under
  // training.tp_comm_overlap); the compute model runs the kernel on the GPU's remaining SMs.
  uint16_t comm_sms = 0;
  // A GEMM Transformer Engine keeps in bf16 when the job trains in fp8 (output layer, router, the unfused
  // attention's batched GEMMs): timed at the bf16 peak.
  bool keep_bf16 = false;
  // Host issue model (cost/host_issue.hpp): the host stops issuing after this op until the op has ended on the GPU (the
  // dropless MoE dispatcher's tokens-per-expert copy to the host).
  bool host_sync = false;

  // P2P: bytes sent to / received from the previous and next pipeline stage (ring order).
  uint64_t send_prev = 0, send_next = 0, recv_prev = 0, recv_next = 0;

  int64_t mem_alloc_at_start = 0;  // bytes allocated when the op starts (activations it stores)
  int64_t mem_free_at_end = 0;     // bytes released when it ends
  int64_t mem_transient = 0;       // of both: a working buffer held only while the op runs (docs/MODEL.md §9)

  uint32_t wait_begin = 0;  // waits are Program::waits[wait_begin, wait_begin + wait_count)
  uint16_t wait_count = 0;
  uint16_t part_count = 0;  // trace-driven P2P: transfers Program::p2p_parts[part_begin, +part_count) with
  uint32_t part_begin = 0;  // explicit peers; 0 = Megatron's previous/next-stage exchange (send_prev...)
  int32_t host_ns = 0;      // host issue model: the host's time to issue this op (Python, framework, launch), ns

  int64_t duration_ns = 0;  // compute ops: filled in by the compute model (before slow-down); collectives: 0, or a
                            // traced collective's measured time when the trace gives no size
};

const char* name_of(Stream s);
const char* name_of(GroupKind g);
const char* name_of(CollType c);
const char* name_of(ComputeCategory c);
const char* name_of(Phase p);

// nccl-tests bus-bandwidth factor of a collective over n ranks (all-reduce 2(n-1)/n, AG/RS/A2A (n-1)/n,
// broadcast/reduce 1).
double bus_factor(CollType c, int n);

}  // namespace stepsim::workload

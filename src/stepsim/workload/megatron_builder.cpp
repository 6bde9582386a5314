// Megatron-LM (Megatron-Core) step, op by op: embedding, transformer layers (attention, dense or MoE MLP),
// output layer and loss; backward with separate input- and weight-gradient GEMMs; recompute; pipeline
// schedules with batched send/recv; DP gradient buckets; optimizer. docs/MODEL.md states each formula.
#include "stepsim/workload/megatron_builder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include "stepsim/spec/input_error.hpp"
#include "stepsim/workload/dp_buckets.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "stepsim/workload/moe_routing.hpp"
#include "stepsim/workload/optimizer_offload.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "stepsim/workload/working_memory.hpp"

namespace stepsim::workload {

namespace {

using Ref = ProgramBuilder::Ref;
using spec::Recompute;

// Transformer Engine userbuffers (training.tp_comm_overlap): SMs its communication kernels hold beside the GEMM they
// overlap, and the chunks of the pipelined reduce-scatter. TE's defaults and NeMo's H100 configurations
// (userbuffers_*_h100_*): ring exchange 1 SM, bulk 2 SMs, pipeline 16 SMs in 4 splits (docs/MODEL.md).
constexpr uint16_t kRingExchangeSms = 1;
constexpr uint16_t kBulkSms = 2;
constexpr uint16_t kPipelineSms = 16;
constexpr int64_t kPipelineSplits = 4;

// Units of a model chunk whose parameters get gradients together: the embedding, each layer, the head.
constexpr int kEmbeddingUnit = -1;
constexpr int kHeadUnit = 1 << 20;

// A DP gradient bucket: parameters of consecutive units (backward order) reduced by one collective, as
// Megatron-Core's DDP buckets them (per model chunk, dense and expert parameters apart).
struct Bucket {
  int64_t params = 0;
  GroupKind group = GroupKind::Dp;
  int chunk = 0;
  // The bucket is complete once this unit's backward is done; it is also the bucket's earliest unit in forward order
  // (unit ids fall along the backward order), whose forward waits for the bucket's parameter all-gather.
  int close_unit = 0;
};

// Ring attention's c steps as built: n ops, step i covering blocks(i) of the c blocks (1 each up to kMaxRingSteps).
constexpr int kMaxRingSteps = 16;
struct RingSteps {
  int c = 1, n = 1;
  int blocks(int i) const { return c / n + (i < c % n ? 1 : 0); }
};
RingSteps ring_steps(int c) { return RingSteps{c, std::min(c, kMaxRingSteps)}; }

class StageBuilder {
 public:
  StageBuilder(const spec::JobSpec& job, const ModelDims& d, const RankLayout& layout, int stage, Program& prog)
      : job_(job), d_(d), layout_(layout), stage_(stage), prog_(prog), pb_(prog) {
    const auto& par = job.parallelism;
    p_ = par.pipeline;
    v_ = par.virtual_stages;
    m_ = static_cast<int>(job.num_microbatches());
    beta_ = d.act_bytes;
    // Gradients reduced in fp32 unless fp16 (or said otherwise); parameters in fp8 under fp8_param_gather.
    const BytesPerParam bpp = bytes_per_param(job.training);
    grad_bytes_ = bpp.gradient;
    weight_bytes_ = bpp.weight;
    cf_ = job.model.moe ? job.model.moe->expert_load() : 1.0;
    const auto& tr = job.training;
    tpo_ = tr.tp_comm_overlap && d.sp;
    tpo_ag_ = tpo_ && tr.tp_comm_overlap_ag;
    tpo_rs_ = tpo_ && tr.tp_comm_overlap_rs;
    tpo_bulk_dgrad_ = tpo_ && tr.tp_comm_bulk_dgrad;
    tpo_rs_dgrad_ = tpo_ && tr.tp_comm_overlap_rs_dgrad;
    tpo_bulk_wgrad_ = tpo_ && tr.tp_comm_bulk_wgrad && !tpo_rs_dgrad_;
    zero3_ = job.training.zero_stage == 3;
    shard_grads_ = job.training.zero_stage >= 2;
    zero3_blocking_ = zero3_ && job.training.zero3_param_fetch == spec::Zero3Fetch::Blocking;
    fp8_ = job.training.precision == spec::Precision::Fp8;
    fp8_cast_bytes_ = beta_ + 2 + (job.training.fp8_recipe == spec::Fp8Recipe::Current ? beta_ : 0);
    mask_bytes_ = job.model.hidden_dropout > 0 ? 1 : 0;
    ep_overlap_ = job.training.overlap_moe_expert_parallel_comm;
    // Layers of every model chunk of this stage (model chunk index = chunk * p + stage).
    std::vector<int> per_chunk(static_cast<size_t>(p_) * v_);
    const auto& pl = par.pipeline_layers;
    for (size_t k = 0; k < per_chunk.size(); ++k) {
      per_chunk[k] = pl.empty() ? job.model.num_layers / static_cast<int>(per_chunk.size()) : pl[k];
    }
    int first = 0;
    chunk_first_layer_.assign(v_, 0);
    chunk_layers_.assign(v_, 0);
    for (size_t k = 0; k < per_chunk.size(); ++k) {
      const int chunk = static_cast<int>(k) / p_, st = static_cast<int>(k) % p_;
      if (st == stage_) {
        chunk_first_layer_[chunk] = first;
        chunk_layers_[chunk] = per_chunk[k];
      }
      first += per_chunk[k];
    }
  }

  void build();

 private:
  // ---- op constructors
  Op gemm(int64_t m, int64_t n, int64_t k, int batch = 1) const {
    Op op;
    op.category = batch > 1 ? ComputeCategory::GroupedGemm : ComputeCategory::Gemm;
    op.gemm_m = m;
    op.gemm_n = n;
    op.gemm_k = k;
    op.gemm_batch = batch;
    op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * batch;
    op.bytes = static_cast<uint64_t>(beta_ * (m * k + k * n + m * n) * batch);
    op.keep_bf16 = in_bf16_scope_ || job_.training.layer_in_bf16(layer_, job_.model.num_layers);
    return op;
  }
  // Transformer Engine keeps the output layer and the router in bf16 under fp8: their GEMMs are built in here.
  template <class Build>
  Ref bf16_gemms(Build&& build) {
    in_bf16_scope_ = true;
    const Ref r = build();
    in_bf16_scope_ = false;
    return r;
  }
  // Weight gradient dW (k x n) = X^T dY over m tokens, accumulated into the fp32 main_grad buffer
  // (Megatron's gradient-accumulation fusion): reads X and dY, reads and writes main_grad.
  // Without the fusion (--no-gradient-accumulation-fusion) the GEMM writes dW in the activation dtype and
  // Megatron's gradient hook adds it into main_grad (main_grad.add_(grad)): a memory-bound kernel reading dW and
  // main_grad and writing main_grad.
  // comm_sms: SMs a communication kernel running beside the GEMM holds (userbuffers' bulk overlap).
  Ref wgrad(int64_t k, int64_t n, int64_t m, const std::string& name, std::vector<Ref> deps = {}, int batch = 1,
            uint16_t comm_sms = 0) {
    const bool fused = job_.training.gradient_accumulation_fusion;
    Op op = gemm(k, n, m, batch);
    op.comm_sms = comm_sms;
    const int64_t out_bytes = fused ? 2 * grad_bytes_ : beta_;
    op.bytes = static_cast<uint64_t>((beta_ * (k * m + m * n) + out_bytes * k * n) * batch);
    if (!job_.training.fp8_wgrad) op.keep_bf16 = true;  // --no-fp8-wgrad: TE runs wgrad in the higher precision
    in_wgrad_ = true;  // its fp8 operands are the transposed copies the forward casts made
    Ref r = compute(op, name, std::move(deps));
    in_wgrad_ = false;
    if (!fused) {
      r = compute(memop(ComputeCategory::Elementwise, (beta_ + 2 * grad_bytes_) * k * n * batch), name + "_main_grad_add",
                  {r});
    }
    return r;
  }
  // A flash-attention kernel of `flops` with `bytes` of operand traffic whose queries each walk up to `kv_tokens`
  // keys (the sequence; a ring step's block under context parallelism), at the model's mean head dimension.
  Op attention_op(double flops, int64_t bytes, int64_t kv_tokens) const {
    Op op = memop(ComputeCategory::Attention, bytes);
    op.flops = flops;
    op.gemm_n = kv_tokens;
    op.gemm_k = (d_.d_qk + d_.d_v) / 2;
    return op;
  }
  // A GEMM of a linear layer that runs in fp8 (not kept in bf16: output layer, router, first/last bf16 layers).
  bool fp8_gemm(const Op& op) const {
    return fp8_ && !op.keep_bf16 && (op.category == ComputeCategory::Gemm || op.category == ComputeCategory::GroupedGemm);
  }
  static Op memop(ComputeCategory cat, int64_t bytes) {
    Op op;
    op.category = cat;
    op.bytes = static_cast<uint64_t>(std::max<int64_t>(bytes, 0));
    return op;
  }
  // Emits a compute op tagged with the current position; stores `saved` bytes for backward.
  Ref compute(Op op, const std::string& name, std::vector<Ref> deps, int64_t saved = 0) {
    if (fp8_ && (op.category == ComputeCategory::Gemm || op.category == ComputeCategory::GroupedGemm)) {
      // A linear layer's A operand (the input forward, the output gradient for dgrad) is cast to fp8 with a
      // transposed copy for the later wgrad: one memory-bound kernel reading β and writing 2 x 1 byte per element
      // (current scaling reads once more for the amax).
      if (!op.keep_bf16 && !in_wgrad_) {
        const int64_t elements = op.gemm_m * op.gemm_k * std::max<int32_t>(op.gemm_batch, 1);
        compute(memop(ComputeCategory::Elementwise, fp8_cast_bytes_ * elements), name + "_fp8_cast", deps);
      }
    }
    op.kind = OpKind::Compute;
    op.stream = compute_stream_;
    tag(op);
    // Transformer Engine saves an fp8 linear layer's input for the weight gradient as the fp8 copy it cast
    // (1 byte per element, the columnwise/transposed data), not the bf16 tensor.
    if (saved > 0 && fp8_gemm(op) && !saving_outputs_) saved /= beta_;
    if (saved > 0 && storing_) {
      op.mem_alloc_at_start = saved;
      unit_saved_ += saved;
    }
    if (pending_alloc_ > 0) {
      op.mem_alloc_at_start += pending_alloc_;
      unit_saved_ += pending_alloc_;
      pending_alloc_ = 0;
    }
    if (!extra_deps_.empty()) {
      deps.insert(deps.end(), extra_deps_.begin(), extra_deps_.end());
      extra_deps_.clear();
    }
    return pb_.emit(op, name, deps);
  }
  // A host<->device copy on the memcpy stream (activation and optimizer offload) or a CPU optimizer step on the
  // compute stream; deps as for compute().
  Ref host_side(ComputeCategory cat, Stream stream, int64_t bytes, const std::string& name, std::vector<Ref> deps) {
    Op op = memop(cat, bytes);
    op.kind = OpKind::Compute;
    op.stream = stream;
    tag(op);
    return pb_.emit(op, name, deps);
  }
  // Emits a collective on its group's stream (nothing for a group of one: returns `dep`).
  Ref coll(CollType c, GroupKind g, int64_t bytes, const std::string& name, Ref dep, Ref dep2 = {}) {
    if (layout_.group_size(g) <= 1) return dep;
    Op op;
    op.kind = OpKind::Collective;
    op.coll = c;
    op.group = g;
    op.stream = stream_of(g);
    op.bytes = static_cast<uint64_t>(bytes);
    tag(op);
    return pb_.emit(op, name, {dep, dep2});
  }
  void tag(Op& op) {
    if (combined_) combined_keys_.push_back(combined_key());
    op.phase = phase_;
    op.layer = static_cast<int16_t>(std::min(layer_, 32767));
    op.microbatch = mb_;
    op.chunk = static_cast<int16_t>(chunk_);
  }
  // Frees what the current unit (layer/head/embedding) stored, at the end of its last backward op.
  void release_unit(int64_t bytes) { pb_.back().mem_free_at_end += bytes; }
  // A working buffer held only while op `index` runs: allocated at its start, released at its end.
  void working_buffer(size_t index, int64_t bytes) {
    Op& op = prog_.ops[index];
    op.mem_alloc_at_start += bytes;
    op.mem_free_at_end += bytes;
    op.mem_transient += bytes;
  }
  size_t next_op() const { return prog_.ops.size(); }

  // ---- model pieces
  Ref embedding_fwd(Ref in);
  Ref embedding_bwd(Ref in);
  Ref head_fwd(Ref in);
  Ref head_bwd(Ref in);
  Ref mtp_fwd(int unit, Ref in);
  Ref mtp_bwd(int unit, Ref in);
  bool mtp_unit(int unit) const { return unit >= job_.model.num_layers && unit < kHeadUnit; }
  int64_t mtp_extra_params(int unit) const;
  Ref layer_fwd(int layer, Ref in);
  Ref layer_bwd(int layer, Ref in);
  void offload_before_forward(int unit);
  void offload_after_forward(int unit);
  void reload_before_backward(int unit);
  Ref gpu_optimizer_step(int64_t params, const std::vector<Ref>& deps);
  Ref offloaded_optimizer_step(int64_t params, std::vector<Ref> deps);
  bool recomputed(int layer) const;
  Ref attention_fwd(Ref in);
  Ref unfused_attention_fwd(Ref qkv, bool recompute);
  Ref cp_attention_fwd(Ref qkv, double flops, int64_t bytes, int64_t saved);
  Ref cp_attention_bwd(Ref dout, double flops, int64_t bytes);
  Ref ring_next_kv(const RingSteps& rs, int i, int64_t kv_block, Ref kv, Ref before, GroupKind ring);
  // Ring attention over `ring` (the CP group, or under a2a+p2p the ranks a apart), forward and backward.
  Ref ring_attention_fwd(Ref qkv, double flops, int64_t bytes, int64_t saved, GroupKind ring);
  Ref ring_attention_bwd(Ref dout, double flops, int64_t bytes, GroupKind ring);
  Ref unfused_attention_bwd(Ref in);
  Op batched_gemm(int64_t batch, int64_t m, int64_t n, int64_t k) const {
    // One strided-batched kernel (cuBLAS): efficiency follows its total size, so the batch is folded into m.
    Op op = gemm(m * batch, n, k);
    op.bytes = static_cast<uint64_t>(beta_ * batch * (m * k + k * n + m * n));
    op.keep_bf16 = true;  // attention stays in bf16 under fp8
    return op;
  }
  Ref attention_bwd(Ref in);
  Ref mlp_fwd(Ref in);
  Ref mlp_body_fwd(Ref n);
  Ref mlp_bwd(Ref in);
  Ref moe_fwd(Ref in);
  Ref moe_body_fwd(Ref n);
  Ref shared_expert_fwd(Ref out);
  Ref shared_expert_fc1_fwd(Ref in);
  Ref shared_expert_fc2_fwd(Ref act);
  void shared_expert_bwd(Ref grad, Ref& done);
  // Routed tokens per rank: leaving it (sequence shard x top-k) and reaching its experts (gathered over the expert-tensor
  // group when experts are TP-split); the all-gather dispatcher's gathered tokens.
  struct MoeTokens {
    int64_t routed_sp = 0, routed = 0, gathered = 0;
    bool tp_stage = false;  // an all-gather / reduce-scatter over the expert-tensor group beside the expert-group one
    GroupKind etp = GroupKind::Tp;  // the expert-tensor group: the TP group when expert_tensor = tensor
  };
  MoeTokens moe_tokens() const;
  // Dispatch (forward) or the combine's gradient (backward): from this rank's tokens to its experts' input.
  Ref moe_to_experts(Ref dep, bool backward);
  Ref moe_host_sync(Ref dep, Ref dep2);
  int64_t ep_all_to_all_bytes() const;
  // Combine (forward) or the dispatch's gradient (backward): from its experts' output to this rank's tokens.
  Ref moe_from_experts(Ref dep, bool backward);
  Ref moe_expert_order(Ref x, bool backward);
  Ref moe_token_order(Ref x, bool backward);
  bool sorts_chunks() const;
  Op permute_gather(int64_t rows, bool unpermute_backward) const;
  Op permute_scatter(int64_t rows) const;
  Ref moe_bwd(Ref in);
  // Selective recompute of a Megatron-Core module (training.recompute_modules).
  bool rc(spec::RecomputeModule m) const { return job_.training.recomputes(m); }
  // Inside the forward pass of a checkpointed module: nothing it computes is stored.
  bool discarding(spec::RecomputeModule m) const { return rc(m) && phase_ == Phase::Forward; }
  // Bytes of the MLA up-projections' outputs (K, V; Q with a query LoRA) for this micro-batch.
  int64_t mla_up_proj_bytes() const {
    return beta_ * d_.tokens * (d_.kv_width + (job_.model.mla.q_lora_rank > 0 ? d_.q_width : 0));
  }
  // Whether a checkpointed module's body (mlp, moe) stores its input, the norm's output: the checkpoint keeps it
  // unless the body is being re-run (the stored copy is still there); otherwise the weight gradients keep it, unless
  // recompute_modules' layernorm discards it.
  bool stores_body_input(spec::RecomputeModule m) const {
    if (phase_ == Phase::Recompute && rc(m)) return false;
    return rc(m) || !rc(spec::RecomputeModule::Layernorm);
  }
  // Runs `body` as recompute (ops in phase Recompute), then returns to the current phase.
  template <typename Body>
  auto recomputing(Body&& body) {
    const Phase keep = phase_;
    phase_ = Phase::Recompute;
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      phase_ = keep;
    } else {
      auto r = body();
      phase_ = keep;
      return r;
    }
  }
  // A norm's output re-created in backward (recompute_modules: layernorm); stored until the layer's backward ends.
  void layernorm_recompute(const char* name, Ref dep) {
    if (!rc(spec::RecomputeModule::Layernorm)) return;
    recomputing([&] {
      compute(memop(ComputeCategory::Norm, 2 * beta_ * d_.tokens_sp * d_.h), name, {dep}, beta_ * d_.tokens_sp * d_.h);
    });
  }
  // Input width of an MLP of `ffn` (fc1's output): doubled for a gated (SwiGLU) activation.
  int64_t ffn_in(int64_t ffn) const { return job_.model.activation == spec::Activation::Swiglu ? 2 * ffn : ffn; }
  // userbuffers: false for Megatron's own ColumnParallelLinear (the output layer), which TE's overlap does not cover.
  Ref column_parallel_bwd(const std::string& name, int64_t m, int64_t n, int64_t k, Ref in, bool input_sharded,
                          bool userbuffers = true);
  Ref gathered_gemm(const std::string& ag_name, Op g, const std::string& name, Ref in, int64_t saved);
  Ref scattered_gemm(Op g, const std::string& name, Ref in, int64_t saved, const std::string& reduce_name);
  Ref reduced_gemm(Op g, const std::string& name, Ref in, int64_t saved, int64_t bytes, const std::string& reduce_name,
                   bool pipelined);
  Ref grad_gathered_gemms(const std::string& ag_name, Op dgrad, const std::string& dgrad_name, int64_t wk, int64_t wn,
                           const std::string& wgrad_name, Ref in);

  Ref unit_pass(int unit, Ref x, bool forward);
  void forward_step(int mb, int chunk, Ref in);
  void backward_step(int mb, int chunk, Ref in);
  void plan_buckets();
  Ref reduce_bucket(const Bucket& b);
  void unit_grads_ready(int chunk, int unit);
  int64_t sequence_parallel_params(int layer) const;
  void wait_param_gather(int chunk, int unit);
  std::vector<int> units_of(int chunk, bool forward) const;
  void params_ready(int chunk, const std::vector<int>& units, size_t i);
  void zero3_gather(int unit, Ref dep);
  Ref zero3_blocking_gather(int unit, Ref dep);
  void sharded_grad_reduce_scatter(int unit);
  int64_t unit_params(int unit, bool expert) const;
  std::vector<int64_t> unit_tensors(int unit) const;
  static int64_t key(int mb, int unit);
  bool first_model_chunk(int chunk) const { return stage_ == 0 && chunk == 0; }
  bool last_model_chunk(int chunk) const { return stage_ == p_ - 1 && chunk == v_ - 1; }
  int64_t p2p_bytes() const { return beta_ * d_.tokens_sp * d_.h; }
  Ref p2p(uint64_t send_prev, uint64_t send_next, uint64_t recv_prev, uint64_t recv_next, Ref dep, Ref dep2 = {},
          const char* fixed_name = nullptr, Stream stream = Stream::Pp);
  // The last exchange ops a compute step waits for, on each pipeline stream (prev stays empty unless exchanges are
  // per peer).
  struct PpRefs {
    Ref next, prev;
  };
  PpRefs exchange(const PipelineAction& a, uint64_t act);
  void check_size() const {
    if (prog_.ops.size() > kMaxOpsPerProgram) {
      throw InputError(job_.source + ": the job needs more than " + std::to_string(kMaxOpsPerProgram) +
                       " ops per rank (micro-batches x layers too large); reduce training.global_batch_size");
    }
  }

  const spec::JobSpec& job_;
  const ModelDims& d_;
  const RankLayout& layout_;
  int stage_;
  Program& prog_;
  ProgramBuilder pb_;
  int p_ = 1, v_ = 1, m_ = 1;
  int64_t beta_ = 2, grad_bytes_ = 4, weight_bytes_ = 2;
  double cf_ = 1.0;  // MoE: tokens the busiest rank's experts process over the balanced share (MoeSpec::expert_load)
  bool tpo_ = false;  // TP communication overlapped with the GEMMs (userbuffers)
  // Which overlaps (TrainingSpec::tp_comm_overlap_ag etc.): ring-exchange all-gathers, the pipelined forward
  // reduce-scatter, the bulk overlaps of backward, the pipelined dgrad reduce-scatter.
  bool tpo_ag_ = false, tpo_rs_ = false, tpo_bulk_dgrad_ = false, tpo_bulk_wgrad_ = false, tpo_rs_dgrad_ = false;
  bool zero3_ = false;  // ZeRO-3 / FSDP: parameters sharded over DP, gathered per unit and pass
  // ZeRO-2 and 3: each rank keeps only its shard of the gradients, so they cannot accumulate over micro-batches
  // locally: every micro-batch reduce-scatters each unit's gradients after its backward (DeepSpeed's stage 2 reduces
  // its buckets every micro-step; FSDP and Megatron-FSDP's optim_grads likewise), with no end-of-step reduction.
  bool shard_grads_ = false;
  bool zero3_blocking_ = false;  // ZeRO-3 fetch per parameter tensor, host-synchronised (DeepSpeed < 0.4.3)
  bool fp8_ = false;     // fp8 training: linear-layer GEMMs in fp8 behind cast kernels
  int64_t mask_bytes_ = 1;  // per element of a residual dropout's stored mask (0: hidden_dropout is 0)
  bool saving_outputs_ = false;  // a GEMM's `saved` bytes are its bf16 output, not its input (MLA up-projections)
  int64_t fp8_cast_bytes_ = 4;
  bool in_wgrad_ = false;
  bool in_bf16_scope_ = false;  // see bf16_gemms()
  std::unordered_map<int, Ref> z3_gathers_;  // unit -> its all-gather in the current pass
  std::vector<int> chunk_first_layer_, chunk_layers_;

  // Current position, for tagging ops.
  Phase phase_ = Phase::Forward;
  int layer_ = -1, mb_ = -1, chunk_ = 0;
  bool storing_ = true;       // false inside the forward of a fully recomputed layer
  int64_t unit_saved_ = 0;    // bytes stored by the current unit so far
  std::vector<Ref> extra_deps_;  // attached to the next compute op (parameter all-gather waits)
  std::unordered_map<int64_t, int64_t> saved_;  // (mb, unit) -> bytes stored in forward
  std::unordered_map<int64_t, Ref> offload_copy_;  // (mb, layer) -> its activation copy to the host / back

  // DP gradient buckets (reduction order) and the parameter all-gathers waiting on them.
  std::vector<Bucket> buckets_;
  std::vector<Ref> gathers_;
  std::vector<bool> chunk_started_;
  int64_t sp_params_ = 0;  // parameters replicated over TP under SP, whose gradients Megatron all-reduces over TP
  int64_t pending_alloc_ = 0;  // checkpoint bytes charged to the next compute op

  // ---- Megatron-Core's combined 1F1B step (training.overlap_moe_expert_parallel_comm; combined_1f1b.py and
  // TransformerLayerSchedulePlan.run). Both halves are built as usual, each op tagged with its layer slot in its pass
  // and the layer sub-module (node) it belongs to; the step's ops are then put in the order Megatron issues the nodes:
  // per layer pair, on the compute stream the forward's pre-dispatch part, the backward's experts, the forward's
  // experts, the backward's pre-dispatch part, while on the EP stream the backward's combine, the forward's dispatch,
  // the backward's dispatch and the forward's combine each run beside the other half's computation.
  enum class Piece : uint8_t { Pre, Dispatch, Mlp, Combine, Post };
  static int piece_order(Piece p, bool backward) {
    //                          Pre Dispatch Mlp Combine Post
    static constexpr int fwd[] = {3, 5, 8, 9, 11};
    static constexpr int bwd[] = {10, 7, 4, 2, 1};
    return (backward ? bwd : fwd)[static_cast<int>(p)];
  }
  // Slot before the layers (forward embedding, then the backward's output layer) and after them (forward output layer,
  // then the backward's embedding), as Megatron's TransformerModelChunkSchedulePlan.run orders pre/post-process.
  static constexpr int kBeforeLayersSlot = -1, kAfterLayersSlot = 1 << 20;
  int64_t combined_key() const {
    const bool edge = slot_ == kBeforeLayersSlot || slot_ == kAfterLayersSlot;
    return int64_t{slot_ + 1} * 16 + (edge ? (combined_backward_ ? 1 : 0) : piece_order(piece_, combined_backward_));
  }
  // Sets the node the next ops belong to, only for the pass being built in that direction (a recompute's forward
  // inside the backward keeps the backward's node).
  void set_piece(Piece p, bool backward) {
    if (backward == (phase_ != Phase::Forward)) piece_ = p;
  }
  void combined_step(const PipelineAction& a, PpRefs blocking, PpRefs fwd_async, PpRefs bwd_async);
  bool ep_overlap_ = false;        // training.overlap_moe_expert_parallel_comm: the layer is split into its nodes
  // Where compute() issues kernels: the EP stream for the combine node's computation under the combined schedule
  // (Megatron runs the whole moe_combine node, unpermutation and bias-dropout-add included, on its communication
  // stream, so the other half's pre-dispatch computation is not queued behind it).
  Stream compute_stream_ = Stream::Compute;
  void combine_node_stream(bool on) { compute_stream_ = on && ep_overlap_ ? Stream::Ep : Stream::Compute; }
  bool combined_ = false;          // building a Combined action
  bool combined_backward_ = false;  // ... its backward half
  int slot_ = 0;                   // layer position in the current pass (kBeforeLayersSlot / kAfterLayersSlot)
  Piece piece_ = Piece::Pre;
  std::vector<int64_t> combined_keys_;
};

// ---------------------------------------------------------------- embedding and head

Ref StageBuilder::embedding_fwd(Ref in) {
  const auto& d = d_;
  Ref e = compute(memop(ComputeCategory::Embedding, 2 * beta_ * d.tokens * d.h), "embedding", {in});
  // Vocab-parallel embedding: partial lookups are summed over TP. Megatron reduce-scatters straight to the
  // sequence shards under SP, except with learned positions (all-reduce, add positions, split locally).
  const bool rs = d.sp && job_.model.position_embedding != spec::PositionEmbedding::Learned;
  Ref r = coll(rs ? CollType::ReduceScatter : CollType::AllReduce, GroupKind::Tp, beta_ * d.tokens * d.h,
               rs ? "embedding_reduce_scatter" : "embedding_all_reduce", e);
  return compute(memop(ComputeCategory::Elementwise, 2 * beta_ * d.tokens_sp * d.h), "embedding_dropout", {r},
                 mask_bytes_ * d.tokens_sp * d.h);
}

Ref StageBuilder::embedding_bwd(Ref in) {
  const auto& d = d_;
  Ref x = compute(memop(ComputeCategory::Elementwise, 3 * beta_ * d.tokens_sp * d.h), "embedding_dropout_bwd", {in});
  if (d.sp) x = coll(CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * d.h, "embedding_grad_all_gather", x);
  return compute(memop(ComputeCategory::Embedding, (beta_ + 2 * grad_bytes_) * d.tokens * d.h), "embedding_bwd", {x});
}

Ref StageBuilder::head_fwd(Ref in) {
  const auto& d = d_;
  const int64_t vloc = d.vocab_pad / d.t;
  Ref n = compute(memop(ComputeCategory::Norm, 2 * beta_ * d.tokens_sp * d.h), "final_layernorm", {in},
                  beta_ * d.tokens_sp * d.h);
  Ref x = d.sp ? coll(CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * d.h, "output_all_gather", n) : n;
  Ref o = bf16_gemms(
      [&] { return compute(gemm(d.tokens, vloc, d.h), "output_layer", {x}, beta_ * (d.sp ? d.tokens_sp : d.tokens) * d.h); });
  if (job_.training.cross_entropy_fusion == spec::CrossEntropyFusion::Te) {
    // Transformer Engine's Triton cross-entropy as Megatron-Bridge 25.09-26.04 ran it (TE 2.x up to mid-2026): one
    // program per token row reads the bf16 logits for the row's max and sum of exponentials (online softmax); the
    // (max, sum, target logit) of every TP rank are all-gathered (3 fp32 per token); a second pass reads the logits
    // again and writes the loss and the gradient over them in place, kept until the backward (beta bytes per logit,
    // where the unfused path keeps its fp32 softmax). Streaming passes: the elementwise efficiency.
    Ref s1 = compute(memop(ComputeCategory::Elementwise, beta_ * d.tokens * vloc), "cross_entropy_stats", {o});
    // The logits (stored from the second pass on, which turns them into the gradient) and the gathered input.
    working_buffer(next_op() - 1, beta_ * d.tokens * (vloc + d.h));
    Ref g = coll(CollType::AllGather, GroupKind::Tp, 12 * d.tokens * d.t, "cross_entropy_all_gather", s1);
    Ref s2 = compute(memop(ComputeCategory::Elementwise, 2 * beta_ * d.tokens * vloc), "cross_entropy_loss_grad",
                     {g}, beta_ * d.tokens * vloc);
    return compute(memop(ComputeCategory::Elementwise, 8 * d.tokens), "loss", {s2});
  }
  // Vocab-parallel cross-entropy (fp32 softmax): all-reduce of the max, of the sum of exponentials and of
  // the target logits across the tensor-parallel group. Megatron's jit-fused `native` path is costed alike.
  Ref c1 = compute(memop(ComputeCategory::Loss, (beta_ + 4) * d.tokens * vloc), "cross_entropy_max", {o},
                   4 * d.tokens * vloc);
  // The bf16 logits beside their fp32 copy (`.float()`, kept for backward as the softmax) and the gathered input
  // (measured: 2,068 MiB for 8K tokens x 128,256 logits + 4,096 hidden; working_memory.hpp).
  working_buffer(next_op() - 1, beta_ * d.tokens * (vloc + d.h));
  Ref a1 = coll(CollType::AllReduce, GroupKind::Tp, 4 * d.tokens, "cross_entropy_all_reduce", c1);
  Ref c2 = compute(memop(ComputeCategory::Loss, 8 * d.tokens * vloc), "cross_entropy_softmax", {a1});
  Ref a2 = coll(CollType::AllReduce, GroupKind::Tp, 8 * d.tokens, "cross_entropy_all_reduce", c2);
  return compute(memop(ComputeCategory::Elementwise, 8 * d.tokens), "loss", {a2});
}

Ref StageBuilder::head_bwd(Ref in) {
  const auto& d = d_;
  const int64_t vloc = d.vocab_pad / d.t;
  // TE's backward scales the stored gradient rows by the per-token incoming gradient in place (Megatron's loss is
  // not reduced inside the kernel, so the all-ones shortcut does not apply); the unfused path turns its fp32 softmax
  // into the bf16 gradient.
  const bool te = job_.training.cross_entropy_fusion == spec::CrossEntropyFusion::Te;
  Ref c = te ? compute(memop(ComputeCategory::Elementwise, 2 * beta_ * d.tokens * vloc), "cross_entropy_bwd", {in})
             : compute(memop(ComputeCategory::Loss, (4 + beta_) * d.tokens * vloc), "cross_entropy_bwd", {in});
  // The unfused path's bf16 gradient of the logits beside the fp32 softmax it is made from (measured 2,004 MiB at
  // 8K x 128,256); TE's kernel wrote its gradient in place.
  if (!te) working_buffer(next_op() - 1, beta_ * d.tokens * vloc);
  Ref r = bf16_gemms([&] { return column_parallel_bwd("output_layer", d.tokens, vloc, d.h, c, d.sp, false); });
  return compute(memop(ComputeCategory::Norm, 3 * beta_ * d.tokens_sp * d.h), "final_layernorm_bwd", {r});
}

// Multi-token prediction depth (Megatron-Core's MultiTokenPredictionLayer, DeepSeek-V3 §2.2): the embedding of the
// shifted tokens, enorm and hnorm, eh_proj (the concatenated 2h -> h, column-parallel: its input gathered, its
// output gathered back over TP), one transformer layer, and its own pass through the shared output layer and
// cross-entropy. Parameters besides the layer's: eh_proj, three norms (enorm, hnorm, its final norm), and with the
// first depth on a last stage that is not the first, a copy of the word embeddings (docs/MODEL.md).
int64_t StageBuilder::mtp_extra_params(int unit) const {
  const int64_t embedding = (stage_ != 0 && unit == job_.model.num_layers) ? d_.vocab_pad * d_.h / d_.t : 0;
  return 2 * d_.h * d_.h / d_.t + 3 * d_.params_final_norm + embedding;  // a norm's parameters, as the final one's
}

Ref StageBuilder::mtp_fwd(int unit, Ref in) {
  const auto& d = d_;
  layer_ = unit;
  Ref e = embedding_fwd(in);
  Ref n = compute(memop(ComputeCategory::Norm, 4 * beta_ * d.tokens_sp * d.h), "mtp_enorm_hnorm", {e, in},
                  2 * beta_ * d.tokens_sp * d.h);
  Ref x = d.sp ? coll(CollType::AllGather, GroupKind::Tp, 2 * beta_ * d.tokens * d.h, "mtp_eh_proj_all_gather", n) : n;
  Ref p = compute(gemm(d.tokens, d.h / d.t, 2 * d.h), "mtp_eh_proj", {x}, 2 * beta_ * d.tokens * d.h);
  Ref g = coll(d.sp ? CollType::ReduceScatter : CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * d.h,
               "mtp_eh_proj_output_gather", p);
  const Ref out = layer_fwd(unit, g);
  set_piece(Piece::Post, false);  // the MTP layer's output layer and loss: Megatron's mtp_post_process node
  return head_fwd(out);
}

Ref StageBuilder::mtp_bwd(int unit, Ref in) {
  const auto& d = d_;
  layer_ = unit;
  set_piece(Piece::Post, true);
  Ref h = head_bwd(in);
  Ref l = layer_bwd(unit, h);  // leaves layer_ = unit
  Ref b = column_parallel_bwd("mtp_eh_proj", d.tokens, d.h / d.t, 2 * d.h, l, d.sp);
  Ref n = compute(memop(ComputeCategory::Norm, 6 * beta_ * d.tokens_sp * d.h), "mtp_enorm_hnorm_bwd", {b});
  return embedding_bwd(n);
}

// Backward of a column-parallel linear Y = X W (X: m x k, W: k x n local): under sequence parallelism the
// sharded input is all-gathered again for the weight gradient (overlapped with the input-gradient GEMM)
// and the input gradient is reduce-scattered (overlapped with the weight-gradient GEMM); without it the
// input gradient is all-reduced asynchronously. Returns the ref the next op must wait on.
Ref StageBuilder::column_parallel_bwd(const std::string& name, int64_t m, int64_t n, int64_t k, Ref in,
                                      bool input_sharded, bool userbuffers) {
  Ref regather = input_sharded ? coll(CollType::AllGather, GroupKind::Tp, beta_ * m * k, name + "_input_all_gather", in)
                               : Ref{};
  Op dgo = gemm(m, k, n);
  if (tpo_bulk_dgrad_ && userbuffers) dgo.comm_sms = kBulkSms;  // bulk overlap: the input all-gather beside the dgrad
  // tp_comm_overlap_rs_dgrad: the input gradient's reduce-scatter pipelined with the dgrad GEMM, as in the forward.
  const Ref r = reduced_gemm(dgo, name + "_dgrad", in, 0, beta_ * m * k,
                             name + (d_.sp ? "_grad_reduce_scatter" : "_grad_all_reduce"), tpo_rs_dgrad_ && userbuffers);
  // bulk overlap: the dgrad reduce-scatter runs beside the wgrad GEMM
  wgrad(k, n, m, name + "_wgrad", {regather}, 1, tpo_bulk_wgrad_ && userbuffers ? kBulkSms : uint16_t{0});
  return r;
}

// A sequence-parallel all-gather feeding a column-parallel GEMM (qkv, fc1). With userbuffers' ring exchange the GEMM
// works on each chunk as it arrives: both run together and what follows the GEMM waits for both.
Ref StageBuilder::gathered_gemm(const std::string& ag_name, Op g, const std::string& name, Ref in, int64_t saved) {
  if (!d_.sp) return compute(g, name, {in}, saved);
  const Ref ag = coll(CollType::AllGather, GroupKind::Tp, beta_ * d_.tokens * d_.h, ag_name, in);
  if (!tpo_ag_) return compute(g, name, {ag}, saved);
  g.comm_sms = kRingExchangeSms;
  const Ref r = compute(g, name, {in}, saved);
  extra_deps_.push_back(ag);
  return r;
}

// A row-parallel GEMM (attention proj, fc2) whose output is reduce-scattered (all-reduced without SP). With
// userbuffers' pipelined split the GEMM runs in kPipelineSplits chunks, each reduce-scattered while the next computes:
// only the last chunk's reduce-scatter is left after the GEMM.
Ref StageBuilder::scattered_gemm(Op g, const std::string& name, Ref in, int64_t saved, const std::string& reduce_name) {
  return reduced_gemm(g, name, in, saved, beta_ * d_.tokens * d_.h, reduce_name, tpo_rs_);
}

// A GEMM whose output of `bytes` is reduce-scattered over TP (all-reduced without SP); `pipelined`: userbuffers'
// split, 3/4 of the bytes beside the GEMM on kPipelineSms more SMs and the last chunk after it.
Ref StageBuilder::reduced_gemm(Op g, const std::string& name, Ref in, int64_t saved, int64_t bytes,
                               const std::string& reduce_name, bool pipelined) {
  if (!pipelined) {
    const Ref o = compute(g, name, {in}, saved);
    return coll(d_.sp ? CollType::ReduceScatter : CollType::AllReduce, GroupKind::Tp, bytes, reduce_name, o);
  }
  g.comm_sms = static_cast<uint16_t>(g.comm_sms + kPipelineSms);
  coll(CollType::ReduceScatter, GroupKind::Tp, bytes - bytes / kPipelineSplits, reduce_name, in);
  const Ref o = compute(g, name, {in}, saved);
  return coll(CollType::ReduceScatter, GroupKind::Tp, bytes / kPipelineSplits, reduce_name + "_last_chunk", o);
}

// Backward of a row-parallel GEMM (attention proj, fc2) under SP: the output gradient is all-gathered for both the
// dgrad and the wgrad GEMM. With userbuffers' ring exchange the dgrad GEMM overlaps the all-gather; the wgrad waits.
Ref StageBuilder::grad_gathered_gemms(const std::string& ag_name, Op dgrad, const std::string& dgrad_name, int64_t wk,
                                       int64_t wn, const std::string& wgrad_name, Ref in) {
  const Ref g = d_.sp ? coll(CollType::AllGather, GroupKind::Tp, beta_ * d_.tokens * d_.h, ag_name, in) : in;
  if (tpo_ag_) dgrad.comm_sms = kRingExchangeSms;
  const Ref dg = compute(dgrad, dgrad_name, {tpo_ag_ ? in : g});
  wgrad(wk, wn, d_.tokens, wgrad_name, {g});
  return dg;
}

// ---------------------------------------------------------------- transformer layer

Ref StageBuilder::attention_fwd(Ref in) {
  const auto& d = d_;
  const auto& m = job_.model;
  Ref n = compute(memop(ComputeCategory::Norm, 2 * beta_ * d.tokens_sp * d.h), "input_layernorm", {in},
                  beta_ * d.tokens_sp * d.h);
  // The projections store the norm's output for their weight gradients, unless recompute_modules' layernorm discards
  // it (re-created at the start of this block's backward).
  const bool norm_kept = !rc(spec::RecomputeModule::Layernorm);
  const int64_t in_saved = norm_kept ? beta_ * (d.sp ? d.tokens_sp : d.tokens) * d.h : 0;
  Ref qkv;
  if (m.attention == spec::AttentionType::Mla) {
    // Megatron-Core MLA: the down-projections are replicated and run on the tokens this rank holds
    // (sequence-sharded under SP); only the compressed latents are all-gathered across TP.
    const auto& a = m.mla;
    const int64_t kv_lat = a.kv_lora_rank + a.qk_rope_head_dim;
    const int64_t kv_up = d.heads_loc * (a.qk_nope_head_dim + a.v_head_dim);
    Ref q;
    int64_t latent = kv_lat;
    if (a.q_lora_rank > 0) {
      compute(gemm(d.tokens_sp, a.q_lora_rank, d.h), "q_down_proj", {n}, norm_kept ? beta_ * d.tokens_sp * d.h : 0);
      latent += a.q_lora_rank;
    } else {
      Ref x = d.sp ? coll(CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * d.h, "q_proj_all_gather", n) : n;
      q = compute(gemm(d.tokens, d.q_width, d.h), "q_proj", {x}, in_saved);
    }
    // Same input tensor as q_down_proj / q_proj, which already stored it.
    Ref kd = compute(gemm(d.tokens_sp, kv_lat, d.h), "kv_down_proj", {n});
    Ref lat = d.sp ? coll(CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * latent, "mla_latent_all_gather", kd) : kd;
    if (a.q_lora_rank > 0) {
      compute(gemm(d.tokens, d.q_width, a.q_lora_rank), "q_up_proj", {lat}, beta_ * d.tokens * a.q_lora_rank);
    }
    qkv = compute(gemm(d.tokens, kv_up, a.kv_lora_rank), "kv_up_proj", {lat}, beta_ * d.tokens * a.kv_lora_rank);
  } else {
    qkv = gathered_gemm("qkv_all_gather", gemm(d.tokens, d.q_width + d.kv_width, d.h), "qkv_proj", n, in_saved);
  }
  // Flash attention, causal: half of the s_loc x s score matrix; stores Q, K, V and the softmax statistics.
  const double flops = 2.0 * d.b * d.heads_loc * d.s_loc * d.s * (d.d_qk + d.d_v) * 0.5;
  const int64_t attn_bytes = beta_ * d.tokens * (d.q_width + d.kv_width + d.attn_out_width);
  int64_t attn_saved = beta_ * d.tokens * (d.q_width + d.kv_width) + 4 * d.b * d.heads_loc * d.s_loc;
  // recompute_modules' mla_up_proj discards the up-projections' outputs (K, V and, with a query LoRA, Q) that the
  // attention core would keep; they are re-projected before its backward.
  if (rc(spec::RecomputeModule::MlaUpProj)) attn_saved -= mla_up_proj_bytes();
  // The core keeps its output O (bf16) for its backward. Without fp8 the projection's saved input is that same
  // tensor, counted there; under fp8 the projection keeps its own fp8 copy, so O is counted here as well.
  if (fp8_gemm(gemm(d.tokens, d.h, d.attn_out_width))) attn_saved += beta_ * d.tokens * d.attn_out_width;
  Ref core;
  if (d.c > 1) {
    core = cp_attention_fwd(qkv, flops, attn_bytes, attn_saved);
  } else if (job_.training.attention_backend == spec::AttentionBackend::Unfused) {
    core = unfused_attention_fwd(qkv, false);
  } else {
    core = compute(attention_op(flops, attn_bytes, d.s), "core_attention", {qkv}, attn_saved);
  }
  Ref r = scattered_gemm(gemm(d.tokens, d.h, d.attn_out_width), "attention_proj", core, beta_ * d.tokens * d.attn_out_width,
                         d.sp ? "attention_reduce_scatter" : "attention_all_reduce");
  return compute(memop(ComputeCategory::Elementwise, 4 * beta_ * d.tokens_sp * d.h), "attention_bias_dropout_add",
                 {r}, mask_bytes_ * d.tokens_sp * d.h);
}

// The transfer that brings ring step i+1 its K/V blocks (none after the last step): it waits for step i's blocks to
// have arrived (`kv`) and for step i-1 to have freed the buffer it fills (`before`).
Ref StageBuilder::ring_next_kv(const RingSteps& rs, int i, int64_t kv_block, Ref kv, Ref before, GroupKind ring) {
  if (i + 1 >= rs.n) return Ref{};
  return coll(CollType::SendRecv, ring, kv_block * rs.blocks(i + 1), "cp_kv_ring_exchange", kv, before);
}

// Context-parallel core attention, forward (docs/MODEL.md, "Context parallelism"). `flops` and `bytes` are the
// rank's whole share (its s/c queries against the keys they see); returns the op after which the output is ready.
Ref StageBuilder::cp_attention_fwd(Ref qkv, double flops, int64_t bytes, int64_t saved) {
  const ModelDims& d = d_;
  const int64_t kv_block = beta_ * d.tokens * d.kv_width;  // this rank's K and V
  switch (job_.parallelism.cp_comm_type) {
    case spec::CpCommType::AllGather: {
      // K/V of the other context ranks arrive while the local block is computed.
      Ref kv = coll(CollType::AllGather, GroupKind::Cp, kv_block * d.c, "cp_kv_all_gather", qkv);
      compute(attention_op(flops / d.c, bytes / d.c, d.s_loc), "core_attention_local", {qkv}, saved);
      return compute(attention_op(flops - flops / d.c, bytes - bytes / d.c, d.s), "core_attention_remote", {kv});
    }
    case spec::CpCommType::A2A: {
      // Ulysses: Q, K, V from sequence shards to head shards (all of the sequence, heads / c), attention, and the
      // output back; nothing overlaps the all-to-alls.
      Ref in = coll(CollType::AllToAll, GroupKind::Cp, beta_ * d.tokens * (d.q_width + d.kv_width), "cp_qkv_all_to_all",
                    qkv);
      Ref core = compute(attention_op(flops, bytes, d.s), "core_attention", {in}, saved);
      return coll(CollType::AllToAll, GroupKind::Cp, beta_ * d.tokens * d.attn_out_width, "cp_out_all_to_all", core);
    }
    case spec::CpCommType::A2AP2P: {
      // Hierarchical: Ulysses within the a adjacent CP ranks (sequence shards to head shards: a x the sequence, heads
      // / a, the same bytes), then ring attention over the c/a groups on those longer chunks, and the output back.
      Ref in = coll(CollType::AllToAll, GroupKind::HcpA2a, beta_ * d.tokens * (d.q_width + d.kv_width),
                    "cp_qkv_all_to_all", qkv);
      Ref core = ring_attention_fwd(in, flops, bytes, saved, GroupKind::HcpRing);
      return coll(CollType::AllToAll, GroupKind::HcpA2a, beta_ * d.tokens * d.attn_out_width, "cp_out_all_to_all", core);
    }
    case spec::CpCommType::P2P:
      break;
  }
  return ring_attention_fwd(qkv, flops, bytes, saved, GroupKind::Cp);
}

Ref StageBuilder::ring_attention_fwd(Ref qkv, double flops, int64_t bytes, int64_t saved, GroupKind ring) {
  const ModelDims& d = d_;
  // K and V of this rank's chunk of the ring: its tokens' K/V, or under a2a+p2p a x the tokens with heads / a.
  const int64_t kv_block = beta_ * d.tokens * d.kv_width;
  const int c = layout_.group_size(ring);
  const int64_t chunk = d.s_loc * (d.c / c);  // tokens per ring rank: the local sequence shard, x a under a2a+p2p
  // Ring attention with causal load balancing (each rank holds chunks r and 2c-1-r): c steps of equal work, the
  // first on the local K/V (the causal halves of both chunks' diagonals and one full block), then c - 1 half
  // blocks; the K/V block for step i+1 is sent on to the next CP rank while step i computes. Transformer Engine
  // double-buffers the blocks, so that transfer also waits for step i-1 to release the buffer it fills.
  // Above kMaxRingSteps ranks, g = ceil(c / kMaxRingSteps) consecutive steps are built as one op (g blocks' work,
  // g blocks moved at once): the same bandwidth and overlap, a bounded op count (a 1,024-rank ring would otherwise
  // issue 3,000 ops per layer).
  const RingSteps rs = ring_steps(c);
  Ref kv = qkv, core{}, before{};
  for (int i = 0; i < rs.n; ++i) {
    const int blocks = rs.blocks(i);
    const Ref next = ring_next_kv(rs, i, kv_block, kv, before, ring);
    before = core;
    core = compute(attention_op(flops / c * blocks, bytes / c * blocks, chunk), i == 0 ? "core_attention_ring_local" : "core_attention_ring_step", {kv}, i == 0 ? saved : 0);
    kv = next;
  }
  return core;
}

// Context-parallel core attention, backward; returns the op after which dQ, dK and dV are on their owner.
Ref StageBuilder::cp_attention_bwd(Ref dout, double flops, int64_t bytes) {
  const ModelDims& d = d_;
  const int64_t kv_block = beta_ * d.tokens * d.kv_width;
  // Flash-attention backward: 5 matmuls of the forward's 2, i.e. 2.5x its FLOPs, twice its operand traffic.
  switch (job_.parallelism.cp_comm_type) {
    case spec::CpCommType::AllGather: {
      Ref kv = coll(CollType::AllGather, GroupKind::Cp, kv_block * d.c, "cp_kv_all_gather", dout);
      Ref core = compute(attention_op(2.5 * flops, 2 * bytes, d.s), "core_attention_bwd", {kv});
      return coll(CollType::ReduceScatter, GroupKind::Cp, kv_block * d.c, "cp_dkv_reduce_scatter", core);
    }
    case spec::CpCommType::A2A: {
      Ref in = coll(CollType::AllToAll, GroupKind::Cp, beta_ * d.tokens * d.attn_out_width, "cp_out_grad_all_to_all",
                    dout);
      Ref core = compute(attention_op(2.5 * flops, 2 * bytes, d.s), "core_attention_bwd", {in});
      return coll(CollType::AllToAll, GroupKind::Cp, beta_ * d.tokens * (d.q_width + d.kv_width),
                  "cp_qkv_grad_all_to_all", core);
    }
    case spec::CpCommType::A2AP2P: {
      Ref in = coll(CollType::AllToAll, GroupKind::HcpA2a, beta_ * d.tokens * d.attn_out_width,
                    "cp_out_grad_all_to_all", dout);
      Ref dkv = ring_attention_bwd(in, flops, bytes, GroupKind::HcpRing);
      return coll(CollType::AllToAll, GroupKind::HcpA2a, beta_ * d.tokens * (d.q_width + d.kv_width),
                  "cp_qkv_grad_all_to_all", dkv);
    }
    case spec::CpCommType::P2P:
      break;
  }
  return ring_attention_bwd(dout, flops, bytes, GroupKind::Cp);
}

Ref StageBuilder::ring_attention_bwd(Ref dout, double flops, int64_t bytes, GroupKind ring) {
  const ModelDims& d = d_;
  const int64_t kv_block = beta_ * d.tokens * d.kv_width;
  const int c = layout_.group_size(ring);
  const int64_t chunk = d.s_loc * (d.c / c);
  // The ring again, c steps of equal work: each step computes with the K/V block that arrived; its dK/dV is added
  // to the partial sum that travels with the block and passed on (a small add beside the transfer, not modelled);
  // after the c-th pass every dK/dV is back with its owner. The steps do not wait for the dK/dV transfers.
  const RingSteps rs = ring_steps(c);
  Ref kv = dout, dkv{}, core{}, before{};
  for (int i = 0; i < rs.n; ++i) {
    const int blocks = rs.blocks(i);
    const Ref next = ring_next_kv(rs, i, kv_block, kv, before, ring);
    before = core;
    core = compute(attention_op(2.5 * flops / c * blocks, 2 * bytes / c * blocks, chunk), "core_attention_ring_bwd", {kv});
    dkv = coll(CollType::SendRecv, ring, kv_block * blocks, "cp_dkv_ring_exchange", core, dkv);
    kv = next;
  }
  return dkv;
}

// Megatron-LM's unfused core attention (before FlashAttention), forward: QKᵀ as a strided-batched GEMM over the
// micro-batch x local heads, fused scale-mask-softmax, dropout, ·V. The causal mask is applied to the full s x s
// scores, so none of it is skipped. Stored for backward: Q, K, V, the probabilities (β bytes), the dropout mask
// (1 byte) and the dropped probabilities (β): 5·a·s²·b bytes per layer at β = 2 (Korthikanti et al. 2022), unless
// selective recompute re-creates them in backward.
Ref StageBuilder::unfused_attention_fwd(Ref qkv, bool recompute) {
  const auto& d = d_;
  const int64_t batch = d.b * d.heads_loc;
  const int64_t scores = batch * d.s_loc * d.s;
  const bool keep = !recompute && !rc(spec::RecomputeModule::CoreAttn);
  Ref qk = compute(batched_gemm(batch, d.s_loc, d.s, d.d_qk), "attention_scores", {qkv},
                   recompute ? 0 : beta_ * d.tokens * (d.q_width + d.kv_width));
  Ref sm = compute(memop(ComputeCategory::Elementwise, 2 * beta_ * scores), "scale_mask_softmax", {qk},
                   keep ? beta_ * scores : 0);
  Ref dr = compute(memop(ComputeCategory::Elementwise, (2 * beta_ + 1) * scores), "attention_dropout", {sm},
                   keep ? (beta_ + 1) * scores : 0);
  if (recompute) return dr;  // the backward needs the probabilities, not the context again
  return compute(batched_gemm(batch, d.s_loc, d.d_v, d.s), "attention_context", {dr});
}

// Its backward: dV = Pᵀ·dO and dP = dO·Vᵀ, dropout and softmax backward over the s x s scores, dQ = dS·K and
// dK = dSᵀ·Q: twice the forward's GEMM FLOPs. Selective recompute first re-runs the scores, softmax and dropout.
Ref StageBuilder::unfused_attention_bwd(Ref in) {
  const auto& d = d_;
  const int64_t batch = d.b * d.heads_loc;
  const int64_t scores = batch * d.s_loc * d.s;
  if (rc(spec::RecomputeModule::CoreAttn)) in = recomputing([&] { return unfused_attention_fwd(in, true); });
  compute(batched_gemm(batch, d.s, d.d_v, d.s_loc), "attention_context_dgrad_v", {in});
  compute(batched_gemm(batch, d.s_loc, d.s, d.d_v), "attention_context_dgrad_probs", {});
  compute(memop(ComputeCategory::Elementwise, (2 * beta_ + 1) * scores), "attention_dropout_bwd", {});
  compute(memop(ComputeCategory::Elementwise, 3 * beta_ * scores), "scale_mask_softmax_bwd", {});
  compute(batched_gemm(batch, d.s_loc, d.d_qk, d.s), "attention_scores_dgrad_q", {});
  return compute(batched_gemm(batch, d.s, d.d_qk, d.s_loc), "attention_scores_dgrad_k", {});
}

Ref StageBuilder::attention_bwd(Ref in) {
  const auto& d = d_;
  const auto& m = job_.model;
  // Output-discarding recompute fires when the gradient reaches the block's output (Megatron-Core's
  // CheckpointWithoutOutput hook), i.e. first in its backward.
  layernorm_recompute("input_layernorm_recompute", in);
  Ref b = compute(memop(ComputeCategory::Elementwise, 3 * beta_ * d.tokens_sp * d.h), "attention_bias_dropout_add_bwd", {in});
  const Ref dg = grad_gathered_gemms("attention_proj_grad_all_gather", gemm(d.tokens, d.attn_out_width, d.h),
                                     "attention_proj_dgrad", d.attn_out_width, d.h, "attention_proj_wgrad", b);
  const double flops = 2.0 * d.b * d.heads_loc * d.s_loc * d.s * (d.d_qk + d.d_v) * 0.5;
  const int64_t attn_bytes = beta_ * d.tokens * (d.q_width + d.kv_width + d.attn_out_width);
  Ref dkv{};  // the op after which dQ, dK and dV are ready
  if (rc(spec::RecomputeModule::MlaUpProj)) {
    // The up-projections (and RoPE) re-run on the stored latents before the attention core's backward needs Q, K, V.
    const auto& a = m.mla;
    saving_outputs_ = true;  // Q, K and V re-created for the attention core, stored in bf16
    recomputing([&] {
      if (a.q_lora_rank > 0)
        compute(gemm(d.tokens, d.q_width, a.q_lora_rank), "q_up_proj_recompute", {dg}, beta_ * d.tokens * d.q_width);
      compute(gemm(d.tokens, d.heads_loc * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank), "kv_up_proj_recompute",
              {dg}, beta_ * d.tokens * d.kv_width);
    });
    saving_outputs_ = false;
  }
  if (job_.training.attention_backend == spec::AttentionBackend::Unfused) {
    dkv = unfused_attention_bwd(dg);
  } else {
    if (rc(spec::RecomputeModule::CoreAttn)) {
      // Megatron's selective recompute re-runs the core attention forward (with its K/V exchange) before its backward.
      recomputing([&] {
        if (d.c > 1) {
          cp_attention_fwd(dg, flops, attn_bytes, 0);
        } else {
          compute(attention_op(flops, attn_bytes, d.s), "core_attention_recompute", {dg});
        }
      });
    }
    if (d.c > 1) {
      dkv = cp_attention_bwd(dg, flops, attn_bytes);
    } else {
      // Flash-attention backward: 5 matmuls of the forward's 2, i.e. 2.5x its FLOPs.
      dkv = compute(attention_op(2.5 * flops, 2 * attn_bytes, d.s), "core_attention_bwd", {dg});
    }
  }
  Ref r;
  if (m.attention == spec::AttentionType::Mla) {
    const auto& a = m.mla;
    const int64_t kv_lat = a.kv_lora_rank + a.qk_rope_head_dim;
    const int64_t kv_up = d.heads_loc * (a.qk_nope_head_dim + a.v_head_dim);
    compute(gemm(d.tokens, a.kv_lora_rank, kv_up), "kv_up_proj_dgrad", {dkv});
    wgrad(a.kv_lora_rank, kv_up, d.tokens, "kv_up_proj_wgrad");
    Ref q{};
    int64_t latent = kv_lat;
    if (a.q_lora_rank > 0) {
      compute(gemm(d.tokens, a.q_lora_rank, d.q_width), "q_up_proj_dgrad", {});
      wgrad(a.q_lora_rank, d.q_width, d.tokens, "q_up_proj_wgrad");
      latent += a.q_lora_rank;
    } else {
      q = column_parallel_bwd("q_proj", d.tokens, d.q_width, d.h, pb_.last(Stream::Compute), d.sp);
    }
    // Latent gradients are partial sums over the TP ranks' heads: reduce-scattered back to the sequence
    // shards under SP (all-reduced without SP) before the replicated down-projections' backward.
    Ref lat = coll(d.sp ? CollType::ReduceScatter : CollType::AllReduce, GroupKind::Tp, beta_ * d.tokens * latent,
                   "mla_latent_grad_reduce", pb_.last(Stream::Compute));
    compute(gemm(d.tokens_sp, d.h, kv_lat), "kv_down_proj_dgrad", {lat});
    wgrad(d.h, kv_lat, d.tokens_sp, "kv_down_proj_wgrad");
    if (a.q_lora_rank > 0) {
      compute(gemm(d.tokens_sp, d.h, a.q_lora_rank), "q_down_proj_dgrad", {});
      wgrad(d.h, a.q_lora_rank, d.tokens_sp, "q_down_proj_wgrad");
    }
    r = q.count ? q : pb_.last(Stream::Compute);
  } else {
    r = column_parallel_bwd("qkv_proj", d.tokens, d.q_width + d.kv_width, d.h, dkv, d.sp);
  }
  return compute(memop(ComputeCategory::Norm, 3 * beta_ * d.tokens_sp * d.h), "input_layernorm_bwd", {r});
}

Ref StageBuilder::mlp_fwd(Ref in) {
  const auto& d = d_;
  set_piece(Piece::Mlp, false);
  Ref n = compute(memop(ComputeCategory::Norm, 2 * beta_ * d.tokens_sp * d.h), "pre_mlp_layernorm", {in},
                  beta_ * d.tokens_sp * d.h);
  Ref r = mlp_body_fwd(n);
  return compute(memop(ComputeCategory::Elementwise, 4 * beta_ * d.tokens_sp * d.h), "mlp_bias_dropout_add", {r},
                 mask_bytes_ * d.tokens_sp * d.h);
}

// The dense MLP after its norm: fc1, activation, fc2 and the TP reduction. Under recompute_modules' mlp its forward
// keeps only fc1's input (the checkpoint) and the whole body, communication included, re-runs before its backward.
Ref StageBuilder::mlp_body_fwd(Ref n) {
  const auto& d = d_;
  const bool keep = !discarding(spec::RecomputeModule::Mlp);
  const bool keep_input = stores_body_input(spec::RecomputeModule::Mlp);
  Ref f1 = gathered_gemm("fc1_all_gather", gemm(d.tokens, d.ffn_in / d.t, d.h), "fc1", n,
                         keep_input ? beta_ * (d.sp ? d.tokens_sp : d.tokens) * d.h : 0);
  Ref a = compute(memop(ComputeCategory::Elementwise, beta_ * d.tokens * (d.ffn_in + d.ffn) / d.t),
                  job_.model.activation == spec::Activation::Swiglu ? "swiglu" : "gelu", {f1},
                  keep ? beta_ * d.tokens * d.ffn_in / d.t : 0);
  return scattered_gemm(gemm(d.tokens, d.h, d.ffn / d.t), "fc2", a, keep ? beta_ * d.tokens * d.ffn / d.t : 0,
                        d.sp ? "mlp_reduce_scatter" : "mlp_all_reduce");
}

Ref StageBuilder::mlp_bwd(Ref in) {
  const auto& d = d_;
  set_piece(Piece::Mlp, true);
  layernorm_recompute("pre_mlp_layernorm_recompute", in);
  Ref b = compute(memop(ComputeCategory::Elementwise, 3 * beta_ * d.tokens_sp * d.h), "mlp_bias_dropout_add_bwd", {in});
  // The checkpoint re-runs when the gradient reaches its output.
  if (rc(spec::RecomputeModule::Mlp)) recomputing([&] { mlp_body_fwd(b); });
  grad_gathered_gemms("fc2_grad_all_gather", gemm(d.tokens, d.ffn / d.t, d.h), "fc2_dgrad", d.ffn / d.t, d.h, "fc2_wgrad", b);
  Ref a = compute(memop(ComputeCategory::Elementwise, beta_ * d.tokens * (2 * d.ffn_in + d.ffn) / d.t),
                  job_.model.activation == spec::Activation::Swiglu ? "swiglu_bwd" : "gelu_bwd", {});
  Ref r = column_parallel_bwd("fc1", d.tokens, d.ffn_in / d.t, d.h, a, d.sp);
  return compute(memop(ComputeCategory::Norm, 3 * beta_ * d.tokens_sp * d.h), "pre_mlp_layernorm_bwd", {r});
}

// MoE MLP with Megatron-Core's all-to-all token dispatcher: router, permutation, all-to-all over the
// expert group, all-gather over the (expert-)tensor group, grouped expert GEMMs, and the way back. The
// shared expert runs after the routed experts on the same stream (Megatron's default, without
// moe_shared_expert_overlap).
Ref StageBuilder::moe_fwd(Ref in) {
  const auto& d = d_;
  set_piece(Piece::Pre, false);
  Ref n = compute(memop(ComputeCategory::Norm, 2 * beta_ * d.tokens_sp * d.h), "pre_mlp_layernorm", {in},
                  beta_ * d.tokens_sp * d.h);
  // Under the combined 1F1B schedule the shared expert runs in the pre-dispatch node, before the router (Megatron's
  // submodule_pre_dispatch_forward), and its output joins in the combine node.
  const Ref shared = ep_overlap_ && job_.model.moe->shared_expert_ffn_hidden_size > 0 ? shared_expert_fwd(n) : Ref{};
  Ref out = moe_body_fwd(n);
  set_piece(Piece::Combine, false);
  const Ref r = compute(memop(ComputeCategory::Elementwise, 4 * beta_ * d.tokens_sp * d.h), "mlp_bias_dropout_add",
                        {out, shared}, mask_bytes_ * d.tokens_sp * d.h);
  combine_node_stream(false);
  return r;
}

// The MoE layer after its norm. Under recompute_modules' moe the forward keeps only the router's input (the
// checkpoint) and the whole layer (router, dispatch, experts, combine, shared experts) re-runs before its backward;
// moe_act keeps the experts' activation output out of memory (re-created before fc2's backward).
Ref StageBuilder::moe_body_fwd(Ref n) {
  const auto& d = d_;
  const auto& moe = *job_.model.moe;
  const int64_t E = moe.num_experts, e_loc = E / d.e;
  const MoeTokens mt = moe_tokens();
  const int64_t routed = mt.routed;
  const int64_t fe = moe.ffn_hidden_size, fe_in = ffn_in(fe);
  const bool keep = !discarding(spec::RecomputeModule::Moe);
  const bool keep_input = stores_body_input(spec::RecomputeModule::Moe);
  const bool keep_act = keep && !discarding(spec::RecomputeModule::MoeAct);
  const bool shared = moe.shared_expert_ffn_hidden_size > 0, overlap = shared && moe.shared_expert_overlap;
  // The router (and the shared expert) keep the normalized input for their weight gradients.
  Ref rt = bf16_gemms([&] {
    return compute(gemm(d.tokens_sp, E, d.h), "router", {n}, keep_input ? beta_ * d.tokens_sp * d.h : 0);
  });
  Ref tk = compute(memop(ComputeCategory::Elementwise, 8 * d.tokens_sp * E), "router_topk", {rt}, keep ? 4 * d.tokens_sp * E : 0);
  Ref g = moe_to_experts(tk, false);
  set_piece(Piece::Mlp, false);
  // moe_shared_expert_overlap: the shared expert's fc1 is issued while the dispatch runs, its fc2 while the combine runs.
  Ref sa = overlap ? shared_expert_fc1_fwd(n) : Ref{};
  g = moe_expert_order(g, false);
  const int64_t per_expert = std::max<int64_t>(1, routed / e_loc);
  Ref f1 = compute(gemm(per_expert, fe_in / d.et, d.h, static_cast<int>(e_loc)), "expert_fc1", {g},
                   keep ? beta_ * routed * d.h : 0);
  Ref a = compute(memop(ComputeCategory::Elementwise, beta_ * routed * (fe_in + fe) / d.et), "expert_act", {f1},
                  keep ? beta_ * routed * fe_in / d.et : 0);
  Ref f2 = compute(gemm(per_expert, d.h, fe / d.et, static_cast<int>(e_loc)), "expert_fc2", {a},
                   keep_act ? beta_ * routed * fe / d.et : 0);
  f2 = moe_token_order(f2, false);
  // Under the overlap the shared fc2 is queued before the combine's unpermute, so it computes while the combine moves.
  const Ref shared_out = overlap ? shared_expert_fc2_fwd(sa) : Ref{};
  Ref out = moe_from_experts(f2, false);
  if (overlap) {
    extra_deps_.push_back(shared_out);  // the layer's output waits for the shared expert too
    return out;
  }
  return shared && !ep_overlap_ ? shared_expert_fwd(out) : out;
}

StageBuilder::MoeTokens StageBuilder::moe_tokens() const {
  const auto& d = d_;
  const int64_t k = job_.model.moe->topk;
  MoeTokens t;
  t.routed_sp = static_cast<int64_t>(static_cast<double>(d.tokens_sp * k) * cf_);
  // The expert-tensor group's ranks hold different tokens (their sequence shards under SP, or other data-parallel
  // ranks' tokens when it is not the TP group), gathered before the experts; with expert_tensor = tensor and no SP
  // every rank of the group already holds the same tokens. With expert tensor parallel size 1 (parallel folding) each
  // rank's experts see only what the dispatch brought.
  t.etp = d.et == d.t ? GroupKind::Tp : GroupKind::Etp;
  t.tp_stage = d.et > 1 && (d.sp || d.et != d.t);
  const int64_t group_tokens = d.tokens_sp * (t.tp_stage ? d.et : 1);
  t.routed = static_cast<int64_t>(static_cast<double>(group_tokens * k) * cf_);
  t.gathered = group_tokens * d.e;
  return t;
}

// alltoall: permute the routed copies, all-to-all over the expert group, all-gather over the expert-tensor group.
// allgather: every token of the expert-tensor x expert group gathered (TP stage, then EP: the bytes of one all-gather
// over both), the local experts' tokens picked out. flex (DeepEP): the fused all-to-all (its receiver permutes in
// moe_expert_order).
Ref StageBuilder::moe_to_experts(Ref dep, bool backward) {
  const auto& d = d_;
  const MoeTokens mt = moe_tokens();
  const auto type = job_.model.moe->token_dispatcher;
  const std::string sfx = backward ? "_bwd" : "";
  const char* permute = backward ? "token_unpermute_bwd" : "token_permute";
  if (type == spec::TokenDispatcher::AllGather) {
    Ref x = mt.tp_stage ? coll(CollType::AllGather, mt.etp, beta_ * d.tokens_sp * d.et * d.h,
                               "moe_tp_all_gather" + sfx, dep) : dep;
    x = coll(CollType::AllGather, GroupKind::Ep, beta_ * mt.gathered * d.h,
             backward ? "moe_combine_all_gather_bwd" : "moe_dispatch_all_gather", x);
    if (!backward) x = moe_host_sync(x, {});
    return compute(permute_gather(mt.gathered + mt.routed, backward), permute, {x});
  }
  Ref x = dep;
  // The alltoall dispatcher gathers every rank's tokens-per-expert counts over the expert group for the split sizes.
  const Ref counts = type == spec::TokenDispatcher::AllToAll && !backward
                         ? coll(CollType::AllGather, GroupKind::Ep, 8 * int64_t{job_.model.moe->num_experts} * d.e,
                                "moe_token_count_all_gather", dep)
                         : dep;
  if (type == spec::TokenDispatcher::AllToAll) x = compute(permute_gather(2 * mt.routed_sp, backward), permute, {dep});
  if (!backward) x = moe_host_sync(x, counts);
  set_piece(backward ? Piece::Combine : Piece::Dispatch, backward);
  x = coll(CollType::AllToAll, GroupKind::Ep, ep_all_to_all_bytes(),
           backward ? "moe_combine_all_to_all_bwd" : "moe_dispatch_all_to_all", x);
  combine_node_stream(false);
  return mt.tp_stage ? coll(CollType::AllGather, mt.etp, beta_ * mt.routed * d.h, "moe_tp_all_gather" + sfx, x) : x;
}

// Message size S of one EP all-to-all. The alltoall dispatcher sends one copy per routed expert (the permuted rows).
// DeepEP (flex) sends a token once per destination rank inside a node and, across nodes, once per destination node
// (forwarded over NVLink there): S is set so that the all-to-all's inter-node share, (n - K)/n S, carries the expected
// remote nodes a token reaches (or, within one node, its share (n - 1)/n S the remote ranks); moe_routing.hpp.
int64_t StageBuilder::ep_all_to_all_bytes() const {
  const MoeTokens mt = moe_tokens();
  const int64_t per_expert = beta_ * mt.routed_sp * d_.h;
  const auto& moe = *job_.model.moe;
  if (moe.token_dispatcher != spec::TokenDispatcher::Flex) return per_expert;
  const auto g = cost::normalized(layout_.geometry(GroupKind::Ep, layout_.group_id(GroupKind::Ep, layout_.rank_of({0, 0, 0, stage_}))));
  const ExpertRouting r{moe.num_experts, moe.topk, moe.router_num_groups, moe.router_group_topk};
  double copies = 0;  // per token, in units of the all-to-all's message
  if (g.nodes > 1) {
    const double remote_nodes = expected_blocks_reached(r, g.nodes) * (g.nodes - 1) / g.nodes;
    copies = remote_nodes * g.ranks / (g.ranks - g.ranks_per_node);
  } else {
    copies = expected_blocks_reached(r, g.ranks);
  }
  const double bytes = static_cast<double>(beta_ * d_.tokens_sp * d_.h) * cf_ * copies;
  return std::min(per_expert, static_cast<int64_t>(std::llround(bytes)));
}

// Megatron-Core's dropless dispatchers bring the tokens-per-expert counts to the host once per forward (alltoall: the
// all-to-all's split sizes, `cuda_sync_point`; allgather: the grouped GEMM's per-expert sizes; flex: DeepEP's CPU wait
// for the received count). The host waits for the device there, and the GPU then idles while the host issues the
// kernels that follow, until it is ahead again. Measured on an H100 with eager PyTorch at one EP rank's share of
// Qwen3-30B-A3B and Mixtral 8x7B (data/measurements/h100-sxm/host.csv, eager_sync - eager per layer): 40-120 us
// without autograd, 110-150 us with it; Megatron's dispatcher runs more Python after the sync, so 100 us is at the low
// end. Buffers padded to the capacity have static sizes: no synchronisation.
Ref StageBuilder::moe_host_sync(Ref dep, Ref dep2) {
  constexpr double kHostSyncUs = 100;
  if (job_.model.moe->pad_to_capacity) return dep;
  Op stall;
  stall.category = ComputeCategory::Host;
  stall.duration_ns = std::llround(kHostSyncUs * 1e3);
  stall.host_sync = true;  // the host issue model waits here for the GPU (cost/host_issue.hpp)
  return compute(stall, "moe_host_sync", {dep, dep2});  // a default Ref (count 0) waits for nothing
}

// After the dispatch: flex permutes the received tokens into expert order; alltoall sorts the received rows by local
// expert when the rank holds more than one (a copy of every row: split + cat unfused, Transformer Engine's sort-chunks
// kernel fused). Megatron-Core issues the shared expert's fc1 (under the overlap) before this.
Ref StageBuilder::moe_expert_order(Ref x, bool backward) {
  const MoeTokens mt = moe_tokens();
  const auto type = job_.model.moe->token_dispatcher;
  if (type == spec::TokenDispatcher::Flex)
    return compute(permute_gather(2 * mt.routed, backward), backward ? "token_unpermute_bwd" : "token_permute", {x});
  if (!sorts_chunks()) return x;
  return compute(memop(ComputeCategory::Elementwise, 2 * beta_ * mt.routed * d_.h),
                 backward ? "tokens_unsort_chunks_bwd" : "tokens_sort_chunks", {x});
}

// Before the combine: the reverse of moe_expert_order (flex unpermutes locally; alltoall restores the received order).
Ref StageBuilder::moe_token_order(Ref x, bool backward) {
  const MoeTokens mt = moe_tokens();
  const auto type = job_.model.moe->token_dispatcher;
  if (type == spec::TokenDispatcher::Flex)
    return compute(permute_scatter(2 * mt.routed), backward ? "token_permute_bwd" : "token_unpermute", {x});
  if (!sorts_chunks()) return x;
  return compute(memop(ComputeCategory::Elementwise, 2 * beta_ * mt.routed * d_.h),
                 backward ? "tokens_sort_chunks_bwd" : "tokens_unsort_chunks", {x});
}

Ref StageBuilder::moe_from_experts(Ref dep, bool backward) {
  const auto& d = d_;
  const MoeTokens mt = moe_tokens();
  const auto type = job_.model.moe->token_dispatcher;
  const std::string sfx = backward ? "_bwd" : "";
  const char* unpermute = backward ? "token_permute_bwd" : "token_unpermute";
  if (type == spec::TokenDispatcher::AllGather) {
    // The reduce-scatter over the expert-tensor x expert group also sums the TP-split experts' partial outputs.
    Ref x = compute(permute_scatter(mt.routed + mt.gathered), unpermute, {dep});
    x = coll(CollType::ReduceScatter, GroupKind::Ep, beta_ * mt.gathered * d.h,
             backward ? "moe_dispatch_reduce_scatter_bwd" : "moe_combine_reduce_scatter", x);
    return mt.tp_stage ? coll(CollType::ReduceScatter, mt.etp, beta_ * d.tokens_sp * d.et * d.h,
                              "moe_tp_reduce_scatter" + sfx, x) : x;
  }
  set_piece(backward ? Piece::Dispatch : Piece::Combine, backward);
  Ref x = d.et == 1     ? dep
          : mt.tp_stage ? coll(CollType::ReduceScatter, mt.etp, beta_ * mt.routed * d.h, "moe_tp_reduce_scatter" + sfx, dep)
                        : coll(CollType::AllReduce, GroupKind::Tp, beta_ * mt.routed * d.h, "moe_tp_all_reduce" + sfx, dep);
  x = coll(CollType::AllToAll, GroupKind::Ep, ep_all_to_all_bytes(),
           backward ? "moe_dispatch_all_to_all_bwd" : "moe_combine_all_to_all", x);
  set_piece(backward ? Piece::Pre : Piece::Combine, backward);  // the permutation's backward: pre-dispatch node
  if (!backward) combine_node_stream(true);  // until the layer's bias-dropout-add (moe_fwd)
  if (type == spec::TokenDispatcher::Flex) return x;
  return compute(permute_scatter(2 * mt.routed_sp), unpermute, {x});
}

// The alltoall dispatcher sorts the rows it received by local expert (and back before the combine) when a rank holds
// more than one expert: a copy of every row each way (split + cat unfused; Transformer Engine's sort-chunks fused).
bool StageBuilder::sorts_chunks() const {
  return job_.model.moe->token_dispatcher == spec::TokenDispatcher::AllToAll && job_.model.moe->num_experts / d_.e > 1;
}

// Permute forward and unpermute backward: rows gathered by index (read + write: `rows` counts both). Unfused, the
// unpermute's backward also multiplies the gathered gradient by the routing probabilities and reduces the gradient
// of the probabilities (reading the expert output again): three passes over the rows, as measured on the H100
// (data/measurements/h100-sxm/moe_ops.csv: 2.5-2.8 passes at the elementwise rate).
Op StageBuilder::permute_gather(int64_t rows, bool unpermute_backward) const {
  const bool unfused = unpermute_backward && !job_.model.moe->permute_fusion;
  return memop(ComputeCategory::Elementwise, (unfused ? 3 : 1) * beta_ * rows * d_.h);
}

// Unpermute forward and permute backward: rows added into the token order. Unfused (Megatron-Core's default) these
// are atomic scatter_add_ / index_add_ kernels; Transformer Engine's fused kernels gather and sum instead.
Op StageBuilder::permute_scatter(int64_t rows) const {
  return memop(job_.model.moe->permute_fusion ? ComputeCategory::Elementwise : ComputeCategory::ScatterAdd,
               beta_ * rows * d_.h);
}

// The shared expert, after the routed experts on the same stream (without moe_shared_expert_overlap).
// recompute_modules' shared_experts (or moe) keeps nothing of it.
Ref StageBuilder::shared_expert_fwd(Ref out) { return shared_expert_fc2_fwd(shared_expert_fc1_fwd(out)); }

Ref StageBuilder::shared_expert_fc1_fwd(Ref in) {
  const auto& d = d_;
  const auto& moe = *job_.model.moe;
  const int64_t fs = moe.shared_expert_ffn_hidden_size, fs_in = ffn_in(fs);
  const bool keep = !discarding(spec::RecomputeModule::Moe) && !discarding(spec::RecomputeModule::SharedExperts);
  Ref sx = d.sp ? coll(CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * d.h, "shared_expert_all_gather", in) : in;
  Ref s1 = compute(gemm(d.tokens, fs_in / d.t, d.h), "shared_expert_fc1", {sx});
  return compute(memop(ComputeCategory::Elementwise, beta_ * d.tokens * (fs_in + fs) / d.t), "shared_expert_act", {s1},
                 keep ? beta_ * d.tokens * fs_in / d.t : 0);
}

Ref StageBuilder::shared_expert_fc2_fwd(Ref act) {
  const auto& d = d_;
  const int64_t fs = job_.model.moe->shared_expert_ffn_hidden_size;
  const bool keep = !discarding(spec::RecomputeModule::Moe) && !discarding(spec::RecomputeModule::SharedExperts);
  Ref s2 = compute(gemm(d.tokens, d.h, fs / d.t), "shared_expert_fc2", {act}, keep ? beta_ * d.tokens * fs / d.t : 0);
  return coll(d.sp ? CollType::ReduceScatter : CollType::AllReduce, GroupKind::Tp, beta_ * d.tokens * d.h,
              "shared_expert_reduce", s2);
}

// The shared expert's backward from the layer's output gradient; `done` = the op after which its input gradient is
// ready (recompute first under recompute_modules' shared_experts).
void StageBuilder::shared_expert_bwd(Ref grad, Ref& done) {
  const auto& d = d_;
  const auto& moe = *job_.model.moe;
  const int64_t fs = moe.shared_expert_ffn_hidden_size, fs_in = ffn_in(fs);
  if (rc(spec::RecomputeModule::SharedExperts) && !rc(spec::RecomputeModule::Moe)) {
    recomputing([&] { shared_expert_fwd(grad); });
  }
  Ref sg = d.sp ? coll(CollType::AllGather, GroupKind::Tp, beta_ * d.tokens * d.h, "shared_expert_grad_all_gather", grad) : grad;
  compute(gemm(d.tokens, fs / d.t, d.h), "shared_expert_fc2_dgrad", {sg});
  wgrad(fs / d.t, d.h, d.tokens, "shared_expert_fc2_wgrad");
  Ref sa = compute(memop(ComputeCategory::Elementwise, beta_ * d.tokens * (2 * fs_in + fs) / d.t), "shared_expert_act_bwd", {});
  done = column_parallel_bwd("shared_expert_fc1", d.tokens, fs_in / d.t, d.h, sa, d.sp);
}

Ref StageBuilder::moe_bwd(Ref in) {
  const auto& d = d_;
  const auto& moe = *job_.model.moe;
  const int64_t E = moe.num_experts, e_loc = E / d.e;
  const int64_t routed = moe_tokens().routed;
  const int64_t fe = moe.ffn_hidden_size, fe_in = ffn_in(fe);
  const bool shared_expert = moe.shared_expert_ffn_hidden_size > 0;
  set_piece(Piece::Combine, true);
  layernorm_recompute("pre_mlp_layernorm_recompute", in);
  combine_node_stream(true);  // the combine node's backward, until its all-to-all (moe_to_experts)
  Ref b = compute(memop(ComputeCategory::Elementwise, 3 * beta_ * d.tokens_sp * d.h), "mlp_bias_dropout_add_bwd", {in});
  // recompute_modules' moe: the whole layer re-runs (its dispatch and combine included) when the gradient reaches its
  // output.
  if (rc(spec::RecomputeModule::Moe)) recomputing([&] { moe_body_fwd(b); });
  Ref shared{};
  // Created last in forward, autograd runs the shared expert first; with moe_shared_expert_overlap it runs beside the
  // combine's gradient exchange instead.
  // Under the combined 1F1B schedule it belongs to the pre-dispatch node: its backward comes after the dispatch's.
  if (shared_expert && !moe.shared_expert_overlap && !ep_overlap_) shared_expert_bwd(b, shared);
  Ref g = moe_to_experts(b, true);
  if (shared_expert && moe.shared_expert_overlap) shared_expert_bwd(b, shared);
  set_piece(Piece::Mlp, true);
  g = moe_expert_order(g, true);
  const int64_t per_expert = std::max<int64_t>(1, routed / e_loc);
  const int batch = static_cast<int>(e_loc);
  // The grouped MLP's backward (input and weight gradients) completes before its input's collectives run.
  if (rc(spec::RecomputeModule::MoeAct) && !rc(spec::RecomputeModule::Moe)) {
    // Output-discarding recompute of the experts' activation, for fc2's weight gradient.
    recomputing([&] {
      compute(memop(ComputeCategory::Elementwise, beta_ * routed * (fe_in + fe) / d.et), "expert_act_recompute", {g},
              beta_ * routed * fe / d.et);
    });
  }
  // delay_wgrad_compute: the experts' weight gradients are issued after their input gradients, and the dispatch's
  // backward all-to-all waits for the input gradients only (it runs beside the weight-gradient GEMMs).
  const bool delay = job_.training.delay_wgrad_compute;
  compute(gemm(per_expert, fe / d.et, d.h, batch), "expert_fc2_dgrad", {g});
  if (!delay) wgrad(fe / d.et, d.h, per_expert, "expert_fc2_wgrad", {}, batch);
  compute(memop(ComputeCategory::Elementwise, beta_ * routed * (2 * fe_in + fe) / d.et), "expert_act_bwd", {});
  compute(gemm(per_expert, d.h, fe_in / d.et, batch), "expert_fc1_dgrad", {});
  if (!delay) wgrad(d.h, fe_in / d.et, per_expert, "expert_fc1_wgrad", {}, batch);
  const Ref input_grad = moe_token_order(pb_.last(Stream::Compute), true);
  if (delay) {
    wgrad(fe / d.et, d.h, per_expert, "expert_fc2_wgrad", {}, batch);
    wgrad(d.h, fe_in / d.et, per_expert, "expert_fc1_wgrad", {}, batch);
  }
  Ref pm = moe_from_experts(input_grad, true);
  Ref rt = bf16_gemms([&] {
    const Ref dg = compute(gemm(d.tokens_sp, d.h, E), "router_dgrad", {pm});
    wgrad(d.h, E, d.tokens_sp, "router_wgrad");
    return dg;
  });
  if (shared_expert && !moe.shared_expert_overlap && ep_overlap_) shared_expert_bwd(b, shared);
  return compute(memop(ComputeCategory::Norm, 3 * beta_ * d.tokens_sp * d.h), "pre_mlp_layernorm_bwd", {rt, shared});
}

// Full recompute of this layer (recompute_method: uniform = every layer; block = the first recompute_num_layers of
// the model chunk).
bool StageBuilder::recomputed(int layer) const {
  const auto& tr = job_.training;
  if (tr.recompute != Recompute::Full) return false;
  if (tr.recompute_method == spec::RecomputeMethod::Uniform) return true;
  return layer - chunk_first_layer_[chunk_] < tr.recompute_num_layers;
}

Ref StageBuilder::layer_fwd(int layer, Ref in) {
  layer_ = layer;
  const bool checkpointed = recomputed(layer) && phase_ == Phase::Forward;
  if (checkpointed) {
    // Full recompute keeps only the checkpoint and re-runs the layer in backward: the layer input, under uniform
    // grouping only the first layer's of each group of recompute_num_layers.
    storing_ = false;
    const auto& tr = job_.training;
    const bool group_start = tr.recompute_method == spec::RecomputeMethod::Block ||
                             (layer - chunk_first_layer_[chunk_]) % tr.recompute_num_layers == 0;
    // --distribute-saved-activations splits the checkpoint over the TP ranks (without SP each holds it whole).
    const int64_t split = tr.distribute_saved_activations ? d_.t : 1;
    pending_alloc_ = group_start ? beta_ * d_.tokens_sp * d_.h / split : 0;
  }
  Ref a = attention_fwd(in);
  Ref out = job_.model.is_moe_layer(layer) ? moe_fwd(a) : mlp_fwd(a);
  storing_ = true;
  // The layer's working buffers peak at its end, when all it stores is held (working_memory.hpp).
  working_buffer(next_op() - 1, kLayerForwardWorkingBTH * beta_ * d_.tokens * d_.h);
  return out;
}

Ref StageBuilder::layer_bwd(int layer, Ref in) {
  layer_ = layer;
  if (recomputed(layer)) {
    // A distributed checkpoint is all-gathered over TP before the layer re-runs (Megatron's gather_split_1d_tensor).
    if (job_.training.distribute_saved_activations) {
      in = coll(CollType::AllGather, GroupKind::Tp, beta_ * d_.tokens_sp * d_.h, "checkpoint_all_gather", in);
    }
    in = recomputing([&] { return layer_fwd(layer, in); });
    layer_ = layer;
  }
  // The backward's working buffers peak at its start, before any stored activation of the layer is released.
  const size_t first = next_op();
  Ref m = job_.model.is_moe_layer(layer) ? moe_bwd(in) : mlp_bwd(in);
  working_buffer(first, kLayerBackwardWorkingBTH * beta_ * d_.tokens * d_.h + kLayerBackwardWorkspaceBytes);
  set_piece(Piece::Pre, true);
  return attention_bwd(m);
}

// ---------------------------------------------------------------- DP gradient buckets

void StageBuilder::plan_buckets() {
  const double limit = dp_bucket_limit(job_.training, layout_.group_size(GroupKind::Dp));
  for (int c = v_ - 1; c >= 0; --c) {
    // The chunk's gradient units in backward order (unit ids fall along it, so a bucket's last unit is also its
    // earliest in forward order).
    std::vector<int> ids;
    std::vector<UnitParams> params;
    auto unit = [&](int id, int64_t dense, int64_t expert) {
      ids.push_back(id);
      params.push_back({static_cast<double>(dense), static_cast<double>(expert)});
    };
    if (last_model_chunk(c)) {
      unit(kHeadUnit, d_.params_output + d_.params_final_norm, 0);
      for (int k = job_.model.mtp_layers - 1; k >= 0; --k) {
        const int id = job_.model.num_layers + k;
        unit(id, unit_params(id, false), unit_params(id, true));
      }
    }
    for (int i = chunk_layers_[c] - 1; i >= 0; --i) {
      const int layer = chunk_first_layer_[c] + i;
      const bool moe = job_.model.is_moe_layer(layer);
      unit(layer, d_.layer_params_dense(moe), moe ? d_.params_moe_experts : 0);
    }
    if (first_model_chunk(c)) unit(kEmbeddingUnit, d_.params_embedding, 0);
    // Megatron-Core buckets only the first stage's first model chunk (elsewhere DP communication is off the
    // critical path): other chunks reduce one bucket each, once all their gradients are ready.
    const double chunk_limit = (stage_ == 0 && c == 0) ? limit : std::numeric_limits<double>::infinity();
    for (const DpBucketSpan& b : form_dp_buckets(params, chunk_limit)) {
      buckets_.push_back({static_cast<int64_t>(b.params), b.expert ? GroupKind::Edp : GroupKind::Dp, c, ids[b.last]});
    }
  }
}

Ref StageBuilder::reduce_bucket(const Bucket& b) {
  const bool scatter = job_.training.distributed_optimizer && !job_.training.zero1_grad_all_reduce;
  return coll(scatter ? CollType::ReduceScatter : CollType::AllReduce, b.group, b.params * grad_bytes_,
              scatter ? "dp_grad_reduce_scatter" : "dp_grad_all_reduce", pb_.last(Stream::Compute));
}

// After `unit`'s backward in the last micro-batch: reduce the buckets it completes (overlapped reduction).
void StageBuilder::unit_grads_ready(int chunk, int unit) {
  if (mb_ != m_ - 1) return;
  if (unit == kHeadUnit) sp_params_ += d_.params_final_norm;
  else if (unit != kEmbeddingUnit) sp_params_ += sequence_parallel_params(unit);
  if (shard_grads_ || !job_.training.overlap_grad_reduce) return;
  const Phase keep = phase_;
  for (const Bucket& b : buckets_) {
    if (b.chunk == chunk && b.close_unit == unit) reduce_bucket(b);
  }
  phase_ = keep;
}

// Parameters of a layer that are replicated across TP ranks but see only their sequence shard under SP
// (marked sequence_parallel in Megatron): norms, row-parallel biases, the router, MLA's down-projections.
int64_t StageBuilder::sequence_parallel_params(int layer) const {
  const auto& m = job_.model;
  const bool moe = m.is_moe_layer(layer);
  int64_t p = d_.params_norms;
  if (m.add_bias_linear) p += moe ? d_.h : 2 * d_.h;  // attention proj bias (+ fc2 bias of a dense MLP)
  if (moe) p += d_.params_moe_router;
  if (m.attention == spec::AttentionType::Mla) {
    const auto& a = m.mla;
    p += d_.h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    if (a.q_lora_rank > 0) p += d_.h * a.q_lora_rank + a.q_lora_rank;
  }
  return p;
}

// Before a unit's first forward (first micro-batch of its chunk): wait for its parameters' all-gather.
void StageBuilder::wait_param_gather(int chunk, int unit) {
  if (chunk_started_[chunk]) return;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (gathers_[i].count && buckets_[i].chunk == chunk && buckets_[i].close_unit == unit) {
      extra_deps_.push_back(gathers_[i]);
    }
  }
}

// Units (embedding, layers, head) of a model chunk in the order a pass visits them.
std::vector<int> StageBuilder::units_of(int chunk, bool forward) const {
  std::vector<int> u;
  if (first_model_chunk(chunk)) u.push_back(kEmbeddingUnit);
  for (int i = 0; i < chunk_layers_[chunk]; ++i) u.push_back(chunk_first_layer_[chunk] + i);
  if (last_model_chunk(chunk)) {
    // Multi-token prediction depths follow the decoder on the last stage (unit = num_layers + k).
    for (int k = 0; k < job_.model.mtp_layers; ++k) u.push_back(job_.model.num_layers + k);
    u.push_back(kHeadUnit);
  }
  if (!forward) std::reverse(u.begin(), u.end());
  return u;
}

// Parameters of a unit on this rank (dense ones on the DP group, routed experts on the expert-DP group).
int64_t StageBuilder::unit_params(int unit, bool expert) const {
  if (unit == kEmbeddingUnit) return expert ? 0 : d_.params_embedding;
  if (unit == kHeadUnit) return expert ? 0 : d_.params_output + d_.params_final_norm;
  const bool moe = job_.model.is_moe_layer(unit);
  if (expert) return moe ? d_.params_moe_experts : 0;
  return d_.layer_params_dense(moe) + (mtp_unit(unit) ? mtp_extra_params(unit) : 0);
}

void StageBuilder::zero3_gather(int unit, Ref dep) {
  if (z3_gathers_.count(unit)) return;
  const Phase keep = phase_;
  Ref last = coll(CollType::AllGather, GroupKind::Dp, unit_params(unit, false) * weight_bytes_, "zero3_param_all_gather", dep);
  if (unit_params(unit, true) > 0) {
    last = coll(CollType::AllGather, GroupKind::Edp, unit_params(unit, true) * weight_bytes_, "zero3_expert_param_all_gather", dep);
  }
  phase_ = keep;
  z3_gathers_[unit] = last;
}

// Parameter tensors of a unit as PyTorch registers them (one nn.Parameter each): a transformer layer's linear
// weights, and its biases and norm weights/biases sharing the rest equally (MoE router and shared experts
// included); the embedding and output layer are one tensor each. Routed experts are gathered apart, on the
// expert-data-parallel group.
std::vector<int64_t> StageBuilder::unit_tensors(int unit) const {
  const int64_t all = unit_params(unit, false);
  if (unit == kEmbeddingUnit || unit == kHeadUnit) return {all};
  const auto& m = job_.model;
  const bool moe = m.is_moe_layer(unit);
  std::vector<int64_t> big;
  if (m.attention != spec::AttentionType::Mla) {
    big.push_back(d_.h * (d_.q_width + d_.kv_width));  // linear_qkv
    big.push_back(d_.attn_out_width * d_.h);            // linear_proj
  }
  if (!moe) {
    big.push_back(d_.h * d_.ffn_in / d_.t);  // linear_fc1
    big.push_back(d_.ffn / d_.t * d_.h);     // linear_fc2
  }
  int64_t rest = all;
  for (int64_t b : big) rest -= b;
  // Norm weights (and LayerNorm biases) and linear biases hold the remainder.
  const int64_t norm_tensors = m.normalization == spec::Normalization::LayerNorm ? 4 : 2;
  const int64_t small = norm_tensors + (m.add_bias_linear ? 4 : 0);
  if (rest < small) return {all};
  for (int64_t k = 0; k < small; ++k) big.push_back(rest / small + (k < rest % small ? 1 : 0));
  return big;
}

// ZeRO-3 blocking fetch: one all-gather per parameter tensor, each issued after the previous completed. DeepSpeed
// then gathered into a list of per-rank views (torch.distributed.all_gather before PyTorch's _all_gather_base),
// which ProcessGroupNCCL fills from a flat buffer with one host-launched copy_ per rank: dp launches per tensor
// at kHostCopyUs each, the host waiting before the next gather.
Ref StageBuilder::zero3_blocking_gather(int unit, Ref dep) {
  // Median host time of aten::copy_ (dispatch + launch) in the real Kineto trace
  // shared/data/real/hta/ns_resolution_trace (1,600 calls, V100, PyTorch 1.x): 7.3 us; docs/MODEL.md.
  constexpr double kHostCopyUs = 7.3;
  const int64_t dp = layout_.group_size(GroupKind::Dp);
  Ref last = dep;
  if (dp > 1) {
    Op copies;
    copies.category = ComputeCategory::Host;
    copies.duration_ns = std::llround(static_cast<double>(dp) * kHostCopyUs * 1e3);
    for (int64_t n : unit_tensors(unit)) {
      if (n <= 0) continue;
      last = coll(CollType::AllGather, GroupKind::Dp, n * weight_bytes_, "zero3_param_all_gather", last);
      last = compute(copies, "zero3_gather_copy_back", {last});
    }
  }
  const int64_t experts = unit_params(unit, true);
  if (experts > 0) {
    last = coll(CollType::AllGather, GroupKind::Edp, experts * weight_bytes_, "zero3_expert_param_all_gather", last);
  }
  return last;
}

// Before the i-th unit of a pass computes: its parameters (ZeRO-3: all-gathered, the next unit's gather issued now
// so that it runs while this unit computes, as DeepSpeed's and FSDP's prefetch do; else the distributed optimizer's
// overlapped all-gather of the previous step).
void StageBuilder::params_ready(int chunk, const std::vector<int>& units, size_t i) {
  if (!zero3_) {
    if (phase_ == Phase::Forward) wait_param_gather(chunk, units[i]);
    return;
  }
  const Ref before = pb_.last(Stream::Compute);
  if (zero3_blocking_) {
    // The host waits for each tensor's gather before it computes (no prefetch); full recompute's forward inside
    // the backward re-gathers the parameters it released after the first forward.
    const bool layer = units[i] != kEmbeddingUnit && units[i] != kHeadUnit;
    const bool regather = layer && phase_ == Phase::Backward && recomputed(units[i]);
    Ref last = zero3_blocking_gather(units[i], before);
    if (regather) last = zero3_blocking_gather(units[i], last);
    extra_deps_.push_back(last);
    return;
  }
  zero3_gather(units[i], before);
  if (i + 1 < units.size()) zero3_gather(units[i + 1], before);
  extra_deps_.push_back(z3_gathers_[units[i]]);
}

// ZeRO-2/3: a unit's gradients are reduce-scattered to their owners after its backward, every micro-batch.
void StageBuilder::sharded_grad_reduce_scatter(int unit) {
  const Ref dep = pb_.last(Stream::Compute);
  coll(CollType::ReduceScatter, GroupKind::Dp, unit_params(unit, false) * grad_bytes_, "sharded_grad_reduce_scatter", dep);
  if (unit_params(unit, true) > 0) {
    coll(CollType::ReduceScatter, GroupKind::Edp, unit_params(unit, true) * grad_bytes_, "sharded_expert_grad_reduce_scatter", dep);
  }
}

// ---------------------------------------------------------------- activation offload
// Transformer Engine's CPU offload as Megatron-LM drives it (--cpu-offloading-num-layers N; TE 2.10's
// cpu_offload.py): the saved activations of layers 0..N-1 are copied to the host on one copy stream while the next
// layers compute, and freed on the GPU once copied; layer i's copy must be done before the forward of layer L-N+i,
// so at most L-N layers' activations are on the GPU. In backward, layer i's reload starts when the backward of layer
// L-1-N+i begins (L-1-N layers ahead) and its backward waits for it. MoFa eq. 33-35 with the per-layer overlap made
// explicit. Only on a single pipeline stage (validate() refuses PP > 1, as Megatron does): layer = unit.

void StageBuilder::offload_before_forward(int unit) {
  const int n = job_.training.activation_offload_layers, L = job_.model.num_layers;
  if (n == 0 || unit < L - n || unit >= L) return;
  if (auto it = offload_copy_.find(key(mb_, unit - (L - n))); it != offload_copy_.end()) extra_deps_.push_back(it->second);
}

void StageBuilder::offload_after_forward(int unit) {
  if (unit < 0 || unit >= job_.training.activation_offload_layers || unit_saved_ == 0) return;
  offload_copy_[key(mb_, unit)] = host_side(ComputeCategory::Offload, Stream::Memcpy, unit_saved_,
                                            "activation_offload", {pb_.last(Stream::Compute)});
  pb_.back().mem_free_at_end += unit_saved_;
}

void StageBuilder::reload_before_backward(int unit) {
  const int n = job_.training.activation_offload_layers, L = job_.model.num_layers;
  if (n == 0 || unit < 0 || unit >= L) return;
  const int reload = unit - (L - 1 - n);
  if (reload >= 0 && reload < n) {
    const auto it = saved_.find(key(mb_, reload));
    const int64_t bytes = it == saved_.end() ? 0 : it->second;
    if (bytes > 0 && offload_copy_.count(key(mb_, reload))) {
      layer_ = reload;  // tagged with the layer it brings back
      offload_copy_[key(mb_, reload)] = host_side(ComputeCategory::Offload, Stream::Memcpy, bytes, "activation_reload",
                                                  {pb_.last(Stream::Compute)});
      pb_.back().mem_alloc_at_start += bytes;
    }
  }
  if (unit < n) {
    if (auto it = offload_copy_.find(key(mb_, unit)); it != offload_copy_.end()) {
      extra_deps_.push_back(it->second);
      offload_copy_.erase(it);
    }
  }
}

// ---------------------------------------------------------------- pipeline steps

int64_t StageBuilder::key(int mb, int unit) { return int64_t{mb} * (kHeadUnit + 2) + unit + 1; }

// One unit's forward or backward (the layer's, with its recompute, for a transformer layer).
Ref StageBuilder::unit_pass(int unit, Ref x, bool forward) {
  if (unit == kEmbeddingUnit || unit == kHeadUnit) layer_ = -1;
  if (unit == kEmbeddingUnit) return forward ? embedding_fwd(x) : embedding_bwd(x);
  if (unit == kHeadUnit) return forward ? head_fwd(x) : head_bwd(x);
  if (mtp_unit(unit)) return forward ? mtp_fwd(unit, x) : mtp_bwd(unit, x);
  return forward ? layer_fwd(unit, x) : layer_bwd(unit, x);
}

void StageBuilder::forward_step(int mb, int chunk, Ref in) {
  mb_ = mb;
  chunk_ = chunk;
  phase_ = Phase::Forward;
  z3_gathers_.clear();
  const std::vector<int> units = units_of(chunk, true);
  Ref x = in;
  int layer_slot = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const int unit = units[i];
    slot_ = unit == kEmbeddingUnit ? kBeforeLayersSlot : unit == kHeadUnit ? kAfterLayersSlot : layer_slot++;
    piece_ = Piece::Pre;
    unit_saved_ = 0;
    params_ready(chunk, units, i);
    offload_before_forward(unit);
    x = unit_pass(unit, x, true);
    saved_[key(mb, unit)] = unit_saved_;
    offload_after_forward(unit);
  }
  chunk_started_[chunk] = true;
}

void StageBuilder::backward_step(int mb, int chunk, Ref in) {
  mb_ = mb;
  chunk_ = chunk;
  phase_ = Phase::Backward;
  z3_gathers_.clear();
  auto take = [&](int unit) {
    auto it = saved_.find(key(mb, unit));
    if (it == saved_.end()) return int64_t{0};
    const int64_t v = it->second;
    saved_.erase(it);
    return v;
  };
  const std::vector<int> units = units_of(chunk, false);
  Ref x = in;
  int layer_slot = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const int unit = units[i];
    slot_ = unit == kHeadUnit ? kBeforeLayersSlot : unit == kEmbeddingUnit ? kAfterLayersSlot : layer_slot++;
    piece_ = Piece::Post;
    unit_saved_ = 0;
    params_ready(chunk, units, i);
    reload_before_backward(unit);
    x = unit_pass(unit, x, false);
    // Activations re-created by full recompute are released with the layer's backward too.
    release_unit(take(unit) + unit_saved_);
    if (shard_grads_) sharded_grad_reduce_scatter(unit);
    unit_grads_ready(chunk, unit);
  }
}

Ref StageBuilder::p2p(uint64_t send_prev, uint64_t send_next, uint64_t recv_prev, uint64_t recv_next, Ref dep,
                      Ref dep2, const char* fixed_name, Stream stream) {
  Op op;
  op.kind = OpKind::P2P;
  op.stream = stream;
  op.group = GroupKind::Pp;
  op.send_prev = send_prev;
  op.send_next = send_next;
  op.recv_prev = recv_prev;
  op.recv_next = recv_next;
  op.bytes = send_prev + send_next;
  tag(op);
  op.layer = -1;
  std::string name;
  auto part = [&](bool on, const char* what) {
    if (!on) return;
    if (!name.empty()) name += '_';
    name += what;
  };
  part(send_next, "send_forward");
  part(send_prev, "send_backward");
  part(recv_prev, "recv_forward");
  part(recv_next, "recv_backward");
  if (fixed_name) name = fixed_name;
  return pb_.emit(op, name, {dep, dep2});
}

// One pipeline exchange. Batched (Megatron's batch_p2p_comm, the default without overlap_p2p_comm) it is one
// batch_isend_irecv, which PyTorch runs on the pipeline group's own communicator: one op on the pp stream. Under
// overlap_p2p_comm Megatron issues each send and receive alone (_p2p_ops), and PyTorch gives every pair of ranks its
// own communicator and stream for those: the parts toward the next stage (pp) and toward the previous one (pp_prev)
// then queue separately, so a receive still waiting for a late previous stage does not hold back a send to the next
// one. With two stages both peers are one rank, hence one communicator: one op.
StageBuilder::PpRefs StageBuilder::exchange(const PipelineAction& a, uint64_t act) {
  const uint64_t sp = a.send_prev ? act : 0, sn = a.send_next ? act : 0, rp = a.recv_prev ? act : 0,
                 rn = a.recv_next ? act : 0;
  const Ref dep = pb_.last(Stream::Compute);
  if (!job_.parallelism.overlap_p2p_comm || p_ <= 2) return PpRefs{p2p(sp, sn, rp, rn, dep), Ref{}};
  PpRefs r;
  if (sn || rn) r.next = p2p(0, sn, 0, rn, dep);
  if (sp || rp) r.prev = p2p(sp, 0, rp, 0, dep, {}, nullptr, Stream::PpPrev);
  return r;
}

// Builds the forward half, then the backward half (independent of it: Megatron schedules one more warm-up forward
// for that), then issues the step's ops in the combined order. The sort is stable and each half's keys never decrease
// in the order it was built, so every op still follows what it depends on, on its stream or across streams.
void StageBuilder::combined_step(const PipelineAction& a, PpRefs blocking, PpRefs fwd_async, PpRefs bwd_async) {
  const size_t begin = prog_.ops.size();
  combined_keys_.clear();
  combined_ = true;
  combined_backward_ = false;
  extra_deps_.insert(extra_deps_.end(), {fwd_async.next, fwd_async.prev, blocking.prev});
  forward_step(a.microbatch, a.chunk, blocking.next);
  const size_t forward_ops = combined_keys_.size();
  combined_backward_ = true;
  extra_deps_.insert(extra_deps_.end(), {bwd_async.next, bwd_async.prev, blocking.prev});
  backward_step(a.b_microbatch, a.b_chunk, blocking.next);
  combined_ = false;
  for (size_t i = 1; i < combined_keys_.size(); ++i) {
    if (i != forward_ops && combined_keys_[i] < combined_keys_[i - 1]) {
      throw std::logic_error("combined 1F1B step: op '" + prog_.names[prog_.ops[begin + i].name] +
                             "' is tagged before the op built ahead of it");
    }
  }
  pb_.reorder_since(begin, combined_keys_);
}

void StageBuilder::build() {
  prog_.stage = stage_;
  chunk_started_.assign(v_, false);
  const auto& tr = job_.training;
  const bool dist = tr.distributed_optimizer;
  plan_buckets();
  gathers_.assign(buckets_.size(), Ref{});

  // The distributed optimizer's parameter all-gather of the previous step, overlapped with this step's
  // forward: issued first (forward order), each unit's first forward waits for its bucket.
  if (dist && tr.overlap_param_gather) {
    phase_ = Phase::Optimizer;
    for (size_t i = buckets_.size(); i-- > 0;) {
      gathers_[i] = coll(CollType::AllGather, buckets_[i].group, buckets_[i].params * weight_bytes_,
                         "dp_param_all_gather", Ref{});
    }
  }

  const uint64_t act = static_cast<uint64_t>(p2p_bytes());
  // The exchanges a compute step waits for: the last blocking one, and under overlap_p2p_comm the last
  // asynchronous one of its direction (each pipeline stream is FIFO, so waiting on a later op covers earlier ones).
  PpRefs blocking{}, fwd_async{}, bwd_async{};
  const auto& par = job_.parallelism;
  for (const PipelineAction& a : pipeline_actions(par.schedule, stage_, p_, v_, m_, par.overlap_p2p_comm, ep_overlap_)) {
    switch (a.kind) {
      case PipelineAction::Combined:
        combined_step(a, blocking, fwd_async, bwd_async);
        break;
      case PipelineAction::Forward:
        extra_deps_.insert(extra_deps_.end(), {fwd_async.next, fwd_async.prev, blocking.prev});
        forward_step(a.microbatch, a.chunk, blocking.next);
        break;
      case PipelineAction::Backward:
        extra_deps_.insert(extra_deps_.end(), {bwd_async.next, bwd_async.prev, blocking.prev});
        backward_step(a.microbatch, a.chunk, blocking.next);
        break;
      case PipelineAction::Exchange:
        (a.wait == PipelineAction::Blocking ? blocking : a.wait == PipelineAction::ForwardAsync ? fwd_async : bwd_async) =
            exchange(a, act);
        break;
    }
    check_size();
  }

  // Finalize (Megatron's finalize_model_grads and optimizer.step): DP reductions not overlapped run now;
  // then the gradients of sequence-parallel parameters are all-reduced over TP; then the optimizer; then
  // the distributed optimizer's parameter all-gather unless it overlaps the next step's forward.
  phase_ = Phase::Optimizer;
  mb_ = -1;
  layer_ = -1;
  chunk_ = 0;
  if (!tr.overlap_grad_reduce && !shard_grads_) {
    for (const Bucket& b : buckets_) reduce_bucket(b);
  }
  if (d_.sp && sp_params_ > 0) {
    // After the DP gradient sync, as Megatron's finalize_model_grads orders it.
    coll(CollType::AllReduce, GroupKind::Tp, sp_params_ * grad_bytes_, "sequence_parallel_grad_all_reduce",
         pb_.last(Stream::Compute), pb_.last(Stream::Dp));
  }
  // Tied word embeddings over several stages: the first stage's embedding and the last stage's copy in the output
  // layer all-reduce their fp32 gradients (Megatron's _allreduce_embedding_grads, on main_grad, after the DP
  // sync). Between two ranks that is an exchange of the whole gradient each way (a 2-rank ring all-reduce moves S
  // per rank, as a send/recv of S does), on the pipeline ring's wrap-around link between last and first stage.
  Ref tied{};
  if (job_.model.tie_embeddings && p_ > 1 && (stage_ == 0 || stage_ == p_ - 1)) {
    const uint64_t S = static_cast<uint64_t>(d_.vocab_pad * d_.h / d_.t * grad_bytes_);
    const char* name = "tied_embedding_grad_all_reduce";
    const Ref grads = pb_.last(Stream::Compute), synced = pb_.last(Stream::Dp);
    tied = stage_ == 0 ? p2p(S, 0, S, 0, grads, synced, name) : p2p(0, S, 0, S, grads, synced, name);
  }
  // Gradient clipping (and logging) needs the global gradient norm: one fp32 all-reduced over the model-parallel
  // ranks, and over the data-parallel ones too when the optimizer states (hence the gradients it reads) are
  // sharded; fp16 loss scaling all-reduces its found-inf flag the same way. Latency only, but every stage's
  // optimizer waits for the slowest stage.
  Ref norm = pb_.last(Stream::Compute);
  const int stats = tr.precision == spec::Precision::Fp16 ? 2 : 1;
  for (int k = 0; k < stats; ++k) {
    const char* what = k == 0 ? "grad_norm_all_reduce" : "found_inf_all_reduce";
    norm = coll(CollType::AllReduce, GroupKind::Tp, 4, what, norm, k == 0 ? tied : Ref{});
    norm = coll(CollType::AllReduce, GroupKind::Pp, 4, what, norm, pb_.last(Stream::Dp));
    if (dist) norm = coll(CollType::AllReduce, GroupKind::Dp, 4, what, norm);
  }
  int64_t dense = 0, expert = 0;
  for (const Bucket& b : buckets_) (b.group == GroupKind::Edp ? expert : dense) += b.params;
  prog_.dense_parameters = dense;
  for (int c = 0; c < v_; ++c) {
    for (int l = chunk_first_layer_[c]; l < chunk_first_layer_[c] + chunk_layers_[c]; ++l) {
      if (!job_.training.layer_in_bf16(l, job_.model.num_layers)) continue;
      prog_.bf16_layer_parameters += d_.layer_params(job_.model.is_moe_layer(l));
    }
  }
  prog_.expert_parameters = expert;
  const int64_t dp = layout_.group_size(GroupKind::Dp), edp = layout_.group_size(GroupKind::Edp);
  const int64_t opt_params = dist ? dense / dp + expert / edp : dense + expert;
  std::vector<Ref> opt_deps{pb_.last(Stream::Dp), pb_.last(Stream::Tp), norm, tied};
  const Ref opt = tr.optimizer_offload ? offloaded_optimizer_step(opt_params, std::move(opt_deps))
                                       : gpu_optimizer_step(opt_params, opt_deps);
  if (dist && !tr.overlap_param_gather && !zero3_) {
    for (size_t i = buckets_.size(); i-- > 0;) {
      coll(CollType::AllGather, buckets_[i].group, buckets_[i].params * weight_bytes_, "dp_param_all_gather", opt);
    }
  }
}

// Adam on the GPU over `params` of the shard (BytesPerParam::step_traffic bytes each); 16-bit gradients copied to fp32
// for it hold memory while it runs.
Ref StageBuilder::gpu_optimizer_step(int64_t params, const std::vector<Ref>& deps) {
  const BytesPerParam bpp = bytes_per_param(job_.training);
  const Ref r = compute(memop(ComputeCategory::Optimizer, params * bpp.step_traffic), "optimizer_step", deps);
  pb_.back().mem_alloc_at_start += params * bpp.step_grad_copy;
  pb_.back().mem_free_at_end += params * bpp.step_grad_copy;
  return r;
}

// CPU optimizer offload (Megatron-LM's HybridDeviceOptimizer; DeepSpeed ZeRO-Offload; MoFa eq. 28): the GPU's share
// of the shard is updated first (Megatron launches it before the CPU work), then for the offloaded share the fp32
// gradients go to the host, the CPU runs Adam over its fp32 master weights and moments, and the updated fp32 weights
// come back to be cast on the GPU. Without optimizer_offload_overlap the three run one after the other (Megatron's
// default; MoFa's sum). With it Megatron pipelines them tensor by tensor on separate copy streams: modelled as
// kOffloadChunks equal chunks, every gradient copy queued first as Megatron does. The CPU step occupies the compute
// stream: the host thread that launches kernels is busy with it.
Ref StageBuilder::offloaded_optimizer_step(int64_t params, std::vector<Ref> deps) {
  const auto& tr = job_.training;
  const int64_t host = std::llround(static_cast<double>(params) * tr.optimizer_offload_fraction);
  if (params - host > 0) gpu_optimizer_step(params - host, deps);
  const int chunks = tr.optimizer_offload_overlap ? kOffloadChunks : 1;
  std::vector<Ref> to_host;
  for (int c = 0; c < chunks; ++c) {
    const int64_t share = host * (c + 1) / chunks - host * c / chunks;
    to_host.push_back(host_side(ComputeCategory::Offload, Stream::Memcpy, share * kOffloadCopyBytesPerParam,
                                "optimizer_grad_to_host", deps));
  }
  Ref last = pb_.last(Stream::Compute);
  for (int c = 0; c < chunks; ++c) {
    const int64_t share = host * (c + 1) / chunks - host * c / chunks;
    const Ref step = host_side(ComputeCategory::CpuOptimizer, Stream::Compute, share * kCpuAdamBytesPerParam,
                               "cpu_optimizer_step", {to_host[static_cast<size_t>(c)]});
    last = host_side(ComputeCategory::Offload, Stream::Memcpy, share * kOffloadCopyBytesPerParam,
                     "optimizer_params_to_device", {step});
  }
  return last;
}

// Replays the program's allocations in issue order: the peak of stored activations and working buffers on this rank,
// and the peak of the stored activations alone.
void replay_activation_peaks(Program& p) {
  int64_t cur = 0, peak = 0, stored = 0, stored_peak = 0;
  for (const Op& op : p.ops) {
    cur += op.mem_alloc_at_start;
    stored += op.mem_alloc_at_start - op.mem_transient;
    peak = std::max(peak, cur);
    stored_peak = std::max(stored_peak, stored);
    cur -= op.mem_free_at_end;
    stored -= op.mem_free_at_end - op.mem_transient;
  }
  p.activation_peak = peak;
  p.stored_activation_peak = stored_peak;
}

}  // namespace

Workload build_megatron_workload(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  Workload w;
  w.job = job;
  w.layout = RankLayout(par.tensor, par.context, par.data, par.pipeline, par.expert,
                        std::min(job.cluster.gpus_per_node, job.cluster.num_gpus), par.expert_tensor, par.cp_a2a_size());
  const ModelDims d = make_dims(job);
  // Refuse before building: a stage runs every micro-batch through its layers (forward, backward, and
  // recompute), about 40 ops per layer (60 for MoE) plus embedding, head and exchanges.
  const double layers_per_stage = static_cast<double>(job.model.num_layers) / par.pipeline + 2.0;
  const double estimate = static_cast<double>(job.num_microbatches()) * layers_per_stage * (job.model.moe ? 60.0 : 40.0);
  if (estimate > static_cast<double>(kMaxOpsPerProgram)) {
    throw InputError(job.source + ": key training.global_batch_size: about " + std::to_string(static_cast<int64_t>(estimate)) +
                     " ops per rank (" + std::to_string(job.num_microbatches()) + " micro-batches x " +
                     std::to_string(job.model.num_layers / par.pipeline) + " layers), more than the limit of " +
                     std::to_string(kMaxOpsPerProgram) + "; simulate fewer micro-batches");
  }
  w.programs.resize(par.pipeline);
  w.role_of_stage.resize(par.pipeline);
  for (int s = 0; s < par.pipeline; ++s) {
    StageBuilder b(job, d, w.layout, s, w.programs[s]);
    b.build();
    w.role_of_stage[s] = s;
  }
  const int64_t ranks_per_stage = int64_t{par.tensor} * par.context * par.data;
  const int communicators = w.layout.communicators();
  for (Program& p : w.programs) {
    replay_activation_peaks(p);
    const int64_t bf16_params = d.fp8_exempt_params(p.stage == 0, p.stage == par.pipeline - 1, p.bf16_layer_parameters);
    p.static_memory = static_memory(job, p.dense_parameters, p.expert_parameters, w.layout.group_size(GroupKind::Dp),
                                    w.layout.group_size(GroupKind::Edp), communicators, bf16_params);
    p.static_memory.allocator_reserve = allocator_reserve_bytes(job, static_cast<double>(p.activation_peak));
    double fwd = 0;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::Compute && op.phase == Phase::Forward) fwd += op.flops;
    }
    // Model FLOPs: forward + backward = 3x forward, without recompute (the MFU convention).
    w.model_flops_per_step += 3.0 * fwd * static_cast<double>(ranks_per_stage);
  }
  return w;
}

}  // namespace stepsim::workload

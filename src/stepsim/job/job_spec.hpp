#pragma once
// JobSpec: everything a simulation needs, as the user wrote it (after defaults and validation).
// Field names follow the job-file keys of docs/ARCHITECTURE.md, which follow Megatron-LM.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/job/nccl_env.hpp"
#include "stepsim/job/network_spec.hpp"

namespace stepsim::spec {

enum class Activation { Gelu, Swiglu };
enum class AttentionType { Mha, Gqa, Mla };
enum class Normalization { LayerNorm, RmsNorm };
enum class PositionEmbedding { Learned, Rope };
// Fp8 and Nvfp4 are Transformer Engine's low-precision GEMMs: the linear layers' GEMMs in fp8 (with a recipe,
// training.fp8_recipe) or in NVFP4 (Blackwell's 4-bit e2m1 with 16-element blocks, TE's NVFP4BlockScaling recipe),
// behind quantize kernels; weights, activations and attention stay in bf16.
enum class Precision { Fp32, Fp16, Bf16, Fp8, Nvfp4 };
// True for the precisions whose linear-layer GEMMs Transformer Engine quantizes (fp8, nvfp4).
constexpr bool quantized_gemms(Precision p) { return p == Precision::Fp8 || p == Precision::Nvfp4; }
enum class Recompute { None, Selective, Full };
enum class PipelineSchedule { GPipe, OneFOneB, Interleaved1F1B };
enum class CommModel { AlphaBeta, Nccl, Flow };
enum class OverlapModel { None, Coefficients, XGBoost, SmShare };
// How the attention core runs: FlashAttention-style fused kernels, or Megatron-LM's pre-2022 unfused path (QKᵀ as a
// batched GEMM, fused scale-mask-softmax, dropout, ·V, with the s x s probabilities stored for backward).
enum class AttentionBackend { Flash, Unfused };
// How the loss runs over the vocabulary-parallel logits (Megatron's --cross-entropy-loss-fusion with
// --cross-entropy-fusion-impl): Megatron-Core's unfused vocab_parallel_cross_entropy (fp32 softmax kept for the
// backward), its jit-fused variant `native` (costed as the unfused path: not measured), or Transformer Engine's
// Triton kernels `te` (two passes over the bf16 logits, the gradient written over them; docs/MODEL.md §4).
enum class CrossEntropyFusion { None, Native, Te };
// Transformer Engine's fp8 scaling recipe (training.fp8_recipe): delayed (amax history), current (per-tensor amax of
// the tensor being cast: one more read), blockwise (1x128 / 128x128 blocks, Hopper), mxfp8 (32-element blocks with
// e8m0 scales, Blackwell only).
enum class Fp8Recipe { Delayed, Current, Blockwise, Mxfp8 };
// The training framework (training.framework): which kernels a layer launches, what selective recompute means and how
// FSDP talks (docs/MODEL.md "Frameworks"). Megatron-Core with Transformer Engine, torchtitan (PyTorch-native:
// FSDP2, eager or per-block torch.compile, op-level selective activation checkpointing), or DeepSpeed ZeRO-3 around a
// Hugging Face Llama model (eager PyTorch, a Python hook per module).
enum class Framework : uint8_t { MegatronCore, Torchtitan, DeepSpeed };

// Multi-head latent attention (DeepSeek-V2/V3). q_lora_rank == 0 means queries are not compressed.
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// Megatron-Core's token dispatchers (--moe-token-dispatcher-type): all-to-all over the expert group; all-gather of
// every token of the expert-tensor x expert group with a reduce-scatter back (Megatron-Core's own default); flex =
// DeepEP's fused dispatch/combine (the permutation inside the communication kernels).
enum class TokenDispatcher : uint8_t { AllToAll, AllGather, Flex };

struct MoeSpec {
  int num_experts = 0;
  int topk = 0;
  int64_t ffn_hidden_size = 0;               // per routed expert
  int64_t shared_expert_ffn_hidden_size = 0; // total intermediate size of the shared expert(s); 0 = none
  int layer_freq = 1;                        // every layer_freq-th layer is MoE ...
  int first_k_dense = 0;                     // ... after the first first_k_dense dense layers
  std::optional<double> capacity_factor;     // nullopt = dropless
  bool pad_to_capacity = false;              // --moe-pad-expert-input-to-capacity: buffers padded to the capacity
  // Tokens the busiest expert-parallel rank's experts receive over the mean (1 = balanced routing, the default). The
  // combine all-to-all waits for that rank, so it sets the step.
  double routing_imbalance = 1.0;
  // Tokens the busiest rank's experts process, over the balanced share: the imbalance, capped by the capacity
  // (tokens over it are dropped), or the capacity itself when buffers are padded to it.
  double expert_load() const {
    if (!capacity_factor) return routing_imbalance;
    return pad_to_capacity ? *capacity_factor : std::min(routing_imbalance, *capacity_factor);
  }
  TokenDispatcher token_dispatcher = TokenDispatcher::AllToAll;
  // --moe-shared-expert-overlap: the shared expert's fc1 runs beside the dispatch, its fc2 beside the combine.
  bool shared_expert_overlap = false;
  // --moe-permute-fusion: Transformer Engine's fused permute/unpermute kernels (gathers). Without it Megatron-Core
  // unpermutes with an atomic scatter_add and index_select's backward is an atomic index_add: several times slower.
  // The job file defaults to the recipes' choice (on); --megatron-args to Megatron-LM's (off unless the flag is given).
  bool permute_fusion = true;
  // Group-limited routing (Megatron-Core's --moe-router-num-groups / --moe-router-group-topk; DeepSeek-V3's n_group 8,
  // topk_group 4): the experts in router_num_groups contiguous groups, a token's experts from its best
  // router_group_topk groups. 0 = no limit. Changes how many nodes the flex (DeepEP) dispatcher sends a token to.
  int router_num_groups = 0;
  int router_group_topk = 0;
};

struct ModelSpec {
  // What a Hugging Face config left to defaults (job key = value, and why); printed with the summary.
  std::vector<std::string> hf_assumptions;
  std::string name = "model";
  int num_layers = 0;
  // Multi-token prediction depths (DeepSeek-V3; Megatron-Core's --mtp-num-layers, HF num_nextn_predict_layers): on
  // the last stage, each an embedding of the shifted tokens, two norms, a 2h -> h projection, one transformer layer
  // (layer index num_layers + k) and its own pass through the shared output layer and loss.
  int mtp_layers = 0;
  int64_t hidden_size = 0;
  int num_attention_heads = 0;
  int num_query_groups = 0;   // KV heads; 0 in input = same as num_attention_heads
  int64_t kv_channels = 0;    // head dim; 0 in input = hidden_size / num_attention_heads
  int64_t ffn_hidden_size = 0;
  Activation activation = Activation::Gelu;
  Normalization normalization = Normalization::LayerNorm;
  bool add_bias_linear = true;
  // Dropout on the residual branches (Megatron's --hidden-dropout). Only whether it is zero matters: a positive
  // rate stores a 1-byte mask per element at each bias-dropout-add for backward; at 0 PyTorch's dropout returns its
  // input and stores nothing.
  double hidden_dropout = 0.1;
  // Dropout on the attention probabilities (Megatron's --attention-dropout). Only the unfused attention core runs it
  // as kernels of its own and stores its mask (FlashAttention draws it inside the kernel); at 0 it is neither run nor
  // stored.
  double attention_dropout = 0.1;
  PositionEmbedding position_embedding = PositionEmbedding::Learned;  // learned absolute (GPT) or rotary
  int64_t vocab_size = 0;
  int64_t seq_length = 0;
  bool tie_embeddings = false;
  AttentionType attention = AttentionType::Mha;
  MlaSpec mla;
  // Sliding-window attention (Megatron-Core's --window-size W,0 and --window-attn-skip-freq; Hugging Face's
  // sliding_window and layer_types): in a windowed layer each query attends to itself and the window_size tokens
  // before it. 0 = every layer attends to the whole causal prefix.
  int64_t window_size = 0;
  // Which layers are windowed (global index, 1 = window): empty = every layer when window_size > 0.
  std::vector<uint8_t> window_layers;
  std::optional<MoeSpec> moe;

  // True when layer index `layer` (0-based, global) attends through the window; multi-token prediction layers
  // (index num_layers and above) attend to the whole prefix.
  bool is_window_layer(int layer) const {
    if (window_size <= 0 || layer < 0 || layer >= num_layers) return false;
    return window_layers.empty() || window_layers[static_cast<size_t>(layer)] != 0;
  }
  int window_layer_count() const {
    int n = 0;
    for (int l = 0; l < num_layers; ++l) n += is_window_layer(l) ? 1 : 0;
    return n;
  }
  // True when layer index `layer` (0-based, global) has a MoE MLP.
  bool is_moe_layer(int layer) const {
    if (!moe) return false;
    if (layer < moe->first_k_dense) return false;
    return ((layer - moe->first_k_dense) % moe->layer_freq) == 0;
  }
};

// How context parallelism exchanges K/V (Megatron-Core's --cp-comm-type): p2p = ring attention, K/V blocks passed
// around the CP ring while the previous block computes (the default); all_gather = K/V all-gathered, the local block
// computed meanwhile; a2a = DeepSpeed-Ulysses, Q/K/V all-to-all from sequence to head shards and back; a2a+p2p =
// hierarchical: Ulysses within groups of hierarchical_context_parallel_sizes[0] adjacent CP ranks, ring attention
// across them.
enum class CpCommType { P2P, AllGather, A2A, A2AP2P };

struct ParallelismSpec {
  int tensor = 1;
  int pipeline = 1;
  int data = 0;        // 0 = derive from cluster.num_gpus
  int context = 1;
  CpCommType cp_comm_type = CpCommType::P2P;
  // Megatron's --hierarchical-context-parallel-sizes [a, c/a] under a2a+p2p: a adjacent CP ranks exchange heads
  // (all-to-all), the c/a groups form the ring. Empty otherwise.
  std::vector<int> hierarchical_context_parallel_sizes;
  int cp_a2a_size() const {
    return cp_comm_type == CpCommType::A2AP2P && !hierarchical_context_parallel_sizes.empty()
               ? hierarchical_context_parallel_sizes[0] : 1;
  }
  int expert = 1;      // expert parallel size: expert x expert_tensor must divide tensor x context x data
  // Expert tensor parallel size (Megatron-Core's --expert-tensor-parallel-size); 0 in input = tensor. MoE parallel
  // folding: expert groups are formed over the tensor x context x data ranks of a stage, so EP may exceed DP.
  int expert_tensor = 0;
  bool sequence_parallel = false;
  int virtual_stages = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  // Interleaved 1F1B only: send/recv run asynchronously beside the next compute step (Megatron-LM's
  // default for that schedule; --no-overlap-p2p-communication turns it off).
  bool overlap_p2p_comm = false;
  // Uneven stages: layers of each model chunk in layer order (pipeline*virtual_stages entries). Empty = even.
  std::vector<int> pipeline_layers;
  // Megatron-Core's --pipeline-model-parallel-layout ("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"); empty = not given. Its
  // chunk count sets virtual_stages when that key is absent; validate() turns it into pipeline_layers.
  std::string pipeline_layout;
  // Uneven-split requests (Megatron's --decoder-first/last-pipeline-num-layers and
  // --account-for-embedding/loss-in-pipeline-split); validate() turns them, or its automatic rule when the layers do
  // not divide the chunks, into pipeline_layers and says how in pipeline_split_rule.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  std::string pipeline_split_rule = "even";
};

enum class Zero3Fetch { Prefetch, Blocking };
enum class RecomputeMethod { Uniform, Block };
// Modules selective recompute re-runs in backward (Megatron-Core's recompute_modules). core_attn, mlp, moe and
// shared_experts are checkpointed (only their input kept, the whole forward re-run, communication included);
// layernorm, moe_act and mla_up_proj discard their output and re-create it when the backward needs it.
enum class RecomputeModule : uint8_t { CoreAttn, Mlp, Moe, MoeAct, SharedExperts, Layernorm, MlaUpProj, kCount };
constexpr uint8_t module_bit(RecomputeModule m) { return static_cast<uint8_t>(1u << static_cast<unsigned>(m)); }

struct TrainingSpec {
  // What an input converter (the torchtitan config) made of keys that are not plain job keys: printed with the job.
  std::vector<std::string> input_notes;
  Framework framework = Framework::MegatronCore;
  // torchtitan only: each TransformerBlock under torch.compile (Inductor fuses its elementwise ops); eager otherwise.
  bool compile = false;
  // torchtitan only: the loss under torch.compile too (torchtitan compiles it with the model since 2025-04, commit
  // bbb1b616e; before, train.py left it eager): Inductor fuses the fp32 cross-entropy and keeps only the bf16 logits.
  bool compile_loss = false;
  // torchtitan only: how FSDP2 wraps the modules outside the transformer blocks. Split (torchtitan since 2025-07-28,
  // PR 1094): the token embedding is a unit of its own, resharded after forward, and the final norm with the output
  // layer one unit kept gathered from forward to backward. Root (earlier torchtitan): all three are the root module's
  // parameters, gathered from the first forward to the last backward.
  bool fsdp_root_holds_head = false;
  // torchtitan only: the kernels PyTorch's scaled_dot_product_attention dispatches to on Hopper and Blackwell. cuDNN's
  // fused attention (PyTorch prefers it on sm90 and sm100 from 2.11, whose bundled cuDNN is past 9.15), or
  // flash: PyTorch's own FlashAttention-2 build (every earlier release), whose sm80 code runs far below cuDNN on
  // Blackwell (data/efficiency.yaml sdpa_flash_attention).
  bool sdpa_flash = false;
  // PyTorch's caching allocator maps its segments in pages it can extend (PYTORCH_CUDA_ALLOC_CONF=
  // expandable_segments:True): far less reserved beyond what is allocated. torchtitan's launch script sets it.
  bool expandable_segments = false;
  int micro_batch_size = 1;
  int64_t global_batch_size = 0;
  Precision precision = Precision::Bf16;
  Recompute recompute = Recompute::None;
  // Full recompute only (Megatron's --recompute-method / --recompute-num-layers): uniform checkpoints groups of
  // recompute_num_layers layers (only each group's input is kept; every layer is recomputed); block recomputes the
  // first recompute_num_layers layers of each model chunk and keeps all activations of the others.
  RecomputeMethod recompute_method = RecomputeMethod::Uniform;
  int recompute_num_layers = 1;
  // Full recompute with TP and no sequence parallelism: each TP rank keeps 1/t of the checkpoint, all-gathered before
  // the layer re-runs (Megatron's --distribute-saved-activations).
  bool distribute_saved_activations = false;
  // Selective recompute only: a bit per RecomputeModule; Megatron-Core's default is core_attn alone.
  uint8_t recompute_modules = module_bit(RecomputeModule::CoreAttn);
  bool recomputes(RecomputeModule m) const {
    return recompute == Recompute::Selective && framework == Framework::MegatronCore &&
           (recompute_modules & module_bit(m)) != 0;
  }
  // torchtitan's selective recompute (selective_ac_option 'op'): per block, every second matmul and every elementwise
  // op re-run in backward; the other matmuls' and attention's outputs kept (docs/MODEL.md "Frameworks").
  bool op_level_sac() const { return recompute == Recompute::Selective && framework == Framework::Torchtitan; }
  bool distributed_optimizer = false;
  // ZeRO stage (DeepSpeed / FSDP): 1 shards the optimizer states (= distributed_optimizer), 2 also the gradients,
  // 3 also the parameters, all-gathered per layer before forward and backward. validate() sets
  // distributed_optimizer for stage >= 1 and raises zero_stage to 1 when only distributed_optimizer is given.
  int zero_stage = 0;
  // With the distributed optimizer (ZeRO-1): how the gradients are reduced over DP. Megatron reduce-scatters them to
  // the shard owners; DeepSpeed's pipeline engine all-reduces them (its _exec_reduce_grads: buffered_allreduce_fallback,
  // ZeRO-1 does not partition gradients), then each rank updates its shard and the parameters are all-gathered.
  bool zero1_grad_all_reduce = false;
  // ZeRO-3 only: how a layer's parameters are fetched. Prefetch: the whole unit in one all-gather, the next
  // unit's issued while this one computes (FSDP, Megatron-FSDP, DeepSpeed since 0.4.3). Blocking: DeepSpeed
  // before 0.4.3 (2021): one all-gather per parameter tensor, each waited for by the host
  // (torch.cuda.synchronize), so nothing overlaps compute, and re-gathered for full recompute's forward.
  Zero3Fetch zero3_param_fetch = Zero3Fetch::Prefetch;
  // DeepSpeed only: zero_optimization.reduce_bucket_size, in elements (DeepSpeed's default 500,000,000). ZeRO-3
  // reduce-scatters the gradients a bucket at a time, in backward order; a tensor larger than the bucket goes alone.
  int64_t reduce_bucket_size = 500'000'000;
  // DeepSpeed only: the host time of ZeRO-3's Python hooks per module and pass (fetch, prefetch and release around
  // the module; in backward each parameter's gradient hook too), us, which the GPU waits for. Not measured (no GPU
  // host here): fitted, the profile's one free number, to the three DeepSpeed ZeRO-3 runs of
  // shared/data/published-runs/published_runs_2.csv (FlagPerf, Llama-2 7B on 8 A800s or H800s, DeepSpeed 0.11.1),
  // which ran 0.06-0.15 s per step slower than their GPU work on GPUs 2.7x apart: host time. docs/MODEL.md §12c
  // shows the fit; a faster or slower host sets its own.
  double zero3_hook_us = 84;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  // Which of the userbuffers overlaps tp_comm_overlap turns on (Megatron-Core's ModelParallelConfig names and defaults;
  // --disable-tp-comm-overlap-ag/-rs, --disable-tp-comm-bulk-dgrad/-wgrad, --tp-comm-overlap-rs-dgrad). ag: the
  // sequence-parallel all-gather in ring exchange with the GEMM that consumes it (qkv and fc1 forward, proj and fc2
  // dgrad); rs: the forward reduce-scatter pipelined with proj's and fc2's GEMM; bulk_dgrad: the input all-gather
  // beside qkv's and fc1's dgrad GEMM; bulk_wgrad: their dgrad's reduce-scatter beside the wgrad GEMM; rs_dgrad: that
  // reduce-scatter pipelined with the dgrad GEMM instead (replaces bulk_wgrad). Off: NCCL as without tp_comm_overlap.
  bool tp_comm_overlap_ag = true;
  bool tp_comm_overlap_rs = true;
  bool tp_comm_bulk_dgrad = true;
  bool tp_comm_bulk_wgrad = true;
  bool tp_comm_overlap_rs_dgrad = false;
  // Megatron's gradient-accumulation fusion (default on; --no-gradient-accumulation-fusion): the wgrad GEMM adds into
  // the main_grad buffer. Off: it writes the gradient in the parameter dtype and a separate kernel adds it.
  bool gradient_accumulation_fusion = true;
  // Megatron-Core's combined 1F1B schedule (--overlap-moe-expert-parallel-comm, Megatron-Bridge's moe_a2a_overlap): in
  // the steady state one micro-batch's forward and another's backward run layer by layer together, each one's
  // expert-parallel dispatch and combine all-to-alls on a communication stream beside the other's computation
  // (docs/MODEL.md "Expert-parallel overlap"). delay_wgrad_compute (--delay-wgrad-compute): the experts' weight
  // gradients run after their input gradients have been handed to the dispatch's backward all-to-all.
  bool overlap_moe_expert_parallel_comm = false;
  bool delay_wgrad_compute = false;
  // The step's kernels replayed from CUDA graphs (Megatron's --enable-cuda-graph / --cuda-graph-impl): the host does not
  // issue them one by one, so the compute model adds no eager launch gap (efficiency.yaml launch_gap_us).
  bool cuda_graphs = false;
  AttentionBackend attention_backend = AttentionBackend::Flash;
  CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::None;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  // fp8 only
  bool fp8_param_gather = false;              // fp8 only: parameters kept and all-gathered in fp8 (no bf16 copy)
  // fp8 only: Megatron's --first-last-layers-bf16 with --num-layers-at-start/end-in-bf16: the first and last layers
  // run their linear layers in bf16 (no casts, no fp8 weight copies); --no-fp8-wgrad: weight gradients in bf16.
  int fp8_bf16_first_layers = 0;
  int fp8_bf16_last_layers = 0;
  bool fp8_wgrad = true;
  bool layer_in_bf16(int layer, int num_layers) const {
    return layer >= 0 && layer < num_layers && (layer < fp8_bf16_first_layers || layer >= num_layers - fp8_bf16_last_layers);
  }
  // CPU optimizer offload (Megatron-LM's --optimizer-cpu-offload, HybridDeviceOptimizer; DeepSpeed ZeRO-Offload): the
  // fp32 master weights and Adam moments of `optimizer_offload_fraction` of this rank's optimizer shard live in host
  // memory and are updated by the CPU; each step copies those gradients to the host (fp32) and the updated weights
  // back (fp32, cast on the GPU). optimizer_offload_overlap (Megatron's --overlap-cpu-optimizer-d2h-h2d) pipelines
  // the copies with the CPU update tensor by tensor; without it copy, update and copy run one after the other.
  // Megatron-LM's --use-precision-aware-optimizer (Transformer Engine's FusedAdam): optimizer states stored in the
  // dtypes below (bytes per value) and 16-bit main gradients read as they are (no fp32 copy for the step).
  bool precision_aware_optimizer = false;
  int main_params_bytes = 4;  // --main-params-dtype fp32 | fp16 (| bf16: Apex's DistributedFusedAdam)
  int exp_avg_bytes = 4;      // --exp-avg-dtype fp32 | fp16 | bf16 | fp8
  int exp_avg_sq_bytes = 4;   // --exp-avg-sq-dtype
  bool optimizer_offload = false;
  double optimizer_offload_fraction = 1.0;
  bool optimizer_offload_overlap = false;
  // Activation offload (Megatron-LM's --cpu-offloading-num-layers, Transformer Engine's CPU offload): the saved
  // activations of the first N transformer layers are copied to host memory during the forward and brought back
  // ahead of their backward. 0 = off.
  int activation_offload_layers = 0;
  // Megatron-LM reduces gradients in fp32 under bf16 (accumulate_allreduce_grads_in_fp32).
  std::optional<bool> grad_reduce_in_fp32;  // nullopt = Megatron's default for the precision
  int64_t bucket_size = 0;                  // DP bucket in parameters; 0 = max(40M, 1M * dp) as Megatron-Core
};

struct LinkSpec {
  double bandwidth_GBps = 0;  // per GPU, one direction, GB/s (1e9 B/s)
  double latency_us = 0;
  std::string topology;       // inter-node only: fat-tree | rail-optimized | ... (for network models; the
                              // alpha-beta model uses bandwidth and latency only)
  // Inter-node only: the NICs' transport (one of kInterNodeTransports), whose data/nccl.yaml entry sets the NCCL
  // model's per-step network latency and the fraction of the NIC line rate every model gives the GPUs.
  std::string transport = "ib";
  // Inter-node only: the fraction of the NIC line rate the transport reaches, as the user states it; 0 = the
  // transport's own (data/nccl.yaml transports.<name>.bandwidth_efficiency).
  double bandwidth_efficiency = 0;
};

// The inter-node transports cluster.inter_node.transport accepts: InfiniBand verbs, RoCE v2 verbs, AWS EFA
// (libfabric through aws-ofi-nccl), Google's GPUDirect-TCPX and -TCPXO plugins, and NCCL's own socket transport.
inline constexpr std::string_view kInterNodeTransports[] = {"ib", "roce", "efa", "tcpx", "tcpxo", "socket"};

// cluster.gpu written as a mapping: the catalog GPU `base` with some of its figures replaced (0 = the catalog's).
// catalog/gpu_catalog.hpp's effective_gpu applies them wherever the job's GPU is looked up.
struct GpuOverride {
  double memory_GiB = 0;             // HBM capacity (a 96 GB H100 variant)
  double memory_bandwidth_TBps = 0;  // HBM bandwidth
  int sm_count = 0;                  // SMs; the tensor-core and vector rates scale with them (the per-SM rate is kept)
  double nvlink_GBps = 0;            // NVLink (or the intra-node link) per direction: the default of cluster.intra_node
  bool any() const { return memory_GiB > 0 || memory_bandwidth_TBps > 0 || sm_count > 0 || nvlink_GBps > 0; }
};

struct ClusterSpec {
  std::string gpu = "H100-SXM";  // the catalog's name (cluster.gpu as written is resolved by catalog/gpu_name.hpp)
  GpuOverride gpu_override;
  std::vector<std::string> gpu_notes;  // how cluster.gpu was read, where the name left something open
  // Per-GPU power limit, W (cluster.power_limit_W, or a power figure in cluster.gpu); 0 = the board's default power.
  double power_limit_W = 0;
  int num_gpus = 0;
  // The GPUs that share NVLink: the node the communication models, the topology and the ranks' placement see. With a
  // cluster.nvlink_domain larger than the host (an NVL72 rack of 4-GPU trays) the loader sets it to the job's GPUs in
  // one domain (job/nvlink_domain.hpp) and keeps the host's in host_gpus.
  int gpus_per_node = 8;
  int nvlink_domain = 0;  // cluster.nvlink_domain as written; 0 = each node is its own NVLink domain
  int host_gpus = 0;      // cluster.gpus_per_node as written when the domain spans hosts; 0 = gpus_per_node
  int gpus_per_host() const { return host_gpus > 0 ? host_gpus : gpus_per_node; }
  LinkSpec intra_node{450.0, 1.0, ""};
  LinkSpec inter_node{50.0, 5.0, "fat-tree"};  // 400 Gb/s per GPU NIC = 50 GB/s
  std::map<int, double> slow_ranks;             // rank -> compute slow-down factor (>= 1 slows)
  // The host side of each GPU, for offload (0 = data/efficiency.yaml's figure for the GPU's architecture): the
  // host<->device copy rate (PCIe; NVLink-C2C on Grace Hopper/Blackwell) and the host-DRAM traffic one rank's CPU
  // optimizer step sustains, both GB/s per GPU with every GPU of the node busy.
  double host_to_device_GBps = 0;
  double cpu_optimizer_GBps = 0;
  NetworkSpec network;                          // topology for the flow network model (docs/NETWORK.md)
  NcclEnv nccl_env;                             // cluster.nccl_env: what the nccl model's NCCL runs with
  // Keys of the network section the job's communication model does not use (job/cluster_rates.hpp), printed.
  std::vector<std::string> network_notes;
};

struct SimulationSpec {
  CommModel comm_model = CommModel::AlphaBeta;
  // Compute slowed beside communication (docs/OVERLAP.md): the SM-share model unless the job names another. A
  // trace-driven workload keeps its measured kernel times (the slowdown they suffered is in them) unless the job
  // names a model.
  OverlapModel overlap_model = OverlapModel::SmShare;
  bool overlap_model_given = false;  // the job file (or --set) named simulation.overlap_model
  // nccl model: calibrations from this SQLite store ("" = $STEPSIM_CALIBRATION_DB or the per-user default;
  // "none" = profile defaults only), preferring rows measured with this NCCL version ("" = any).
  std::string calibration_store;
  std::string nccl_version;
  // overlap_model coefficients: a coefficient file ("" = data/overlap.yaml); xgboost: the trained model.
  std::string overlap_file;
  // Sustained tensor-core clock fraction for this job's GPU (0 = the calibrated value in data/efficiency.yaml);
  // `stepsim calibrate compute` fits it, a user may set it for a cluster with other power limits.
  double sustained_clock = 0;
  // Multiplies the GPU architecture's attention-kernel efficiencies (0 = the calibrated value: the store's
  // `calibrate compute` row, else 1). For a cluster whose attention kernels differ from the shipped ones
  // (FlashAttention-3 vs FlashAttention-2, a newer cuDNN); `stepsim calibrate compute` fits it with the clock.
  double attention_scale = 0;
  // Host issue model (cost/host_issue.hpp): the host's speed in issuing eager ops relative to the measuring machine
  // (-1 = the GPU architecture's value in data/efficiency.yaml; 0 = off: every op issued at once).
  double host_time_scale = -1;
  // Simulate every rank, not one representative per class of symmetric ranks (the results are the same; for checks).
  bool all_ranks = false;
};

// The job file's `plan:` section, read by `stepsim plan` only: the framework whose plans are searched and the search's
// constraints, in the form the flags take them ("KEY=VALUE" for fix, "KEY=V1,V2" for allow, "KEY" or "KEY=V1,V2" for
// exclude); a flag given on the command line wins over the same key here.
struct PlanSection {
  std::string framework;
  std::vector<std::string> fix, allow, exclude;
  int max_tp_per_nvlink_domain = 0;
  bool any() const {
    return !framework.empty() || !fix.empty() || !allow.empty() || !exclude.empty() || max_tp_per_nvlink_domain > 0;
  }
};

struct JobSpec {
  ModelSpec model;
  ParallelismSpec parallelism;
  TrainingSpec training;
  ClusterSpec cluster;
  SimulationSpec simulation;
  PlanSection plan;
  std::string source;  // file (or "megatron-args") the job came from, for messages

  int64_t num_microbatches() const {
    return training.global_batch_size /
           (static_cast<int64_t>(training.micro_batch_size) * parallelism.data);
  }
};

// Bytes per element of a precision (weights/activations as stored).
int bytes_of(Precision p);
const char* name_of(Precision p);
const char* name_of(Recompute r);
const char* name_of(PipelineSchedule s);
const char* name_of(Activation a);
const char* name_of(AttentionType a);
const char* name_of(CommModel m);
const char* name_of(OverlapModel m);
const char* name_of(AttentionBackend b);
const char* name_of(Fp8Recipe r);
const char* name_of(CpCommType c);
const char* name_of(Framework f);  // the job-file name: megatron | torchtitan | deepspeed
const char* name_of(RecomputeModule m);  // Megatron-Core's name (core_attn, mlp, ...)
// The module Megatron-Core calls `name`; nullopt for any other name.
std::optional<RecomputeModule> recompute_module_named(std::string_view name);
// "core_attn, mlp, moe, moe_act, shared_experts, layernorm, mla_up_proj", for messages.
std::string recompute_module_names();

}  // namespace stepsim::spec

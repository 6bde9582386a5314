#pragma once
// A published, measured training run as ../shared/data/published-runs/published_runs.csv describes it: the model,
// the cluster, the parallel plan and what the source measured (step time, TFLOP/s per GPU, MFU or tokens/s).
// Blank cells stay unknown here (std::optional); what the simulator assumes for them is decided in run_job.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::validate {

struct PublishedRun {
  int line = 0;  // line in the CSV, for messages
  std::string id, source, model;
  // Model
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // 0 = same as heads
  int64_t ffn_hidden = 0;
  int64_t vocab = 0;
  int64_t seq_len = 0;
  int moe_experts = 0, moe_topk = 0;
  int64_t moe_ffn_hidden = 0;
  // Cluster
  std::string gpu;
  int num_gpus = 0;
  std::optional<int> gpus_per_node;
  std::optional<double> intra_node_bw_GBps, inter_node_bw_Gbps_per_gpu;
  // Parallel plan (dp is derived and only checked)
  int tp = 1, pp = 1, cp = 1, ep = 1;
  std::optional<int> dp, vp, micro_batch;
  int64_t global_batch = 0;
  std::string precision;  // fp16 | bf16 | fp8 | 16bit
  std::string recompute;  // full | selective | "" (not stated)
  std::string dist_optimizer;  // free text: none, yes, ZeRO-1, ZeRO-3, FSDP-style ...
  // Measured (at least one is given)
  std::optional<double> step_time_s, tflops_per_gpu, mfu, tokens_per_s_per_gpu;
  std::string notes;
  // Optional columns beyond the published format (explicit answers to what a source leaves implicit):
  std::string flop_convention;     // model | hardware
  std::optional<bool> sequence_parallel, tp_comm_overlap;
  // Megatron-Core's combined 1F1B EP overlap (--overlap-moe-expert-parallel-comm, Megatron-Bridge's moe_a2a_overlap)
  // and --delay-wgrad-compute.
  std::optional<bool> overlap_moe_expert_parallel_comm, delay_wgrad_compute;
  std::string token_dispatcher;    // alltoall | allgather | flex (DeepEP); blank = the job's default (alltoall)
  // The optimizer's state dtype (master weights and both Adam moments): fp32 (blank) | bf16 | fp16. NeMo 1.x recipes
  // set it with `optim.dtype` of Apex's distributed_fused_adam; becomes the precision-aware optimizer's dtypes.
  std::string optimizer_state_dtype;
  std::string attention_backend;   // flash | unfused
  std::string pipeline_layout;     // Megatron-Core's --pipeline-model-parallel-layout (checked when the job is built)
  // Megatron-Core's --recompute-modules of the run's recipe (selective recompute of these modules only; the names
  // the job checks: core_attn, mlp, moe, moe_act, shared_experts, layernorm, mla_up_proj). Empty = not stated.
  std::vector<std::string> recompute_modules;
  // How data parallelism shards (0 = replicated, 1 = optimizer states: the distributed optimizer or ZeRO-1, 2 = and
  // gradients: SHARD_GRAD_OP or ZeRO-2, 3 = and parameters: FSDP FULL_SHARD, FSDP2 fully_shard, ZeRO-3); wins over
  // what dist_optimizer's text says. Unset = not stated.
  std::optional<int> zero_stage;
  std::string framework;  // megatron | torchtitan | composer | deepspeed | jax; "" = not stated
  // The peak memory per GPU the source reports (PyTorch's max_memory_reserved as torchtitan logs it), in bytes: the
  // peak_memory_GiB column, else a figure the notes state ("Memory 82.4 GiB", "peak memory 33.71 GB"), read as
  // written (GiB or GB). peak_memory_from says which.
  std::optional<double> peak_memory_bytes;
  std::string peak_memory_from;
  // The framework column was blank and dist_optimizer names DeepSpeed (Megatron-DeepSpeed's ZeRO-1, DeepSpeed's
  // ZeRO-3): the row is DeepSpeed's, whose engine runs the step (framework_of_row).
  bool framework_inferred = false;
};

// The framework that ran a row: its framework column, else "deepspeed" when dist_optimizer names DeepSpeed (its
// engine, pipeline schedule and ZeRO run the step even around Megatron-LM's model code), else "".
std::string framework_of_row(const PublishedRun& run);

// Frameworks stepsim costs as another's (Megatron-Core's kernels and schedule): their runs say nothing about a GPU's
// sustained clock, so `calibrate compute` leaves them out, and validate prints the assumption.
bool framework_costed_as_megatron(const std::string& framework);
// A row whose plan the DeepSpeed profile (training.framework: deepspeed) covers: stated DeepSpeed, ZeRO-3, data
// parallelism only, dense (the Hugging Face model under DeepSpeed's engine; run_job.cpp also asks for a Llama-style
// model). Megatron-DeepSpeed's rows (inferred DeepSpeed, with Megatron-LM's model and parallelism) are not.
bool deepspeed_plan(const PublishedRun& run);

// The peak memory a row's notes state: "Memory <x> GiB" or "peak memory <x> GB|GiB" (case-insensitive), in bytes, with
// the words quoted in `from`; nothing when the notes state none or more than one. `logged_in_gib`: the figure is a log
// that prints only GiB (torchtitan's "memory: <x>GiB", which tables copy under a "GB" heading), so "GB" means GiB.
std::optional<double> peak_memory_in_notes(const std::string& notes, std::string* from, bool logged_in_gib = false);

// Reads a published-runs CSV (header names as in the shared file; column order free; unknown columns ignored).
// Throws InputError "<file>:<line>: column <name>: <rule>" for a missing required column, a malformed number or a
// row that gives no measurement. Limits: 16 MiB, 100,000 rows.
std::vector<PublishedRun> read_published_runs(const std::string& path);

// ASCII lower case (the reader's and the row rules' case-insensitive matching).
std::string lower_case(std::string_view s);
// A letter, digit or '_': what a word of a row's notes is made of.
bool is_word_char(char c);
// The next `word` (any case) at or after `from` that starts a word (no word character before it), or npos.
size_t find_word(const std::string& text, std::string_view word, size_t from);
std::vector<PublishedRun> parse_published_runs(const std::string& text, const std::string& source);

}  // namespace stepsim::validate

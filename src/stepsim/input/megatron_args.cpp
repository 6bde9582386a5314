// Megatron-LM argument string -> job tree. Flag names, value kinds, defaults and the cross-flag
// assertions follow megatron/training/arguments.py (parse_args / validate_args) so that a command
// line Megatron accepts maps to the job it would run, and one it rejects is rejected here too.
#include "stepsim/input/megatron_args.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/yaml_reader.hpp"
#include "stepsim/io/printable.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/job/pipeline_split.hpp"

namespace stepsim::spec {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
// Bounds on hostile input: an --moe-layer-freq pattern, and the emitted pipeline_layers list.
constexpr size_t kMaxPatternLength = 1u << 20;
constexpr int kMaxPatternDepth = 64;
constexpr int64_t kMaxModelChunks = 65536;
// Parallel degrees above this are refused (the job file allows the same: parallelism.* <= 2^20).
constexpr int64_t kMaxParallelDegree = int64_t{1} << 20;
// GPT-2 BPE: the tokenizer of the Megatron GPT examples (--vocab-file gpt2-vocab.json), used when
// neither --vocab-size nor --padded-vocab-size nor another --tokenizer-type says otherwise.
constexpr int64_t kGpt2BpeVocab = 50257;

[[noreturn]] void fail(std::string_view flag, const std::string& rule) {
  throw InputError("megatron-args: " + std::string(flag) + ": " + rule);
}
[[noreturn]] void fail_input(const std::string& rule) { throw InputError("megatron-args: " + rule); }

// ---------------------------------------------------------------------------------------------
// Shell-style tokenising (POSIX sh word splitting and quote removal; no expansions).

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::vector<std::string> tokenize(std::string_view s) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  size_t i = 0;
  const size_t n = s.size();
  auto continuation = [&](size_t at) -> size_t {  // length of a line break at `at`, 0 if none
    if (at < n && s[at] == '\n') return 1;
    if (at + 1 < n && s[at] == '\r' && s[at + 1] == '\n') return 2;  // pasted CRLF text
    return 0;
  };
  while (i < n) {
    const char c = s[i];
    if (c == '\\') {
      if (size_t brk = continuation(i + 1)) {
        i += 1 + brk;
        continue;
      }
      if (i + 1 >= n) fail_input("backslash at end of input");
      cur += s[i + 1];
      in_word = true;
      i += 2;
    } else if (c == '\'') {
      const size_t close = s.find('\'', i + 1);
      if (close == std::string_view::npos) fail_input("unterminated single quote");
      cur.append(s.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      in_word = true;
      ++i;
      for (;;) {
        if (i >= n) fail_input("unterminated double quote");
        if (s[i] == '"') break;
        if (s[i] == '\\' && i + 1 < n) {
          if (size_t brk = continuation(i + 1)) {
            i += 1 + brk;
            continue;
          }
          const char e = s[i + 1];
          if (e == '$' || e == '`' || e == '"' || e == '\\') {  // the only escapes inside "..."
            cur += e;
            i += 2;
            continue;
          }
        }
        cur += s[i++];
      }
      ++i;
    } else if (is_blank(c)) {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      ++i;
    } else if (c == '#' && !in_word) {  // comment to end of line, as in the example scripts
      while (i < n && s[i] != '\n') ++i;
    } else {
      cur += c;
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

// ---------------------------------------------------------------------------------------------
// The argument table.

enum class Kind : uint8_t { Flag, Value, List0, List1 };  // store_true, one value, nargs='*', nargs='+'
enum class Use : uint8_t { Map, Ignore, Reject };

struct Spec {
  Kind kind;
  Use use;
  const char* reason = nullptr;  // for Reject
};

using Table = std::unordered_map<std::string_view, Spec>;

void add(Table& t, std::initializer_list<std::string_view> names, Kind k, Use u, const char* why = nullptr) {
  for (auto n : names)
    if (!t.emplace(n, Spec{k, u, why}).second) std::abort();  // a flag listed twice is a bug in this table
}

const Table& table() {
  static const Table t = [] {
    Table t;
    // Mapped onto the job.
    add(t, {"--num-layers", "--hidden-size", "--num-attention-heads", "--num-query-groups", "--kv-channels",
            "--ffn-hidden-size", "--normalization", "--seq-length", "--max-position-embeddings", "--vocab-size",
            "--padded-vocab-size", "--make-vocab-size-divisible-by", "--tokenizer-type", "--num-experts",
            "--moe-router-topk", "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size", "--moe-layer-freq",
            "--moe-router-num-groups", "--moe-router-group-topk",
            "--moe-expert-capacity-factor", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
            "--mtp-num-layers", "--v-head-dim", "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
            "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--num-layers-per-virtual-pipeline-stage",
            "--num-virtual-stages-per-pipeline-rank", "--decoder-first-pipeline-num-layers",
            "--decoder-last-pipeline-num-layers", "--micro-batch-size", "--global-batch-size", "--fp8-format",
            "--recompute-granularity", "--recompute-method", "--recompute-num-layers", "--ddp-bucket-size",
            "--cpu-offloading-num-layers", "--num-distributed-optimizer-instances", "--optimizer",
            "--position-embedding-type", "--attention-backend", "--fp8-recipe", "--optimizer-offload-fraction",
            "--main-grads-dtype", "--main-params-dtype", "--exp-avg-dtype", "--exp-avg-sq-dtype",
            "--num-layers-at-start-in-bf16", "--num-layers-at-end-in-bf16", "--cuda-graph-impl",
            "--cross-entropy-fusion-impl"},
        Kind::Value, Use::Map);
    add(t, {"--group-query-attention", "--swiglu", "--squared-relu", "--quick-geglu", "--disable-bias-linear",
            "--untie-embeddings-and-output-weights", "--multi-latent-attention", "--sequence-parallel", "--bf16",
            "--fp16", "--recompute-activations", "--use-distributed-optimizer", "--overlap-grad-reduce",
            "--overlap-param-gather", "--tp-comm-overlap", "--optimizer-cpu-offload", "--cross-entropy-loss-fusion",
            "--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16", "--no-overlap-p2p-communication",
            "--use-rotary-position-embeddings", "--no-position-embedding", "--fp8-param-gather",
            "--overlap-p2p-communication", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer",
            "--first-last-layers-bf16", "--no-fp8-wgrad", "--distribute-saved-activations",
            "--moe-pad-expert-input-to-capacity", "--enable-cuda-graph", "--external-cuda-graph"},
        Kind::Flag, Use::Map);

    // Change the step but cannot be expressed in a job: refused rather than silently dropped.
    add(t, {"--pipeline-model-parallel-layout"}, Kind::Value, Use::Map);
    add(t, {"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"}, Kind::Flag, Use::Map);
    add(t, {"--use-torch-fsdp2", "--use-megatron-fsdp"}, Kind::Flag, Use::Map);
    add(t, {"--data-parallel-sharding-strategy", "--microbatch-group-size-per-virtual-pipeline-stage"}, Kind::Value,
        Use::Map);
    add(t, {"--no-gradient-accumulation-fusion"}, Kind::Flag, Use::Map);
    add(t, {"--fp4-format", "--fp4-recipe"}, Kind::Value, Use::Map);
    add(t, {"--fp4-param-gather"}, Kind::Flag, Use::Reject,
        "NVFP4's parameter all-gather in fp4 is not modelled (its all-gathers would be costed in bf16)");
    add(t, {"--window-size", "--window-attn-skip-freq"}, Kind::Value, Use::Map);
    add(t, {"--encoder-num-layers", "--decoder-num-layers", "--encoder-seq-length", "--decoder-seq-length"},
        Kind::Value, Use::Reject, "encoder-decoder models are not modelled; use --num-layers/--seq-length");
    add(t, {"--heterogeneous-layers-config-path", "--heterogeneous-layers-config-encoded-json",
            "--hybrid-override-pattern", "--hybrid-attention-ratio", "--hybrid-mlp-ratio"},
        Kind::Value, Use::Reject, "heterogeneous/hybrid layer stacks are not modelled");
    add(t, {"--is-hybrid-model"}, Kind::Flag, Use::Reject, "hybrid (Mamba) models are not modelled");
    add(t, {"--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute"}, Kind::Flag, Use::Map);
    add(t, {"--no-pin-cpu-grads", "--no-pin-cpu-params"}, Kind::Flag, Use::Reject,
        "CPU offload copies are modelled from pinned host memory (cluster.host_to_device_GBps); pageable copies are "
        "slower and synchronous: set a lower cluster.host_to_device_GBps and drop the flag");
    add(t, {"--use-sharp"}, Kind::Flag, Use::Reject,
        "SHARP is a property of the fabric: set cluster.network.sharp: true in the cluster file with "
        "simulation.comm_model: nccl (CollNet and NVLS+SHARP, docs/NETWORK.md) and drop the flag");
    add(t, {"--moe-extended-tp"}, Kind::Flag, Use::Reject,
        "removed from Megatron-Core; use --expert-tensor-parallel-size");
    add(t, {"--disable-tp-comm-overlap-ag", "--disable-tp-comm-overlap-rs", "--tp-comm-overlap-rs-dgrad",
            "--disable-tp-comm-bulk-dgrad", "--disable-tp-comm-bulk-wgrad"},
        Kind::Flag, Use::Map);
    // Deprecated since Transformer Engine 1.6: Megatron-Core passes tp_comm_overlap_ag / _rs instead (its
    // extensions/transformer_engine.py reads split_ag/split_rs only when the config lacks those), so no effect.
    add(t, {"--disable-tp-comm-split-ag", "--disable-tp-comm-split-rs"}, Kind::Flag, Use::Ignore);
    add(t, {"--yaml-cfg"}, Kind::Value, Use::Reject, "give the arguments on the command line");
    add(t, {"--batch-size"}, Kind::Value, Use::Reject, "no longer valid in Megatron-LM; use --micro-batch-size");
    add(t, {"--model-parallel-size"}, Kind::Value, Use::Reject,
        "no longer valid in Megatron-LM; use --tensor-model-parallel-size");
    add(t, {"--checkpoint-activations"}, Kind::Flag, Use::Reject,
        "no longer valid in Megatron-LM; use --recompute-activations or --recompute-granularity");

    // Accepted with no effect on the step: paths, logging, checkpointing, data, optimiser
    // hyper-parameters, initialisation, and kernel/implementation choices the cost model does not
    // distinguish (fusions, attention backend, MoE dispatcher, FP8 recipe details).
    add(t, {"--use-mcore-models", "--use-legacy-models", "--use-flash-attn", "--no-masked-softmax-fusion",
            "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion", "--no-bias-dropout-fusion", "--no-rope-fusion",
            "--no-persist-layer-norm",
            "--apply-layernorm-1p", "--apply-residual-connection-post-layernorm", "--openai-gelu", "--add-qkv-bias",
            "--qk-layernorm", "--qk-l2-norm", "--rotary-interleaved", "--use-rope-scaling", "--fp32-residual-connection",
            "--apply-query-key-layer-scaling", "--attention-softmax-in-fp32", "--fp16-lm-cross-entropy",
            "--disable-bf16-reduced-precision-matmul", "--no-check-for-nan-in-loss-and-grad", "--check-for-spiky-loss",
            "--check-for-large-grads", "--moe-grouped-gemm",
            "--moe-use-legacy-grouped-gemm", "--moe-router-pre-softmax",
            "--moe-router-enable-expert-bias", "--moe-router-fusion", "--moe-router-force-load-balancing",
            "--moe-router-padding-for-fp8", "--moe-per-layer-logging",
            "--moe-enable-deepep", "--moe-apply-probs-on-input",
            "--moe-use-upcycling",
            "--te-rng-tracker",
            "--inference-rng-tracker", "--overlap-param-gather-with-optimizer-step", "--no-align-param-gather",
            "--no-align-grad-reduce", "--ddp-pad-buckets-for-high-nccl-busbw",
            "--ddp-reduce-scatter-with-fp32-accumulation", "--ddp-average-in-collective",
            "--defer-embedding-wgrad-compute", "--no-scatter-gather-tensors-in-pipeline", "--use-ring-exchange-p2p",
            "--overlap-p2p-communication-warmup-flush", "--use-nccl-ub", "--disable-symmetric-registration",
            "--use-tp-pp-dp-mapping",
            "--use-torch-optimizer-for-cpu-offload", "--use-cpu-initialization",
            "--deterministic-mode", "--calculate-per-token-loss", "--manual-gc", "--no-manual-gc-eval",
            "--decode-only-cuda-graphs", "--record-memory-history",
            "--use-pytorch-profiler", "--profile", "--log-params-norm", "--log-num-zeros-in-grad", "--log-throughput",
            "--log-progress", "--log-energy", "--log-timers-to-tensorboard", "--log-validation-ppl-to-tensorboard",
            "--log-memory-to-tensorboard", "--log-world-size-to-tensorboard", "--log-straggler",
            "--no-log-loss-scale-to-tensorboard", "--no-barrier-with-level-1-timing", "--disable-straggler-on-startup",
            "--mock-data", "--no-mmap-bin-files", "--reset-position-ids", "--reset-attention-mask", "--eod-mask-loss",
            "--no-create-attention-mask-in-dataloader", "--allow-ambiguous-pad-tokens", "--legacy-tokenizer",
            "--trust-remote-code", "--no-save-optim", "--no-save-rng", "--no-load-optim", "--no-load-rng",
            "--load-main-params-from-ckpt", "--finetune", "--no-initialization", "--use-checkpoint-args",
            "--use-mp-args-from-checkpoint-args", "--no-use-tokenizer-model-from-checkpoint-args",
            "--exit-on-missing-checkpoint", "--use-dist-ckpt", "--use-persistent-ckpt-worker",
            "--auto-detect-ckpt-format", "--ckpt-fully-parallel-save", "--no-ckpt-fully-parallel-save", "--async-save",
            "--ckpt-fully-parallel-load", "--ckpt-assume-constant-structure", "--dist-ckpt-save-pre-mcore-014",
            "--dist-ckpt-optim-fully-reshardable", "--distrib-optim-fully-reshardable-mem-efficient",
            "--ckpt-convert-update-legacy-dist-opt-format", "--exit-signal-handler", "--adlr-autoresume",
            "--skip-train", "--full-validation", "--multiple-validation-sets", "--test-mode",
            "--data-parallel-random-init", "--init-method-xavier-uniform", "--override-opt_param-scheduler",
            "--override-opt-param-scheduler", "--use-checkpoint-opt_param-scheduler",
            "--use-checkpoint-opt-param-scheduler", "--no-one-logger", "--one-logger-async", "--enable-ft-package",
            "--calc-ft-timeouts", "--inprocess-restart", "--inprocess-empty-cuda-cache",
            "--run-workload-inspector-server", "--enable-experimental", "--disable-msc", "--disable-gloo-process-groups",
            "--no-clone-scatter-output-in-embedding", "--replication", "--use-te-activation-func",
            "--use-fused-weighted-squared-relu", "--decrease-batch-size-if-needed", "--cache-mla-latents",
            "--no-gradient-reduce-div-fusion", "--no-async-tensor-model-parallel-allreduce",
            "--reuse-grad-buf-for-mxfp8-param-ag", "--bert-no-binary-head"},
        Kind::Flag, Use::Ignore);
    add(t, {"--transformer-impl", "--rotary-base",
            "--rotary-percent", "--rotary-seq-len-interpolation-factor", "--rope-scaling-factor", "--rope-type",
            "--rotary-scaling-factor", "--mscale", "--mscale-all-dim", "--no-rope-freq", "--softmax-type",
            "--relative-attention-num-buckets", "--relative-attention-max-distance", "--norm-epsilon",
            "--init-method-std", "--embedding-init-method-std",
            "--weight-decay", "--start-weight-decay", "--end-weight-decay", "--weight-decay-incr-style", "--clip-grad",
            "--adam-beta1", "--adam-beta2", "--adam-eps", "--sgd-momentum", "--lr",
            "--lr-decay-style", "--lr-wsd-decay-style", "--lr-decay-iters", "--lr-decay-samples",
            "--lr-wsd-decay-samples", "--lr-wsd-decay-iters", "--lr-warmup-fraction", "--lr-warmup-iters",
            "--lr-warmup-samples", "--lr-warmup-init", "--min-lr", "--decoupled-lr", "--decoupled-min-lr", "--seed",
            "--train-iters", "--train-samples", "--log-interval", "--exit-interval", "--exit-duration-in-mins",
            "--tensorboard-dir", "--tensorboard-log-interval", "--tensorboard-queue-size", "--timing-log-level",
            "--timing-log-option", "--logging-level", "--wandb-project", "--wandb-entity", "--wandb-exp-name",
            "--wandb-save-dir", "--eval-iters", "--eval-interval", "--save", "--save-interval",
            "--persistent-save-interval", "--save-retain-interval", "--load", "--pretrained-checkpoint", "--ckpt-step",
            "--ckpt-format", "--ckpt-convert-format", "--ckpt-convert-save", "--dist-ckpt-format",
            "--dist-ckpt-strictness", "--non-persistent-save-interval", "--non-persistent-ckpt-type",
            "--non-persistent-global-ckpt-dir", "--non-persistent-local-ckpt-dir", "--non-persistent-local-ckpt-algo",
            "--replication-jump", "--replication-factor", "--vocab-file", "--merge-file", "--vocab-extra-ids",
            "--tokenizer-model", "--tokenizer-metadata", "--tiktoken-pattern", "--tiktoken-num-special-tokens",
            "--split", "--data-cache-path", "--data-args-path", "--per-split-data-args-path", "--num-workers",
            "--num-dataset-builder-threads", "--object-storage-cache-path", "--mid-level-dataset-surplus",
            "--dataloader-type", "--distributed-backend", "--distributed-timeout-minutes",
            "--distributed-timeout-seconds-after-init", "--local-rank", "--loss-scale", "--initial-loss-scale",
            "--min-loss-scale", "--loss-scale-window", "--hysteresis", "--fp8-margin", "--fp8-interval",
            "--fp8-amax-history-len", "--fp8-amax-compute-algo", "--fp8-quantizer-factory",
            "--moe-router-dtype",
            "--moe-router-score-function",
            "--moe-router-topk-scaling-factor", "--moe-router-bias-update-rate", "--moe-z-loss-coeff",
            "--moe-input-jitter-eps", "--moe-deepep-num-sms", "--moe-token-drop-policy",
            // --ddp-num-buckets: Megatron-Core's DistributedDataParallel only checks it against --ddp-bucket-size;
            // its buckets are sized by bucket_size (Megatron-FSDP v2 refuses it).
            "--moe-upcycling-granularity", "--ddp-num-buckets",
            "--pipeline-model-parallel-comm-backend", "--tp-comm-overlap-cfg", "--tp-comm-bootstrap-backend",
            "--empty-unused-memory-level", "--check-weight-hash-across-dp-replicas-interval", "--train-sync-interval",
            "--manual-gc-interval", "--profile-step-start", "--profile-step-end", "--memory-snapshot-path",
            "--result-rejected-tracker-filename", "--cuda-graph-scope",
            "--cuda-graph-warmup-steps", "--dump-param-to-param-group-map", "--sharp-enabled-group",
            "--suggested-communication-unit-size",
            "--nccl-communicator-config-path", "--config-logger-dir", "--one-logger-project", "--one-logger-run-name",
            "--app-tag-run-name", "--app-tag-run-version", "--straggler-ctrlr-port", "--straggler-minmax-count",
            "--adlr-autoresume-interval", "--error-injection-rate", "--error-injection-type", "--rerun-mode",
            "--wgrad-deferral-limit", "--glu-linear-offset", "--activation-func-clamp-value",
            "--sft-tokenizer-prompt-format", "--warmup"},
        Kind::Value, Use::Ignore);
    add(t, {"--data-path", "--train-data-path", "--valid-data-path", "--test-data-path", "--rampup-batch-size",
            "--spec", "--high-priority-stream-groups"},
        Kind::List0, Use::Ignore);
    add(t, {"--recompute-modules"}, Kind::List0, Use::Map);
    add(t, {"--moe-token-dispatcher-type"}, Kind::Value, Use::Map);
    add(t, {"--hidden-dropout", "--attention-dropout"}, Kind::Value, Use::Map);
    add(t, {"--moe-shared-expert-overlap", "--moe-layer-recompute", "--moe-permute-fusion"}, Kind::Flag, Use::Map);
    add(t, {"--cp-comm-type"}, Kind::List1, Use::Map);
    add(t, {"--hierarchical-context-parallel-sizes"}, Kind::List1, Use::Map);
    add(t, {"--iterations-to-skip", "--profile-ranks",
            "--mrope-section", "--tiktoken-special-tokens", "--moe-router-load-balancing-type", "--moe-aux-loss-coeff"},
        Kind::List1, Use::Ignore);
    return t;
  }();
  return t;
}

// ---------------------------------------------------------------------------------------------
// Parsed arguments: last occurrence wins, as with argparse.

struct Args {
  std::map<std::string, std::string, std::less<>> values;
  std::set<std::string, std::less<>> flags;

  const std::string* get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }
  bool has(std::string_view name) const { return flags.count(name) != 0; }

  int64_t to_int(std::string_view name, const std::string& v, int64_t min) const {
    std::string_view s = v;
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);  // Python's int() accepts a sign
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec == std::errc::result_out_of_range) fail(name, "must be at most " + std::to_string(kMaxInt));
    if (ec != std::errc() || end != s.data() + s.size() || s.empty())
      fail(name, "not an integer: '" + printable(v) + "'");
    if (x > kMaxInt) fail(name, "must be at most " + std::to_string(kMaxInt));
    if (x < min) fail(name, std::string(min == 0 ? "must be non-negative" : "must be positive") + ", got " + std::to_string(x));
    return x;
  }
  std::optional<int64_t> opt_int(std::string_view name, int64_t min = 1) const {
    const std::string* v = get(name);
    if (!v) return std::nullopt;
    return to_int(name, *v, min);
  }
  int64_t req_int(std::string_view name) const {
    const std::string* v = get(name);
    if (!v) fail(name, "missing (required)");
    return to_int(name, *v, 1);
  }
  std::optional<double> opt_float(std::string_view name) const {
    const std::string* v = get(name);
    if (!v) return std::nullopt;
    double x = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc() || end != v->data() + v->size() || v->empty() || !std::isfinite(x))
      fail(name, "not a finite number: '" + printable(*v) + "'");
    return x;
  }
  std::optional<double> opt_positive_float(std::string_view name) const {
    const auto x = opt_float(name);
    if (x && !(*x > 0)) fail(name, "must be positive, got " + printable(*get(name)));
    return x;
  }
  // One of `choices`, or the flag's default when absent.
  std::optional<std::string> opt_choice(std::string_view name, std::initializer_list<std::string_view> choices) const {
    const std::string* v = get(name);
    if (!v) return std::nullopt;
    std::string list;
    for (auto c : choices) {
      if (*v == c) return *v;
      list += (list.empty() ? "" : ", ") + std::string(c);
    }
    fail(name, "must be one of " + list + ", got '" + printable(*v) + "'");
  }
};

int64_t checked_mul(int64_t a, int64_t b, std::string_view flag) {
  if (a != 0 && b > kMaxInt / a) fail(flag, "derived size exceeds " + std::to_string(kMaxInt));
  return a * b;
}

bool starts_with_dashes(const std::string& w) { return w.size() >= 2 && w[0] == '-' && w[1] == '-'; }

Args parse(const std::vector<std::string>& words) {
  Args a;
  size_t i = 0;
  // A pasted launcher prefix ("python pretrain_gpt.py", "torchrun --nproc_per_node 8 pretrain_gpt.py")
  // belongs to the launcher, not to Megatron: everything up to the first *.py word is skipped.
  if (!words.empty() && !starts_with_dashes(words[0])) {
    size_t script = 0;
    while (script < words.size() && !(words[script].size() > 3 && words[script].ends_with(".py"))) ++script;
    if (script == words.size()) fail_input("unexpected argument '" + printable(words[0]) + "' (arguments start with --)");
    i = script + 1;
  }
  const Table& t = table();
  while (i < words.size()) {
    const std::string& w = words[i++];
    if (!starts_with_dashes(w) || w.size() == 2) fail_input("unexpected argument '" + printable(w) + "'");
    const size_t eq = w.find('=');
    const std::string name = w.substr(0, eq);
    const auto it = t.find(name);
    if (it == t.end()) {
      // Megatron-LM's own flags, listed in its arguments.py; the nearest one within typo distance is suggested.
      static const std::set<std::string> flags = [&t] {
        std::set<std::string> all;
        for (const auto& [flag, spec] : t) all.emplace(flag);
        return all;
      }();
      // Spellings of other tools and of older Megatron-LM, which are not typos of the flag they mean.
      static const std::map<std::string, std::string> other_spellings = {
          {"--tp", "--tensor-model-parallel-size"},
          {"--tensor-parallel-size", "--tensor-model-parallel-size"},
          {"--tensor-parallel", "--tensor-model-parallel-size"},
          {"--pp", "--pipeline-model-parallel-size"},
          {"--pipeline-parallel-size", "--pipeline-model-parallel-size"},
          {"--cp", "--context-parallel-size"},
          {"--ep", "--expert-model-parallel-size"},
          {"--expert-parallel-size", "--expert-model-parallel-size"},
          {"--num-key-value-heads", "--num-query-groups"},
          {"--num-kv-heads", "--num-query-groups"},
          {"--intermediate-size", "--ffn-hidden-size"},
          {"--num-hidden-layers", "--num-layers"},
      };
      const auto other = other_spellings.find(name);
      const std::string near = other != other_spellings.end() ? other->second
                               : name.size() <= 64              ? did_you_mean(name, flags)
                                                                : "";
      fail_input("unknown argument " + printable(name) + (near.empty() ? "" : " (did you mean " + near + "?)"));
    }
    const Spec& spec = it->second;
    if (spec.use == Use::Reject) fail(name, std::string("not supported (") + spec.reason + ")");
    std::vector<std::string> vals;
    if (eq != std::string::npos) vals.push_back(w.substr(eq + 1));
    switch (spec.kind) {
      case Kind::Flag:
        if (!vals.empty()) fail(name, "takes no value");
        break;
      case Kind::Value:
        if (vals.empty()) {
          if (i >= words.size() || starts_with_dashes(words[i])) fail(name, "missing value");
          vals.push_back(words[i++]);
        }
        break;
      case Kind::List0:
      case Kind::List1:
        if (vals.empty())
          while (i < words.size() && !starts_with_dashes(words[i])) vals.push_back(words[i++]);
        if (spec.kind == Kind::List1 && vals.empty()) fail(name, "expects at least one value");
        break;
    }
    if (spec.use != Use::Map) continue;
    if (spec.kind == Kind::Flag) {
      a.flags.insert(name);
    } else {
      // Lists (one value per layer, e.g. --cp-comm-type) are kept space-separated; a list flag may be given empty.
      std::string joined;
      for (size_t k = 0; k < vals.size(); ++k) joined += (k ? " " : "") + vals[k];
      a.values[name] = joined;
    }
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// --moe-layer-freq: an int N (layer i is MoE iff i % N == 0) or a Python list expression such as
// "([0]*3+[1]*58)". Megatron eval()s the expression after allowing only digits , [ ] ( ) + *; this
// is a small evaluator for that same language (lists, ints, '+' concatenation, '*' repetition).

class PatternEval {
 public:
  explicit PatternEval(std::string_view s, const char* flag = "--moe-layer-freq") : s_(s), flag_(flag) {}

  std::vector<int> run() {
    for (char c : s_)
      if (!(std::isdigit(static_cast<unsigned char>(c)) || c == ',' || c == '[' || c == ']' || c == '(' || c == ')' ||
            c == '+' || c == '*'))
        bad("invalid character '" + printable(std::string_view(&c, 1)) + "' (allowed: digits , [ ] ( ) + *)");
    Val v = expr(0);
    if (pos_ != s_.size()) bad("unexpected '" + printable(s_.substr(pos_, 1)) + "'");
    if (!v.is_list) bad("must evaluate to a list");
    return v.list;
  }

 private:
  struct Val {
    bool is_list = false;
    int64_t num = 0;
    std::vector<int> list;
  };

  [[noreturn]] void bad(const std::string& why) const {
    fail(flag_, "invalid pattern '" + printable(s_) + "': " + why);
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Val expr(int depth) {
    Val v = term(depth);
    while (eat('+')) {
      Val r = term(depth);
      if (v.is_list != r.is_list) bad("'+' mixes a list and a number");
      if (v.is_list) {
        if (v.list.size() + r.list.size() > kMaxPatternLength) bad("longer than " + std::to_string(kMaxPatternLength));
        v.list.insert(v.list.end(), r.list.begin(), r.list.end());
      } else {
        v.num = std::min<int64_t>(v.num + r.num, kMaxNumber);
      }
    }
    return v;
  }

  Val term(int depth) {
    Val v = atom(depth);
    while (eat('*')) {
      Val r = atom(depth);
      if (v.is_list && r.is_list) bad("cannot multiply two lists");
      if (!v.is_list && !r.is_list) {
        v.num = (r.num != 0 && v.num > kMaxNumber / r.num) ? kMaxNumber : v.num * r.num;
        continue;
      }
      Val& list = v.is_list ? v : r;
      const int64_t times = v.is_list ? r.num : v.num;
      if (times != 0 && list.list.size() > kMaxPatternLength / static_cast<uint64_t>(times))
        bad("longer than " + std::to_string(kMaxPatternLength));
      std::vector<int> out;
      out.reserve(list.list.size() * static_cast<size_t>(times));
      for (int64_t k = 0; k < times; ++k) out.insert(out.end(), list.list.begin(), list.list.end());
      v.is_list = true;
      v.list = std::move(out);
    }
    return v;
  }

  Val atom(int depth) {
    if (depth > kMaxPatternDepth) bad("nested too deeply");
    Val v;
    if (eat('(')) {
      v = expr(depth + 1);
      if (!eat(')')) bad("missing ')'");
      return v;
    }
    if (eat('[')) {
      v.is_list = true;
      while (!eat(']')) {
        Val e = expr(depth + 1);
        if (e.is_list) bad("list elements must be 0 or 1");
        if (e.num != 0 && e.num != 1) bad("list elements must be 0 or 1, got " + std::to_string(e.num));
        if (v.list.size() >= kMaxPatternLength) bad("longer than " + std::to_string(kMaxPatternLength));
        v.list.push_back(static_cast<int>(e.num));
        if (!eat(',')) {
          if (!eat(']')) bad("missing ']'");
          break;
        }
      }
      return v;
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start) bad(pos_ < s_.size() ? "unexpected '" + printable(s_.substr(pos_, 1)) + "'" : "unexpected end");
    int64_t x = 0;
    const std::errc ec = std::from_chars(s_.data() + start, s_.data() + pos_, x).ec;
    v.num = (ec != std::errc() || x > kMaxNumber) ? kMaxNumber : x;  // saturate: only *0 could shrink it
    return v;
  }

  static constexpr int64_t kMaxNumber = int64_t{1} << 40;
  std::string_view s_;
  const char* flag_;
  size_t pos_ = 0;
};

struct LayerFreq {
  bool any_moe = true;
  int64_t first_k_dense = 0;
  int64_t layer_freq = 1;
};

LayerFreq moe_layer_freq(const Args& a, int64_t num_layers) {
  const std::string* v = a.get("--moe-layer-freq");
  if (!v) return {};
  if (v->find('[') == std::string::npos) return {true, 0, a.to_int("--moe-layer-freq", *v, 1)};
  const std::vector<int> p = PatternEval(*v).run();
  if (static_cast<int64_t>(p.size()) != num_layers)
    fail("--moe-layer-freq", "pattern has " + std::to_string(p.size()) + " entries, --num-layers is " +
                                 std::to_string(num_layers));
  // The schema's form: dense below first_k_dense, then MoE every layer_freq-th layer.
  int64_t first = -1, second = -1;
  for (size_t i = 0; i < p.size() && second < 0; ++i)
    if (p[i] == 1) (first < 0 ? first : second) = static_cast<int64_t>(i);
  if (first < 0) return {false, 0, 1};
  LayerFreq f{true, first, second < 0 ? num_layers - first : second - first};
  for (int64_t i = 0; i < num_layers; ++i)
    if (p[static_cast<size_t>(i)] != ((i >= f.first_k_dense && (i - f.first_k_dense) % f.layer_freq == 0) ? 1 : 0))
      fail("--moe-layer-freq", "pattern is not 'first K layers dense, then every N-th layer MoE'");
  return f;
}

// --window-size LEFT,RIGHT (Megatron's tuple_type) with --window-attn-skip-freq N or a list expression: the
// attention section's window_size and window_attn_skip_freq. Only causal windows (RIGHT 0) are modelled; LEFT -1 is
// Megatron's infinite window, i.e. none.
void attention_window(const Args& a, int64_t num_layers, YAML::Node& att) {
  const std::string* w = a.get("--window-size");
  if (!w) {
    if (a.get("--window-attn-skip-freq")) fail("--window-attn-skip-freq", "needs --window-size");
    return;
  }
  const size_t comma = w->find(',');
  if (comma == std::string::npos) {
    fail("--window-size", "must be LEFT,RIGHT (e.g. 4096,0), got '" + printable(*w) + "'");
  }
  const std::string left = w->substr(0, comma), right = w->substr(comma + 1);
  if (right != "0") fail("--window-size", "only causal windows (RIGHT 0) are modelled, got '" + printable(*w) + "'");
  if (left == "-1") return;
  att["window_size"] = a.to_int("--window-size", left, 1);
  const std::string* f = a.get("--window-attn-skip-freq");
  if (!f) return;
  if (f->find('[') == std::string::npos) {
    att["window_attn_skip_freq"] = a.to_int("--window-attn-skip-freq", *f, 1);
    return;
  }
  const std::vector<int> p = PatternEval(*f, "--window-attn-skip-freq").run();
  if (static_cast<int64_t>(p.size()) != num_layers) {
    fail("--window-attn-skip-freq", "pattern has " + std::to_string(p.size()) + " entries, --num-layers is " +
                                        std::to_string(num_layers));
  }
  for (int x : p) att["window_attn_skip_freq"].push_back(x);
}

// ---------------------------------------------------------------------------------------------

YAML::Node build(const Args& a) {
  const int64_t layers = a.req_int("--num-layers");
  const int64_t hidden = a.req_int("--hidden-size");
  const int64_t heads = a.req_int("--num-attention-heads");
  const int64_t seq = a.req_int("--seq-length");
  const int64_t mbs = a.req_int("--micro-batch-size");
  const int64_t gbs = a.req_int("--global-batch-size");
  const int64_t tp = a.opt_int("--tensor-model-parallel-size").value_or(1);
  const int64_t pp = a.opt_int("--pipeline-model-parallel-size").value_or(1);
  const int64_t cp = a.opt_int("--context-parallel-size").value_or(1);
  const int64_t ep = a.opt_int("--expert-model-parallel-size").value_or(1);
  // Degrees beyond a million GPUs are a typo, refused here by their own flag (the padded vocabulary and other derived
  // sizes would otherwise overflow and name the flag they were derived in).
  const std::pair<const char*, int64_t> degrees[] = {{"--tensor-model-parallel-size", tp},
                                                      {"--pipeline-model-parallel-size", pp},
                                                      {"--context-parallel-size", cp},
                                                      {"--expert-model-parallel-size", ep}};
  for (const auto& [flag, degree] : degrees) {
    if (degree > kMaxParallelDegree) fail(flag, "must be at most " + std::to_string(kMaxParallelDegree));
  }

  if (auto mpe = a.opt_int("--max-position-embeddings"); mpe && *mpe < seq)
    fail("--max-position-embeddings", "must be at least --seq-length (" + std::to_string(seq) + ")");
  if (cp > 1 && seq % (2 * cp) != 0) fail("--seq-length", "must be a multiple of 2 * --context-parallel-size");

  // --- model ---
  YAML::Node model;
  model["name"] = "megatron-args";
  model["num_layers"] = layers;
  if (const auto mtp = a.opt_int("--mtp-num-layers", 0)) model["mtp_layers"] = *mtp;
  model["hidden_size"] = hidden;
  model["num_attention_heads"] = heads;

  if (a.has("--swiglu") && (a.has("--squared-relu") || a.has("--quick-geglu")))
    fail("--swiglu", "cannot be combined with --squared-relu or --quick-geglu");
  // Gated activations cost three GEMMs, plain ones two: quick-GeGLU counts as SwiGLU and squared
  // ReLU as GELU.
  const bool gated = a.has("--swiglu") || a.has("--quick-geglu");
  int64_t ffn = 0;
  if (auto f = a.opt_int("--ffn-hidden-size")) {
    ffn = *f;
  } else if (gated) {
    ffn = hidden / 24 * 64;  // Megatron: int((4 * h * 2 / 3) / 64) * 64, i.e. floor(h / 24) * 64
    if (ffn == 0) fail("--ffn-hidden-size", "missing, and the --swiglu default int(8h/3/64)*64 is 0");
  } else {
    ffn = checked_mul(4, hidden, "--hidden-size");  // Megatron: 4 * hidden_size
  }

  const bool mla = a.has("--multi-latent-attention");
  // Megatron applies --num-query-groups (default 1) only together with --group-query-attention.
  int64_t groups = heads;
  if (!mla && a.has("--group-query-attention")) {
    groups = a.opt_int("--num-query-groups").value_or(1);
    if (groups > heads || heads % groups != 0)
      fail("--num-query-groups", "must divide --num-attention-heads (" + std::to_string(heads) + "), got " +
                                     std::to_string(groups));
  } else if (auto g = a.opt_int("--num-query-groups")) {
    (void)g;  // validated, unused without --group-query-attention (as in Megatron)
  }

  YAML::Node att;
  int64_t kv_channels = 0;
  if (mla) {
    const int64_t v_head = a.opt_int("--v-head-dim").value_or(128);
    att["type"] = "mla";
    att["q_lora_rank"] = a.opt_int("--q-lora-rank").value_or(0);  // default None: no query compression
    att["kv_lora_rank"] = a.opt_int("--kv-lora-rank").value_or(32);
    att["qk_nope_head_dim"] = a.opt_int("--qk-head-dim").value_or(128);
    att["qk_rope_head_dim"] = a.opt_int("--qk-pos-emb-head-dim").value_or(64);
    att["v_head_dim"] = v_head;
    // As for HF configs: kv_channels carries the value head width unless given.
    kv_channels = a.opt_int("--kv-channels").value_or(v_head);
  } else {
    att["type"] = groups < heads ? "gqa" : "mha";
    if (auto kv = a.opt_int("--kv-channels")) {
      kv_channels = *kv;
    } else {
      if (hidden % heads != 0)
        fail("--num-attention-heads", "must divide --hidden-size (" + std::to_string(hidden) + ") unless --kv-channels is given");
      kv_channels = hidden / heads;
    }
  }
  model["num_query_groups"] = groups;
  model["kv_channels"] = kv_channels;
  model["ffn_hidden_size"] = ffn;
  model["activation"] = gated ? "swiglu" : "gelu";
  const auto norm = a.opt_choice("--normalization", {"LayerNorm", "RMSNorm"}).value_or("LayerNorm");
  model["normalization"] = norm == "RMSNorm" ? "rmsnorm" : "layernorm";
  model["add_bias_linear"] = !a.has("--disable-bias-linear");
  // Megatron's default residual dropout is 0.1 whatever the activation; recipes of gated models pass 0.
  const double hidden_dropout = a.opt_float("--hidden-dropout").value_or(0.1);
  if (!(hidden_dropout >= 0 && hidden_dropout < 1)) fail("--hidden-dropout", "must be in [0, 1), got " + printable(*a.get("--hidden-dropout")));
  model["hidden_dropout"] = hidden_dropout;
  const double attention_dropout = a.opt_float("--attention-dropout").value_or(0.1);  // Megatron's default
  if (!(attention_dropout >= 0 && attention_dropout < 1)) {
    fail("--attention-dropout", "must be in [0, 1), got " + printable(*a.get("--attention-dropout")));
  }
  model["attention_dropout"] = attention_dropout;
  // Default learned_absolute (a seq_length x hidden table); rope and mrope are rotary. "none" has
  // neither a table nor parameters, which costs the same as rotary. --use-rotary-position-embeddings
  // is the deprecated spelling of rope, and --no-position-embedding is only accepted with rope.
  std::string pos = a.opt_choice("--position-embedding-type", {"learned_absolute", "rope", "mrope", "relative", "none"})
                        .value_or("learned_absolute");
  if (a.has("--use-rotary-position-embeddings")) pos = "rope";
  if (pos == "relative") fail("--position-embedding-type", "relative position embeddings are not modelled");
  if (a.has("--no-position-embedding") && pos != "rope")
    fail("--no-position-embedding", "deprecated; only accepted with --position-embedding-type rope");
  model["position_embedding"] = pos == "learned_absolute" ? "learned" : "rope";

  // Vocabulary as Megatron pads it (_vocab_size_with_padding): rounded up to a multiple of
  // --make-vocab-size-divisible-by (128) * tensor-parallel size. Without --vocab-size the GPT-2 BPE
  // tokenizer of the GPT examples (50257) is assumed; any other tokenizer needs --vocab-size, since
  // its vocabulary cannot be read here. NullTokenizer adds one EOD token, as Megatron's does.
  int64_t vocab = 0;
  if (auto padded = a.opt_int("--padded-vocab-size")) {
    vocab = *padded;
  } else {
    const std::string* tok = a.get("--tokenizer-type");
    int64_t orig = 0;
    if (auto v = a.opt_int("--vocab-size")) {
      orig = *v + ((tok && *tok == "NullTokenizer") ? 1 : 0);
    } else if (tok && *tok != "GPT2BPETokenizer") {
      fail("--vocab-size", "required with --tokenizer-type " + printable(*tok) + " (or give --padded-vocab-size)");
    } else {
      orig = kGpt2BpeVocab;
    }
    const int64_t multiple = checked_mul(a.opt_int("--make-vocab-size-divisible-by").value_or(128), tp,
                                         "--make-vocab-size-divisible-by");
    vocab = (orig + multiple - 1) / multiple * multiple;
    if (vocab > kMaxInt) fail("--vocab-size", "padded size exceeds " + std::to_string(kMaxInt));
  }
  model["vocab_size"] = vocab;
  model["seq_length"] = seq;
  model["tie_embeddings"] = !a.has("--untie-embeddings-and-output-weights");  // Megatron ties by default
  attention_window(a, layers, att);
  model["attention"] = att;

  const int64_t experts = a.opt_int("--num-experts", 0).value_or(0);  // 0 means dense, as None
  if (ep > 1) {
    if (experts == 0) fail("--expert-model-parallel-size", "requires --num-experts");
    if (experts % ep != 0) fail("--expert-model-parallel-size", "must divide --num-experts (" + std::to_string(experts) + ")");
    if (a.has("--fp16")) fail("--expert-model-parallel-size", "expert parallelism is not supported with --fp16");
  }
  // Megatron-Core's expert tensor parallel size (any value the job's rules accept: docs/MODEL.md §12a).
  const auto etp = a.opt_int("--expert-tensor-parallel-size");
  if (experts > 0) {
    const LayerFreq lf = moe_layer_freq(a, layers);
    const int64_t topk = a.opt_int("--moe-router-topk").value_or(2);
    if (topk > experts) fail("--moe-router-topk", "must not exceed --num-experts (" + std::to_string(experts) + ")");
    const int64_t moe_ffn = a.opt_int("--moe-ffn-hidden-size").value_or(ffn);  // Megatron: defaults to ffn
    const auto capacity = a.opt_positive_float("--moe-expert-capacity-factor");
    if (lf.any_moe) {
      YAML::Node moe;
      moe["num_experts"] = experts;
      moe["topk"] = topk;
      moe["ffn_hidden_size"] = moe_ffn;
      moe["shared_expert_ffn_hidden_size"] = a.opt_int("--moe-shared-expert-intermediate-size").value_or(0);
      moe["layer_freq"] = lf.layer_freq;
      moe["first_k_dense"] = lf.first_k_dense;
      moe["capacity_factor"] = capacity ? YAML::Node(*capacity) : YAML::Node(YAML::NodeType::Null);
      if (a.has("--moe-pad-expert-input-to-capacity")) {
        if (!capacity) fail("--moe-pad-expert-input-to-capacity", "needs --moe-expert-capacity-factor (Megatron asserts it)");
        moe["pad_to_capacity"] = true;
      }
      // Megatron-Core's default dispatcher is allgather (recipes choose alltoall or flex).
      moe["token_dispatcher"] = a.opt_choice("--moe-token-dispatcher-type", {"allgather", "alltoall", "flex"})
                                    .value_or("allgather");
      if (a.has("--moe-shared-expert-overlap")) moe["shared_expert_overlap"] = true;
      moe["permute_fusion"] = a.has("--moe-permute-fusion");  // Megatron-LM's default: unfused
      if (auto g = a.opt_int("--moe-router-num-groups")) moe["router_num_groups"] = *g;
      if (auto g = a.opt_int("--moe-router-group-topk")) moe["router_group_topk"] = *g;
      model["moe"] = moe;
    }
  }

  // --- parallelism ---
  YAML::Node par;
  par["tensor"] = tp;
  par["pipeline"] = pp;
  par["context"] = cp;
  if (const std::string* cct = a.get("--cp-comm-type")) {
    // One type for every layer (a per-layer mix is not modelled).
    std::istringstream in(*cct);
    std::string first, next;
    in >> first;
    while (in >> next) {
      if (next != first) fail("--cp-comm-type", "a different type per layer ('" + printable(first) + "', '" + printable(next) +
                                    "') is not modelled; give one");
    }
    if (first != "p2p" && first != "all_gather" && first != "a2a" && first != "a2a+p2p") {
      fail("--cp-comm-type", "must be p2p, all_gather, a2a or a2a+p2p, got '" + printable(first) + "'");
    }
    par["cp_comm_type"] = first;
  }
  if (const std::string* hs = a.get("--hierarchical-context-parallel-sizes")) {
    // Checked against the context size and the CP communication type by the job's rules (spec/validate.cpp).
    std::istringstream in(*hs);
    YAML::Node list(YAML::NodeType::Sequence);
    for (std::string v; in >> v;) list.push_back(a.to_int("--hierarchical-context-parallel-sizes", v, 1));
    par["hierarchical_context_parallel_sizes"] = list;
  }
  par["expert"] = ep;
  if (etp && *etp != tp) par["expert_tensor"] = *etp;
  // Megatron turns sequence parallelism off when tensor parallelism is 1.
  const bool sp = a.has("--sequence-parallel") && tp > 1;
  par["sequence_parallel"] = sp;

  const auto first = a.opt_int("--decoder-first-pipeline-num-layers");
  const auto last = a.opt_int("--decoder-last-pipeline-num-layers");
  const auto layers_per_vstage = a.opt_int("--num-layers-per-virtual-pipeline-stage");
  const auto vstages_per_rank = a.opt_int("--num-virtual-stages-per-pipeline-rank");
  int64_t vs = 1;
  if (layers_per_vstage && vstages_per_rank)
    fail("--num-virtual-stages-per-pipeline-rank", "cannot be combined with --num-layers-per-virtual-pipeline-stage");
  if (layers_per_vstage) {
    if (first || last)
      fail("--num-layers-per-virtual-pipeline-stage",
           "cannot be combined with uneven stages; use --num-virtual-stages-per-pipeline-rank");
    if (layers % pp != 0)
      fail("--num-layers-per-virtual-pipeline-stage", "needs --num-layers divisible by --pipeline-model-parallel-size");
    if ((layers / pp) % *layers_per_vstage != 0)
      fail("--num-layers-per-virtual-pipeline-stage",
           "must divide the layers per pipeline stage (" + std::to_string(layers / pp) + ")");
    vs = layers / pp / *layers_per_vstage;
  } else if (vstages_per_rank) {
    vs = *vstages_per_rank;
  }
  // Megatron-Core derives the virtual stages from a custom layout (its chunks over the pipeline stages) and asserts
  // that no other split option is given with it.
  if (const std::string* layout = a.get("--pipeline-model-parallel-layout")) {
    for (const char* other : {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                              "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
                              "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"}) {
      if (a.has(other) || a.get(other)) fail("--pipeline-model-parallel-layout", std::string("cannot be combined with ") + other);
    }
    const int64_t chunks = static_cast<int64_t>(
        parse_pipeline_layout(*layout, "megatron-args: --pipeline-model-parallel-layout: ").layers.size());
    if (chunks % pp != 0)
      fail("--pipeline-model-parallel-layout", "its " + std::to_string(chunks) + " model chunks are not a multiple of "
           "--pipeline-model-parallel-size " + std::to_string(pp));
    vs = chunks / pp;
    par["pipeline_layout"] = *layout;
  }
  if (vs > 1) {
    const int64_t min_pp = a.has("--no-overlap-p2p-communication") ? 3 : 2;
    if (pp < min_pp)
      fail(layers_per_vstage ? "--num-layers-per-virtual-pipeline-stage"
           : a.get("--pipeline-model-parallel-layout") ? "--pipeline-model-parallel-layout"
                                                       : "--num-virtual-stages-per-pipeline-rank",
           "the interleaved schedule needs --pipeline-model-parallel-size >= " + std::to_string(min_pp));
  }
  par["virtual_stages"] = vs;
  // The interleaved schedule runs micro-batches through the model chunks in groups of this many (Megatron's default:
  // the pipeline size); stepsim's schedule is Megatron's with that default (workload/schedule.cpp).
  if (auto g = a.opt_int("--microbatch-group-size-per-virtual-pipeline-stage"); g && vs > 1 && *g != pp) {
    fail("--microbatch-group-size-per-virtual-pipeline-stage",
         "only the pipeline size (" + std::to_string(pp) + ", Megatron's default) is modelled, got " + std::to_string(*g));
  }
  if (a.has("--account-for-embedding-in-pipeline-split")) par["account_for_embedding_in_pipeline_split"] = true;
  if (a.has("--account-for-loss-in-pipeline-split")) par["account_for_loss_in_pipeline_split"] = true;
  par["schedule"] = vs > 1 ? "interleaved-1f1b" : "1f1b";
  // Megatron overlaps p2p with compute in the interleaved schedule unless told not to.
  // --overlap-p2p-communication states Megatron's default (overlap in the interleaved schedule; the plain 1F1B
  // schedule does not overlap p2p, so there it changes nothing).
  if (a.has("--overlap-p2p-communication") && a.has("--no-overlap-p2p-communication"))
    fail("--overlap-p2p-communication", "cannot be combined with --no-overlap-p2p-communication");
  if (vs > 1) par["overlap_p2p_comm"] = !a.has("--no-overlap-p2p-communication");

  if (first || last) {
    const char* flag = first ? "--decoder-first-pipeline-num-layers" : "--decoder-last-pipeline-num-layers";
    if (pp < 2) fail(flag, "needs --pipeline-model-parallel-size > 1");
    if (checked_mul(pp, vs, "--pipeline-model-parallel-size") > kMaxModelChunks)
      fail(flag, "more than " + std::to_string(kMaxModelChunks) + " model chunks are not supported");
    const int64_t middle_stages = pp - (first ? 1 : 0) - (last ? 1 : 0);
    const int64_t rest = layers - first.value_or(0) - last.value_or(0);
    int64_t middle = 0;
    if (middle_stages == 0) {
      if (rest != 0)
        fail(flag, "first and last stage layers must add up to --num-layers (" + std::to_string(layers) + ")");
    } else {
      if (rest < middle_stages || rest % middle_stages != 0)
        fail(flag, "the remaining " + std::to_string(rest) + " layers do not split evenly over " +
                       std::to_string(middle_stages) + " pipeline stages");
      middle = rest / middle_stages;
    }
    auto stage_layers = [&](int64_t r) { return r == 0 && first ? *first : r == pp - 1 && last ? *last : middle; };
    for (int64_t r = 0; r < pp; ++r)
      if (stage_layers(r) % vs != 0)
        fail(flag, "each stage's layers must split evenly over " + std::to_string(vs) + " virtual stages");
    // Layer order of the interleaved schedule: chunk v of every rank, then chunk v + 1.
    YAML::Node list;
    for (int64_t v = 0; v < vs; ++v)
      for (int64_t r = 0; r < pp; ++r) list.push_back(stage_layers(r) / vs);
    par["pipeline_layers"] = list;
  }

  if (a.has("--tp-comm-overlap") && !sp)
    fail("--tp-comm-overlap", "requires --sequence-parallel with --tensor-model-parallel-size > 1");

  // --- training ---
  YAML::Node tr;
  tr["micro_batch_size"] = mbs;
  tr["global_batch_size"] = gbs;
  if (a.has("--bf16") && a.has("--fp16")) fail("--bf16", "cannot be combined with --fp16");
  const auto fp8 = a.opt_choice("--fp8-format", {"e4m3", "hybrid"});
  // Megatron-Core's --fp4-format e2m1 with --fp4-recipe nvfp4 (its default): Transformer Engine's NVFP4 recipe.
  const auto fp4 = a.opt_choice("--fp4-format", {"e2m1"});
  if (fp4 && fp8) fail("--fp4-format", "cannot be combined with --fp8-format");
  if (auto r = a.opt_choice("--fp4-recipe", {"nvfp4"}); r && !fp4) fail("--fp4-recipe", "needs --fp4-format");
  if (fp4) {
    tr["precision"] = "nvfp4";
    if (a.has("--first-last-layers-bf16")) {
      tr["fp8_bf16_first_layers"] = a.opt_int("--num-layers-at-start-in-bf16", 0).value_or(1);
      tr["fp8_bf16_last_layers"] = a.opt_int("--num-layers-at-end-in-bf16", 0).value_or(1);
    }
  } else {
    tr["precision"] = fp8 ? "fp8" : a.has("--bf16") ? "bf16" : a.has("--fp16") ? "fp16" : "fp32";
  }
  if (fp8) {
    // Megatron-Core's --fp8-recipe: delayed (default), tensorwise (current scaling), blockwise, mxfp8.
    if (auto r = a.opt_choice("--fp8-recipe", {"delayed", "tensorwise", "blockwise", "mxfp8"})) {
      tr["fp8_recipe"] = *r == "tensorwise" ? "current" : *r;
    }
    if (a.has("--fp8-param-gather")) tr["fp8_param_gather"] = true;
    // Megatron keeps the first and last N layers in bf16 only with --first-last-layers-bf16 (N defaults to 1 each).
    if (a.has("--first-last-layers-bf16")) {
      tr["fp8_bf16_first_layers"] = a.opt_int("--num-layers-at-start-in-bf16", 0).value_or(1);
      tr["fp8_bf16_last_layers"] = a.opt_int("--num-layers-at-end-in-bf16", 0).value_or(1);
    }
    if (a.has("--no-fp8-wgrad")) tr["fp8_wgrad"] = false;
  } else {
    // Without fp8 these change nothing (Megatron reads them only under fp8).
    if (a.has("--fp8-param-gather")) fail("--fp8-param-gather", "needs --fp8-format");
  }

  std::string recompute = a.opt_choice("--recompute-granularity", {"full", "selective"}).value_or("none");
  if (a.has("--recompute-activations")) recompute = "selective";  // Megatron's override
  // Deprecated --moe-layer-recompute: Megatron-Core turns it into selective recompute with 'moe' added to the modules.
  const bool moe_layer_recompute = a.has("--moe-layer-recompute");
  if (moe_layer_recompute) {
    if (recompute == "full") fail("--moe-layer-recompute", "cannot be combined with --recompute-granularity full");
    recompute = "selective";
  }
  const auto method = a.opt_choice("--recompute-method", {"uniform", "block"});
  if (method && recompute == "selective")
    fail("--recompute-method", "not supported with selective recompute granularity");
  const auto num_layers = a.opt_int("--recompute-num-layers");
  if (recompute == "full") {
    // Megatron requires a method with full granularity; uniform with one layer per group is its common form.
    if (method) tr["recompute_method"] = *method;
    if (num_layers) tr["recompute_num_layers"] = *num_layers;
  } else if (num_layers) {
    fail("--recompute-num-layers", "applies to --recompute-granularity full only");
  }
  tr["recompute"] = recompute;
  if (a.has("--distribute-saved-activations")) tr["distribute_saved_activations"] = true;
  const std::string* mods = a.get("--recompute-modules");
  if (mods || moe_layer_recompute) {
    if (recompute != "selective") fail("--recompute-modules", "applies to --recompute-granularity selective only");
    std::istringstream in(mods ? *mods : std::string("core_attn"));  // Megatron-Core's default list
    YAML::Node list(YAML::NodeType::Sequence);
    bool has_moe = false;
    for (std::string m; in >> m;) {
      if (!recompute_module_named(m))
        fail("--recompute-modules", "'" + printable(m) + "' is none of " + recompute_module_names());
      has_moe = has_moe || m == "moe";
      list.push_back(m);
    }
    if (moe_layer_recompute && !has_moe) list.push_back("moe");
    tr["recompute_modules"] = list;
  }

  // FSDP as ZeRO stages: Megatron-FSDP shards by --data-parallel-sharding-strategy (Megatron's default
  // optim_grads_params, ZeRO-3; v1 switches the distributed optimizer on itself); PyTorch FSDP2 (fully_shard, resharded
  // after forward) is ZeRO-3 and Megatron asserts its constraints. Under ZeRO-3 --overlap-param-gather is the
  // per-layer prefetch the stage models anyway.
  const bool mfsdp = a.has("--use-megatron-fsdp"), fsdp2 = a.has("--use-torch-fsdp2");
  const bool dist_opt = a.has("--use-distributed-optimizer") || mfsdp;
  int zero_stage = -1;
  if (mfsdp && fsdp2) fail("--use-torch-fsdp2", "give one of --use-megatron-fsdp and --use-torch-fsdp2");
  if (a.get("--data-parallel-sharding-strategy") && !mfsdp)
    fail("--data-parallel-sharding-strategy", "applies with --use-megatron-fsdp only");
  if (mfsdp) {
    const auto strategy = a.opt_choice("--data-parallel-sharding-strategy",
                                       {"no_shard", "optim", "optim_grads", "optim_grads_params"});
    const std::string st = strategy.value_or("optim_grads_params");
    zero_stage = st == "no_shard" ? 0 : st == "optim" ? 1 : st == "optim_grads" ? 2 : 3;
  }
  if (fsdp2) {
    if (a.opt_int("--pipeline-model-parallel-size").value_or(1) != 1)
      fail("--use-torch-fsdp2", "is not supported with pipeline parallelism (Megatron asserts it)");
    if (a.opt_int("--expert-model-parallel-size").value_or(1) != 1)
      fail("--use-torch-fsdp2", "is not supported with expert parallelism (Megatron asserts it)");
    if (a.has("--use-distributed-optimizer"))
      fail("--use-torch-fsdp2", "is not supported with Megatron-Core's distributed optimizer (Megatron asserts it)");
    if (!a.has("--no-gradient-accumulation-fusion"))
      fail("--use-torch-fsdp2", "is not supported with gradient accumulation fusion: add --no-gradient-accumulation-fusion "
                                "(Megatron asserts it)");
    zero_stage = 3;
  }
  if (a.has("--overlap-param-gather") && !mfsdp) {
    if (!dist_opt) fail("--overlap-param-gather", "requires --use-distributed-optimizer");
    if (!a.has("--overlap-grad-reduce")) fail("--overlap-param-gather", "requires --overlap-grad-reduce");
  }
  if (auto n = a.opt_int("--num-distributed-optimizer-instances"); n && *n != 1)
    fail("--num-distributed-optimizer-instances", "only 1 is modelled");
  if (auto opt = a.opt_choice("--optimizer", {"adam", "sgd", "muon", "dist_muon"}); opt && *opt != "adam")
    fail("--optimizer", "only adam is modelled");
  if (zero_stage >= 0) tr["zero_stage"] = zero_stage;
  tr["distributed_optimizer"] = zero_stage == 0 ? false : dist_opt || zero_stage > 0;
  tr["overlap_grad_reduce"] = a.has("--overlap-grad-reduce");
  tr["overlap_param_gather"] = a.has("--overlap-param-gather") && zero_stage != 3 && zero_stage != 0;
  if (a.has("--no-gradient-accumulation-fusion")) tr["gradient_accumulation_fusion"] = false;
  tr["tp_comm_overlap"] = a.has("--tp-comm-overlap");
  // Userbuffers' per-kind switches (Megatron-Core's tp_comm_overlap_ag / _rs, tp_comm_bulk_dgrad / _wgrad,
  // tp_comm_overlap_rs_dgrad); like Megatron they matter only with --tp-comm-overlap.
  const std::pair<const char*, const char*> tpo_flags[] = {{"--disable-tp-comm-overlap-ag", "tp_comm_overlap_ag"},
                                                           {"--disable-tp-comm-overlap-rs", "tp_comm_overlap_rs"},
                                                           {"--disable-tp-comm-bulk-dgrad", "tp_comm_bulk_dgrad"},
                                                           {"--disable-tp-comm-bulk-wgrad", "tp_comm_bulk_wgrad"}};
  for (const auto& [flag, key] : tpo_flags) {
    if (!a.has(flag)) continue;
    if (!a.has("--tp-comm-overlap")) fail(flag, "applies with --tp-comm-overlap only");
    tr[key] = false;
  }
  if (a.has("--tp-comm-overlap-rs-dgrad")) {
    if (!a.has("--tp-comm-overlap")) fail("--tp-comm-overlap-rs-dgrad", "applies with --tp-comm-overlap only");
    tr["tp_comm_overlap_rs_dgrad"] = true;
  }
  if (a.has("--overlap-moe-expert-parallel-comm")) tr["overlap_moe_expert_parallel_comm"] = true;
  if (a.has("--delay-wgrad-compute")) tr["delay_wgrad_compute"] = true;
  // CUDA graphs (Megatron-Core's local graphs, Transformer Engine's make_graphed_callables) replay the layers' kernels
  // without the host issuing each one: no eager launch gap.
  const auto graph_impl = a.opt_choice("--cuda-graph-impl", {"none", "local", "transformer_engine"});
  tr["cuda_graphs"] = a.has("--enable-cuda-graph") || a.has("--external-cuda-graph") || (graph_impl && *graph_impl != "none");
  // The loss: Megatron runs --cross-entropy-fusion-impl (default native) only under --cross-entropy-loss-fusion.
  const auto ce_impl = a.opt_choice("--cross-entropy-fusion-impl", {"native", "te"});
  if (a.has("--cross-entropy-loss-fusion")) tr["cross_entropy_fusion"] = ce_impl.value_or("native");
  // Megatron-Core's unfused ("local") attention is QK^T, softmax and ·V as separate kernels; the others are fused.
  if (auto be = a.opt_choice("--attention-backend", {"flash", "fused", "unfused", "local", "auto"})) {
    tr["attention_backend"] = (*be == "unfused" || *be == "local") ? "unfused" : "flash";
  }
  // Megatron's command line defaults --optimizer-offload-fraction to 1.0 (all of the shard on the CPU); the fraction
  // and the copy/update pipelining apply only with --optimizer-cpu-offload, as in Megatron.
  if (a.has("--optimizer-cpu-offload")) {
    tr["optimizer_offload"] = true;
    const double f = a.opt_float("--optimizer-offload-fraction").value_or(1.0);
    if (!(f >= 0 && f <= 1)) fail("--optimizer-offload-fraction", "must be in [0, 1], got " + printable(*a.get("--optimizer-offload-fraction")));
    if (f == 0) {
      tr["optimizer_offload"] = false;  // nothing offloaded: the plain distributed optimizer
    } else {
      if (f < 1) tr["optimizer_offload_fraction"] = f;
      if (a.has("--overlap-cpu-optimizer-d2h-h2d")) tr["optimizer_offload_overlap"] = true;
    }
  }
  if (auto n = a.opt_int("--cpu-offloading-num-layers", 0); n && *n > 0) tr["activation_offload_layers"] = *n;
  // The precision-aware optimizer's dtypes (Megatron's defaults fp32); each needs the flag, as Megatron's help says.
  const bool pao = a.has("--use-precision-aware-optimizer");
  if (pao) tr["precision_aware_optimizer"] = true;
  const auto main_grads = a.opt_choice("--main-grads-dtype", {"fp32", "bf16"});
  const std::pair<const char*, const char*> dtypes[] = {{"--main-params-dtype", "main_params_dtype"},
                                                        {"--exp-avg-dtype", "exp_avg_dtype"},
                                                        {"--exp-avg-sq-dtype", "exp_avg_sq_dtype"}};
  for (const auto& [flag, key] : dtypes) {
    const auto v = key == std::string_view("main_params_dtype") ? a.opt_choice(flag, {"fp32", "fp16"})
                                                                : a.opt_choice(flag, {"fp32", "fp16", "bf16", "fp8"});
    if (!v || *v == "fp32") continue;
    if (!pao) fail(flag, "applies with --use-precision-aware-optimizer only");
    tr[key] = *v;
  }
  if (main_grads && *main_grads == "bf16") {
    if (!pao) fail("--main-grads-dtype", "applies with --use-precision-aware-optimizer only");
    if (a.has("--accumulate-allreduce-grads-in-fp32"))
      fail("--main-grads-dtype", "can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set (Megatron asserts it)");
  }
  if (a.has("--optimizer-cpu-offload") && !pao) {
    fail("--optimizer-cpu-offload", "needs --use-precision-aware-optimizer (Megatron asserts it: the hybrid device "
                                    "optimizer reuses its code path)");
  }
  if (a.has("--grad-reduce-in-bf16")) tr["grad_reduce_in_fp32"] = false;  // wins, as in Megatron
  else if (a.has("--accumulate-allreduce-grads-in-fp32")) tr["grad_reduce_in_fp32"] = true;
  else if (main_grads && *main_grads == "bf16") tr["grad_reduce_in_fp32"] = false;  // bf16 main grads: no fp32 accumulation
  if (auto b = a.opt_int("--ddp-bucket-size")) tr["bucket_size"] = *b;

  YAML::Node root;
  root["model"] = model;
  root["parallelism"] = par;
  root["training"] = tr;
  return root;
}

}  // namespace

YAML::Node megatron_args_to_job_node(const std::string& args) {
  if (args.size() > kMaxInputFileBytes)
    throw InputError("megatron-args: argument string larger than 16 MiB (" + std::to_string(args.size()) + " bytes)");
  return build(parse(tokenize(args)));
}

}  // namespace stepsim::spec

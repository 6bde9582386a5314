#include "stepsim/report/summary.hpp"
#include "stepsim/report/text_format.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/catalog/prediction_interval.hpp"
#include "stepsim/job/pipeline_split.hpp"
#include "stepsim/report/job_setup.hpp"
#include "stepsim/workload/working_memory.hpp"

namespace stepsim::report {

std::string format_bytes(double b) {
  char buf[64];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string format_seconds(double s) {
  char buf[64];
  if (s >= 1.0) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

namespace {

// Layers of each pipeline stage: the job's split per model chunk (stage s holds chunks s, s + p, ...), else an even
// one.
std::vector<int> layers_per_stage(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  std::vector<int> layers(static_cast<size_t>(par.pipeline), job.model.num_layers / par.pipeline);
  if (par.pipeline_layers.empty()) return layers;
  std::fill(layers.begin(), layers.end(), 0);
  for (size_t c = 0; c < par.pipeline_layers.size(); ++c) layers[c % layers.size()] += par.pipeline_layers[c];
  return layers;
}

void add_stage_times(const sim::Simulation& s, Summary& out) {
  const auto& w = s.workload;
  const auto& par = w.job.parallelism;
  if (par.pipeline < 2) return;
  const int stride = par.tensor * par.context * par.data;
  const std::vector<int> layers = layers_per_stage(w.job);
  for (int st = 0; st < par.pipeline; ++st) {
    const int rank = st * stride;
    const auto tl = std::find_if(s.result.recorded.begin(), s.result.recorded.end(),
                                 [&](const sim::RankTimeline& t) { return t.rank == rank; });
    if (tl == s.result.recorded.end()) {
      out.stage_times.clear();
      return;
    }
    StageTime t;
    t.stage = st;
    t.layers = layers[static_cast<size_t>(st)];
    t.breakdown = breakdown(w.program_of_rank(rank), *tl, s.result.step_ns);
    t.busy_s = static_cast<double>(s.result.step_ns) * 1e-9 - t.breakdown.pipeline_bubble_s;
    out.stage_times.push_back(t);
  }
  const auto busiest = std::max_element(out.stage_times.begin(), out.stage_times.end(),
                                        [](const StageTime& a, const StageTime& b) { return a.busy_s < b.busy_s; });
  out.bottleneck_stage = busiest->stage;
}

// A step at low MFU names what dominates it (issue 46 item 6: ZeRO-3 with 128 micro-batches at 8.8 % MFU passed
// without a word).
constexpr double kLowMfu = 0.15;

void add_low_mfu_note(const spec::JobSpec& job, Summary& out) {
  if (out.mfu <= 0 || out.mfu >= kLowMfu || out.step_time_s <= 0) return;
  const Breakdown& b = out.breakdown;
  std::string what = "pipeline bubble / wait";
  double worst = b.pipeline_bubble_s;
  int kind = -1;
  bool host = false;
  for (int k = 0; k < kNumCommKinds; ++k) {
    if (b.exposed_comm_s[k] <= worst) continue;
    worst = b.exposed_comm_s[k];
    what = std::string("exposed ") + comm_kind_name(k) + " communication";
    kind = k;
  }
  if (b.host_gap_s > worst) {
    worst = b.host_gap_s;
    what = "host gaps (CPU-bound)";
    kind = -1;
    host = true;
  }
  if (worst < 0.25 * out.step_time_s) return;
  char buf[400];
  std::snprintf(buf, sizeof buf, "MFU %.1f %%: %s takes %.0f %% of the step", 100 * out.mfu, what.c_str(),
                100 * worst / out.step_time_s);
  std::string note = buf;
  const int64_t m = job.num_microbatches();
  if (kind == kDp && job.training.zero_stage == 3 && m > 1) {
    note += " (ZeRO-3 gathers every layer's parameters in forward and backward for each of the " + std::to_string(m) +
            " micro-batches: fewer, larger micro-batches or ZeRO-1 gather less)";
  } else if (kind == kDp && job.training.zero_stage == 2 && m > 1) {
    note += " (ZeRO-2 reduce-scatters the gradients after each of the " + std::to_string(m) + " micro-batches)";
  } else if (kind == kTp && job.parallelism.tensor > job.cluster.gpus_per_node) {
    note += " (TP crosses nodes)";
  } else if (host && !job.training.cuda_graphs) {
    // The remedy by framework: what removes eager issue time in each.
    note += job.training.framework == spec::Framework::Torchtitan
                ? " (the host issues kernels slower than the GPU runs them: torch.compile, training.compile, fuses them "
                  "into fewer launches; a larger micro-batch gives each more work)"
                : " (the host issues kernels slower than the GPU runs them: CUDA graphs, training.cuda_graphs or "
                  "Megatron's --enable-cuda-graph, replay them without the eager launches; a larger micro-batch gives "
                  "each more work)";
  }
  out.notes.push_back(note);
}

// The bottleneck stage's breakdown and the spread of the stages' busy time (PP > 1).
std::string stage_times_text(const Summary& s) {
  const StageTime& b = s.stage_times[static_cast<size_t>(s.bottleneck_stage)];
  const auto idlest = std::min_element(s.stage_times.begin(), s.stage_times.end(),
                                       [](const StageTime& x, const StageTime& y) { return x.busy_s < y.busy_s; });
  std::string out = "\n  pipeline stages (each stage's first rank; busy = the step less its bubble and waits):\n";
  out += "    busy " + format_seconds(idlest->busy_s) + " (stage " + std::to_string(idlest->stage) + ", " +
         std::to_string(idlest->layers) + " layers) .. " + format_seconds(b.busy_s) + " (stage " +
         std::to_string(b.stage) + ", " + std::to_string(b.layers) + " layers)\n";
  out += "    bottleneck stage " + std::to_string(b.stage) + ": compute " + format_seconds(b.breakdown.compute_s) +
         ", optimizer " + format_seconds(b.breakdown.optimizer_s);
  for (int k = 0; k < kNumCommKinds; ++k) {
    if (b.breakdown.exposed_comm_s[k] > 0) {
      out += std::string(", exposed ") + comm_kind_name(k) + " " + format_seconds(b.breakdown.exposed_comm_s[k]);
    }
  }
  if (b.breakdown.host_gap_s > 0) out += ", host gaps " + format_seconds(b.breakdown.host_gap_s);
  out += ", bubble / wait " + format_seconds(b.breakdown.pipeline_bubble_s) + "\n";
  return out;
}

}  // namespace

Summary summarize(const sim::Simulation& s, int rank) {
  const auto& w = s.workload;
  const auto& job = w.job;
  const auto& res = s.result;
  Summary out;
  out.rank = rank;
  out.step_time_s = static_cast<double>(res.step_ns) * 1e-9;
  out.calibration_source = s.calibration.source;
  out.notes = s.notes;
  out.inter_node_efficiency = s.inter_node_efficiency;
  if (s.calibration.interval && out.step_time_s > 0) {
    const auto& e = *s.calibration.interval;
    out.step_time_interval_s = std::array<double, 2>{out.step_time_s / (1 + e[1]), out.step_time_s / (1 + e[0])};
    out.interval_kind = s.calibration.interval_kind;
    out.interval_runs = s.calibration.interval_runs;
    out.interval_sources = s.calibration.interval_sources;
  }
  if (s.host_bound_extra_s > 0 && out.step_time_s > 0) {
    out.step_time_host_bound_s = out.step_time_s + s.host_bound_extra_s;
    if (out.step_time_interval_s)
      (*out.step_time_interval_s)[1] = std::max((*out.step_time_interval_s)[1], out.step_time_host_bound_s);
  }
  const double tokens = static_cast<double>(job.training.global_batch_size) * static_cast<double>(job.model.seq_length);
  const hw::GpuSpec& gpu = s.gpu;
  if (out.step_time_s > 0) {
    out.tokens_per_s = tokens / out.step_time_s;
    out.tflops_per_gpu = w.model_flops_per_step / out.step_time_s / job.cluster.num_gpus / 1e12;
    out.mfu = out.tflops_per_gpu * 1e12 / gpu.peak_flops(job.training.precision);
    out.mfu_peak_tflops = gpu.peak_flops(job.training.precision) / 1e12;
    out.bf16_peak_tflops = gpu.peak_flops(spec::Precision::Bf16) / 1e12;
    out.mfu_precision = spec::name_of(job.training.precision);
  }
  const sim::RankTimeline* tl = nullptr;
  for (const auto& r : res.recorded) {
    if (r.rank == rank) tl = &r;
  }
  if (!tl) throw std::logic_error("summarize: rank " + std::to_string(rank) + " was not recorded");
  const workload::Program& prog = w.program_of_rank(rank);
  out.breakdown = breakdown(prog, *tl, res.step_ns);
  add_stage_times(s, out);
  add_low_mfu_note(job, out);
  out.comm = comm_bytes(w, rank);

  out.capacity_bytes = static_cast<int64_t>(gpu.memory_bytes);
  const int stages = w.layout.pipeline();
  out.per_stage.resize(stages);
  for (int st = 0; st < stages; ++st) {
    out.per_stage[st].stage = st;
    out.per_stage[st].static_bytes = w.programs[w.role_of_stage[st]].static_memory.total();
  }
  for (int r = 0; r < w.layout.world(); ++r) {
    const int st = w.layout.coord(r).pp;
    out.per_stage[st].peak_bytes = std::max(out.per_stage[st].peak_bytes, res.peak_bytes[r]);
    out.peak_bytes_max = std::max(out.peak_bytes_max, res.peak_bytes[r]);
  }
  for (const auto& sm : out.per_stage) {
    if (sm.peak_bytes > out.per_stage[static_cast<size_t>(out.peak_stage)].peak_bytes) out.peak_stage = sm.stage;
  }
  MemoryFit verdict = MemoryFit::Fits;  // the worst stage's
  for (auto& sm : out.per_stage) {
    const workload::StaticMemory& st = w.programs[w.role_of_stage[sm.stage]].static_memory;
    sm.activation_bytes = sm.peak_bytes - sm.static_bytes;
    sm.reserved_bytes = sm.peak_bytes - st.overhead;
    sm.allocated_bytes = sm.reserved_bytes - st.reserved_extra();
    sm.stream_pool_bytes = st.stream_pools;
    sm.fit = memory_fit(sm.allocated_bytes, st.overhead, sm.peak_bytes, out.capacity_bytes);
    verdict = std::max(verdict, sm.fit);
    if (sm.reserved_bytes > out.peak_reserved_bytes_max) {
      out.peak_reserved_bytes_max = sm.reserved_bytes;
      out.peak_allocated_bytes_max = sm.allocated_bytes;
    }
  }
  if (const auto band = workload::memory_band(job.training.framework)) {
    const double r = static_cast<double>(out.peak_reserved_bytes_max);
    out.reserved_interval_bytes = std::array<double, 2>{r / (1 + band->high), r / (1 + band->low)};
    out.memory_interval_source = std::string("errors of ") + std::to_string(band->runs) + " measured " +
                                 spec::name_of(job.training.framework) + " peaks";
  } else {
    out.memory_no_interval = std::string("no 80% interval for the peak: no measured ") +
                             spec::name_of(job.training.framework) + " peaks in the development runs";
  }
  out.oom = verdict == MemoryFit::Over;
  out.memory_tight = verdict == MemoryFit::Tight;
  out.ranks = w.layout.world();
  out.events = res.events;
  out.simulated_ranks = res.simulated_ranks;
  out.mirrored_ranks = res.mirrored_ranks;
  out.wall_s = res.wall_s;
  return out;
}

MemoryFit memory_fit(const Summary& s) {
  return s.oom ? MemoryFit::Over : s.memory_tight ? MemoryFit::Tight : MemoryFit::Fits;
}

nlohmann::json to_json(const Summary& s, const spec::JobSpec& job) {
  using nlohmann::json;
  json j;
  // false: what PyTorch allocates exceeds the GPU's memory; step_time_s is then what it would take. memory_tight: it
  // fits, but the reserved peak does not (report/memory_fit.hpp).
  j["fits"] = !s.oom;
  j["memory_tight"] = s.memory_tight;
  j["step_time_s"] = s.step_time_s;
  j["job"] = job_setup_json(job, s.inter_node_efficiency);
  if (!s.notes.empty()) j["notes"] = s.notes;
  if (!job.model.hf_assumptions.empty()) j["assumptions"] = job.model.hf_assumptions;
  if (!job.cluster.gpu_notes.empty()) j["gpu_notes"] = job.cluster.gpu_notes;
  if (!job.training.input_notes.empty()) j["input_notes"] = job.training.input_notes;
  if (!job.cluster.network_notes.empty()) j["network_notes"] = job.cluster.network_notes;
  if (job.cluster.power_limit_W > 0) j["power_limit_W"] = job.cluster.power_limit_W;
  if (job.training.framework != spec::Framework::MegatronCore) {
    j["framework"] = {{"name", spec::name_of(job.training.framework)}, {"compile", job.training.compile}};
  }
  if (s.step_time_interval_s) {
    j["step_time_interval_s"] = {(*s.step_time_interval_s)[0], (*s.step_time_interval_s)[1]};
    if (s.interval_runs > 0) j["step_time_interval_basis"] = {{"kind", s.interval_kind}, {"runs", s.interval_runs}};
    if (s.interval_sources > 0) j["step_time_interval_basis"]["new_source_sources"] = s.interval_sources;
  }
  if (s.step_time_host_bound_s > 0) j["step_time_host_bound_s"] = s.step_time_host_bound_s;
  j["tokens_per_s"] = s.tokens_per_s;
  j["tflops_per_gpu"] = s.tflops_per_gpu;
  j["mfu"] = s.mfu;
  j["mfu_peak_tflops"] = s.mfu_peak_tflops;
  json exposed;
  for (int k = 0; k < kNumCommKinds; ++k) exposed[comm_kind_name(k)] = s.breakdown.exposed_comm_s[k];
  j["breakdown_s"] = {{"compute", s.breakdown.compute_s},
                      {"pipeline_bubble", s.breakdown.pipeline_bubble_s},
                      {"optimizer", s.breakdown.optimizer_s},
                      {"overlap_slowdown_s", s.breakdown.overlap_slowdown_s},
                      {"host_gap", s.breakdown.host_gap_s},
                      {"offload", s.breakdown.offload_s},
                      {"exposed_comm", exposed}};
  if (!s.stage_times.empty()) {
    json times = json::array();
    for (const StageTime& t : s.stage_times) {
      json exposed_t;
      for (int k = 0; k < kNumCommKinds; ++k) exposed_t[comm_kind_name(k)] = t.breakdown.exposed_comm_s[k];
      times.push_back({{"stage", t.stage}, {"layers", t.layers}, {"busy_s", t.busy_s},
                       {"compute_s", t.breakdown.compute_s}, {"pipeline_bubble_s", t.breakdown.pipeline_bubble_s},
                       {"optimizer_s", t.breakdown.optimizer_s}, {"host_gap_s", t.breakdown.host_gap_s},
                       {"exposed_comm_s", exposed_t}});
    }
    j["pipeline_stages"] = times;
    j["bottleneck_stage"] = s.bottleneck_stage;
  }
  json stages = json::array();
  for (const auto& sm : s.per_stage) {
    stages.push_back({{"stage", sm.stage},
                      {"peak_bytes", sm.peak_bytes},
                      {"static_bytes", sm.static_bytes},
                      {"activation_bytes", sm.activation_bytes},
                      {"peak_allocated_bytes", sm.allocated_bytes},
                      {"peak_reserved_bytes", sm.reserved_bytes},
                      {"stream_pool_bytes", sm.stream_pool_bytes},
                      {"oom", sm.fit == MemoryFit::Over},
                      {"tight", sm.fit == MemoryFit::Tight}});
  }
  j["memory"] = {{"peak_bytes_max", s.peak_bytes_max},
                 {"oom", s.oom},
                 {"tight", s.memory_tight},
                 {"capacity_bytes", s.capacity_bytes},
                 {"peak_allocated_bytes", s.peak_allocated_bytes_max},
                 {"peak_reserved_bytes", s.peak_reserved_bytes_max},
                 {"per_stage", stages}};
  if (s.reserved_interval_bytes) {
    j["memory"]["peak_reserved_interval_bytes"] = *s.reserved_interval_bytes;
    j["memory"]["interval_source"] = s.memory_interval_source;
  } else {
    j["memory"]["no_interval"] = s.memory_no_interval;
  }
  json msg, vol, calls;
  for (int k = 0; k < kNumCommKinds; ++k) {
    msg[comm_kind_name(k)] = s.comm.message[k];
    vol[comm_kind_name(k)] = s.comm.volume[k];
    calls[comm_kind_name(k)] = s.comm.calls[k];
  }
  j["comm_message_bytes_per_rank"] = msg;
  j["comm_volume_bytes_per_rank"] = vol;
  j["comm_calls_per_rank"] = calls;
  j["rank"] = s.rank;
  j["num_microbatches"] = job.num_microbatches();
  if (!job.parallelism.pipeline_layers.empty()) {
    j["pipeline_layers"] = job.parallelism.pipeline_layers;
    j["pipeline_split"] = job.parallelism.pipeline_split_rule;
  }
  j["simulation"] = {{"ranks", s.ranks},
                     {"simulated_ranks", s.simulated_ranks},
                     {"mirrored_ranks", s.mirrored_ranks},
                     {"events", s.events},
                     {"wall_s", s.wall_s},
                     {"comm_model", spec::name_of(job.simulation.comm_model)},
                     {"overlap_model", spec::name_of(job.simulation.overlap_model)}};
  return j;
}

// Against a low precision's larger peak MFU reads half as high: say which peak, and bf16's figure beside it.
std::string mfu_peak_note(const Summary& s) {
  if (s.bf16_peak_tflops <= 0 || s.mfu_peak_tflops == s.bf16_peak_tflops) return "";
  return format_text(" of the %s peak (%.0f TFLOP/s; %.1f %% of the bf16 peak, %.0f TFLOP/s)", s.mfu_precision.c_str(),
                     s.mfu_peak_tflops, 100.0 * s.tflops_per_gpu / s.bf16_peak_tflops, s.bf16_peak_tflops);
}

std::string to_text(const Summary& s, const spec::JobSpec& job) {
  std::ostringstream o;
  const auto& p = job.parallelism;
  char line[512];
  o << "stepsim: " << job.model.name << " on " << job.cluster.num_gpus << " x " << job.cluster.gpu << "  (TP "
    << p.tensor << ", PP " << p.pipeline << ", DP " << p.data << ", CP " << p.context << ", EP " << p.expert
    << (p.sequence_parallel ? ", SP" : "") << ", " << spec::name_of(p.schedule)
    << (p.virtual_stages > 1 ? " x" + std::to_string(p.virtual_stages) : std::string()) << ")\n";
  o << "  micro-batch " << job.training.micro_batch_size << ", global batch " << job.training.global_batch_size
    << " (" << counted(job.num_microbatches(), "micro-batch", "micro-batches") << " per pipeline), seq "
    << job.model.seq_length << ", "
    << spec::name_of(job.training.precision) << ", recompute " << spec::name_of(job.training.recompute) << "\n";
  o << "  " << job_setup_text(job, s.inter_node_efficiency) << "\n";
  if (!p.pipeline_layers.empty()) {
    o << "  layers per model chunk: " << spec::describe_layers(p.pipeline_layers) << " (" << p.pipeline_split_rule << ")\n";
  }
  for (const std::string& a : job.model.hf_assumptions) o << "  assumed (Hugging Face config): " << a << "\n";
  if (job.cluster.power_limit_W > 0) o << "  power limit " << job.cluster.power_limit_W << " W per GPU\n";
  if (job.training.framework == spec::Framework::Torchtitan) {
    o << "  framework torchtitan" << (job.training.compile ? ", torch.compile per block" : ", eager")
      << " (docs/MODEL.md §12b)\n";
  } else if (job.training.framework == spec::Framework::DeepSpeed) {
    o << "  framework deepspeed, ZeRO-3 around Hugging Face's Llama, eager; gradients reduce-scattered in buckets of "
      << job.training.reduce_bucket_size << " elements; module hooks " << job.training.zero3_hook_us
      << " us each per pass (docs/MODEL.md §12c)\n";
  }
  for (const std::string& n : job.cluster.gpu_notes) o << "  read: " << n << "\n";
  for (const std::string& n : job.training.input_notes) o << "  read: " << n << "\n";
  for (const std::string& n : job.cluster.network_notes) o << "  note: " << n << "\n";
  o << "\n";
  // A job that does not fit is said first: the step time below is what it would take if it ran.
  if (s.oom || s.memory_tight) {
    // The peak stage's allocations, alone and with what lies outside the allocator (peak - reserved).
    const StageMemory& at = s.per_stage[static_cast<size_t>(s.peak_stage)];
    const std::string allocated = format_bytes(static_cast<double>(at.allocated_bytes));
    const std::string with_context =
        format_bytes(static_cast<double>(at.allocated_bytes + at.peak_bytes - at.reserved_bytes));
    const std::string peak = format_bytes(static_cast<double>(s.peak_bytes_max));
    const std::string capacity = format_bytes(static_cast<double>(s.capacity_bytes));
    if (s.oom) {
      std::snprintf(line, sizeof line, "  DOES NOT FIT: peak %s on stage %d, %s per GPU (PyTorch allocates %s there, "
                    "%s with the CUDA context and NCCL); the step below is what it would take if it ran\n",
                    peak.c_str(), s.peak_stage, capacity.c_str(), allocated.c_str(), with_context.c_str());
    } else {
      std::snprintf(line, sizeof line, "  TIGHT IN MEMORY: peak %s on stage %d of %s per GPU, but PyTorch allocates "
                    "%s there (%s with the CUDA context and NCCL): it runs as its caching allocator gives back cached "
                    "blocks (below)\n", peak.c_str(), s.peak_stage, capacity.c_str(), allocated.c_str(),
                    with_context.c_str());
    }
    o << line;
  }
  for (const std::string& n : s.notes) o << "  note: " << n << "\n";
  std::snprintf(line, sizeof line, "  step time      %s\n", format_seconds(s.step_time_s).c_str());
  o << line;
  if (s.step_time_interval_s) {
    // Whose errors: "errors of 16 dense runs" tells a user how much evidence the band stands on.
    char basis[160] = "";
    if (s.interval_runs > 0)
      std::snprintf(basis, sizeof basis, "; errors of %d %s run%s%s", s.interval_runs, s.interval_kind.c_str(),
                    s.interval_runs == 1 ? "" : "s",
                    s.interval_runs < hw::kMinRunsForKindQuantiles ? " (too few for a percentile)" : "");
    if (s.interval_sources > 0) {
      const size_t used = std::strlen(basis);
      std::snprintf(basis + used, sizeof basis - used, "%s %d sources weighted equally (a new source)",
                    used > 0 ? " and of" : "; errors of", s.interval_sources);
    }
    char host[96] = "";
    if (s.step_time_host_bound_s > 0)
      std::snprintf(host, sizeof host, "; upper end at least the host-bound step, %s",
                    format_seconds(s.step_time_host_bound_s).c_str());
    std::snprintf(line, sizeof line, "  80%% interval   %s .. %s (compute calibration: %s%s%s)\n",
                  format_seconds((*s.step_time_interval_s)[0]).c_str(), format_seconds((*s.step_time_interval_s)[1]).c_str(),
                  s.calibration_source.c_str(), basis, host);
    o << line;
  } else if (!s.calibration_source.empty()) {
    // Say why there is none (Blackwell, Ada and Volta have no measured runs; a job's own clock has no residuals), so
    // the missing line is not read as certainty.
    std::snprintf(line, sizeof line, "  80%% interval   none: no calibration residuals for this GPU's architecture "
                  "and settings (compute calibration: %s)\n", s.calibration_source.c_str());
    o << line;
  }
  std::snprintf(line, sizeof line, "  tokens/s       %.0f\n", s.tokens_per_s);
  o << line;
  if (s.tflops_per_gpu > 0) {
    std::snprintf(line, sizeof line, "  TFLOP/s/GPU    %.1f\n  MFU            %.1f %%", s.tflops_per_gpu,
                  100.0 * s.mfu);
    o << line << mfu_peak_note(s);
    std::snprintf(line, sizeof line, "\n\n");
  } else {  // a traced workload whose files give no FLOPs
    std::snprintf(line, sizeof line, "  TFLOP/s/GPU    n/a (the workload gives no FLOPs)\n  MFU            n/a\n\n");
  }
  o << line;
  o << "  where the step goes (rank " << s.rank << "):\n";
  auto row = [&](const std::string& name, double v) {
    std::snprintf(line, sizeof line, "    %-24s %12s  %5.1f %%\n", name.c_str(), format_seconds(v).c_str(),
                  s.step_time_s > 0 ? 100.0 * v / s.step_time_s : 0.0);
    o << line;
  };
  row("compute", s.breakdown.compute_s);
  row("pipeline bubble / wait", s.breakdown.pipeline_bubble_s);
  row("optimizer", s.breakdown.optimizer_s);
  if (job.simulation.overlap_model != spec::OverlapModel::None) row("overlap slowdown", s.breakdown.overlap_slowdown_s);
  if (s.breakdown.host_gap_s > 0) row("host gaps (CPU-bound)", s.breakdown.host_gap_s);
  if (job.training.activation_offload_layers > 0) row("exposed activation offload", s.breakdown.offload_s);
  for (int k = 0; k < kNumCommKinds; ++k) {
    if (s.breakdown.exposed_comm_s[k] > 0 || s.comm.calls[k] > 0) {
      row(std::string("exposed ") + comm_kind_name(k) + " communication", s.breakdown.exposed_comm_s[k]);
    }
  }
  if (!s.stage_times.empty()) o << stage_times_text(s);
  o << "\n  memory per pipeline stage (capacity " << format_bytes(static_cast<double>(s.capacity_bytes)) << "):\n";
  o << "    stage        static   activations     allocated      reserved          peak\n";
  for (const auto& sm : s.per_stage) {
    std::snprintf(line, sizeof line, "    %5d  %12s  %12s  %12s  %12s  %12s%s\n", sm.stage,
                  format_bytes(static_cast<double>(sm.static_bytes)).c_str(),
                  format_bytes(static_cast<double>(sm.activation_bytes)).c_str(),
                  format_bytes(static_cast<double>(sm.allocated_bytes)).c_str(),
                  format_bytes(static_cast<double>(sm.reserved_bytes)).c_str(),
                  format_bytes(static_cast<double>(sm.peak_bytes)).c_str(),
                  memory_fit_mark(sm.fit));
    o << line;
  }
  // allocated and reserved are what torch.cuda.max_memory_allocated / max_memory_reserved report (torchtitan logs the
  // reserved one); peak adds the CUDA context and NCCL's buffers, outside PyTorch's allocator.
  o << "    (allocated, reserved: PyTorch's max_memory_allocated / _reserved; peak adds the CUDA context and NCCL)\n";
  if (s.memory_tight) o << "  " << tight_memory_note << "\n";
  // The gap between allocated and reserved is mostly FSDP2's stream pools where there are any: say so.
  const auto pools = std::max_element(s.per_stage.begin(), s.per_stage.end(), [](const auto& a, const auto& b) {
    return a.stream_pool_bytes < b.stream_pool_bytes;
  });
  if (pools != s.per_stage.end() && pools->stream_pool_bytes > 0) {
    std::snprintf(line, sizeof line,
                  "    (reserved holds FSDP2's stream pools, up to %s a stage: the sharded gradients' and the largest "
                  "all-gather's blocks, kept for their streams; docs/MODEL.md §8)\n",
                  format_bytes(static_cast<double>(pools->stream_pool_bytes)).c_str());
    o << line;
  }
  if (s.reserved_interval_bytes) {
    std::snprintf(line, sizeof line, "    reserved peak %s, 80%% interval %s .. %s (%s)\n",
                  format_bytes(static_cast<double>(s.peak_reserved_bytes_max)).c_str(),
                  format_bytes((*s.reserved_interval_bytes)[0]).c_str(),
                  format_bytes((*s.reserved_interval_bytes)[1]).c_str(), s.memory_interval_source.c_str());
    o << line;
  } else if (!s.memory_no_interval.empty()) {
    o << "    " << s.memory_no_interval << "\n";
  }
  o << "\n  communication per step (rank " << s.rank << "):\n";
  bool any = false;
  for (int k = 0; k < kNumCommKinds; ++k) any = any || s.comm.calls[k] > 0;
  o << (any ? "    kind   calls     message bytes     bus volume\n" : "    none (the rank talks to no other)\n");
  for (int k = 0; k < kNumCommKinds; ++k) {
    if (!s.comm.calls[k]) continue;
    std::snprintf(line, sizeof line, "    %-4s %7llu  %16s  %13s\n", comm_kind_name(k),
                  static_cast<unsigned long long>(s.comm.calls[k]),
                  format_bytes(static_cast<double>(s.comm.message[k])).c_str(),
                  format_bytes(static_cast<double>(s.comm.volume[k])).c_str());
    o << line;
  }
  std::snprintf(line, sizeof line,
                "\n  simulated %s, %llu events in %.2f s (%.1f M events/s), comm_model %s, overlap_model %s\n",
                counted(s.ranks, "rank", "ranks").c_str(), static_cast<unsigned long long>(s.events), s.wall_s,
                s.wall_s > 0 ? s.events / s.wall_s / 1e6 : 0.0, spec::name_of(job.simulation.comm_model),
                spec::name_of(job.simulation.overlap_model));
  o << line;
  if (s.mirrored_ranks > 0) {
    o << "  (" << counted(s.simulated_ranks, "representative rank", "representative ranks") << " run, "
      << counted(s.mirrored_ranks, "mirrors", "mirror") << " one: same programs and groups up to their data/context "
      << "index; --all-ranks runs every rank)\n";
  }
  return o.str();
}

}  // namespace stepsim::report

// Self-contained HTML report of a simulated step (what each chart shows: html_report.hpp; docs/REPORTS.md).
#include "stepsim/report/html_report.hpp"
#include "stepsim/report/text_format.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "stepsim/report/html_page.hpp"

namespace stepsim::report {

namespace {

using nlohmann::json;
using workload::Phase;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kMaxMemoryPoints = 400;  // per stage: a chart of a long step stays light, peaks kept

// One rank per pipeline stage among the recorded ones, in stage order.
std::vector<const sim::RankTimeline*> stage_timelines(const sim::Simulation& s) {
  std::map<int, const sim::RankTimeline*> by_stage;
  for (const sim::RankTimeline& tl : s.result.recorded) {
    by_stage.try_emplace(s.workload.layout.coord(tl.rank).pp, &tl);
  }
  std::vector<const sim::RankTimeline*> out;
  for (const auto& [stage, tl] : by_stage) out.push_back(tl);
  return out;
}

// Compute blocks of the first `window` micro-batches on one rank: consecutive compute-stream ops of the same
// micro-batch, phase and model chunk merged; idle gaps between compute ops inside the window's span.
json timeline_of(const sim::Simulation& s, const sim::RankTimeline& tl, int window, int stage) {
  const workload::Program& p = s.workload.program_of_rank(tl.rank);
  std::vector<const sim::OpRecord*> compute;
  for (const sim::OpRecord& r : tl.ops) {
    if (p.ops[r.op].stream == workload::Stream::Compute && p.ops[r.op].kind == workload::OpKind::Compute) {
      compute.push_back(&r);
    }
  }
  std::sort(compute.begin(), compute.end(), [](const auto* a, const auto* b) { return a->begin_ns < b->begin_ns; });
  json blocks = json::array();
  struct Block {
    int mb = -1, chunk = 0;
    Phase phase = Phase::Forward;
    int64_t begin = 0, end = 0;
  };
  std::optional<Block> cur;
  int64_t span_begin = -1, span_end = -1;
  auto flush = [&] {
    if (!cur) return;
    blocks.push_back({{"stage", stage}, {"microbatch", cur->mb}, {"chunk", cur->chunk},
                      {"phase", workload::name_of(cur->phase)},
                      {"start_ms", static_cast<double>(cur->begin) * 1e-6}, {"end_ms", static_cast<double>(cur->end) * 1e-6}});
    if (span_begin < 0) span_begin = cur->begin;
    span_end = std::max(span_end, cur->end);
    cur.reset();
  };
  for (const sim::OpRecord* r : compute) {
    const workload::Op& op = p.ops[r->op];
    const bool in = op.microbatch >= 0 && op.microbatch < window && op.phase != Phase::Optimizer;
    if (cur && (!in || op.microbatch != cur->mb || op.phase != cur->phase || op.chunk != cur->chunk)) flush();
    if (!in) continue;
    if (!cur) cur = Block{op.microbatch, op.chunk, op.phase, r->begin_ns, r->end_ns};
    cur->end = std::max(cur->end, r->end_ns);
  }
  flush();
  // Idle: the GPU's compute stream waiting (pipeline bubble, exposed communication) inside the window, gaps longer
  // than 0.2 % of the window (kernel-to-kernel gaps are part of each kernel's time already).
  json idle = json::array();
  if (span_begin >= 0) {
    const int64_t min_gap = std::max<int64_t>(1000, (span_end - span_begin) / 500);
    int64_t last_end = span_begin;
    for (const sim::OpRecord* r : compute) {
      if (r->begin_ns >= span_end) break;
      if (r->end_ns <= span_begin) continue;
      if (r->begin_ns - last_end > min_gap) {
        idle.push_back({{"stage", stage}, {"start_ms", static_cast<double>(last_end) * 1e-6},
                        {"end_ms", static_cast<double>(r->begin_ns) * 1e-6}});
      }
      last_end = std::max(last_end, r->end_ns);
    }
  }
  return {{"blocks", blocks}, {"idle", idle}};
}

json memory_of(const sim::RankTimeline& tl, int stage) {
  json pts = json::array();
  const auto& m = tl.memory;
  if (m.size() <= kMaxMemoryPoints) {
    for (const auto& x : m) pts.push_back({static_cast<double>(x.t_ns) * 1e-9, static_cast<double>(x.bytes) / kGiB});
  } else {
    // Time buckets, each drawn at its highest sample: the peak survives.
    const int64_t t0 = m.front().t_ns, t1 = std::max(m.back().t_ns, t0 + 1);
    size_t i = 0;
    for (size_t b = 0; b < kMaxMemoryPoints && i < m.size(); ++b) {
      const int64_t end = t0 + (t1 - t0) * static_cast<int64_t>(b + 1) / static_cast<int64_t>(kMaxMemoryPoints);
      const sim::MemorySample* best = nullptr;
      for (; i < m.size() && (m[i].t_ns <= end || b + 1 == kMaxMemoryPoints); ++i) {
        if (!best || m[i].bytes > best->bytes) best = &m[i];
      }
      if (best) pts.push_back({static_cast<double>(best->t_ns) * 1e-9, static_cast<double>(best->bytes) / kGiB});
    }
  }
  return {{"stage", stage}, {"rank", tl.rank}, {"points", pts}};
}

// Drawn by the page: one chart per section, every chart registered in window.stepsimReport so that a browser test
// can count what was drawn.
constexpr const char* kPageJs = R"JS(

// 1. Where the step goes (rank R): one bar per non-zero part.
add('breakdown', {type: 'bar',
  data: {labels: D.breakdown.map(b => b.label),
         datasets: [{label: 'seconds per step', data: D.breakdown.map(b => b.seconds),
                     backgroundColor: D.breakdown.map(b => COLORS[b.kind] || COLORS.other)}]},
  options: {indexAxis: 'y', plugins: {legend: {display: false}},
            scales: {x: {title: {display: true, text: 'seconds per step'}}}}});

// 2. Pipeline timeline of the first micro-batches: floating bars per stage.
const stages = D.timeline.stages.map(s => 'stage ' + s);
const bars = phase => D.timeline.blocks.filter(b => b.phase === phase)
  .map(b => ({x: [b.start_ms, b.end_ms], y: 'stage ' + b.stage, mb: b.microbatch}));
const timelineSets = ['forward', 'backward', 'recompute'].map(ph => ({label: ph, data: bars(ph),
  backgroundColor: COLORS[ph], grouped: false, barPercentage: 0.8, categoryPercentage: 0.9}))
  .filter(d => d.data.length > 0);
timelineSets.push({label: 'idle (bubble, exposed communication)', grouped: false, barPercentage: 0.35,
  data: D.timeline.idle.map(b => ({x: [b.start_ms, b.end_ms], y: 'stage ' + b.stage})), backgroundColor: COLORS.idle});
add('timeline', {type: 'bar', data: {labels: stages, datasets: timelineSets},
  options: {indexAxis: 'y', parsing: {xAxisKey: 'x', yAxisKey: 'y'},
            scales: {x: {type: 'linear', title: {display: true, text: 'ms from the step start'}},
                     y: {type: 'category', labels: stages}},
            plugins: {tooltip: {callbacks: {label: c => (c.raw.mb !== undefined ? 'micro-batch ' + c.raw.mb + ': ' : '')
              + c.raw.x[0].toFixed(3) + ' - ' + c.raw.x[1].toFixed(3) + ' ms'}}}}});

// 3. Memory over time per stage against the GPU's capacity.
const memSets = D.memory.map((m, i) => ({label: 'stage ' + m.stage + ' (rank ' + m.rank + ')',
  data: m.points.map(p => ({x: p[0], y: p[1]})), borderColor: STAGE_COLORS[i % STAGE_COLORS.length],
  pointRadius: 0, borderWidth: 1.5, stepped: true}));
memSets.push({label: 'capacity', data: [{x: 0, y: D.capacity_gib}, {x: D.step_time_s, y: D.capacity_gib}],
  borderColor: '#000', borderDash: [6, 4], pointRadius: 0, borderWidth: 1});
add('memory', {type: 'line', data: {datasets: memSets},
  options: {parsing: false, scales: {x: {type: 'linear', title: {display: true, text: 's'}},
                                      y: {title: {display: true, text: 'GiB allocated'}, beginAtZero: true}}}});

// 3b. What each stage's peak holds, against the capacity.
const mparts = [['weights', 'weights_gib', '#4e79a7'], ['gradients', 'gradients_gib', '#f28e2b'],
                ['optimizer states', 'optimizer_gib', '#59a14f'], ['gathered parameters, fp8 copies', 'copies_gib', '#76b7b2'],
                ['activations and working buffers', 'activations_gib', '#e15759'],
                ['CUDA context, NCCL, allocator reserve', 'other_gib', '#bab0ac']];
add('memparts', {type: 'bar', data: {labels: D.memory_parts.map(m => 'stage ' + m.stage), datasets: mparts.map(
    ([name, key, color]) => ({label: name, data: D.memory_parts.map(m => m[key]), backgroundColor: color}))},
  options: {indexAxis: 'y', plugins: {legend: {position: 'bottom'}},
            scales: {x: {stacked: true, max: Math.max(D.capacity_gib, ...D.memory_parts.map(m => m.peak_gib)) * 1.02,
                         title: {display: true, text: 'GiB at the stage\'s peak (capacity ' + D.capacity_gib.toFixed(1) + ' GiB)'}},
                     y: {stacked: true}}}});

// 4. Communication per parallel dimension: bytes sent and time left exposed.
add('comm', {type: 'bar', data: {labels: D.comm.map(c => c.dim), datasets: [
    {label: 'message bytes per step (GiB)', data: D.comm.map(c => c.message_gib), backgroundColor: '#4e79a7', yAxisID: 'y'},
    {label: 'exposed time per step (ms)', data: D.comm.map(c => c.exposed_ms), backgroundColor: '#e15759', yAxisID: 'y1'}]},
  options: {scales: {y: {position: 'left', title: {display: true, text: 'GiB'}},
                     y1: {position: 'right', title: {display: true, text: 'ms'}, grid: {drawOnChartArea: false}}}}});

// 5. The step time and its 80 % prediction interval.
const iv = D.interval;
const ivSets = [{type: 'scatter', label: 'predicted step', data: [{x: D.step_time_s, y: 'step'}], backgroundColor: '#000',
                 pointRadius: 6}];
if (iv) ivSets.push({type: 'bar', label: '80 % interval', data: [{x: iv, y: 'step'}], backgroundColor: '#a0cbe8',
                     barPercentage: 0.4});
add('interval', {data: {labels: ['step'], datasets: ivSets},
  options: {indexAxis: 'y', scales: {x: {type: 'linear', title: {display: true, text: 's'}}, y: {type: 'category'}}}});
)JS";

}  // namespace

json simulate_report_data(const sim::Simulation& s, const Summary& sum, const json& summary_json) {
  const spec::JobSpec& job = s.workload.job;
  json d;
  d["summary"] = summary_json;
  d["step_time_s"] = sum.step_time_s;
  d["capacity_gib"] = static_cast<double>(sum.capacity_bytes) / kGiB;
  // 1. Breakdown: the summary's non-zero parts.
  json parts = json::array();
  const json& b = summary_json.at("breakdown_s");
  auto part = [&](const std::string& label, const std::string& kind, double v) {
    if (v > 0) parts.push_back({{"label", label}, {"kind", kind}, {"seconds", v}});
  };
  part("compute", "compute", b.at("compute").get<double>());
  part("pipeline bubble / wait", "bubble", b.at("pipeline_bubble").get<double>());
  part("optimizer", "optimizer", b.at("optimizer").get<double>());
  part("host gaps", "other", b.at("host_gap").get<double>());
  part("offload", "other", b.at("offload").get<double>());
  for (auto it = b.at("exposed_comm").begin(); it != b.at("exposed_comm").end(); ++it) {
    part("exposed " + it.key() + " communication", "comm", it.value().get<double>());
  }
  d["breakdown"] = parts;
  // 2-3. Timeline and memory, one rank per stage.
  const int pp = job.parallelism.pipeline;
  const int window = std::max(1, std::min<int>(static_cast<int>(job.num_microbatches()), 2 * pp));
  json stages = json::array(), blocks = json::array(), idle = json::array(), memory = json::array();
  for (const sim::RankTimeline* tl : stage_timelines(s)) {
    const int stage = s.workload.layout.coord(tl->rank).pp;
    stages.push_back(stage);
    json t = timeline_of(s, *tl, window, stage);
    for (auto& x : t["blocks"]) blocks.push_back(std::move(x));
    for (auto& x : t["idle"]) idle.push_back(std::move(x));
    memory.push_back(memory_of(*tl, stage));
  }
  d["timeline"] = {{"microbatch_window", window}, {"stages", stages}, {"blocks", blocks}, {"idle", idle}};
  d["memory"] = memory;
  // 3b. Each stage's peak by component: static memory as the workload holds it, activations as the engine peaked.
  json parts_by_stage = json::array();
  for (const StageMemory& sm : sum.per_stage) {
    const workload::StaticMemory& st = s.workload.programs[s.workload.role_of_stage[sm.stage]].static_memory;
    parts_by_stage.push_back({{"stage", sm.stage}, {"weights_gib", (st.weights + st.traced) / kGiB},
                              {"gradients_gib", st.gradients / kGiB}, {"optimizer_gib", st.optimizer / kGiB},
                              {"copies_gib", (st.gathered + st.fp8_weight_cache) / kGiB},
                              {"activations_gib", sm.activation_bytes / kGiB},
                              {"other_gib", (st.overhead + st.reserved_extra()) / kGiB},
                              {"peak_gib", sm.peak_bytes / kGiB}});
  }
  d["memory_parts"] = parts_by_stage;
  // 4. Communication per dimension with any traffic or exposed time.
  json comm = json::array();
  const json& bytes = summary_json.at("comm_message_bytes_per_rank");
  for (auto it = bytes.begin(); it != bytes.end(); ++it) {
    const double exposed = b.at("exposed_comm").value(it.key(), 0.0);
    const double msg = it.value().get<double>();
    if (msg > 0 || exposed > 0) {
      comm.push_back({{"dim", it.key()}, {"message_gib", msg / kGiB}, {"exposed_ms", exposed * 1e3}});
    }
  }
  d["comm"] = comm;
  // 5. Interval.
  d["interval"] = summary_json.contains("step_time_interval_s") ? summary_json["step_time_interval_s"] : json(nullptr);
  d["title"] = job.model.name + " on " + std::to_string(job.cluster.num_gpus) + " x " + job.cluster.gpu + " (TP " +
               std::to_string(job.parallelism.tensor) + ", PP " + std::to_string(pp) + ", DP " +
               std::to_string(job.parallelism.data) + ", CP " + std::to_string(job.parallelism.context) + ", EP " +
               std::to_string(job.parallelism.expert) + ")";
  return d;
}

std::string simulate_report_html(const sim::Simulation& s, const Summary& sum, const json& summary_json) {
  const json d = simulate_report_data(s, sum, summary_json);
  const spec::JobSpec& job = s.workload.job;
  std::string head = "step " + format_seconds(sum.step_time_s);
  if (sum.step_time_interval_s) {
    head += " (80 % interval " + format_seconds((*sum.step_time_interval_s)[0]) + " .. " +
            format_seconds((*sum.step_time_interval_s)[1]) + ")";
  }
  head += " · MFU " + format_number("%.1f %%", sum.mfu * 100) + mfu_peak_note(sum) + " · " +
          format_number("%.1f", sum.tflops_per_gpu) + " TFLOP/s per GPU · " + format_grouped(sum.tokens_per_s) +
          " tokens/s · peak memory " + format_bytes(static_cast<double>(sum.peak_bytes_max)) +
          " of " + format_bytes(static_cast<double>(sum.capacity_bytes)) + (sum.oom            ? " (does not fit)"
                                                           : sum.memory_tight ? " (tight)"
                                                                              : "");
  // Said first, as the text summary does: out of memory, every number below is what the step would take if it ran.
  auto memory_banner = [&](const char* style, const char* verdict, const char* then) {
    return std::string("<p style=\"") + style + "padding:8px 12px;font-weight:600\">" + verdict + ": peak " +
           escape_html(format_bytes(static_cast<double>(sum.peak_bytes_max))) + " on stage " +
           std::to_string(sum.peak_stage) + ", " + escape_html(format_bytes(static_cast<double>(sum.capacity_bytes))) +
           " per GPU" + then + "</p>\n";
  };
  const std::string banner =
      sum.oom            ? memory_banner("background:#e15759;color:#fff;", "Does not fit",
                                         ". The step below is what it would take if it ran.")
      : sum.memory_tight ? memory_banner("background:#edc948;", "Tight in memory",
                                         "; what PyTorch allocates fits, its reserved peak does not "
                                         "(docs/MODEL.md §8).")
                         : std::string();
  std::string header = banner + "<p>" + escape_html(head) + "</p>\n<p class=\"note\">micro-batch " +
                       std::to_string(job.training.micro_batch_size) + ", global batch " +
                       std::to_string(job.training.global_batch_size) + " (" +
                       counted(job.num_microbatches(), "micro-batch", "micro-batches") +
                       " per pipeline), sequence " + std::to_string(job.model.seq_length) +
                       "; breakdown and communication for rank " + std::to_string(sum.rank) + "; compute calibration: " +
                       escape_html(sum.calibration_source) + "</p>";
  if (!sum.notes.empty()) {
    header += "\n<ul class=\"note\">";
    for (const std::string& n : sum.notes) header += "<li>" + escape_html(n) + "</li>";
    header += "</ul>";
  }
  const std::string rank = std::to_string(sum.rank);
  const std::vector<HtmlSection> sections = {
      {"Where the step goes (rank " + rank + ")", "breakdown", 320},
      {"Pipeline timeline: the first " +
           counted(d["timeline"]["microbatch_window"].get<int>(), "micro-batch", "micro-batches") +
           ", one rank per stage", "timeline", std::max(240, 40 * job.parallelism.pipeline + 80)},
      {"Memory over the step, per stage", "memory", 360},
      {"What each stage's peak holds", "memparts", std::max(200, 36 * job.parallelism.pipeline + 110)},
      {"Communication per parallel dimension (rank " + rank + ")", "comm", 320},
      {"Step time and its prediction interval", "interval", 160}};
  return html_page(d["title"].get<std::string>(), header, sections, d, kPageJs);
}

}  // namespace stepsim::report

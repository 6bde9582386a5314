// HTML reports of plan, reliability and validate (what each chart shows: docs/REPORTS.md).
#include "stepsim/report/command_reports.hpp"
#include "stepsim/report/text_format.hpp"

#include <algorithm>
#include <map>

#include <cstdio>

#include "stepsim/report/html_page.hpp"

namespace stepsim::report {

namespace {

using nlohmann::json;

constexpr const char* kPlanJs = R"JS(
// Ranked plans and the job as written: one stacked bar each, where its step goes (per step, on the slowest stage or
// rank 0); the tooltip adds the peak memory.
const parts = [['compute', 'compute_s', '#4e79a7'], ['TP + CP + EP comm', 'comm_s', '#f28e2b'],
               ['pipeline', 'pp_s', '#76b7b2'], ['DP comm', 'dp_s', '#59a14f'], ['update', 'update_s', '#edc948'],
               ['other (host, waits)', 'other_s', '#bab0ac']];
add('plans', {type: 'bar', data: {labels: D.plans.map(p => p.label), datasets: parts.map(([name, key, color]) => ({
    label: name, data: D.plans.map(p => p[key]), backgroundColor: D.plans.map(p => p.baseline ? color + '88' : color),
    borderColor: D.plans.map(p => p.at_risk ? COLORS.risk : (p.baseline ? '#000' : color)), borderWidth: 1}))},
  options: {indexAxis: 'y', plugins: {legend: {position: 'bottom'}, tooltip: {callbacks: {
              footer: items => { const p = D.plans[items[0].dataIndex]; return 'step ' + p.step_time_s.toFixed(3) +
                  ' s, peak ' + p.peak_gib.toFixed(1) + ' GiB' + (p.at_risk ? ' (memory at risk)' : ''); }}}},
            scales: {x: {stacked: true, title: {display: true, text: 's per step'}}, y: {stacked: true}}}});
// TP x PP memory feasibility at plan #1's other settings: one square per (TP, PP) pair.
const cellSets = ['fits', 'tight', 'over', 'invalid'].map(st => ({
    label: {fits: 'fits', tight: 'tight (allocations fit)', over: 'over capacity', invalid: 'not a valid split'}[st],
    data: D.map.cells.filter(c => c.status === st).map(c => ({x: 'PP ' + c.pipeline,
    y: 'TP ' + c.tensor, c})), backgroundColor: COLORS[st], pointStyle: 'rect', pointRadius: 14, pointHoverRadius: 16}));
add('map', {type: 'scatter', data: {datasets: cellSets},
  options: {scales: {x: {type: 'category', labels: D.map.pipelines.map(p => 'PP ' + p), title: {display: true, text: 'pipeline'}},
                     y: {type: 'category', labels: D.map.tensors.map(t => 'TP ' + t).reverse(), title: {display: true, text: 'tensor'}}},
            plugins: {legend: {position: 'bottom'}, tooltip: {callbacks: {label: k => 'TP ' + k.raw.c.tensor + ' PP ' +
              k.raw.c.pipeline + ' DP ' + k.raw.c.data + ': ' + (k.raw.c.status === 'invalid' ? k.raw.c.reason : 'peak ' +
              k.raw.c.peak_gib.toFixed(1) + ' GiB')}}}}});
)JS";

constexpr const char* kReliabilityJs = R"JS(
// ETTR against the checkpoint interval, with the optimum and the interval used.
add('ettr', {type: 'line', data: {datasets: [
    {label: 'expected ETTR', data: D.curve.map(p => ({x: p.interval, y: p.ettr})), borderColor: '#4e79a7', pointRadius: 0},
    {label: 'optimal interval', type: 'scatter', data: [{x: D.optimum, y: D.optimum_ettr}], backgroundColor: '#59a14f', pointRadius: 6},
    {label: 'interval used', type: 'scatter', data: [{x: D.interval, y: D.ettr}], backgroundColor: '#e15759', pointRadius: 5, pointStyle: 'triangle'}]},
  options: {parsing: false, scales: {x: {type: 'logarithmic', ticks: LOG_TICKS,
                                          title: {display: true, text: 'checkpoint interval (steps)'}},
                                      y: {title: {display: true, text: 'ETTR'}}}}});
// Where the end-to-end time goes.
add('e2e', {type: 'bar', data: {labels: D.e2e.map(p => p.label), datasets: [{label: 'hours', data: D.e2e.map(p => p.hours),
    backgroundColor: '#4e79a7'}]}, options: {indexAxis: 'y', plugins: {legend: {display: false}},
    scales: {x: {title: {display: true, text: 'hours'}}}}});
// The Monte-Carlo spread of the run time (when --monte-carlo ran).
if (D.monte_carlo) add('mc', {type: 'bar', data: {labels: D.monte_carlo.map(p => p.label), datasets: [{label: 'run time (hours)',
    data: D.monte_carlo.map(p => p.hours), backgroundColor: '#f28e2b'}]},
  options: {plugins: {legend: {display: false}}, scales: {y: {beginAtZero: false, title: {display: true, text: 'hours'}}}}});
)JS";

constexpr const char* kValidateJs = R"JS(
// Predicted against measured step time: one point per run, per source; the diagonal is a perfect prediction.
const sources = [...new Set(D.rows.map(r => r.source))];
const hiStep = Math.max(...D.rows.map(r => Math.max(r.measured, r.predicted))) * 1.1;
const loStep = Math.min(...D.rows.map(r => Math.min(r.measured, r.predicted))) / 1.1;
const sets = sources.map((s, i) => ({label: s, data: D.rows.filter(r => r.source === s).map(r => ({x: r.measured,
    y: r.predicted, id: r.id, error: r.error})), backgroundColor: STAGE_COLORS[i % STAGE_COLORS.length], pointRadius: 5}));
sets.push({label: 'predicted = measured', type: 'line', data: [{x: loStep, y: loStep}, {x: hiStep, y: hiStep}], borderColor: '#888',
    borderDash: [6, 4], pointRadius: 0});
add('scatter', {type: 'scatter', data: {datasets: sets},
  options: {scales: {x: {type: 'logarithmic', ticks: LOG_TICKS, title: {display: true, text: 'measured step time (s)'}},
                     y: {type: 'logarithmic', ticks: LOG_TICKS, title: {display: true, text: 'predicted step time (s)'}}},
            plugins: {tooltip: {callbacks: {label: k => k.raw.id ? k.raw.id + ': ' + (100 * k.raw.error).toFixed(1) + ' %' : ''}}}}});
// MAPE and mean signed error per source.
add('sources', {type: 'bar', data: {labels: D.by_source.map(s => s.source), datasets: [
    {label: 'MAPE (%)', data: D.by_source.map(s => 100 * s.mape), backgroundColor: '#4e79a7'},
    {label: 'mean signed error (%)', data: D.by_source.map(s => 100 * s.mean_signed_error), backgroundColor: '#e15759'}]},
  options: {indexAxis: 'y', scales: {x: {title: {display: true, text: '%'}}}}});
)JS";

// The ranked plans as the text table reads them, with the job as written last: each plan's settings, where its step
// goes, its peak memory against the GPU's, and its tie group (plans the model's own error cannot order), so that a
// printed or screenshotted report shows what the tooltips hold.
std::string plans_table(const json& plan_json) {
  const double capacity = plan_json.value("capacity_bytes", 0.0);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::map<int, std::vector<int>> groups;  // tie group -> ranks in it
  int rank = 0;
  for (const json& p : plan_json.at("plans")) groups[p.value("tie_group", 0)].push_back(++rank);
  const double best = plan_json.at("plans").empty() ? 0 : plan_json["plans"][0].value("step_time_s", 0.0);
  std::string t = "<table class=\"plans\" style=\"white-space:nowrap\"><tr><th>plan</th><th>equivalent to</th>"
                  "<th>TP</th><th>PP</th><th>DP</th><th>CP</th><th>EP</th><th>micro-batch</th><th>VP</th>"
                  "<th>recompute</th><th>optimizer</th><th>layout</th><th>step</th><th>vs #1</th><th>compute</th><th>TP+CP+EP comm</th><th>pipeline</th>"
                  "<th>DP comm</th><th>peak memory</th></tr>";
  auto row = [&](const json& p, const std::string& name, const std::string& ties) {
    auto n = [&](const char* k) { return std::to_string(p.value(k, 0)); };
    auto sec = [&](double v) { return format_number("%.3f s", v); };
    const double step = p.value("step_time_s", 0.0), peak = p.value("peak_memory_bytes", 0.0);
    const std::string fit = capacity > 0 && peak > capacity ? " (does not fit)"
                            : p.value("memory_at_risk", false) ? " (at risk)" : "";
    t += "<tr><td>" + escape_html(name) + "</td><td>" + escape_html(ties) + "</td><td>" + n("tensor") + "</td><td>" +
         n("pipeline") + "</td><td>" + n("data") + "</td><td>" + n("context") + "</td><td>" + n("expert") +
         "</td><td>" + n("micro_batch_size") + "</td><td>" + n("virtual_stages") + "</td><td>" +
         escape_html(p.value("recompute", std::string())) + "</td><td>" +
         escape_html(p.value("optimizer", std::string())) + "</td><td>" +
         escape_html(p.value("layout", std::string("-"))) + "</td><td>" + sec(step) + "</td><td>" +
         (best > 0 ? format_number("%+.1f %%", 100 * (step / best - 1)) : std::string("-")) + "</td><td>" +
         sec(p.value("compute_s", 0.0)) + "</td><td>" +
         sec(p.value("tp_s", 0.0) + p.value("cp_s", 0.0) + p.value("ep_s", 0.0)) + "</td><td>" +
         sec(p.value("pp_s", 0.0)) + "</td><td>" + sec(p.value("dp_s", 0.0)) + "</td><td>" +
         format_number("%.1f GiB", peak / kGiB) + escape_html(fit) + "</td></tr>";
  };
  rank = 0;
  for (const json& p : plan_json.at("plans")) {
    ++rank;
    std::string ties;
    for (int other : groups[p.value("tie_group", 0)]) {
      if (other != rank && p.value("tie_group", 0) > 0) ties += (ties.empty() ? "#" : ", #") + std::to_string(other);
    }
    row(p, "#" + std::to_string(rank), ties.empty() ? "-" : ties);
  }
  if (plan_json.contains("baseline") && plan_json["baseline"].is_object()) {
    row(plan_json["baseline"], "job as written", "-");
  }
  t += "</table>";
  t += "<p class=\"note\">Plans listed as equivalent are within " +
       format_number("%.1f %%", 100 * plan_json.value("tie_tolerance", 0.0)) +
       " of each other, the model's plan-to-plan error: they are ordered by the simpler layout, then memory headroom, "
       "not by a difference the model can resolve. Capacity " + format_number("%.1f GiB", capacity / kGiB) + ".</p>";
  return t;
}

}  // namespace

std::string plan_report_html(const json& plan_json, const json& memory_map) {
  json d;
  d["plan"] = plan_json;
  d["map"] = memory_map;
  json plans = json::array();
  int rank = 0;
  // A bar per plan, labelled as the text table reads it (layout and optimizer flags tell #1 and #3 apart).
  auto bar = [&](const json& p, const std::string& name, bool baseline) {
    std::string label = name + " TP " + std::to_string(p.at("tensor").get<int>()) + " PP " +
                        std::to_string(p.at("pipeline").get<int>()) + " DP " + std::to_string(p.at("data").get<int>());
    if (p.at("context").get<int>() > 1) label += " CP " + std::to_string(p.at("context").get<int>());
    if (p.at("expert").get<int>() > 1) label += " EP " + std::to_string(p.at("expert").get<int>());
    label += " mbs " + std::to_string(p.at("micro_batch_size").get<int>());
    if (p.at("virtual_stages").get<int>() > 1) label += " VP " + std::to_string(p.at("virtual_stages").get<int>());
    label += " " + p.at("recompute").get<std::string>() + " " + p.value("optimizer", std::string());
    if (p.value("layout", std::string("-")) != "-") label += " " + p.value("layout", std::string());
    const double step = p.at("step_time_s").get<double>();
    const double comm = p.value("tp_s", 0.0) + p.value("cp_s", 0.0) + p.value("ep_s", 0.0);
    const double named = p.value("compute_s", 0.0) + comm + p.value("pp_s", 0.0) + p.value("dp_s", 0.0) +
                         p.value("update_s", 0.0);
    plans.push_back({{"label", label}, {"step_time_s", step}, {"at_risk", p.value("memory_at_risk", false)},
                     {"baseline", baseline}, {"compute_s", p.value("compute_s", 0.0)}, {"comm_s", comm},
                     {"pp_s", p.value("pp_s", 0.0)}, {"dp_s", p.value("dp_s", 0.0)},
                     {"update_s", p.value("update_s", 0.0)}, {"other_s", std::max(0.0, step - named)},
                     {"peak_gib", p.value("peak_memory_bytes", 0.0) / (1024.0 * 1024.0 * 1024.0)}});
  };
  // Plans the model cannot tell apart (a tie group of two or more) carry their group: "#2 (tie 1)".
  std::map<int, int> group_size;
  for (const json& p : plan_json.at("plans")) ++group_size[p.value("tie_group", 0)];
  for (const json& p : plan_json.at("plans")) {
    const int g = p.value("tie_group", 0);
    const std::string tie = g > 0 && group_size[g] > 1 ? " (tie " + std::to_string(g) + ")" : "";
    bar(p, "#" + std::to_string(++rank) + tie, false);
  }
  if (plan_json.contains("baseline") && plan_json["baseline"].is_object()) bar(plan_json["baseline"], "job", true);
  d["plans"] = plans;
  const std::string title = plan_json.value("model", std::string("job")) + ": plans for " +
                            std::to_string(plan_json.value("gpus", 0)) + " x " + plan_json.value("gpu", std::string("GPU"));
  std::string header = "<p>" + std::to_string(plan_json.value("enumerated", int64_t{0})) + " candidates enumerated, " +
                       std::to_string(plan_json.value("fits", int64_t{0})) + " fit in memory, " +
                       std::to_string(plan_json.value("simulated", int64_t{0})) + " re-timed by the engine; global batch " +
                       std::to_string(plan_json.value("global_batch", int64_t{0})) + "; objective " +
                       escape_html(plan_json.value("objective", std::string("step"))) + "</p>";
  header += plans_table(plan_json);
  header += "<p class=\"note\">Memory map: " + escape_html(memory_map.value("settings", std::string())) + "; capacity " +
            format_number("%.1f GiB", memory_map.value("capacity_gib", 0.0)) +
            ". A yellow border: within the memory margin; the faded bar is the job as written.</p>";
  const int rows = static_cast<int>(memory_map.at("tensors").size());
  return html_page(title, header,
                   {{"Ranked plans (step time)", "plans", std::max(200, 36 * static_cast<int>(plans.size()) + 80)},
                    {"TP x PP memory feasibility", "map", std::max(240, 48 * rows + 100)}},
                   d, kPlanJs);
}

std::string reliability_report_html(const json& rel_json, const json& curve) {
  json d;
  d["reliability"] = rel_json;
  d["curve"] = curve;
  d["optimum"] = rel_json.at("optimal_checkpoint_interval_steps");
  d["interval"] = rel_json.at("checkpoint_interval_steps");
  d["ettr"] = rel_json.at("ettr");
  double optimum_ettr = 0;
  for (const json& p : curve) {
    if (p.at("interval") == d["optimum"]) optimum_ettr = p.at("ettr").get<double>();
  }
  d["optimum_ettr"] = optimum_ettr;
  json e2e = json::array();
  for (const auto& [k, v] : rel_json.at("e2e_breakdown_s").items()) {
    if (v.get<double>() <= 0) continue;
    std::string label = k;  // checkpoint_saves -> checkpoint saves
    std::replace(label.begin(), label.end(), '_', ' ');
    e2e.push_back({{"label", label}, {"hours", v.get<double>() / 3600}});
  }
  d["e2e"] = e2e;
  std::vector<HtmlSection> sections = {{"ETTR against the checkpoint interval", "ettr", 320},
                                       {"Where the end-to-end time goes", "e2e", 240}};
  if (rel_json.contains("monte_carlo")) {
    const json& m = rel_json["monte_carlo"];
    json mc = json::array();
    for (const auto& [label, key] : std::vector<std::pair<std::string, std::string>>{
             {"min", "min_s"}, {"p50", "p50_s"}, {"mean", "mean_s"}, {"p95", "p95_s"}, {"p99", "p99_s"}, {"max", "max_s"}}) {
      mc.push_back({{"label", label}, {"hours", m.at(key).get<double>() / 3600}});
    }
    d["monte_carlo"] = mc;
    sections.push_back({"Monte Carlo: run time over " + std::to_string(m.at("runs").get<int64_t>()) + " runs", "mc", 260});
  } else {
    d["monte_carlo"] = nullptr;
  }
  const json& in = rel_json.at("inputs");
  const std::string title = "end-to-end time of " + std::to_string(in.value("steps", int64_t{0})) + " steps on " +
                            counted(in.value("nodes", int64_t{0}), "node", "nodes");
  const std::string header = "<p>" + format_number("%.1f h", rel_json.at("e2e_time_s").get<double>() / 3600) + " end to end, ETTR " +
                             format_number("%.2f %%", 100 * rel_json.at("ettr").get<double>()) + ", a checkpoint every " +
                             std::to_string(rel_json.at("checkpoint_interval_steps").get<int64_t>()) + " steps (optimum " +
                             std::to_string(rel_json.at("optimal_checkpoint_interval_steps").get<int64_t>()) + "), " +
                             format_number("%.1f", rel_json.at("expected_failures").get<double>()) + " failures expected; step " +
                             format_number("%.3f s", in.value("step_time_s", 0.0)) + " (" +
                             escape_html(in.value("step_time_source", std::string())) + ")</p>";
  return html_page(title, header, sections, d, kReliabilityJs);
}

std::string validate_report_html(const json& validate_json, const std::string& csv) {
  json d;
  d["validation"] = validate_json;
  json rows = json::array();
  for (const json& r : validate_json.at("rows")) {
    rows.push_back({{"id", r.at("id")}, {"source", r.at("source")}, {"measured", r.at("measured_step_time_s")},
                    {"predicted", r.at("predicted_step_time_s")}, {"error", r.at("error")}});
  }
  d["rows"] = rows;
  json sources = json::array();
  for (const auto& [s, v] : validate_json.at("by_source").items()) {
    sources.push_back({{"source", s}, {"mape", v.at("mape")}, {"mean_signed_error", v.at("mean_signed_error")}});
  }
  d["by_source"] = sources;
  const std::string header = "<p>" + std::to_string(rows.size()) + " runs simulated, " +
                             std::to_string(validate_json.at("failed").size()) + " refused. MAPE " +
                             format_number("%.1f %%", 100 * validate_json.at("mape").get<double>()) + ", mean signed error " +
                             format_number("%+.1f %%", 100 * validate_json.at("mean_signed_error").get<double>()) +
                             " (negative: predicted faster than measured).</p>";
  return html_page("validation against " + csv, header,
                   {{"Predicted against measured step time", "scatter", 420},
                    {"Error per source", "sources", std::max(200, 40 * static_cast<int>(sources.size()) + 80)}},
                   d, kValidateJs);
}

}  // namespace stepsim::report

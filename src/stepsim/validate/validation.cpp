#include "stepsim/validate/validation.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <cmath>
#include <thread>

#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/validate/run_job.hpp"

namespace stepsim::validate {
namespace {

struct Simulated {
  report::Summary summary;
  std::string kind;
  std::string recompute;
  std::string job_yaml;
};

Simulated simulate_row(const catalog::Catalog& cat, const PublishedRun& run, const RunJob& rj,
                       const ValidationOptions& o) {
  const std::string source = "row " + run.id;
  // Recompute not stated: the least that fits, as the run's authors had to choose.
  std::vector<std::string> choices;
  if (rj.root["training"]["recompute"]) choices.push_back(rj.root["training"]["recompute"].as<std::string>());
  else choices = {"none", "selective", "full"};
  // Megatron-Core refuses full recompute under the combined 1F1B EP overlap: such a run's authors had two choices.
  const YAML::Node ep_overlap = rj.root["training"]["overlap_moe_expert_parallel_comm"];
  if (ep_overlap && ep_overlap.as<bool>() && choices.size() > 1) choices.pop_back();
  Simulated out;
  for (size_t i = 0; i < choices.size(); ++i) {
    YAML::Node root = YAML::Clone(rj.root);
    root["training"]["recompute"] = choices[i];
    spec::apply_overrides(root, o.overrides);
    const spec::JobSpec job = spec::job_from_node(cat.gpus, root, source, o.overrides);
    const sim::Simulation s = sim::run_simulation(cat, job, {0});
    out.summary = report::summarize(s, 0);
    out.kind = sim::calibration_kind(job);
    out.recompute = spec::name_of(job.training.recompute);
    YAML::Emitter emitter;
    emitter << root;
    out.job_yaml = std::string(emitter.c_str()) + "\n";
    if (!out.summary.oom) break;
  }
  return out;
}

void add_stats(SourceStats& s, double err) {
  ++s.rows;
  s.mape += std::fabs(err);
  s.mean_signed_error += err;
}

void finish_stats(SourceStats& s) {
  if (s.rows == 0) return;
  s.mape /= s.rows;
  s.mean_signed_error /= s.rows;
}

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (pos - static_cast<double>(i)) * (v[j] - v[i]);
}

double weighted_quantile(std::vector<std::pair<double, double>> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& [x, w] : v) total += w;
  double before = 0, prev_mid = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double mid = (before + v[i].second / 2) / total;
    if (q <= mid) {
      if (i == 0 || mid <= prev_mid) return v[i].first;  // below the first middle, or a weightless value
      return v[i - 1].first + (q - prev_mid) / (mid - prev_mid) * (v[i].first - v[i - 1].first);
    }
    before += v[i].second;
    prev_mid = mid;
  }
  return v.back().first;
}

ValidationResult validate_runs(const catalog::Catalog& cat, const std::vector<PublishedRun>& runs,
                               const ValidationOptions& o) {
  ValidationResult res;
  auto listed = [](const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  for (const auto& [flag, ids] : {std::pair{"--only", &o.only_ids}, std::pair{"--exclude", &o.exclude_ids}}) {
    for (const std::string& id : *ids) {
      if (std::none_of(runs.begin(), runs.end(), [&](const PublishedRun& r) { return r.id == id; })) {
        throw InputError(std::string(flag) + " " + id + ": no row has this id");
      }
    }
  }
  std::vector<const PublishedRun*> selected;
  for (const PublishedRun& run : runs) {
    if ((o.only_ids.empty() || listed(o.only_ids, run.id)) && !listed(o.exclude_ids, run.id)) selected.push_back(&run);
  }
  // Rows are independent: simulated on several threads, collected in file order (the output does not depend on
  // the thread count).
  std::vector<std::optional<RowResult>> done(selected.size());
  std::vector<std::optional<FailedRow>> failed(selected.size());
  std::atomic<size_t> next{0};
  std::atomic<int64_t> finished{0};
  const auto total = static_cast<int64_t>(selected.size());
  if (o.progress) o.progress("simulating runs", 0, total);
  auto worker = [&]() {
    for (size_t i = next++; i < selected.size(); i = next++) {
      const PublishedRun& run = *selected[i];
      try {
        RowResult row;
        row.id = run.id;
        row.source = run.source;
        row.line = run.line;
        row.measured_step_time_s = measured_step_time_s(cat.gpus, run, &row.measured_from);
        const RunJob rj = job_for_run(cat.gpus, run);
        row.assumptions = rj.assumptions;
        row.stated = rj.stated;
        const Simulated sim = simulate_row(cat, run, rj, o);
        if (!rj.root["training"]["recompute"]) {
          row.assumptions.push_back("recompute not stated: " + sim.recompute + " (least that fits)");
        }
        row.recompute = sim.recompute;
        row.predicted_step_time_s = sim.summary.step_time_s;
        row.predicted_mfu = sim.summary.mfu;
        row.oom = sim.summary.oom;
        row.memory_tight = sim.summary.memory_tight;
        row.peak_bytes = sim.summary.peak_bytes_max;
        row.capacity_bytes = sim.summary.capacity_bytes;
        row.predicted_reserved_bytes = sim.summary.peak_reserved_bytes_max;
        if (run.peak_memory_bytes) {
          row.measured_memory_bytes = run.peak_memory_bytes;
          row.memory_from = run.peak_memory_from;
          row.memory_error = (static_cast<double>(row.predicted_reserved_bytes) - *run.peak_memory_bytes) /
                             *run.peak_memory_bytes;
        }
        row.job_yaml = sim.job_yaml;
        row.breakdown = sim.summary.breakdown;
        row.kind = sim.kind;
        row.notes = sim.summary.notes;
        row.arch = hw::name_of(gpu_of(cat.gpus, run).arch);
        row.framework = run.framework.empty() ? "not stated" : run.framework;
        row.gpu = gpu_label(cat.gpus, run);
        row.interval_s = sim.summary.step_time_interval_s;
        row.error = (row.predicted_step_time_s - row.measured_step_time_s) / row.measured_step_time_s;
        done[i] = std::move(row);
      } catch (const std::exception& e) {
        // InputError (a refused configuration), DeadlockError or a cost model's refusal: the row is reported, the
        // others still run.
        failed[i] = FailedRow{run.id, run.line, e.what()};
      }
      if (o.progress) o.progress("simulating runs", ++finished, total);
    }
  };
  const unsigned threads = std::max(1u, std::min<unsigned>(o.threads > 0 ? o.threads : std::thread::hardware_concurrency(),
                                                           static_cast<unsigned>(selected.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  SourceStats all;
  for (size_t i = 0; i < selected.size(); ++i) {
    if (failed[i]) res.failed.push_back(*failed[i]);
    if (!done[i]) continue;
    add_stats(res.by_source[done[i]->source], done[i]->error);
    add_stats(res.by_framework_gpu[{done[i]->framework, done[i]->gpu}], done[i]->error);
    add_stats(all, done[i]->error);
    if (done[i]->measured_memory_bytes) add_stats(res.memory, done[i]->memory_error);
    if (done[i]->oom) res.not_fit.push_back(done[i]->id);
    if (done[i]->memory_tight) res.tight.push_back(done[i]->id);

    res.rows.push_back(std::move(*done[i]));
  }
  using Groups = std::map<std::pair<std::string, std::string>, std::vector<const RowResult*>>;
  Groups groups, framework_groups;
  for (const RowResult& row : res.rows) {
    // The kind bands describe the calibration's world (Megatron-Core, what data/efficiency.yaml's
    // prediction_interval_by_kind ships); another framework's rows have bands of their own.
    if (row.framework != "megatron" && row.framework != "not stated") {
      framework_groups[{row.arch, row.framework}].push_back(&row);
    } else {
      groups[{row.arch, row.kind}].push_back(&row);
    }
  }
  auto bands_of = [](const Groups& g) {
    std::vector<KindBand> out;
    for (const auto& [key, rows] : g) {
      KindBand b;
      b.arch = key.first;
      b.kind = key.second;
      b.rows = static_cast<int>(rows.size());
      std::vector<double> errors;
      for (const RowResult* row : rows) {
        errors.push_back(row->error);
        b.with_interval += row->interval_s.has_value();
        b.covered += row->covered();
      }
      b.p10 = quantile(errors, 0.1);
      b.p90 = quantile(errors, 0.9);
      out.push_back(b);
    }
    return out;
  };
  res.bands = bands_of(groups);
  std::vector<std::pair<double, double>> weighted;
  for (const RowResult& row : res.rows) {
    weighted.emplace_back(row.error, 1.0 / res.by_source.at(row.source).rows);
    res.all_sources.with_interval += row.interval_s.has_value();
    res.all_sources.covered += row.covered();
  }
  res.all_sources.sources = static_cast<int>(res.by_source.size());
  res.all_sources.rows = static_cast<int>(res.rows.size());
  res.all_sources.p10 = weighted_quantile(weighted, 0.1);
  res.all_sources.p90 = weighted_quantile(weighted, 0.9);
  res.framework_bands = bands_of(framework_groups);
  for (auto& [name, s] : res.by_source) finish_stats(s);
  for (auto& [key, s] : res.by_framework_gpu) finish_stats(s);
  finish_stats(all);
  std::vector<double> memory_errors;
  for (const RowResult& row : res.rows) {
    if (!row.measured_memory_bytes) continue;
    memory_errors.push_back(row.memory_error);
    if (std::abs(row.memory_error) <= 0.10) ++res.memory_within_10_percent;
  }
  finish_stats(res.memory);
  res.memory_p10 = quantile(memory_errors, 0.1);
  res.memory_p90 = quantile(memory_errors, 0.9);
  res.mape = all.mape;
  res.mean_signed_error = all.mean_signed_error;
  return res;
}

}  // namespace stepsim::validate

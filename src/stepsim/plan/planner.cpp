#include "stepsim/plan/planner.hpp"
#include "stepsim/report/text_format.hpp"

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <type_traits>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/plan/baseline.hpp"
#include "stepsim/plan/estimate/stage_memory.hpp"
#include "stepsim/plan/reliability.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::plan {

void parallel_for(int64_t count, int threads, const std::function<void(int64_t, int)>& fn) {
  threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, count)));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto work = [&](int worker) {
    for (int64_t i = next++; i < count && !failed; i = next++) {
      try {
        fn(i, worker);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

namespace {

// (index, value) records of trivially copyable values, packed for Distribution::allgather.
template <class T>
std::vector<char> pack(const std::vector<std::pair<int64_t, T>>& recs) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<char> out(recs.size() * (sizeof(int64_t) + sizeof(T)));
  char* p = out.data();
  for (const auto& [i, v] : recs) {
    std::memcpy(p, &i, sizeof i);
    std::memcpy(p + sizeof i, &v, sizeof v);
    p += sizeof i + sizeof v;
  }
  return out;
}

template <class T>
void unpack(const std::vector<char>& bytes, std::vector<T>& into) {
  const size_t rec = sizeof(int64_t) + sizeof(T);
  for (size_t off = 0; off + rec <= bytes.size(); off += rec) {
    int64_t i = 0;
    std::memcpy(&i, bytes.data() + off, sizeof i);
    std::memcpy(&into[static_cast<size_t>(i)], bytes.data() + off + sizeof i, sizeof(T));
  }
}

// Computes fn for the indices this process owns (index % size == rank) and shares them with every process.
template <class T>
std::vector<T> distributed(int64_t count, int threads, const Distribution& dist, const std::function<T(int64_t, int)>& fn) {
  std::vector<int64_t> mine;
  for (int64_t i = dist.rank; i < count; i += dist.size) mine.push_back(i);
  std::vector<T> all(static_cast<size_t>(count));
  parallel_for(static_cast<int64_t>(mine.size()), threads, [&](int64_t k, int w) { all[mine[k]] = fn(mine[k], w); });
  if (dist.size > 1) {
    std::vector<std::pair<int64_t, T>> recs;
    for (int64_t i : mine) recs.emplace_back(i, all[i]);
    for (const auto& part : dist.allgather(pack(recs))) unpack(part, all);
  }
  return all;
}

std::string count_text(int64_t n) {
  // Built front to back (not by insert(), which trips GCC 12's -Wrestrict false positive, PR105329).
  const std::string digits = std::to_string(n);
  std::string s;
  const size_t lead = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > lead && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

}  // namespace

std::vector<spec::Fp8Recipe> parse_fp8_recipes(const hw::GpuCatalog& gpus, const std::string& list,
                                               const spec::JobSpec& job) {
  constexpr spec::Fp8Recipe kAll[] = {spec::Fp8Recipe::Delayed, spec::Fp8Recipe::Current, spec::Fp8Recipe::Blockwise,
                                      spec::Fp8Recipe::Mxfp8};
  if (job.training.precision != spec::Precision::Fp8) {
    throw InputError("--fp8-recipes: the job is not fp8 (training.precision " +
                     std::string(spec::name_of(job.training.precision)) + ")");
  }
  const bool blackwell = gpus.find(job.cluster.gpu).arch == hw::GpuArch::Blackwell;
  std::vector<spec::Fp8Recipe> out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name == "all") {
      const bool torchtitan = job.training.framework == spec::Framework::Torchtitan;
      for (spec::Fp8Recipe r : kAll)
        if ((r != spec::Fp8Recipe::Mxfp8 || blackwell) && (!torchtitan || r == spec::Fp8Recipe::Current))
          out.push_back(r);
      continue;
    }
    const spec::Fp8Recipe* hit = nullptr;
    for (const spec::Fp8Recipe& r : kAll)
      if (name == spec::name_of(r)) hit = &r;
    if (!hit) throw InputError("--fp8-recipes: '" + name + "' is not one of delayed, current, blockwise, mxfp8, all");
    if (*hit == spec::Fp8Recipe::Mxfp8 && !blackwell) {
      throw InputError("--fp8-recipes: mxfp8 needs a Blackwell GPU (" + job.cluster.gpu + " is not)");
    }
    if (*hit != spec::Fp8Recipe::Current && job.training.framework == spec::Framework::Torchtitan) {
      throw InputError("--fp8-recipes: '" + name + "': torchtitan's Float8 (torchao) is tensorwise dynamic scaling, "
                       "the recipe current only");
    }
    out.push_back(*hit);
  }
  if (out.empty()) throw InputError("--fp8-recipes: empty list");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

PlanResult run_planner(const catalog::Catalog& cat, const spec::JobSpec& base, const PlannerOptions& o,
                       const Distribution& dist) {
  const int n = o.space.gpus;
  const int gpn = base.cluster.gpus_per_node;
  if (n < 1) throw InputError("--gpus " + std::to_string(n) + ": must be at least 1");
  if (n > gpn && n % gpn != 0) {
    throw InputError("--gpus " + std::to_string(n) + ": must be a multiple of cluster.gpus_per_node " + std::to_string(gpn));
  }
  if (o.space.global_batch < 1) throw InputError("--global-batch: must be at least 1");
  const int threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const hw::GpuSpec gpu = hw::effective_gpu(cat.gpus, base.cluster);

  PlanResult r;
  r.capacity_bytes = static_cast<int64_t>(gpu.memory_bytes);
  r.nodes = (n + gpn - 1) / gpn;
  PlanSpace space = enumerate_plans(cat.gpus, base, o.space);
  r.removed = space.removed;
  r.enumerated = space.enumerated;
  const int64_t count = static_cast<int64_t>(space.plans.size());
  r.estimated = count;

  // Cost models, one set per worker (models may cache internally).
  const auto compute = sim::make_compute_model(cat, base);
  std::vector<std::unique_ptr<cost::CollectiveModel>> comms;
  for (int w = 0; w < threads; ++w) comms.push_back(sim::make_collective_model(cat, base));

  // A plan whose static memory alone is over the GPU's is out of memory whatever its activations: it needs no probe
  // (most of an MoE search's candidates are; their probes were most of its time).
  std::vector<int64_t> floor(static_cast<size_t>(count), 0);
  parallel_for(count, threads, [&](int64_t i, int) {
    if (i % dist.size != dist.rank) return;
    floor[i] = estimate::static_memory_floor(job_for(base, space.plans[i], n, o.space.global_batch));
  });
  auto over_statically = [&](int64_t i) { return floor[i] > r.capacity_bytes; };

  // Probes this process needs, built once each.
  std::map<ProbeKey, size_t> probe_index;
  for (int64_t i = dist.rank; i < count; i += dist.size) {
    if (!over_statically(i)) probe_index.emplace(probe_key(space.plans[i]), 0);
  }
  std::vector<ProbeKey> keys;
  for (auto& [k, idx] : probe_index) {
    idx = keys.size();
    keys.push_back(k);
  }
  std::vector<LayerCosts> probes(keys.size());
  std::atomic<int64_t> probed{0};
  parallel_for(static_cast<int64_t>(keys.size()), threads, [&](int64_t i, int w) {
    spec::JobSpec pb = base;
    spec::set_num_gpus(pb.cluster, n);
    probes[i] = probe_layer_costs(cat, pb, keys[i], *compute, *comms[w]);
    if (o.progress) o.progress("probing layer costs", ++probed, static_cast<int64_t>(keys.size()));
  });

  // Progress counts this process's share (its candidates, its engine runs).
  const int64_t mine = (count - dist.rank + dist.size - 1) / std::max(1, dist.size);
  std::atomic<int64_t> estimated{0};
  const std::vector<Estimate> est = distributed<Estimate>(count, threads, dist, [&](int64_t i, int w) {
    const Plan& p = space.plans[i];
    if (over_statically(i)) {
      if (o.progress) o.progress("estimating plans", ++estimated, mine);
      Estimate e;
      e.static_oom = true;
      e.peak_memory_bytes = e.allocated_memory_bytes = floor[i];
      return e;
    }
    const spec::JobSpec job = job_for(base, p, n, o.space.global_batch);
    Estimate e = estimate_plan(job, probes[probe_index.at(probe_key(p))], *compute, *comms[w]);
    if (o.progress) o.progress("estimating plans", ++estimated, mine);
    return e;
  });

  // Reliability inputs shared by every plan (same nodes, same checkpoint).
  ReliabilityInputs rin;
  rin.nodes = r.nodes;
  rin.failures_per_node_day = o.e2e.failures_per_node_day;
  rin.init_time_s = o.e2e.init_time_s;
  rin.steps = o.e2e.steps;
  if (o.objective == Objective::E2E) {
    r.checkpoint_save_s = checkpoint_save_time_s(checkpoint_bytes(base), o.e2e.storage_GBps * 1e9);
    rin.save_time_s = r.checkpoint_save_s;
    if (failure_rate_per_s(rin) * mean_time_to_repair(rin.recovery) >= 1) {
      throw InputError("--failure-rate x nodes: failures arrive faster than repairs finish; no run completes");
    }
  }
  // Fills the objective (and e2e/cost fields) from r.step_time_s.
  auto score = [&](RankedPlan& rp) {
    rp.objective_s = rp.step_time_s;
    if (o.objective == Objective::E2E) {
      ReliabilityInputs in = rin;
      in.step_time_s = rp.step_time_s;
      rp.checkpoint_interval = optimal_interval(in);
      if (failure_load(in, rp.checkpoint_interval) < 1) {
        rp.e2e_time_s = e2e_time(in, rp.checkpoint_interval).total_s;
        rp.ettr = ettr(in, rp.checkpoint_interval);
      } else {
        rp.e2e_time_s = std::numeric_limits<double>::infinity();
      }
      rp.objective_s = rp.e2e_time_s;
    }
    if (o.price_per_gpu_hour > 0) {
      const double seconds = o.objective == Objective::E2E ? rp.e2e_time_s : rp.step_time_s;
      rp.cost_usd = seconds / 3600.0 * n * o.price_per_gpu_hour;
    }
  };

  const double margin = std::clamp(o.memory_margin, 0.0, 0.99);
  const double safe_bytes = static_cast<double>(r.capacity_bytes) * (1.0 - margin);
  auto at_risk = [&](int64_t peak) { return static_cast<double>(peak) > safe_bytes; };
  // Plans below the margin first, then by the objective (stable: equal keys keep walk order).
  auto better = [](const RankedPlan& a, const RankedPlan& b) {
    if (a.memory_at_risk != b.memory_at_risk) return !a.memory_at_risk;
    return a.objective_s < b.objective_s;
  };
  std::vector<RankedPlan> fitting;  // estimated, fits, in walk order
  for (int64_t i = 0; i < count; ++i) {
    const report::MemoryFit fit = est[i].memory_fit(r.capacity_bytes);
    if (fit == report::MemoryFit::Over) {
      ++r.removed[static_cast<int>(Rule::Memory)];
      r.static_oom += est[i].static_oom ? 1 : 0;
      continue;
    }
    RankedPlan rp;
    rp.plan = space.plans[i];
    rp.estimate = est[i];
    rp.step_time_s = est[i].step_time_s;
    rp.tflops_per_gpu = est[i].tflops_per_gpu;
    rp.peak_memory_bytes = est[i].peak_memory_bytes;
    rp.memory_fit = fit;
    rp.memory_at_risk = at_risk(rp.peak_memory_bytes);
    r.at_risk += rp.memory_at_risk ? 1 : 0;
    r.tight += fit == report::MemoryFit::Tight ? 1 : 0;
    rp.stages = est[i].stages;
    score(rp);
    fitting.push_back(rp);
  }
  r.fits = static_cast<int64_t>(fitting.size());
  // Stable: equal keys keep walk order, so the ranking is a function of the input alone.
  std::stable_sort(fitting.begin(), fitting.end(), better);

  // Engine runs on the best estimates; a plan the engine finds over capacity is dropped and the next one runs.
  std::vector<RankedPlan> timed;
  size_t next = 0;
  std::atomic<int64_t> engine_runs{0};
  const size_t want = static_cast<size_t>(std::max(0, o.simulate));
  while (timed.size() < want && next < fitting.size()) {
    const size_t batch = std::min(want - timed.size(), fitting.size() - next);
    const std::vector<RankedPlan> runs = distributed<RankedPlan>(
        static_cast<int64_t>(batch), threads, dist, [&](int64_t k, int) {
          RankedPlan rp = fitting[next + static_cast<size_t>(k)];
          spec::JobSpec job = job_for(base, rp.plan, n, o.space.global_batch);
          spec::validate(cat.gpus, job);
          const sim::Simulation s = sim::run_simulation(cat, job, {0});
          if (o.progress) o.progress("simulating the best plans", ++engine_runs, static_cast<int64_t>(want));
          take_engine_timing(rp, report::summarize(s, 0));
          rp.memory_at_risk = at_risk(rp.peak_memory_bytes);
          score(rp);
          return rp;
        });
    for (const RankedPlan& rp : runs) {
      ++r.simulated;
      if (rp.memory_fit == report::MemoryFit::Over) {
        ++r.engine_oom;
        continue;
      }
      timed.push_back(rp);
    }
    next += batch;
  }
  std::stable_sort(timed.begin(), timed.end(), better);
  for (const RankedPlan& rp : timed) {
    if (static_cast<int>(r.plans.size()) < o.top) r.plans.push_back(rp);
  }
  for (size_t i = next; i < fitting.size() && static_cast<int>(r.plans.size()) < o.top; ++i) r.plans.push_back(fitting[i]);
  // An engine-timed plan the engine found at risk goes after the safe estimates too (engine rows stay first within
  // each class).
  std::stable_sort(r.plans.begin(), r.plans.end(),
                   [](const RankedPlan& a, const RankedPlan& b) { return !a.memory_at_risk && b.memory_at_risk; });
  r.tie_tolerance = std::clamp(o.tie_tolerance, 0.0, 0.5);
  group_ties(r.plans, r.tie_tolerance, r.capacity_bytes);

  // The job as written, timed as the best plans are (issue 46 item 3).
  const Baseline written = time_job_as_written(cat, base, n, o.space.global_batch, o.simulate > 0, *compute, *comms[0]);
  r.baseline_note = written.note;
  if (written.plan) {
    RankedPlan b = *written.plan;
    b.memory_at_risk = at_risk(b.peak_memory_bytes);
    score(b);
    r.baseline = b;
  }

  // Notes: every rule and what it removed, what is not searched, how the rows were timed.
  auto& notes = r.notes;
  notes.push_back(count_text(r.enumerated) + " plans enumerated (TP x CP x PP x EP x micro-batch x VP x recompute x " +
                  "layout variants x " + std::to_string(o.space.optimizer_variants.size()) + " optimizer variants), " +
                  count_text(count) +
                  " estimated, " + count_text(r.fits) + " fit in memory");
  for (int k = 0; k < kNumRules; ++k) {
    const Rule rule = static_cast<Rule>(k);
    std::string line = std::string("rule ") + rule_name(rule) + ": " + rule_explanation(rule) + " -- removed " +
                       count_text(r.removed[k]);
    if (rule == Rule::Memory && r.static_oom > 0) {
      line += " (" + count_text(r.static_oom) + " of them on their static memory alone, without a probe)";
    }
    if (rule == Rule::Memory && r.engine_oom > 0) {
      line += " (+" + std::to_string(r.engine_oom) + " the engine found over capacity after the estimate fit)";
    }
    notes.push_back(line);
  }
  {
    char buf[512];
    std::snprintf(buf, sizeof buf, "memory margin %.0f %%: %lld fitting plan(s) peak above %.2f GiB and are ranked after "
                  "the others as at risk (what the memory model does not count: NCCL's buffers beyond its "
                  "per-communicator constant, allocator behaviour other than the measured reserve; --memory-margin 0 "
                  "ranks by the objective alone), %lld of them tight (their reserved peak above the GPU's memory)",
                  100 * margin, static_cast<long long>(r.at_risk), safe_bytes / (1 << 30),
                  static_cast<long long>(r.tight));
    notes.push_back(buf);
  }
  {
    char buf[512];
    if (r.tie_tolerance > 0) {
      std::snprintf(buf, sizeof buf, "ties: a plan within %.1f %% of its group's first (the model's plan-to-plan "
                    "error: "
                    "the median difference between the errors of two layouts of one job over the development runs) "
                    "joins its group, ordered by ", 100 * r.tie_tolerance);
      notes.push_back(buf + tie_rule_text() + "; --tie-tolerance 0 ranks by the objective alone");
    } else {
      notes.push_back("ties: not grouped (--tie-tolerance 0): ranked by the objective alone");
    }
  }
  if (std::any_of(r.plans.begin(), r.plans.end(), [](const RankedPlan& p) { return p.host_bound_step_time_s > 0; })) {
    notes.push_back("host-bound up to X s: an engine-timed MoE plan whose layers give the GPU less work per forward than "
                    "an eager Megatron-Core MoE layer needs of the host; its step is timed with the host issue model at "
                    "the shipped host speed, X with the measuring machine's slower host (the upper end of its interval; "
                    "CUDA graphs or more tokens per rank remove the risk; docs/COST-MODELS.md, \"Host issue model\")");
  }
  const FrameworkSpace fs = framework_space(o.space.framework);
  notes.push_back(std::string("framework ") + spec::name_of(o.space.framework) + ", its plans only: " + fs.summary +
                  " (plan --framework searches another's)");
  if (!o.space.constraints.user.empty()) {
    notes.push_back("constraints (--fix / --allow / --exclude): " + o.space.constraints.user.describe());
  }
  if (o.space.framework != spec::Framework::MegatronCore) {
    notes.push_back("layout variants: none beyond the framework's (no Transformer Engine userbuffers, CP as the "
                    "framework runs it)");
  } else if (o.space.search_layouts) {
    notes.push_back("layout variants: TP communication overlap off/on (tpo) when TP > 1, the context-parallel "
                    "communication ring / all-gather / all-to-all / all-to-all inside a node with a ring across (cp:ring, "
                    "cp:ag, cp:a2a, cp:a2a+p2p) when CP > 1, expert tensor "
                    "parallel TP or 1 (etp1) for an MoE model when TP > 1, the combined 1F1B EP overlap off/on "
                    "(ep1f1b) for an MoE model");
  } else {
    notes.push_back("layout variants not searched (--keep-layout): every plan keeps the job's tp_comm_overlap, "
                    "cp_comm_type, expert_tensor and overlap_moe_expert_parallel_comm");
  }
  if (o.space.fp8_recipes.empty() && base.training.precision == spec::Precision::Fp8 &&
      o.space.framework == spec::Framework::MegatronCore) {
    notes.push_back(std::string("fp8 recipe: the job's own (") + spec::name_of(base.training.fp8_recipe) +
                    "); --fp8-recipes all searches them too (under this model delayed and blockwise cost the same, "
                    "current scaling one more read per cast, mxfp8 1/32 more fp8-copy memory: a recipe is chosen for "
                    "convergence, so the planner does not change it unasked)");
  } else if (!o.space.fp8_recipes.empty()) {
    std::string names;
    for (spec::Fp8Recipe r : o.space.fp8_recipes) names += (names.empty() ? "" : ", ") + std::string(spec::name_of(r));
    notes.push_back("fp8 recipes searched (--fp8-recipes): " + names + " (layout column fp8:<recipe>)");
  }
  // What the engine runs would print (issue 15 item 8): a learned overlap model that does not know the GPU falls back
  // to the coefficients for the engine-timed rows.
  if (base.simulation.overlap_model != spec::OverlapModel::None) {
    std::string fallback;
    sim::make_overlap_model(cat, base, &fallback);
    if (!fallback.empty()) notes.push_back("engine-timed rows: " + fallback);
  }
  if (base.model.moe) {
    notes.push_back("ep1f1b plans (Megatron-Core's combined 1F1B EP overlap, with delay_wgrad_compute) exist only where "
                    "Megatron-Core allows it (EP > 1, no full recompute, interleaving when PP > 1: the rest fall to "
                    "megatron-checks); the analytic estimate charges their steady-state pairs the EP time a replayed "
                    "pair leaves exposed, not the later sends of a combined step under pipelining (engine-timed rows "
                    "have both)");
  }
  if (o.space.framework == spec::Framework::MegatronCore) {
    notes.push_back("not searched: attention_backend, the MoE token dispatcher, "
                    "recompute_modules, CPU optimizer offload, activation offload (the job's own settings are kept: "
                    "with optimizer_offload only distributed-optimizer plans, with activation_offload_layers only "
                    "pipeline 1 without recompute, as Megatron-LM requires)");
  } else {
    notes.push_back(std::string("not searched: ") +
                    (o.space.framework == spec::Framework::Torchtitan ? "compile, the fp8 recipe"
                                                                      : "reduce_bucket_size, zero3_hook_us") +
                    ", the attention kernels (the job's own settings are kept)");
  }
  notes.push_back((n == 1 ? std::string("every plan uses the 1 GPU") : "every plan uses all " + std::to_string(n) + " GPUs") +
                  " (eq. 42 allows fewer; not searched); sequence "
                  "parallelism is on whenever TP > 1; VP > 1 uses interleaved 1F1B with overlapped p2p");
  if (o.space.framework == spec::Framework::MegatronCore) {
    notes.push_back("optimizer variants: plain (overlap_grad_reduce off/on), distributed optimizer = ZeRO-1 "
                    "(overlap_grad_reduce and overlap_param_gather off/on), ZeRO-2 (gradients reduce-scattered every "
                    "micro-batch; overlap_param_gather off/on), ZeRO-3 (parameters gathered per layer, prefetched one "
                    "layer ahead); ZeRO-2/3 only where --allow zero_stage names them");
  }
  const int64_t engine_rows = static_cast<int64_t>(std::min<size_t>(timed.size(), static_cast<size_t>(o.top)));
  notes.push_back("the first " + std::to_string(engine_rows) + " rows are timed by the engine (the " +
                  std::to_string(r.simulated) + " best estimates were simulated); the rest are analytic estimates");
  if (!timed.empty()) {
    double worst = 0;
    for (const RankedPlan& rp : timed) worst = std::max(worst, std::fabs(rp.estimate.step_time_s / rp.step_time_s - 1));
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << "analytic step time vs engine on the simulated plans: largest difference " << 100 * worst << " %";
    notes.push_back(s.str());
  }
  if (o.objective == Objective::E2E) {
    std::ostringstream s;
    s << "objective e2e (MoFa eq. 43): " << report::counted(o.e2e.steps, "step", "steps") << ", "
      << report::counted(r.nodes, "node", "nodes") << ", "
      << o.e2e.failures_per_node_day << " failures per node-day, checkpoint save " << r.checkpoint_save_s
      << " s at " << o.e2e.storage_GBps << " GB/s; interval per eq. 44 with the up/down rounding rule";
    notes.push_back(s.str());
  }
  if (r.plans.empty()) {
    notes.push_back("no feasible plan: every candidate broke a rule above; when the memory rule removed them, more "
                    "GPUs (or GPUs with more memory) are the remedy: recompute, PP, CP and the distributed optimizer "
                    "are already searched");
  }
  return r;
}

}  // namespace stepsim::plan

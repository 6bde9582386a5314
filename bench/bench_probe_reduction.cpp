// How far the planner's reduced MoE probe is from the probe of every layer (issue 46 item 4), on the plans a real
// search estimates. For each job every plan of `stepsim plan`'s default search is enumerated and grouped by its probe
// key; each key's probe is built both ways (probe_layer_costs with reduce true and false) and each of its plans
// estimated with both (estimate_plan). Two rows per job: the probes (the sum over layers of the forward, backward
// and combined-pair costs; the working memory) and the plans (the estimated step time; the peak memory; the plans
// that fit by the whole probe's estimate and not by the reduced one's, or the other way round). Not a timing
// benchmark (about a minute per job); it prints a table. BENCH_VERBOSE=1 lists the plans whose step moves by more
// than 3 %.
// Run: ./build/bench_probe_reduction [ep1f1b|all]   (default ep1f1b: only the plans under the combined 1F1B EP
// overlap) on DeepSeek-V3 (examples/deepseek-v3-2048.yaml) and Mixtral-8x22B (the mixtral example with the overrides
// of bench/run-moe-plan), both on 512 GPUs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/plan/plan_estimate.hpp"
#include "stepsim/plan/plan_space.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"

namespace {

using namespace stepsim;

struct Case {
  const char* name;
  const char* example;
  std::vector<std::string> overrides;
  int64_t global_batch;
};

double layer_sum(const plan::LayerCosts& c) {
  double s = 0;
  for (size_t l = 0; l < c.fwd.size(); ++l) {
    s += c.fwd[l].total() + c.bwd[l].total();
    if (l < c.paired_ep_s.size()) s += c.paired_ep_s[l] + c.paired_tp_s[l] + c.paired_cp_s[l] + c.paired_host_s[l];
  }
  return s;
}

struct Tally {
  std::vector<double> errors;  // (reduced - whole) / whole
  int memory_differs = 0;      // plans whose estimated peak memory differs
  int fits_lost = 0;           // plans that fit by the whole probe's estimate and not by the reduced one's
  int fits_gained = 0;         // the other way round
  double max_memory_gap = 0;   // bytes
};

void print_row(const char* name, const char* what, const Tally& t) {
  std::vector<double> abs_errors;
  for (double e : t.errors) abs_errors.push_back(std::fabs(e));
  const auto above = [&](double x) {
    return static_cast<long>(std::count_if(abs_errors.begin(), abs_errors.end(), [&](double e) { return e > x; }));
  };
  const auto by_size = [](double a, double b) { return std::fabs(a) < std::fabs(b); };
  const double worst = t.errors.empty() ? 0 : *std::max_element(t.errors.begin(), t.errors.end(), by_size);
  std::printf("%-15s %-6s %8zu %8ld %7ld %7ld %+8.2f%% %8d %9.1f MiB %5d/%d\n", name, what, t.errors.size(),
              above(1e-9), above(0.01), above(0.03), 100 * worst, t.memory_differs, t.max_memory_gap / (1 << 20),
              t.fits_lost, t.fits_gained);
}

void run(const Case& c, bool ep_only) {
  const catalog::Catalog& cat = catalog::shipped();
  const std::string path = std::string(STEPSIM_SOURCE_DIR) + "/examples/" + c.example;
  spec::JobSpec base = spec::load_job_file(cat.gpus, path, c.overrides);
  plan::SpaceOptions so;
  so.gpus = 512;
  so.global_batch = c.global_batch > 0 ? c.global_batch : base.training.global_batch_size;
  const plan::PlanSpace space = plan::enumerate_plans(cat.gpus, base, so);
  std::map<plan::ProbeKey, std::vector<const plan::Plan*>> plans_of;
  for (const plan::Plan& p : space.plans)
    if (!ep_only || p.ep_overlap) plans_of[plan::probe_key(p)].push_back(&p);
  spec::JobSpec probe_base = base;
  spec::set_num_gpus(probe_base.cluster, so.gpus);
  const auto compute = sim::make_compute_model(cat, probe_base);
  const auto comm = sim::make_collective_model(cat, probe_base);
  const double capacity = hw::effective_gpu(cat.gpus, base.cluster).memory_bytes;
  Tally probes, estimates;
  for (const auto& [k, plans] : plans_of) {
    const plan::LayerCosts whole = plan::probe_layer_costs(cat, probe_base, k, *compute, *comm, false);
    const plan::LayerCosts reduced = plan::probe_layer_costs(cat, probe_base, k, *compute, *comm, true);
    const double w = layer_sum(whole);
    probes.errors.push_back(w > 0 ? (layer_sum(reduced) - w) / w : 0.0);
    const double gap = std::fabs(reduced.transient_bytes - whole.transient_bytes);
    probes.memory_differs += gap > 0 || whole.stored_bytes != reduced.stored_bytes;
    probes.max_memory_gap = std::max(probes.max_memory_gap, gap);
    for (const plan::Plan* p : plans) {
      const spec::JobSpec job = plan::job_for(base, *p, so.gpus, so.global_batch);
      const plan::Estimate a = plan::estimate_plan(job, whole, *compute, *comm);
      const plan::Estimate b = plan::estimate_plan(job, reduced, *compute, *comm);
      estimates.errors.push_back((b.step_time_s - a.step_time_s) / a.step_time_s);
      const double mem_gap = std::fabs(static_cast<double>(b.peak_memory_bytes - a.peak_memory_bytes));
      estimates.memory_differs += mem_gap > 0;
      estimates.max_memory_gap = std::max(estimates.max_memory_gap, mem_gap);
      estimates.fits_lost += a.peak_memory_bytes <= capacity && b.peak_memory_bytes > capacity;
      estimates.fits_gained += a.peak_memory_bytes > capacity && b.peak_memory_bytes <= capacity;
      if (std::getenv("BENCH_VERBOSE") && std::fabs(estimates.errors.back()) > 0.03) {
        std::printf("  %s: step %.4f s whole, %.4f s reduced\n", plan::describe(*p).c_str(), a.step_time_s,
                    b.step_time_s);
      }
    }
  }
  print_row(c.name, "probes", probes);
  print_row(c.name, "plans", estimates);
}

}  // namespace

int main(int argc, char** argv) {
  const bool ep_only = argc < 2 || std::string(argv[1]) != "all";
  const std::vector<Case> cases = {
      {"DeepSeek-V3", "deepseek-v3-2048.yaml", {}, 0},
      {"Mixtral-8x22B", "mixtral-8x7b-ep8.yaml",
       {"model.num_layers=56", "model.hidden_size=6144", "model.num_attention_heads=48", "model.ffn_hidden_size=16384",
        "model.moe.ffn_hidden_size=16384", "model.vocab_size=32768", "parallelism.pipeline=1"},
       1024},
  };
  std::printf("%s; error = (reduced - whole) / whole: probes of their per-layer sum, plans of their step time\n",
              ep_only ? "ep1f1b plans and their probes" : "every plan and probe");
  std::printf("%-15s %-6s %8s %8s %7s %7s %9s %8s %13s %6s\n", "job", "of", "count", "differ", ">1%", ">3%", "worst",
              "memory", "largest gap", "fit lost/gained");
  for (const Case& c : cases) run(c, ep_only);
  return 0;
}

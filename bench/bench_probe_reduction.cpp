// How far the planner's reduced MoE probe is from the probe of every layer (issue 46 item 4), on the probes a real
// search builds. For each job: every plan of `stepsim plan`'s default search is enumerated, its probe keys collected,
// and each key's probe built both ways (probe_layer_costs with reduce true and false). Per key the difference is taken
// on the sum over layers of the forward, backward and combined-pair costs (what estimate_plan adds up) and on the
// working memory (keys whose stored activations or working memory differ, and the largest working-memory gap). Not a
// timing benchmark (the whole probes take about a minute); it prints a table. BENCH_VERBOSE=1 lists the keys whose
// memory differs.
// Run: ./build/bench_probe_reduction [ep1f1b|all]   (default ep1f1b: only the keys under the combined 1F1B EP overlap)
// on DeepSeek-V3 (examples/deepseek-v3-2048.yaml) and Mixtral-8x22B (the mixtral example with the overrides
// docs/PERFORMANCE.md times), both on 512 GPUs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/plan/plan_estimate.hpp"
#include "stepsim/plan/plan_space.hpp"

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

void run(const Case& c, bool ep_only) {
  const catalog::Catalog& cat = catalog::shipped();
  const std::string path = std::string(STEPSIM_SOURCE_DIR) + "/examples/" + c.example;
  spec::JobSpec base = spec::load_job_file(cat.gpus, path, c.overrides);
  plan::SpaceOptions so;
  so.gpus = 512;
  so.global_batch = c.global_batch > 0 ? c.global_batch : base.training.global_batch_size;
  const plan::PlanSpace space = plan::enumerate_plans(cat.gpus, base, so);
  std::set<plan::ProbeKey> keys;
  for (const plan::Plan& p : space.plans)
    if (!ep_only || p.ep_overlap) keys.insert(plan::probe_key(p));
  spec::set_num_gpus(base.cluster, so.gpus);
  const auto compute = sim::make_compute_model(cat, base);
  const auto comm = sim::make_collective_model(cat, base);
  std::vector<double> errors;
  int memory_differs = 0;
  double max_memory_gap = 0;
  for (const plan::ProbeKey& k : keys) {
    const plan::LayerCosts whole = plan::probe_layer_costs(cat, base, k, *compute, *comm, false);
    const plan::LayerCosts reduced = plan::probe_layer_costs(cat, base, k, *compute, *comm, true);
    const double w = layer_sum(whole);
    errors.push_back(w > 0 ? (layer_sum(reduced) - w) / w : 0.0);
    const bool memory = whole.transient_bytes != reduced.transient_bytes || whole.stored_bytes != reduced.stored_bytes;
    memory_differs += memory;
    if (memory && std::getenv("BENCH_VERBOSE")) {
      std::printf("  TP %d CP %d EP %d mbs %d: working memory %.0f B whole, %.0f B reduced\n", k.tensor, k.context,
                  k.expert, k.micro_batch_size, whole.transient_bytes, reduced.transient_bytes);
    }
    max_memory_gap = std::max(max_memory_gap, std::fabs(reduced.transient_bytes - whole.transient_bytes));
  }
  std::vector<double> abs_errors;
  for (double e : errors) abs_errors.push_back(std::fabs(e));
  std::sort(abs_errors.begin(), abs_errors.end());
  const auto above = [&](double t) {
    return static_cast<long>(std::count_if(abs_errors.begin(), abs_errors.end(), [&](double e) { return e > t; }));
  };
  const auto by_size = [](double a, double b) { return std::fabs(a) < std::fabs(b); };
  const double worst = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end(), by_size);
  std::printf("%-16s %7zu %12ld %8ld %8ld %+9.2f%% %9d %9.1f MiB\n", c.name, errors.size(), above(1e-9), above(0.01),
              above(0.03), 100 * worst, memory_differs, max_memory_gap / (1 << 20));
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
  std::printf("probe keys: %s; error = (reduced - whole) / whole of the per-layer sum\n",
              ep_only ? "ep1f1b only" : "all");
  std::printf("%-16s %7s %12s %8s %8s %10s %9s %13s\n", "job", "keys", "differ>1e-9", ">1%", ">3%", "worst",
              "memory", "largest gap");
  for (const Case& c : cases) run(c, ep_only);
  return 0;
}

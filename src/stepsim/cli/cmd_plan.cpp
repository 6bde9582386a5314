// stepsim plan: ranks parallel plans of a job for a GPU count and global batch (analytic estimate of every
// candidate, engine runs of the best), or prints the (TP, PP) memory-feasibility map. Under MPI the candidates
// are split across processes and gathered, with output identical to one process (docs/PLANNER.md).
#include "stepsim/cli/cmd_plan.hpp"
#include "stepsim/io/utf8.hpp"

#include <iostream>
#include <memory>

#include "stepsim/api/plan.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/report/progress_bar.hpp"
#include "stepsim/io/input_error.hpp"

#ifdef STEPSIM_MPI
#include <mpi.h>
#endif

namespace stepsim::cli {

namespace {

struct PlanOptions {
  api::PlanOptions api;
  std::string json_path, csv_path, report_path;
  bool memory_map = false;
  int64_t steps = 0;
  double tokens = 0;
  double failure_rate = 0, storage_GBps = 0, init_time_s = 0;
  CLI::Option *o_steps = nullptr, *o_failure = nullptr, *o_storage = nullptr, *o_init = nullptr, *o_tokens = nullptr;
};

#ifdef STEPSIM_MPI
// MPI is started only when the process runs under mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE set), so a plain
// `stepsim plan` never needs an MPI runtime.
struct MpiSession {
  bool active = false;
  int rank = 0, size = 1;
  MpiSession() {
    if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMI_SIZE")) return;
    MPI_Init(nullptr, nullptr);
    active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  ~MpiSession() {
    if (active) MPI_Finalize();
  }
  api::Distribution distribution() const {
    api::Distribution d{rank, size, nullptr};
    if (size > 1) {
      d.allgather = [n = size](const std::vector<char>& mine) {
        int len = static_cast<int>(mine.size());
        std::vector<int> lens(n), offs(n, 0);
        MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
        for (int i = 1; i < n; ++i) offs[i] = offs[i - 1] + lens[i - 1];
        std::vector<char> all(static_cast<size_t>(offs[n - 1] + lens[n - 1]));
        MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, MPI_COMM_WORLD);
        std::vector<std::vector<char>> parts(n);
        for (int i = 0; i < n; ++i) parts[i].assign(all.begin() + offs[i], all.begin() + offs[i] + lens[i]);
        return parts;
      };
    }
    return d;
  }
};
#endif

int run_plan(PlanOptions& o) {
  api::PlanOptions& a = o.api;
  if (o.memory_map) {
    if (a.objective != "step" || a.price > 0 || !o.json_path.empty() || !o.report_path.empty()) {
      throw InputError("--memory-map: prints the (TP, PP) map only; it takes --csv, not --objective/--price/--json/--report "
                       "(plan --report draws the map beside the ranked plans)");
    }
    const api::MemoryMapOutput m = api::memory_map(api::plan_job_input(a), a.gpus, a.global_batch);
    std::cout << api::memory_map_text(m);
    if (!o.csv_path.empty()) write_output_file(o.csv_path, m.csv, "memory map CSV");
    return 0;
  }
  if (!o.csv_path.empty()) throw InputError("--csv: only with --memory-map");
  // The e2e options as given (absent ones keep the library's defaults; given with --objective step they are refused).
  if (o.o_steps->count() > 0) a.steps = o.steps;
  if (o.o_tokens->count() > 0) a.tokens = o.tokens;
  if (o.o_failure->count() > 0) a.failure_rate = o.failure_rate;
  if (o.o_storage->count() > 0) a.storage_GBps = o.storage_GBps;
  if (o.o_init->count() > 0) a.init_time_s = o.init_time_s;

  api::Distribution dist;
#ifdef STEPSIM_MPI
  MpiSession mpi;
  dist = mpi.distribution();
#endif
  report::ProgressBar bar(stderr,
                          dist.rank == 0 ? report::ProgressBar::mode_for(false) : report::ProgressBar::Mode::Off);
  a.progress = bar.callback();
  const api::PlanOutput out = api::plan(a, dist);
  bar.clear();
  if (dist.rank != 0) return 0;  // every process holds the same result; one prints it
  std::cout << api::plan_text(out);
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(out.json, 2) + "\n", "plan JSON");
  if (!o.report_path.empty()) write_output_file(o.report_path, api::plan_report_html(a, out), "--report");
  return 0;
}

}  // namespace

Action add_plan(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  api::PlanOptions& a = o->api;
  CLI::App* cmd = app.add_subcommand("plan", "search parallel plans (TP/PP/DP/CP/EP, micro-batch, recompute, optimizer)");
  add_job_options(*cmd, a.job);
  cmd->add_option("--gpus", a.gpus, "GPU count to plan for (default: the job's cluster.num_gpus)")
      ->check(whole_number_at_least(1));
  cmd->add_option("--global-batch", a.global_batch, "global batch in sequences (default: the job's)")
      ->check(whole_number_at_least(1));
  cmd->add_option("--top", a.top, "plans to report (default 10)");
  cmd->add_option("--simulate", a.simulate, "best estimates re-timed by the engine (default 2)");
  cmd->add_option("--threads", a.threads, "worker threads (default 0 = all cores)")
      ->check(whole_number_at_least(0));
  cmd->add_option("--memory-margin", a.memory_margin,
                  "fraction of GPU memory kept free: plans above capacity x (1 - margin) rank after the others as at "
                  "risk (default 0.05; 0 = rank by the objective alone)")
      ->check(CLI::Range(0.0, 0.5));
  cmd->add_option("--tie-tolerance", a.tie_tolerance,
                  "plans within this fraction of their tie group's first are ordered by the simpler layout, then "
                  "memory headroom (default 0.065, the model's plan-to-plan error; 0 = rank by the objective alone)")
      ->check(CLI::Range(0.0, 0.5));
  cmd->add_option("--json", o->json_path, "write the ranked plans as JSON here")->check(output_file());
  cmd->add_option("--report", o->report_path, "write an HTML report (ranked plans, TP x PP memory map) here")
      ->check(output_file());
  cmd->add_option("--objective", a.objective, "step (step time) or e2e (end-to-end time, MoFa eq. 43)");
  o->o_steps = cmd->add_option("--steps", o->steps, "e2e: training steps of the run");
  o->o_tokens = cmd->add_option("--tokens", o->tokens,
                                "e2e: a token budget instead of --steps (steps = tokens / (global batch x sequence))");
  o->o_failure = cmd->add_option("--failure-rate", o->failure_rate, "e2e: failures per node-day (default 0.005)");
  o->o_storage = cmd->add_option("--storage-GBps", o->storage_GBps, "e2e: checkpoint write bandwidth, GB/s (default 100)");
  o->o_init = cmd->add_option("--init-time", o->init_time_s, "e2e: first start-up, seconds (default 0)");
  cmd->add_option("--price", a.price, "USD per GPU-hour: adds the cost of a step (or of the run with e2e)");
  cmd->add_flag("--keep-layout", a.keep_layout,
                "do not search TP overlap, the CP communication, expert TP and EP overlap: every plan keeps the job's own");
  cmd->add_option("--fp8-recipes", a.fp8_recipes,
                  "fp8 jobs: also search these Transformer Engine recipes (delayed,current,blockwise,mxfp8 or all; "
                  "default: the job's own)");
  cmd->add_option("--framework", a.framework,
                  "search the plans this framework runs: megatron, torchtitan or deepspeed (default: the job's "
                  "training.framework; docs/PLANNER.md)");
  cmd->add_option("--max-tp-per-nvlink-domain", a.max_tp_per_nvlink_domain,
                  "constrain the search: tensor parallelism at most N inside an NVLink domain (the divisors of "
                  "cluster.gpus_per_node up to N)")
      ->check(whole_number_at_least(1));
  cmd->add_option("--fix", a.fix, "constrain the search: KEY=VALUE, e.g. --fix tensor=8 (repeatable; keys in "
                  "docs/PLANNER.md)");
  cmd->add_option("--allow", a.allow, "constrain the search: KEY=V1,V2, e.g. --allow zero_stage=1,3 (repeatable)");
  cmd->add_option("--exclude", a.exclude, "constrain the search: KEY=V1,V2 or a switch, e.g. --exclude "
                  "tp_comm_overlap (repeatable)");
  cmd->add_flag("--memory-map", o->memory_map, "print the (TP, PP) memory-feasibility map instead of searching");
  cmd->add_option("--csv", o->csv_path, "with --memory-map: write the map as CSV here")->check(output_file());
  return [cmd, o]() { return cmd->parsed() ? run_plan(*o) : -1; };
}

}  // namespace stepsim::cli

// stepsim plan: ranks parallel plans of a job for a GPU count and global batch (analytic estimate of every
// candidate, engine runs of the best), or prints the (TP, PP) memory-feasibility map. Under MPI the candidates
// are split across processes and gathered, with output identical to one process (docs/PLANNER.md).
#include "stepsim/cli/cmd_plan.hpp"

#include <cmath>
#include <iostream>
#include <memory>

#include "stepsim/cli/load_job.hpp"
#include "stepsim/plan/memory_map.hpp"
#include "stepsim/plan/plan_report.hpp"
#include "stepsim/plan/planner.hpp"
#include "stepsim/spec/input_error.hpp"

#ifdef STEPSIM_MPI
#include <mpi.h>
#endif

namespace stepsim::cli {

namespace {

struct PlanOptions {
  JobOptions job;
  int gpus = 0, top = 10, simulate = 2, threads = 0;
  int64_t global_batch = 0, steps = 0;
  std::string objective = "step", json_path, csv_path;
  double failure_rate = plan::kDefaultFailuresPerNodeDay, storage_GBps = plan::kDefaultStorageGBps, init_time_s = 0, price = 0;
  bool memory_map = false;
  bool keep_layout = false;
  std::string fp8_recipes;
  double memory_margin = plan::kDefaultMemoryMargin;
  CLI::Option *o_steps = nullptr, *o_failure = nullptr, *o_storage = nullptr, *o_init = nullptr;
};

void check_finite(const std::string& flag, double v, double lo) {
  if (!std::isfinite(v) || v < lo) {
    throw InputError(flag + " " + std::to_string(v) + ": must be a finite number >= " + std::to_string(lo));
  }
}

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
  plan::Distribution distribution() const {
    plan::Distribution d{rank, size, nullptr};
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

int run_plan(const PlanOptions& o) {
  spec::JobSpec base = load_job(o.job);
  const int gpus = o.gpus > 0 ? o.gpus : base.cluster.num_gpus;
  const int64_t gbs = o.global_batch > 0 ? o.global_batch : base.training.global_batch_size;
  if (o.top < 1) throw InputError("--top " + std::to_string(o.top) + ": must be at least 1");
  if (o.simulate < 0) throw InputError("--simulate " + std::to_string(o.simulate) + ": must be >= 0");
  if (o.threads < 0) throw InputError("--threads " + std::to_string(o.threads) + ": must be >= 0 (0 = all cores)");
  check_finite("--price", o.price, 0);

  if (o.memory_map) {
    if (o.objective != "step" || o.price > 0 || !o.json_path.empty()) {
      throw InputError("--memory-map: prints the (TP, PP) map only; it takes --csv, not --objective/--price/--json");
    }
    const plan::MemoryMap m = plan::memory_map(base, gpus, gbs);
    std::cout << "stepsim plan --memory-map: " << base.model.name << " on " << gpus << " x " << base.cluster.gpu << "\n"
              << plan::memory_map_text(m);
    if (!o.csv_path.empty()) write_output_file(o.csv_path, plan::memory_map_csv(m), "memory map CSV");
    return 0;
  }
  if (!o.csv_path.empty()) throw InputError("--csv: only with --memory-map");

  plan::PlannerOptions po;
  po.space.gpus = gpus;
  po.space.global_batch = gbs;
  po.space.search_layouts = !o.keep_layout;
  if (!o.fp8_recipes.empty()) po.space.fp8_recipes = plan::parse_fp8_recipes(o.fp8_recipes, base);
  po.top = o.top;
  po.simulate = o.simulate;
  po.threads = o.threads;
  po.price_per_gpu_hour = o.price;
  po.memory_margin = o.memory_margin;
  if (o.objective == "e2e") {
    po.objective = plan::Objective::E2E;
    if (o.o_steps->count() == 0 || o.steps < 1) {
      throw InputError("--steps: required with --objective e2e (training steps of the run, >= 1)");
    }
    check_finite("--failure-rate", o.failure_rate, 0);
    check_finite("--storage-GBps", o.storage_GBps, 1e-9);
    check_finite("--init-time", o.init_time_s, 0);
    po.e2e = plan::E2EOptions{o.steps, o.failure_rate, o.storage_GBps, o.init_time_s};
  } else if (o.objective == "step") {
    for (const CLI::Option* opt : {o.o_steps, o.o_failure, o.o_storage, o.o_init}) {
      if (opt->count() > 0) throw InputError(opt->get_name() + ": only with --objective e2e");
    }
  } else {
    throw InputError("--objective " + o.objective + ": must be step or e2e");
  }

  plan::Distribution dist;
#ifdef STEPSIM_MPI
  MpiSession mpi;
  dist = mpi.distribution();
#endif
  const plan::PlanResult r = plan::run_planner(base, po, dist);
  if (dist.rank != 0) return 0;  // every process holds the same result; one prints it
  const plan::ReportContext ctx{base.model.name, base.cluster.gpu, gpus, gbs, po};
  std::cout << plan::plan_text(r, ctx);
  if (!o.json_path.empty()) write_output_file(o.json_path, plan::plan_json(r, ctx).dump(2) + "\n", "plan JSON");
  return 0;
}

}  // namespace

Action add_plan(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "search parallel plans (TP/PP/DP/CP/EP, micro-batch, recompute, optimizer)");
  add_job_options(*cmd, o->job);
  cmd->add_option("--gpus", o->gpus, "GPU count to plan for (default: the job's cluster.num_gpus)");
  cmd->add_option("--global-batch", o->global_batch, "global batch in sequences (default: the job's)");
  cmd->add_option("--top", o->top, "plans to report (default 10)");
  cmd->add_option("--simulate", o->simulate, "best estimates re-timed by the engine (default 2)");
  cmd->add_option("--threads", o->threads, "worker threads (default 0 = all cores)");
  cmd->add_option("--memory-margin", o->memory_margin,
                  "fraction of GPU memory kept free: plans above capacity x (1 - margin) rank after the others as at "
                  "risk (default 0.05; 0 = rank by the objective alone)")
      ->check(CLI::Range(0.0, 0.5));
  cmd->add_option("--json", o->json_path, "write the ranked plans as JSON here")->check(output_file());
  cmd->add_option("--objective", o->objective, "step (step time) or e2e (end-to-end time, MoFa eq. 43)");
  o->o_steps = cmd->add_option("--steps", o->steps, "e2e: training steps of the run");
  o->o_failure = cmd->add_option("--failure-rate", o->failure_rate, "e2e: failures per node-day (default 0.005)");
  o->o_storage = cmd->add_option("--storage-GBps", o->storage_GBps, "e2e: checkpoint write bandwidth, GB/s (default 100)");
  o->o_init = cmd->add_option("--init-time", o->init_time_s, "e2e: first start-up, seconds (default 0)");
  cmd->add_option("--price", o->price, "USD per GPU-hour: adds the cost of a step (or of the run with e2e)");
  cmd->add_flag("--keep-layout", o->keep_layout,
                "do not search TP overlap, the CP communication and expert TP: every plan keeps the job's own");
  cmd->add_option("--fp8-recipes", o->fp8_recipes,
                  "fp8 jobs: also search these Transformer Engine recipes (delayed,current,blockwise,mxfp8 or all; "
                  "default: the job's own)");
  cmd->add_flag("--memory-map", o->memory_map, "print the (TP, PP) memory-feasibility map instead of searching");
  cmd->add_option("--csv", o->csv_path, "with --memory-map: write the map as CSV here")->check(output_file());
  return [cmd, o]() { return cmd->parsed() ? run_plan(*o) : -1; };
}

}  // namespace stepsim::cli

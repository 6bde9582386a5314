#include "stepsim/plan/baseline.hpp"

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/input/job_loader.hpp"

namespace stepsim::plan {

void take_engine_timing(RankedPlan& rp, const report::Summary& sum) {
  rp.simulated = true;
  rp.step_time_s = sum.step_time_s;
  rp.tflops_per_gpu = sum.tflops_per_gpu;
  rp.peak_memory_bytes = sum.peak_bytes_max;
  rp.memory_fit = report::memory_fit(sum);
  rp.host_bound_step_time_s = sum.step_time_host_bound_s;
  const auto& b = sum.breakdown;
  rp.stages = StageTimes{b.compute_s, b.exposed_comm_s[report::kTp], b.exposed_comm_s[report::kCp],
                         b.exposed_comm_s[report::kEp], b.exposed_comm_s[report::kPp] + b.pipeline_bubble_s,
                         b.exposed_comm_s[report::kDp], b.optimizer_s, b.host_gap_s};
}

Plan plan_of_job(const spec::JobSpec& job) {
  const spec::ParallelismSpec& par = job.parallelism;
  const spec::TrainingSpec& tr = job.training;
  Plan p{par.tensor, par.pipeline, par.data, par.context, par.expert, tr.micro_batch_size, par.virtual_stages,
         tr.recompute};
  p.zero_stage = tr.zero_stage;
  p.distributed_optimizer = tr.distributed_optimizer;
  p.overlap_grad_reduce = tr.overlap_grad_reduce;
  p.overlap_param_gather = tr.overlap_param_gather;
  p.tp_comm_overlap = tr.tp_comm_overlap;
  p.cp_comm_type = par.cp_comm_type;
  if (par.cp_comm_type == spec::CpCommType::A2AP2P && !par.hierarchical_context_parallel_sizes.empty()) {
    p.cp_a2a = par.hierarchical_context_parallel_sizes[0];
  }
  p.expert_tensor = par.expert_tensor == par.tensor ? 0 : par.expert_tensor;
  p.ep_overlap = tr.overlap_moe_expert_parallel_comm;
  return p;
}

Baseline time_job_as_written(const catalog::Catalog& cat, const spec::JobSpec& base, int gpus, int64_t global_batch,
                             bool engine, const cost::ComputeModel& compute, const cost::CollectiveModel& comm) {
  Baseline out;
  const spec::ParallelismSpec& par = base.parallelism;
  const int64_t model_parallel = int64_t{par.tensor} * par.context * par.pipeline;
  if (gpus % model_parallel != 0) {
    out.note = "the job as written (TP x CP x PP = " + std::to_string(model_parallel) + ") does not divide " +
               std::to_string(gpus) + " GPUs";
    return out;
  }
  // The job itself where the GPUs and batch are its own; else its layout with the data degree and batch re-derived
  // (and the job's checks run again).
  spec::JobSpec job = base;
  Plan p = plan_of_job(base);
  if (gpus != base.cluster.num_gpus || global_batch != base.training.global_batch_size) {
    p.data = static_cast<int>(gpus / model_parallel);
    job = job_for(base, p, gpus, global_batch);
    try {
      spec::validate(cat.gpus, job);
    } catch (const InputError& e) {
      out.note = std::string("the job as written does not run on these GPUs and batch: ") + e.what();
      return out;
    }
  }
  RankedPlan rp;
  rp.plan = p;
  if (engine) {
    take_engine_timing(rp, report::summarize(sim::run_simulation(cat, job, {0}), 0));
    out.note = "timed by the engine";
  } else {
    spec::JobSpec pb = base;
    spec::set_num_gpus(pb.cluster, gpus);
    const Estimate e = estimate_plan(job, probe_layer_costs(cat, pb, probe_key(p), compute, comm), compute, comm);
    rp.estimate = e;
    rp.step_time_s = e.step_time_s;
    rp.tflops_per_gpu = e.tflops_per_gpu;
    rp.peak_memory_bytes = e.peak_memory_bytes;
    rp.memory_fit = e.memory_fit(static_cast<int64_t>(hw::effective_gpu(cat.gpus, job.cluster).memory_bytes));
    rp.stages = e.stages;
    out.note = "estimated (--simulate 0)";
  }
  out.plan = rp;
  return out;
}

}  // namespace stepsim::plan

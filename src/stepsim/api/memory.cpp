#include "stepsim/api/memory.hpp"

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::api {

MemoryOutput memory(const JobInput& job) {
  const catalog::Catalog& cat = catalog::shipped();
  const workload::Workload w = workload::build_megatron_workload(load_job(job));
  const hw::GpuSpec gpu = hw::effective_gpu(cat.gpus, w.job.cluster);
  return {report::memory_json(w, gpu), report::memory_text(w, gpu)};
}

}  // namespace stepsim::api

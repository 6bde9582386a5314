#include "stepsim/plan/memory_map.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/plan/plan_space.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::plan {

namespace {

// The rule of a validation message without the job-source prefix ("file: key k: rule" -> "key k: rule").
std::string rule_of(const std::string& msg, const std::string& source) {
  if (!source.empty() && msg.rfind(source + ": ", 0) == 0) return msg.substr(source.size() + 2);
  return msg;
}

}  // namespace

MemoryMap memory_map(const hw::GpuCatalog& catalog_gpus, const spec::JobSpec& base, int gpus, int64_t global_batch) {
  const int gpn = base.cluster.gpus_per_node;
  if (gpus < 1 || (gpus > gpn && gpus % gpn != 0)) {
    throw InputError("--gpus " + std::to_string(gpus) + ": must be a multiple of cluster.gpus_per_node " + std::to_string(gpn));
  }
  MemoryMap m;
  m.capacity_bytes = static_cast<int64_t>(hw::effective_gpu(catalog_gpus, base.cluster).memory_bytes);
  const auto& par = base.parallelism;
  const auto& tr = base.training;
  for (int t = 1; t <= std::min(gpus, gpn); ++t) {
    if (gpus % t == 0) m.tensors.push_back(t);
  }
  for (int p = 1; p <= std::min(gpus, base.model.num_layers); ++p) {
    if (gpus % p == 0) m.pipelines.push_back(p);
  }
  std::ostringstream s;
  s << "CP " << par.context << ", EP " << par.expert << ", micro-batch " << tr.micro_batch_size << ", global batch "
    << global_batch << ", recompute " << spec::name_of(tr.recompute)
    << (tr.zero_stage >= 2         ? ", ZeRO-" + std::to_string(tr.zero_stage)
        : tr.distributed_optimizer ? std::string(", distributed optimizer")
                                   : std::string())
    << ", VP 1";
  m.settings = s.str();
  for (int t : m.tensors) {
    for (int p : m.pipelines) {
      MapCell c;
      c.tensor = t;
      c.pipeline = p;
      const int64_t tcp = int64_t{t} * par.context * p;
      if (gpus % tcp != 0) {
        c.reason = "TP x CP x PP = " + std::to_string(tcp) + " does not divide " + std::to_string(gpus) + " GPUs";
        m.cells.push_back(c);
        continue;
      }
      c.data = static_cast<int>(gpus / tcp);
      Plan pl{t, p, c.data, par.context, par.expert, tr.micro_batch_size, 1, tr.recompute};
      pl.distributed_optimizer = tr.distributed_optimizer;
      pl.zero_stage = tr.zero_stage;
      pl.overlap_grad_reduce = tr.overlap_grad_reduce;
      pl.overlap_param_gather = tr.overlap_param_gather;
      spec::JobSpec job = job_for(base, pl, gpus, global_batch);
      bool layers_ok = true;
      chunk_layers(job.model.num_layers, p, layers_ok);
      try {
        if (!layers_ok) {
          throw InputError("PP " + std::to_string(p) + " divides neither the layers " +
                           std::to_string(job.model.num_layers) + " nor the layers + 2");
        }
        spec::validate(catalog_gpus, job);
        const workload::Workload w = workload::build_megatron_workload(job);
        int64_t allocated = 0;  // with the CUDA context and NCCL, over stages
        for (const workload::Program& prog : w.programs) {
          const int64_t peak = prog.static_memory.total() + prog.activation_peak;
          if (peak > c.peak_bytes) {
            c.peak_bytes = peak;
            c.peak_stage = prog.stage;
          }
          allocated = std::max(allocated, peak - prog.static_memory.reserved_extra());
        }
        c.valid = true;
        c.headroom_bytes = m.capacity_bytes - c.peak_bytes;
        c.fit = report::memory_fit(allocated, 0, c.peak_bytes, m.capacity_bytes);
      } catch (const InputError& e) {
        c.reason = rule_of(e.what(), job.source);
      }
      m.cells.push_back(c);
    }
  }
  return m;
}

std::string memory_map_text(const MemoryMap& m) {
  std::ostringstream o;
  o << "memory map (largest per-GPU peak over stages; capacity " << report::format_bytes(static_cast<double>(m.capacity_bytes))
    << "; " << m.settings << ")\n";
  o << "  cell: peak, then 'ok' with the headroom, 'tight' (its allocations fit, its reserved peak does not) or 'OOM' "
       "with the excess; '-' = not a valid plan (CSV says why)\n";
  char buf[64];
  o << "  TP \\ PP";
  for (int p : m.pipelines) {
    std::snprintf(buf, sizeof buf, " %22d", p);
    o << buf;
  }
  o << "\n";
  for (size_t r = 0; r < m.tensors.size(); ++r) {
    std::snprintf(buf, sizeof buf, "  %7d", m.tensors[r]);
    o << buf;
    for (size_t c = 0; c < m.pipelines.size(); ++c) {
      const MapCell& x = m.at(r, c);
      std::string cell = "-";
      if (x.valid) {
        std::snprintf(buf, sizeof buf, "%.1f GiB %s %.1f", static_cast<double>(x.peak_bytes) / (1 << 30),
                      x.fits() ? "ok" : x.tight() ? "tight" : "OOM",
                      std::abs(static_cast<double>(x.headroom_bytes)) / (1 << 30));
        cell = buf;
      }
      std::snprintf(buf, sizeof buf, " %22s", cell.c_str());
      o << buf;
    }
    o << "\n";
  }
  int fit = 0, tight = 0, oom = 0, invalid = 0;
  for (const MapCell& x : m.cells) (x.fits() ? fit : x.tight() ? tight : x.valid ? oom : invalid)++;
  o << "  " << fit << " fit, " << (tight > 0 ? std::to_string(tight) + " tight, " : "") << oom << " over capacity, "
    << invalid << " not valid (GiB = 2^30 bytes)\n";
  return o.str();
}

std::string memory_map_csv(const MemoryMap& m) {
  std::ostringstream o;
  o << "tensor,pipeline,data,status,peak_memory_bytes,capacity_bytes,headroom_bytes,reason\n";
  for (const MapCell& x : m.cells) {
    std::string reason = x.reason;
    for (char& ch : reason) {
      if (ch == '"') ch = '\'';
    }
    o << x.tensor << ',' << x.pipeline << ',' << x.data << ',' << x.status()
      << ',' << x.peak_bytes << ',' << m.capacity_bytes << ',' << (x.valid ? x.headroom_bytes : 0) << ",\"" << reason
      << "\"\n";
  }
  return o.str();
}

}  // namespace stepsim::plan

// libFuzzer target for a cluster file (`cluster: FILE` in a job, `--cluster` of simulate and comm): the text is read
// through load_cluster as `stepsim comm --cluster FILE` reads it (16 GPUs, 8 per node), and a cluster that reads is
// built into the flow model's graph and the analytic models' inter-node rate. InputError is the expected outcome for
// bad input; any other exception, a crash, UB, a hang, huge memory, or a graph or rate that breaks the invariants
// below is a bug.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_support.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/cluster_rates.hpp"
#include "stepsim/topology/topology.hpp"

namespace {

using fuzz_support::require;

// The loader reads a path (its errors name it); one file per fuzzing process.
const std::string& cluster_path() {
  static const std::string path = fuzz_support::scratch_path("cluster", ".yaml");
  return path;
}

void check_graph(const stepsim::hw::Topology& t) {
  require(t.num_ranks() == 16);
  for (int l = 0; l < t.link_count(); ++l) {
    const auto& k = t.link(l);
    require(k.from >= 0 && k.from < t.vertex_count() && k.to >= 0 && k.to < t.vertex_count() && k.from != k.to);
    require(std::isfinite(k.bandwidth) && k.bandwidth > 0);
    require(std::isfinite(k.latency) && k.latency >= 0);
  }
  // Every GPU has a way out: an NVSwitch, a NIC or a direct link.
  for (int r = 0; r < t.num_ranks(); ++r) require(!t.out_links(t.gpu_vertex(r)).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 16)) return 0;
  {
    std::FILE* f = std::fopen(cluster_path().c_str(), "wb");
    require(f != nullptr);
    require(std::fwrite(data, 1, size, f) == size);
    std::fclose(f);
  }
  try {
    const stepsim::spec::ClusterSpec c =
        stepsim::spec::load_cluster(stepsim::catalog::shipped().gpus, cluster_path(), 16, 8, {});
    require(c.num_gpus == 16 && c.gpus_per_node >= 1 && c.num_gpus % c.gpus_per_node == 0);
    const double rate = stepsim::spec::inter_node_GBps_per_gpu(c);
    require(std::isfinite(rate) && rate > 0);
    using stepsim::spec::CommModel;
    for (auto m : {CommModel::AlphaBeta, CommModel::Nccl, CommModel::Flow}) {
      (void)stepsim::spec::unused_network_notes(c, m);
    }
    check_graph(stepsim::hw::build_topology(c));
  } catch (const stepsim::InputError&) {
  }
  return 0;
}

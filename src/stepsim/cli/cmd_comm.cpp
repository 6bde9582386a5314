// stepsim comm: one collective over a range of sizes, printed like nccl-tests (size, time, algbw, busbw) plus the
// algorithm and protocol the model assumed, so users can hold it against their own nccl-tests runs.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "stepsim/cli/commands.hpp"
#include "stepsim/cli/size_range.hpp"
#include "stepsim/cost/collective_model.hpp"
#include "stepsim/sim/simulation.hpp"
#include "stepsim/spec/input_error.hpp"
#include "stepsim/spec/job_loader.hpp"

namespace stepsim::cli {
namespace {

using workload::CollType;

struct CommOptions {
  std::string collective = "all_reduce";
  int gpus = 8;
  int gpus_per_node = 8;
  std::string sizes = "1M-1G";
  std::string cluster_path;
  std::string model = "nccl";
  std::string algo = "auto";
  std::string json_path;
  std::vector<std::string> overrides;
  std::string store;         // calibration store for --model nccl; "none" = profile only
  std::string nccl_version;  // prefer stored rows of this version
};

// nccl-tests binary names without "_perf"; sendrecv is a ring of simultaneous send/recv pairs.
struct CollectiveName {
  const char* name;
  bool p2p;
  CollType coll;
};
constexpr CollectiveName kCollectives[] = {
    {"all_reduce", false, CollType::AllReduce}, {"all_gather", false, CollType::AllGather},
    {"reduce_scatter", false, CollType::ReduceScatter}, {"alltoall", false, CollType::AllToAll},
    {"broadcast", false, CollType::Broadcast},  {"reduce", false, CollType::Reduce},
    {"sendrecv", true, CollType::AllReduce}};

const CollectiveName& find_collective(const std::string& s) {
  std::string known;
  for (const auto& c : kCollectives) {
    if (s == c.name || (s == "all_to_all" && std::string(c.name) == "alltoall")) return c;
    known += (known.empty() ? "" : ", ") + std::string(c.name);
  }
  throw InputError("--collective " + s + ": unknown collective; one of " + known);
}

spec::CommModel parse_model(const std::string& s) {
  if (s == "alpha-beta") return spec::CommModel::AlphaBeta;
  if (s == "nccl") return spec::CommModel::Nccl;
  if (s == "flow") return spec::CommModel::Flow;
  throw InputError("--model " + s + ": one of alpha-beta, nccl, flow");
}

int run_comm(const CommOptions& o) {
  const CollectiveName& cn = find_collective(o.collective);
  const spec::CommModel model_kind = parse_model(o.model);
  const auto algo = cost::parse_algorithm(o.algo);
  if (!algo) throw InputError("--algo " + o.algo + ": one of auto, ring, tree, nvls, nvls_tree, pat, collnet_direct, collnet_chain");
  if (o.gpus < 1 || o.gpus > (1 << 20)) throw InputError("--gpus " + std::to_string(o.gpus) + ": must be 1..1048576");
  if (o.gpus_per_node < 1) throw InputError("--gpus-per-node: must be >= 1");
  const std::vector<uint64_t> sizes = parse_size_range(o.sizes, "--sizes");
  const spec::ClusterSpec cluster = spec::load_cluster(o.cluster_path, o.gpus, o.gpus_per_node, o.overrides);
  const auto model = sim::make_collective_model(model_kind, cluster, {o.store, o.nccl_version});

  const int n = cluster.num_gpus, k = std::min(cluster.gpus_per_node, n);
  const cost::GroupGeometry g{n, (n + k - 1) / k, k};
  const double factor = cn.p2p ? 1.0 : workload::bus_factor(cn.coll, n);
  std::printf("# stepsim comm: %s, %d GPUs (%d node%s x %d), %s, model %s\n", cn.name, n, g.nodes,
              g.nodes == 1 ? "" : "s", k, cluster.gpu.c_str(), o.model.c_str());
  std::printf("# %14s %12s %12s %12s  %-10s %-8s %s\n", "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
              "algorithm", "protocol", "channels");
  nlohmann::json rows = nlohmann::json::array();
  for (uint64_t bytes : sizes) {
    cost::CollectiveEstimate e;
    if (cn.p2p) {
      // Every rank sends to the next and receives from the previous at once; across nodes the ring's slowest
      // pair crosses a NIC.
      if (*algo != cost::Algorithm::Auto) throw InputError("--algo: sendrecv has no algorithm choice");
      e = {model->p2p_ns(bytes, g.nodes == 1), cost::Algorithm::Direct, cost::Protocol::Simple, 1};
    } else {
      e = model->estimate(cn.coll, bytes, g, *algo);
    }
    const double us = static_cast<double>(e.ns) / 1e3;
    const double algbw = us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0.0;  // GB/s = 1e3 B/us
    const double busbw = algbw * factor;
    const std::string channels = e.channels > 0 ? std::to_string(e.channels) : "-";
    std::printf("  %14llu %12.2f %12.2f %12.2f  %-10s %-8s %s\n", static_cast<unsigned long long>(bytes), us, algbw,
                busbw, cost::name_of(e.algorithm), cost::name_of(e.protocol), channels.c_str());
    rows.push_back({{"size_bytes", bytes},
                    {"time_us", us},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", busbw},
                    {"algorithm", cost::name_of(e.algorithm)},
                    {"protocol", cost::name_of(e.protocol)},
                    {"channels", e.channels}});
  }
  if (!o.json_path.empty()) write_output_file(o.json_path, rows.dump(2) + "\n", "comm JSON");
  return 0;
}

}  // namespace

Action add_comm(CLI::App& app) {
  auto o = std::make_shared<CommOptions>();
  CLI::App* cmd = app.add_subcommand("comm", "time one collective over a range of sizes, like nccl-tests");
  cmd->add_option("--collective", o->collective,
                  "all_reduce | all_gather | reduce_scatter | alltoall | broadcast | reduce | sendrecv")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "ranks in the communicator")->capture_default_str();
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "ranks per node")->capture_default_str();
  cmd->add_option("--sizes", o->sizes, "bytes: MIN-MAX doubling (1M-1G), one size, or a list (8M,64M); K/M/G = 2^10/2^20/2^30")
      ->capture_default_str();
  cmd->add_option("--cluster", o->cluster_path, "cluster YAML (GPU, links, network); defaults: H100-SXM, the GPU's NVLink (data/gpus.yaml), 400 Gb/s NICs");
  cmd->add_option("--model", o->model, "alpha-beta | nccl | flow")->capture_default_str();
  cmd->add_option("--algo", o->algo, "auto | ring | tree | nvls | nvls_tree | pat | collnet_direct | collnet_chain")->capture_default_str();
  cmd->add_option("--set", o->overrides, "override a cluster key: --set cluster.inter_node.bandwidth_Gbps=200");
  cmd->add_option("--json", o->json_path, "write the rows as JSON here")->check(output_file());
  cmd->add_option("--store", o->store,
                  "calibration store for --model nccl (default $STEPSIM_CALIBRATION_DB, else "
                  "~/.cache/stepsim/calibration.sqlite); none = data/nccl.yaml only");
  cmd->add_option("--nccl-version", o->nccl_version, "prefer calibration rows of this NCCL version");
  return [cmd, o]() { return cmd->parsed() ? run_comm(*o) : -1; };
}

}  // namespace stepsim::cli

#include "stepsim/api/comm.hpp"

#include <algorithm>

#include "stepsim/api/size_range.hpp"
#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/job/cluster_rates.hpp"
#include "stepsim/assemble/plausibility.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/io/yaml_reader.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/transport_rates.hpp"
#include "stepsim/report/text_format.hpp"

namespace stepsim::api {
namespace {

using workload::CollType;

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

// --launch: "procs" = 1 GPU per process, "gN" = N.
int gpus_per_process(const std::string& launch) {
  if (launch == "procs") return 1;
  int64_t n = 0;
  if (launch.size() >= 2 && launch[0] == 'g' && spec::parse_int64(launch.substr(1), n) && n >= 1 && n <= 1024) {
    return static_cast<int>(n);
  }
  throw InputError("--launch " + launch + ": procs (one process per GPU) or gN (nccl-tests -g N: one process drives N "
                   "GPUs, e.g. g8)");
}

// The host time one collective costs under nccl-tests -g N: the process's thread launches a kernel on each of its N
// devices and enqueues each device's sends and receives (alltoall: one of each per rank of the communicator;
// sendrecv: one of each), and back-to-back iterations run no faster than it.
double launch_floor_us(const cost::GroupLaunch& g, int per_process, const CollectiveName& cn, int ranks) {
  const int p2p_ops = cn.p2p ? 2 : cn.coll == CollType::AllToAll ? 2 * ranks : 0;
  return per_process * (g.kernel_us_per_gpu + p2p_ops * g.p2p_op_us);
}

}  // namespace

constexpr int kMaxFlowGpus = 16384;

CommOutput comm(const CommOptions& o) {
  const CollectiveName& cn = find_collective(o.collective);
  const spec::CommModel model_kind = parse_model(o.model);
  const cost::Algorithm algo = cost::algorithm_option(o.algo);
  const std::optional<cost::Protocol> proto = cost::protocol_option(o.proto);
  if (o.gpus < 1 || o.gpus > (1 << 20)) throw InputError("--gpus " + std::to_string(o.gpus) + ": must be 1..1048576");
  if (o.gpus_per_node < 0) throw InputError("--gpus-per-node: must be >= 1");
  // The flow model solves the max-min fair rates of every flow of the collective on the cluster's links, which takes
  // about GPUs^1.5 (1.3 s at 4,096 GPUs, 9 s at 16,384 on one core; 131,072 ran 300 s without a word): refused beyond
  // that rather than left running silently.
  if (model_kind == spec::CommModel::Flow && o.gpus > kMaxFlowGpus) {
    throw InputError("--model flow --gpus " + std::to_string(o.gpus) + ": the flow model solves every link's flows and "
                     "takes minutes beyond " + std::to_string(kMaxFlowGpus) + " GPUs; use --model nccl or alpha-beta");
  }
  const std::vector<uint64_t> sizes = parse_size_range(o.sizes, "--sizes");
  CommOutput out;
  out.collective = cn.name;
  out.model = spec::name_of(model_kind);
  std::vector<std::string> overrides = o.overrides;
  for (const std::string& e : o.env) {
    const size_t eq = e.find('=');
    if (eq == 0 || eq == std::string::npos) {
      throw InputError("--env " + e + ": must be NAME=VALUE (NCCL_ALGO=Ring,Tree)");
    }
    overrides.push_back("cluster.nccl_env." + e);
  }
  out.cluster = spec::load_cluster(catalog::shipped().gpus, o.cluster_path, o.gpus, o.gpus_per_node, overrides);
  std::string version_note;  // a bad --nccl-version is refused here, by its flag's name
  const cost::NcclTunerTable tuner = catalog::shipped().nccl_tuner.for_version(o.nccl_version, "--nccl-version",
                                                                              &version_note);
  if (model_kind == spec::CommModel::Nccl) out.nccl_version = tuner.version;
  const auto model = sim::make_collective_model(catalog::shipped(), model_kind, out.cluster, {o.store, o.nccl_version});
  out.notes = spec::unused_network_notes(out.cluster, model_kind);
  for (std::string& note : cost::transport_notes(catalog::shipped().nccl, out.cluster)) out.notes.push_back(note);
  if (model_kind == spec::CommModel::Nccl && !version_note.empty()) out.notes.push_back(version_note);
  if (model_kind == spec::CommModel::Nccl) {
    const std::string calibration =
        sim::nccl_calibration_note(catalog::shipped(), out.cluster, {o.store, o.nccl_version});
    if (!calibration.empty()) out.notes.push_back(calibration);
  }
  const hw::GpuSpec& gpu = hw::effective_gpu(catalog::shipped().gpus, out.cluster);
  for (std::string& note : sim::cluster_plausibility_notes(out.cluster, gpu)) out.notes.push_back(note);
  out.transport_bandwidth_efficiency = cost::transport_bandwidth_efficiency(catalog::shipped().nccl, out.cluster);

  const int n = out.cluster.num_gpus, k = std::min(out.cluster.gpus_per_node, n);
  const cost::GroupGeometry g{n, (n + k - 1) / k, k};
  out.nodes = g.nodes;
  out.gpus_per_node = k;
  out.gpus_per_process = gpus_per_process(o.launch);
  if (out.gpus_per_process > 1) {
    if (k % out.gpus_per_process != 0) {
      throw InputError("--launch " + o.launch + ": a process drives GPUs of one node, and " +
                       std::to_string(out.gpus_per_process) + " does not divide the " + std::to_string(k) +
                       " GPUs per node");
    }
    const auto& launch = catalog::shipped().nccl.group_launch();
    if (!launch) throw InputError("--launch " + o.launch + ": the NCCL profile file has no 'launch' section");
    out.launch_floor_us = launch_floor_us(*launch, out.gpus_per_process, cn, n);
  }
  const double factor = cn.p2p ? 1.0 : workload::bus_factor(cn.coll, n);
  for (uint64_t bytes : sizes) {
    cost::CollectiveEstimate e;
    if (cn.p2p) {
      // Every rank sends to the next and receives from the previous at once; across nodes the ring's slowest
      // pair crosses a NIC.
      if (algo != cost::Algorithm::Auto) throw InputError("--algo: sendrecv has no algorithm choice");
      if (proto && *proto != cost::Protocol::Simple) {
        throw InputError(std::string("--proto ") + cost::name_of(*proto) + ": sendrecv is timed with the Simple protocol");
      }
      const bool same_node = g.nodes == 1;
      e = {model->p2p_ns(bytes, same_node, n), cost::Algorithm::Direct, cost::Protocol::Simple,
           model->p2p_channels(bytes, same_node, n)};
    } else {
      e = model->estimate(cn.coll, bytes, g, algo, proto);
    }
    const double model_us = static_cast<double>(e.ns) / 1e3;
    const bool launch_bound = out.launch_floor_us > model_us;
    const double us = launch_bound ? out.launch_floor_us : model_us;
    const double algbw = us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0.0;  // GB/s = 1e3 B/us
    const double busbw = algbw * factor;
    out.rows.push_back({bytes, us, algbw, busbw, cost::name_of(e.algorithm), cost::name_of(e.protocol), e.channels,
                        launch_bound});
  }
  return out;
}

nlohmann::json comm_json(const CommOutput& out) {
  nlohmann::json rows = nlohmann::json::array();
  const spec::ClusterSpec& c = out.cluster;
  for (const CommRow& r : out.rows) {
    // Each row says what it was computed for, so rows of several runs can be pooled.
    rows.push_back({{"collective", out.collective},
                    {"model", out.model},
                    {"gpu", c.gpu},
                    {"gpus", c.num_gpus},
                    {"nodes", out.nodes},
                    {"gpus_per_node", out.gpus_per_node},
                    {"gpus_per_process", out.gpus_per_process},
                    {"intra_node_GBps_per_gpu", c.intra_node.bandwidth_GBps},
                    {"inter_node_Gbps_per_gpu", 8 * spec::inter_node_GBps_per_gpu(c)},
                    {"inter_node_transport", c.inter_node.transport},
                    {"inter_node_bandwidth_efficiency", out.transport_bandwidth_efficiency},
                    {"nccl_version", out.nccl_version},
                    {"size_bytes", r.size_bytes},
                    {"time_us", r.time_us},
                    {"algbw_GBps", r.algbw_GBps},
                    {"busbw_GBps", r.busbw_GBps},
                    {"algorithm", r.algorithm},
                    {"protocol", r.protocol},
                    {"channels", r.channels},
                    {"launch_bound", r.launch_bound}});
  }
  return rows;
}

std::string comm_text(const CommOptions& o, const CommOutput& out) {
  const spec::ClusterSpec& c = out.cluster;
  std::string t = report::format_text("# stepsim comm: %s, %d GPUs (%d node%s x %d), %s, model %s\n",
                                      out.collective.c_str(), c.num_gpus, out.nodes, out.nodes == 1 ? "" : "s",
                                      out.gpus_per_node, c.gpu.c_str(), o.model.c_str());
  t += report::format_text("# links: intra-node %g GB/s per GPU; inter-node ", c.intra_node.bandwidth_GBps) +
       spec::inter_node_text(c, out.transport_bandwidth_efficiency) + (out.nodes == 1 ? " (not used: one node)" : "") +
       "\n";
  if (!out.nccl_version.empty()) {
    t += "# nccl " + out.nccl_version + ": its tuning latencies (data/nccl-tuner.yaml" +
         (o.nccl_version.empty() ? ", the newest tabulated; --nccl-version picks another)\n" : " versions)\n");
  }
  if (!c.nccl_env.empty()) t += "# nccl env: " + spec::nccl_env_text(c.nccl_env) + "\n";
  if (out.gpus_per_process > 1) {
    t += report::format_text("# launch: one process drives %d GPUs (nccl-tests -g %d): each collective takes at least "
                             "%.1f us of the host's launches (data/nccl.yaml launch; rows marked host)\n",
                             out.gpus_per_process, out.gpus_per_process, out.launch_floor_us);
  }
  for (const std::string& n : out.notes) t += "# note: " + n + "\n";
  t += report::format_text("# %14s %12s %12s %12s  %-10s %-8s %s\n", "size(B)", "time(us)", "algbw(GB/s)",
                           "busbw(GB/s)", "algorithm", "protocol", "channels");
  for (const CommRow& r : out.rows) {
    const std::string channels = (r.channels > 0 ? std::to_string(r.channels) : "-") + (r.launch_bound ? " host" : "");
    t += report::format_text("  %14llu %12.2f %12.2f %12.2f  %-10s %-8s %s\n",
                             static_cast<unsigned long long>(r.size_bytes), r.time_us, r.algbw_GBps, r.busbw_GBps,
                             r.algorithm.c_str(), r.protocol.c_str(), channels.c_str());
  }
  return t;
}

}  // namespace stepsim::api

#pragma once
// Parameters of the white-box NCCL model (Echo §5.3, eq. 1-5) and the per-GPU profiles that hold their defaults
// (data/nccl.yaml). `stepsim calibrate comm` fits the same six numbers from measurements.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"

namespace stepsim::cost {

// theta of time_us = alpha*x0 + beta*x1 + gamma*x2 + x3/intra_efficiency + x4/inter_efficiency + x5/reduce_GBps
// (NcclTerms in nccl_model.hpp gives the x).
struct NcclParams {
  double alpha_us = 10;           // connection setup and launch, once per call (Ring/Simple; scaled per algo/proto)
  double beta_us = 3.4;           // fixed cost of one intra-node chunk step (NVLink/PCIe hop)
  double gamma_us = 14;           // fixed cost of one inter-node chunk step (NIC hop)
  double intra_efficiency = 0.8;  // achieved share of the nominal intra-node bandwidth per GPU
  double inter_efficiency = 0.8;  // achieved share of the nominal NIC bandwidth
  double reduce_GBps = 400;       // throughput of the reduction (delta = 1 / reduce_GBps)
};

// Parameters measured for groups spanning `nodes` nodes; chunk_bytes > 0 marks a fit over calls of about that
// chunk size (Echo §5.3 profiles alpha..delta per chunk size), 0 a fit over all sizes.
struct NcclParamRow {
  int nodes = 1;
  uint64_t chunk_bytes = 0;
  NcclParams params;
};

// Which parameters a call uses: among the rows of the largest node count <= the group's (else the smallest node
// count; Echo: they are stable past a few nodes on a Clos fabric), the per-chunk rows interpolated in log(chunk)
// (clamped at the ends), else that node count's all-sizes row, else the profile defaults.
class NcclParamTable {
 public:
  explicit NcclParamTable(NcclParams defaults = {}) : defaults_(defaults) {}
  void add(const NcclParamRow& row);
  NcclParams lookup(int nodes, uint64_t chunk_bytes) const;
  bool empty() const { return rows_.empty(); }
  const std::vector<NcclParamRow>& rows() const { return rows_; }

 private:
  NcclParams defaults_;
  std::vector<NcclParamRow> rows_;  // sorted by (nodes, chunk_bytes)
};

struct NcclProfile {
  std::string name;               // e.g. "hopper-nvswitch"
  std::vector<std::string> gpus;  // GPU catalog names this profile serves
  int channels = 16;              // ring/tree channels NCCL builds on such a node
  // Achieved NVLS rate per switch port over the port's NCCL rate (intra_efficiency x nominal), where measurements show it
  // differs from NCCL's own tuning constant nvlsEfficiency; 0 = that constant. The tuner keeps NCCL's constant to choose
  // the algorithm, as NCCL does; only the time uses this.
  double nvls_efficiency = 0;
  NcclParams params;
  std::vector<NcclParamRow> bands;  // optional per-node-count / per-chunk fits shipped with the profile
  std::string source;             // where the defaults come from
};

// nccl-tests' -g N launch mode (one process drives N GPUs): the host time one collective costs per GPU it drives
// (data/nccl.yaml `launch`; stepsim comm --launch gN).
struct GroupLaunch {
  double kernel_us_per_gpu = 0;  // a kernel launch on one device, with its collective's enqueue
  double p2p_op_us = 0;          // each send or receive the thread enqueues for a device
};

// An inter-node transport as data/nccl.yaml `transports` describes it: what it costs per network step relative to
// InfiniBand verbs (NCCL's own NET latencies are for IB), the fraction of the NICs' line rate NCCL reaches over it
// relative to InfiniBand (every communication model's inter-node rate is scaled by it), and a note printed to every
// job that uses it where a number is assumed rather than measured.
struct NetTransport {
  double net_latency_scale = 1;
  double bandwidth_efficiency = 1;
  std::string note;
};

class NcclProfiles {
 public:
  // Loads data/nccl.yaml-style files, resolving the GPU names of each profile in `catalog`; InputError naming the
  // file and key on bad data.
  static NcclProfiles load(const std::string& path, const hw::GpuCatalog& catalog);
  // The profile of a GPU; InputError listing the GPUs that have one.
  const NcclProfile& find(const hw::GpuSpec& gpu) const;
  // The same, or nullptr for a GPU without one.
  const NcclProfile* lookup(const hw::GpuSpec& gpu) const;
  const std::vector<NcclProfile>& profiles() const { return profiles_; }
  // A transport's entry (`transports.<name>`; cluster.inter_node.transport names it); a transport the file does not
  // list behaves as InfiniBand verbs (1, 1, no note).
  const NetTransport& transport(const std::string& name) const;
  // How many times NCCL's per-step network latency (gamma) a transport pays.
  double net_latency_scale(const std::string& name) const { return transport(name).net_latency_scale; }
  // The `launch` section; nullopt when the file has none.
  const std::optional<GroupLaunch>& group_launch() const { return group_launch_; }

 private:
  static NcclProfiles load_profiles(const std::string& path, const hw::GpuCatalog& catalog);
  std::vector<NcclProfile> profiles_;
  std::map<std::string, NetTransport> transports_;
  std::optional<GroupLaunch> group_launch_;
};

}  // namespace stepsim::cost

// stepsim comm: one collective over a range of sizes, printed like nccl-tests (size, time, algbw, busbw) plus the
// algorithm and protocol the model assumed, so users can hold it against their own nccl-tests runs. The work is
// api::comm (src/stepsim/api/comm.cpp); this file parses options and prints.
#include <iostream>
#include <memory>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/comm.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {
namespace {

struct CommOptions {
  api::CommOptions api;
  std::string json_path;
};

int run_comm(const CommOptions& o) {
  const api::CommOutput out = api::comm(o.api);
  std::cout << api::comm_text(o.api, out);
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(api::comm_json(out), 2) + "\n", "comm JSON");
  return 0;
}

}  // namespace

Action add_comm(CLI::App& app) {
  auto o = std::make_shared<CommOptions>();
  api::CommOptions& a = o->api;
  CLI::App* cmd = app.add_subcommand("comm", "time one collective over a range of sizes, like nccl-tests");
  cmd->add_option("--collective", a.collective,
                  "all_reduce | all_gather | reduce_scatter | alltoall | broadcast | reduce | sendrecv")
      ->capture_default_str();
  cmd->add_option("--gpus", a.gpus, "ranks in the communicator")->capture_default_str();
  cmd->add_option("--gpus-per-node", a.gpus_per_node, "ranks per node (default: the cluster file's gpus_per_node, else 8)");
  cmd->add_option("--sizes", a.sizes, "bytes: MIN-MAX doubling (1M-1G), one size, or a list (8M,64M); K/M/G = 2^10/2^20/2^30")
      ->capture_default_str();
  cmd->add_option("--cluster", a.cluster_path, "cluster YAML (GPU, links, network); defaults: H100-SXM, the GPU's NVLink (data/gpus.yaml), 400 Gb/s NICs");
  cmd->add_option("--model", a.model, "alpha-beta | nccl | flow")->capture_default_str();
  cmd->add_option("--algo", a.algo, "auto | ring | tree | nvls | nvls_tree | pat | collnet_direct | collnet_chain")->capture_default_str();
  cmd->add_option("--proto", a.proto, "auto | LL | LL128 | Simple (as NCCL_PROTO; the nccl model chooses among them)")
      ->capture_default_str();
  cmd->add_option("--set", a.overrides, "override a cluster key: --set cluster.inter_node.bandwidth_Gbps=200");
  cmd->add_option("--env", a.env,
                  "an NCCL variable the nccl model honours, NAME=VALUE (NCCL_ALGO=Ring,Tree, NCCL_PROTO=^LL128, "
                  "NCCL_MAX_NCHANNELS=8, NCCL_NVLS_ENABLE=0, NCCL_BUFFSIZE=8388608); repeatable; cluster.nccl_env");
  cmd->add_option("--json", o->json_path, "write the rows as JSON here")->check(output_file());
  cmd->add_option("--store", a.store,
                  "calibration store for --model nccl (default $STEPSIM_CALIBRATION_DB, else "
                  "~/.cache/stepsim/calibration.sqlite); none = data/nccl.yaml only");
  cmd->add_option("--nccl-version", a.nccl_version,
                  "NCCL release (e.g. 2.21.5): its tuning constants, and calibration rows of it first");
  cmd->add_option("--launch", a.launch,
                  "how nccl-tests ran: procs (one process per GPU) or gN (-g N: one process drives N GPUs, and each "
                  "collective takes at least the host's N kernel launches; data/nccl.yaml launch)")
      ->capture_default_str();
  return [cmd, o]() { return cmd->parsed() ? run_comm(*o) : -1; };
}

}  // namespace stepsim::cli

#pragma once
// `stepsim comm` as a library call (the CLI's cmd_comm.cpp and the Python API): one collective over a range of sizes,
// as nccl-tests prints it, with the algorithm, protocol and channels the model assumed.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::api {

struct CommOptions {
  std::string collective = "all_reduce";
  int gpus = 8;
  int gpus_per_node = 0;  // 0 = the cluster file's gpus_per_node, else 8
  std::string sizes = "1M-1G";
  std::string cluster_path;
  std::string model = "nccl";
  std::string algo = "auto";
  std::string proto = "auto";          // auto | LL | LL128 | Simple (NCCL_PROTO)
  std::vector<std::string> overrides;  // cluster.* keys
  std::vector<std::string> env;        // NCCL variables as NAME=VALUE (--env), i.e. cluster.nccl_env.NAME=VALUE
  std::string store;                   // calibration store for model nccl; "none" = profile only
  std::string nccl_version;            // prefer stored rows of this version
  // How nccl-tests was launched: "procs" (one process per GPU, its default under MPI) or "gN" (-g N: one process
  // drives N GPUs, whose host then launches N kernels per collective; data/nccl.yaml `launch`).
  std::string launch = "procs";
};

// One message size as nccl-tests prints it, with the algorithm, protocol and channels the model chose (channels 0:
// the model has no channel notion).
struct CommRow {
  uint64_t size_bytes = 0;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::string algorithm, protocol;
  int channels = 0;
  bool launch_bound = false;  // the time is the host's launches of --launch gN, not the collective's own
};

struct CommOutput {
  std::string collective;  // the canonical name (all_to_all -> alltoall)
  std::string model;       // the communication model's name (nccl, alpha-beta, flow)
  std::string nccl_version;  // the NCCL release whose tuning constants the nccl model used ("" under another model)
  spec::ClusterSpec cluster;
  int nodes = 0, gpus_per_node = 0;
  std::vector<CommRow> rows;  // one per size, in the order of CommOptions::sizes
  std::vector<std::string> notes;  // cluster keys the model does not use (printed, never ignored silently)
  int gpus_per_process = 1;        // --launch gN
  double launch_floor_us = 0;      // the least time a collective takes from the host's launches (0: procs)
  double transport_bandwidth_efficiency = 1;  // the fraction of the NICs' line rate the transport reaches
};

// InputError for bad options.
CommOutput comm(const CommOptions& o);
// What --json writes: an array of the rows, each with the CommRow fields as keys and what it was computed for
// (collective, model, GPU, GPUs, nodes, links, transport and the fraction of line rate it reaches).
nlohmann::json comm_json(const CommOutput& out);
// What `stepsim comm` prints: a header naming the collective, GPUs, nodes, GPU and model, then one line per size.
std::string comm_text(const CommOptions& o, const CommOutput& out);

}  // namespace stepsim::api

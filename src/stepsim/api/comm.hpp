#pragma once
// `stepsim comm` as a library call (the CLI's cmd_comm.cpp and the Python API): one collective over a range of sizes,
// as nccl-tests prints it, with the algorithm, protocol and channels the model assumed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::api {

struct CommOptions {
  std::string collective = "all_reduce";
  int gpus = 8;
  int gpus_per_node = 8;
  std::string sizes = "1M-1G";
  std::string cluster_path;
  std::string model = "nccl";
  std::string algo = "auto";
  std::string proto = "auto";          // auto | LL | LL128 | Simple (NCCL_PROTO)
  std::vector<std::string> overrides;  // cluster.* keys
  std::string store;                   // calibration store for model nccl; "none" = profile only
  std::string nccl_version;            // prefer stored rows of this version
};

struct CommOutput {
  std::string collective;  // the canonical name (all_to_all -> alltoall)
  spec::ClusterSpec cluster;
  int nodes = 0, gpus_per_node = 0;
  nlohmann::json rows;  // what --json writes: size_bytes, time_us, algbw_GBps, busbw_GBps, algorithm, protocol, channels
};

// InputError for bad options.
CommOutput comm(const CommOptions& o);

}  // namespace stepsim::api

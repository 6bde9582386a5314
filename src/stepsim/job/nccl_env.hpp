#pragma once
// The NCCL environment a job's collectives run under (cluster.nccl_env, `comm --env NAME=VALUE`), read as NCCL reads
// its variables: NCCL_ALGO and NCCL_PROTO lists (a leading ^ excludes), NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS,
// NCCL_NVLS_ENABLE, NCCL_BUFFSIZE. The nccl model honours them (cost/collective/nccl_model.cpp); other NCCL_*
// variables are kept as notes, anything else is refused. docs/NETWORK.md, "NCCL environment".
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::spec {

struct NcclEnv {
  // NCCL_ALGO's allowed algorithms in stepsim's names (ring, tree, nvls, nvls_tree, pat, collnet_direct,
  // collnet_chain); empty = every algorithm NCCL would consider.
  std::vector<std::string> algorithms;
  // NCCL_PROTO's allowed protocols (LL, LL128, Simple); empty = all three.
  std::vector<std::string> protocols;
  int min_channels = 0;  // NCCL_MIN_NCHANNELS (0 = unset)
  int max_channels = 0;  // NCCL_MAX_NCHANNELS (0 = unset)
  bool nvls_disabled = false;  // NCCL_NVLS_ENABLE=0
  int64_t buffsize = 0;        // NCCL_BUFFSIZE, bytes (0 = NCCL's 4 MiB): the Simple protocol's chunks scale with it
  std::vector<std::pair<std::string, std::string>> as_written;  // every variable, as given
  std::vector<std::string> unmodelled;  // NCCL_* variables read that change nothing the model times
  bool empty() const { return as_written.empty(); }
};

// `vars` as NAME=VALUE pairs; `where` names them in errors ("cluster.nccl_env" or "--env"). InputError for a name
// that is not NCCL_*, a value NCCL would refuse, a per-collective NCCL_ALGO (not modelled).
NcclEnv parse_nccl_env(const std::vector<std::pair<std::string, std::string>>& vars, const std::string& where);

// NAME=VALUE for printing, in the order given.
std::string nccl_env_text(const NcclEnv& e);

}  // namespace stepsim::spec

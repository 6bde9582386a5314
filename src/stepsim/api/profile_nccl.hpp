#pragma once
// `stepsim profile nccl` as a library call (the CLI and the Python API): NCCL_DEBUG=INFO logs fused with Nsight
// Systems SQLite exports into per-rank collectives, communicators and clocks (docs/PROFILER.md).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/ingest/profile/profile.hpp"

namespace stepsim::api {

struct ProfileNcclOptions {
  std::vector<std::string> logs, dbs;  // --log, --nsys
  std::string parallelism;             // "tp=4,pp=2"
  std::string model;                   // "layers=..,hidden=.."
  std::string model_config;            // a Hugging Face config.json
  bool sync_clocks = false, nvtx = false;
};

// InputError for bad options or unreadable inputs.
profile::ProfileResult profile_nccl(const ProfileNcclOptions& o);

// What --summary writes.
nlohmann::json profile_summary_json(const profile::ProfileResult& r);
// The Chrome trace of the fused collectives (--out), streamed to `path`; with nvtx, the NVTX ranges as a track.
void write_profile_trace(const std::string& path, const profile::ProfileResult& r, bool nvtx);
// The report the CLI prints.
std::string profile_report_text(const profile::ProfileResult& r);

}  // namespace stepsim::api

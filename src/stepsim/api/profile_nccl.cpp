#include "stepsim/api/profile_nccl.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "stepsim/api/output_file.hpp"
#include "stepsim/ingest/profile/nccl_log.hpp"
#include "stepsim/ingest/profile/nsys_db.hpp"
#include "stepsim/ingest/profile/parallelism_sizes.hpp"
#include "stepsim/ingest/profile/profile_outputs.hpp"
#include "stepsim/ingest/profile/volume_model.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::api {

namespace {

// A file given twice would have its records counted twice (the same path, or two spellings of it).
void refuse_repeated_files(const std::vector<std::string>& paths, const char* flag) {
  std::vector<std::filesystem::path> seen;
  for (const std::string& p : paths) {
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(p, ec);
    const std::filesystem::path key = ec ? std::filesystem::path(p) : canonical;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw InputError(std::string(flag) + ": " + p + " is given twice (its records would be counted twice)");
    }
    seen.push_back(key);
  }
}

}  // namespace

profile::ProfileResult profile_nccl(const ProfileNcclOptions& a) {
  if (a.logs.empty()) throw InputError("--log: give at least one NCCL_DEBUG=INFO log file");
  refuse_repeated_files(a.logs, "--log");
  refuse_repeated_files(a.dbs, "--nsys");
  profile::ProfileOptions opt;
  if (!a.parallelism.empty()) opt.parallelism = profile::parse_parallelism(a.parallelism);
  if (!a.model.empty() || !a.model_config.empty()) {
    // The config gives the architecture; --model adds the run (mbs, micro-batches, iterations) or overrides.
    const profile::ModelShape base = a.model_config.empty() ? profile::ModelShape{} : profile::model_from_hf_config(a.model_config);
    opt.model = profile::parse_model_options(a.model, base);
    profile::check_model(*opt.model);
  }
  opt.sync_clocks = a.sync_clocks;
  opt.nvtx = a.nvtx;
  profile::NcclLog log = profile::parse_nccl_logs(a.logs);
  std::vector<profile::NsysDb> dbs;
  for (size_t i = 0; i < a.dbs.size(); ++i)
    dbs.push_back(profile::read_nsys_db(a.dbs[i], static_cast<int>(i), {.all_kernels = false, .nvtx = a.nvtx}));
  return profile::run_profile(std::move(log), std::move(dbs), opt);
}

nlohmann::json profile_summary_json(const profile::ProfileResult& r) { return profile::summary_json(r); }

void write_profile_trace(const std::string& path, const profile::ProfileResult& r, bool nvtx) {
  write_output_file(
      path, [&](std::ostream& o) { profile::write_chrome_trace(o, r, nvtx); o << "\n"; }, "the trace (--out)");
}

std::string profile_report_text(const profile::ProfileResult& r) { return profile::report_text(r); }

}  // namespace stepsim::api

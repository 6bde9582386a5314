// libFuzzer target for the fit behind the measurement readers (`calibrate comm`): nccl-tests text or kernel records
// read as fuzz_nccl_tests.cpp reads them, then fitted. InputError is the expected outcome for bad input; any other
// exception, a crash, a hang, or a result that breaks the invariants below is a bug.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/calibrate/nccl_fit.hpp"
#include "stepsim/calibrate/nccl_records.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"

#include "nccl_tests_checks.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace {

using fuzz_support::require;
using nccl_tests_checks::check_file;
using namespace stepsim;

// The fit on a fixed H100 cluster: parameters stay in their bounds and predictions stay finite.
void check_fit(const std::vector<cost::CommPoint>& pts) {
  if (pts.empty()) return;
  static const spec::ClusterSpec cluster = spec::load_cluster(stepsim::catalog::shipped().gpus, "", 64, 8, {});
  static const cost::NcclProfile& profile = stepsim::catalog::shipped().nccl_profile(cluster.gpu);
  static const cost::NcclHardware hw = cost::nccl_hardware(stepsim::catalog::shipped(), cluster, profile.channels);
  const auto r = cost::calibrate_nccl(pts, hw, cost::NcclParamTable(profile.params));
  for (const auto& g : r.groups) {
    const cost::NcclParams& p = g.joint.params;
    require(p.alpha_us >= 0 && p.alpha_us <= 1e6 && p.beta_us >= 0 && p.beta_us <= 1e6);
    require(p.gamma_us >= 0 && p.gamma_us <= 1e6);
    require(p.intra_efficiency >= 0.05 - 1e-9 && p.intra_efficiency <= 1.5 + 1e-9);
    require(p.inter_efficiency >= 0.05 - 1e-9 && p.inter_efficiency <= 1.5 + 1e-9);
    require(p.reduce_GBps >= 1e-3 && p.reduce_GBps <= 1e6 * (1 + 1e-9));
    for (const auto& pr : g.points) require(std::isfinite(pr.after_us) && std::isfinite(pr.cv_us));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = nccl_tests_checks::line_count(text);
  std::vector<cost::CommPoint> pts;
  try {
    const cost::NcclTestsFile f = cost::parse_nccl_tests(text, "fuzz.txt");
    check_file(f, lines);
    for (const auto& t : f.tables) {
      if (!t.collective || t.ranks < 1 || t.ranks > 4096 || t.nodes < 1) continue;
      for (const auto& r : t.rows) {
        if (pts.size() >= 48) break;
        cost::CommPoint p;
        p.collective = *t.collective;
        p.bytes = r.bytes;
        p.geometry = {t.ranks, t.nodes, (t.ranks + t.nodes - 1) / t.nodes};
        p.time_us = r.time_us;
        pts.push_back(p);
      }
    }
  } catch (const InputError&) {
  }
  try {
    const cost::KernelRecords k = cost::parse_kernel_records(text, "fuzz.csv");
    nccl_tests_checks::check_records(k, lines);
    for (const auto& r : k.records) {
      if (pts.size() < 64 && r.ranks <= 4096) pts.push_back(cost::comm_point(r, ""));
    }
  } catch (const InputError&) {
  }
  try {
    check_fit(pts);
  } catch (const InputError&) {
    // a forced algorithm the tuner cannot run for that collective: a message, not a crash
  }
  return 0;
}

#include "stepsim/api/calibrate_comm.hpp"

#include <optional>

#include "stepsim/api/calibrate_comm_report.hpp"
#include "stepsim/calibrate/nccl_calibration.hpp"
#include "stepsim/calibrate/calibration_store.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {
namespace {

// One store row per fit: the joint fit of each node count (with its cross-validated error), then its fits per chunk
// size and per collective.
std::vector<hw::CalibrationRow> store_rows(const CalibrationInput& in, const cost::NcclCalibrationResult& r,
                                           const std::string& created) {
  const hw::CalibrationKey key = hw::calibration_key(catalog::shipped().gpu(in.cluster.gpu), in.cluster);
  std::vector<hw::CalibrationRow> rows;
  for (const auto& g : r.groups) {
    auto row = [&](const cost::NcclFit& f, const std::string& collective, uint64_t chunk) {
      hw::CalibrationRow x = cost::row_of(f);
      x.gpu = key.gpu;
      x.interconnect = key.interconnect;
      x.nodes = g.nodes;
      x.gpus_per_node = in.cluster.gpus_per_node;
      x.nccl_version = in.nccl_version;
      x.collective = collective;
      x.chunk_bytes = chunk;
      x.source = in.source;
      x.created = created;
      return x;
    };
    rows.push_back(row(g.joint, "all", 0));
    rows.back().cv_mean_abs_error_pct = g.cv.mean_abs_pct;
    for (const auto& [chunk, f] : g.by_chunk) rows.push_back(row(f, "all", chunk));
    for (const auto& [coll, f] : g.by_collective) rows.push_back(row(f, cost::name_of(coll), 0));
  }
  return rows;
}

}  // namespace

CalibrateCommOutput calibrate_comm(const CalibrateOptions& o, const std::string& created) {
  const cost::Algorithm algo = cost::algorithm_option(o.algo);
  const std::optional<cost::Protocol> proto = cost::protocol_option(o.proto);
  const CalibrationInput in = load_calibration_input(o);
  CalibrateCommOutput out;
  // Open the store first: a foreign or corrupt file is reported before any work.
  std::optional<hw::CalibrationStore> store;
  if (!o.dry_run) {
    out.store_path = o.store.empty() ? hw::default_calibration_store_path() : o.store;
    store = hw::CalibrationStore::open(out.store_path);
  }
  const catalog::Catalog& cat = catalog::shipped();
  const cost::NcclProfile& profile = cat.nccl_profile(in.cluster.gpu);
  const cost::NcclHardware hw = cost::nccl_hardware(cat, in.cluster, profile.channels, profile.nvls_efficiency);
  cost::NcclParamTable current(profile.params);
  for (const auto& band : profile.bands) current.add(band);
  const cost::NcclCalibrationResult result = cost::calibrate_nccl(in.points, hw, current, algo, proto);
  if (result.groups.empty()) {
    throw InputError(in.files.front() + ": nothing to fit: every measured point has zero size, zero time or one rank");
  }
  out.text = calibration_text(in, profile, result);
  const std::vector<hw::CalibrationRow> rows = store_rows(in, result, created);
  out.rows = rows.size();
  if (store) out.stored_ids = store->insert(rows);
  out.json = calibration_json(in, profile, result);
  out.json["store"] = out.store_path;
  out.json["stored_ids"] = out.stored_ids;
  return out;
}

}  // namespace stepsim::api

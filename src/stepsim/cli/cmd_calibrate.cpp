// stepsim calibrate comm: fit the NCCL model's parameters to nccl-tests output or kernel records, print the fit
// error, store the parameters. stepsim calibrate list: the stored rows. docs/CALIBRATION.md.
#include <ctime>
#include <iostream>
#include <memory>

#include "stepsim/cli/calibrate_input.hpp"
#include "stepsim/cli/calibrate_report.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/cost/nccl_calibration.hpp"
#include "stepsim/hw/calibration_store.hpp"
#include "stepsim/spec/input_error.hpp"

namespace stepsim::cli {
namespace {


std::vector<hw::CalibrationRow> store_rows(const CalibrationInput& in, const cost::NcclCalibrationResult& r,
                                           const std::string& created) {
  const hw::CalibrationKey key = hw::calibration_key(in.cluster);
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

int run_calibrate_comm(const CalibrateOptions& o) {
  const cost::Algorithm algo = cost::algorithm_option(o.algo);
  const std::optional<cost::Protocol> proto = cost::protocol_option(o.proto);
  const CalibrationInput in = load_calibration_input(o);
  const std::string store_path = o.store.empty() ? hw::default_calibration_store_path() : o.store;
  // Open the store first: a foreign or corrupt file is reported before any work.
  std::optional<hw::CalibrationStore> store;
  if (!o.dry_run) store = hw::CalibrationStore::open(store_path);

  const cost::NcclProfile& profile = cost::NcclProfiles::builtin().find(in.cluster.gpu);
  const cost::NcclHardware hw = cost::nccl_hardware(in.cluster, profile.channels, profile.nvls_efficiency);
  cost::NcclParamTable current(profile.params);
  for (const auto& band : profile.bands) current.add(band);
  const cost::NcclCalibrationResult result = cost::calibrate_nccl(in.points, hw, current, algo, proto);
  if (result.groups.empty()) {
    throw InputError(in.files.front() + ": nothing to fit: every measured point has zero size, zero time or one rank");
  }
  std::cout << calibration_text(in, profile, result);

  const std::vector<hw::CalibrationRow> rows = store_rows(in, result, utc_now_iso());
  std::vector<int64_t> ids;
  if (store) {
    ids = store->insert(rows);
    std::cout << "# stored " << rows.size() << " row" << (rows.size() == 1 ? "" : "s") << " in " << store_path
              << " (ids " << ids.front() << (ids.size() > 1 ? "-" + std::to_string(ids.back()) : "")
              << "); stepsim calibrate list shows them\n";
  } else {
    std::cout << "# --dry-run: " << rows.size() << " row" << (rows.size() == 1 ? "" : "s") << " not stored\n";
  }
  if (!o.json_path.empty()) {
    nlohmann::json j = calibration_json(in, profile, result);
    j["store"] = store ? store_path : "";
    j["stored_ids"] = ids;
    write_output_file(o.json_path, j.dump(2) + "\n", "calibration JSON");
  }
  return 0;
}

int run_calibrate_list(const std::string& store_opt) {
  const std::string path = store_opt.empty() ? hw::default_calibration_store_path() : store_opt;
  const auto store = hw::CalibrationStore::open_existing(path);
  if (!store) {
    std::cout << "# calibration store " << path << ": no calibrations yet (stepsim calibrate comm writes them)\n";
    return 0;
  }
  std::cout << store_listing(path, store->all());
  return 0;
}

}  // namespace

Action add_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto list_store = std::make_shared<std::string>();
  CLI::App* cal = app.add_subcommand("calibrate", "fit cost-model parameters to measurements and store them");
  cal->require_subcommand(1);

  CLI::App* comm = cal->add_subcommand("comm", "fit the NCCL model (alpha, beta, gamma, efficiencies, reduce rate) to nccl-tests output");
  comm->add_option("--nccl-tests", o->nccl_tests, "nccl-tests output (text, or CSV as in shared/data/nccl-tests); several allowed");
  comm->add_option("--records", o->records, "aligned NCCL kernel records (CSV: collective,bytes,ranks,nodes,ranks_per_node,duration_us[,algorithm,protocol])");
  comm->add_option("--from-profile", o->profiles, "summary JSON of `stepsim profile nccl --nsys ...`: its aligned records");
  comm->add_option("--collective", o->collective, "the collective, for text that names no *_perf binary");
  comm->add_option("--cluster", o->cluster_path, "cluster YAML (links; the GPU comes from the measurements); defaults as in stepsim comm");
  comm->add_option("--gpus", o->gpus, "ranks, for text without a device list");
  comm->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (default: from the measurements)");
  comm->add_option("--set", o->overrides, "override a cluster key: --set cluster.inter_node.bandwidth_Gbps=200");
  comm->add_option("--nccl-version", o->nccl_version, "NCCL version of the measurements (default: from the files)");
  comm->add_option("--algo", o->algo, "force the algorithm of the model's terms: auto | ring | tree | nvls | nvls_tree | pat | collnet_direct | collnet_chain")
      ->capture_default_str();
  comm->add_option("--proto", o->proto, "the NCCL_PROTO the measurements ran with: auto | LL | LL128 | Simple")
      ->capture_default_str();
  comm->add_option("--store", o->store, "calibration store (default: $STEPSIM_CALIBRATION_DB, else ~/.cache/stepsim/calibration.sqlite)");
  comm->add_option("--json", o->json_path, "write the fit (every point, parameters, errors) as JSON here")->check(output_file());
  comm->add_flag("--dry-run", o->dry_run, "fit and print, store nothing");

  const Action compute = add_calibrate_compute(*cal);
  CLI::App* list = cal->add_subcommand("list", "print the rows of the calibration store");
  list->add_option("--store", *list_store, "calibration store (default: $STEPSIM_CALIBRATION_DB, else ~/.cache/stepsim/calibration.sqlite)");

  return [comm, list, o, list_store, compute]() {
    if (comm->parsed()) return run_calibrate_comm(*o);
    if (const int rc = compute(); rc != -1) return rc;
    if (list->parsed()) return run_calibrate_list(*list_store);
    return -1;
  };
}

}  // namespace stepsim::cli

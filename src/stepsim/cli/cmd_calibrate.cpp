// stepsim calibrate comm: fit the NCCL model's parameters to nccl-tests output or kernel records, print the fit
// error, store the parameters. stepsim calibrate list: the stored rows. docs/CALIBRATION.md.
#include <ctime>
#include <iostream>
#include <memory>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/calibrate_comm.hpp"
#include "stepsim/api/calibrate_comm_report.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cli {
namespace {


int run_calibrate_comm(const api::CalibrateOptions& o) {
  const api::CalibrateCommOutput out = api::calibrate_comm(o, utc_now_iso());
  std::cout << out.text;
  const char* s = out.rows == 1 ? "" : "s";
  if (!out.stored_ids.empty()) {
    const auto& ids = out.stored_ids;
    std::string listed;
    for (int64_t id : ids) listed += (listed.empty() ? "" : " ") + std::to_string(id);
    // Every later `comm_model: nccl` simulation and `comm --model nccl` of this cluster reads it: say how to undo.
    std::cout << "# stored " << out.rows << " row" << s << " in " << out.store_path << " (ids " << listed
              << "): simulations and comm --model nccl of this GPU and links now use them (they say so in a note); "
              << "stepsim calibrate list shows them, stepsim calibrate remove " << listed << " --store "
              << out.store_path << " undoes this, --dry-run stores nothing\n";
  } else {
    std::cout << "# --dry-run: " << out.rows << " row" << s << " not stored\n";
  }
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(out.json, 2) + "\n", "calibration JSON");
  return 0;
}

struct RemoveArgs {
  std::vector<int64_t> ids;
  std::vector<std::string> archs;
  std::string store;
};

int run_calibrate_list(const std::string& store) {
  std::cout << api::calibration_list(store);
  return 0;
}

}  // namespace

Action add_calibrate(CLI::App& app) {
  auto o = std::make_shared<api::CalibrateOptions>();
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

  auto rm = std::make_shared<RemoveArgs>();
  CLI::App* remove = cal->add_subcommand("remove", "delete calibrations from the store: NCCL rows by id (calibrate "
                                                   "list shows them), compute calibrations by architecture");
  remove->add_option("ids", rm->ids, "ids of NCCL calibration rows");
  remove->add_option("--compute", rm->archs, "an architecture whose compute calibrations to delete (hopper, ...)");
  remove->add_option("--store", rm->store, "calibration store (default: $STEPSIM_CALIBRATION_DB, else "
                                           "~/.cache/stepsim/calibration.sqlite)");

  return [comm, list, remove, o, list_store, rm, compute]() {
    if (comm->parsed()) return run_calibrate_comm(*o);
    if (const int rc = compute(); rc != -1) return rc;
    if (list->parsed()) return run_calibrate_list(*list_store);
    if (remove->parsed()) {
      std::cout << api::calibration_remove(rm->store, rm->ids, rm->archs);
      return 0;
    }
    return -1;
  };
}

}  // namespace stepsim::cli

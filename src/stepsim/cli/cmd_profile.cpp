// stepsim profile nccl --log LOG... [--nsys DB.sqlite...] [--parallelism tp=4,pp=2] [--sync-clocks] [--nvtx]
//                      [--model layers=..,hidden=..] [--model-config config.json] [--out TRACE.json] [--summary SUMMARY.json]
#include "stepsim/cli/cmd_profile.hpp"
#include "stepsim/io/utf8.hpp"

#include <iostream>
#include <memory>

#include "stepsim/api/profile_nccl.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {
namespace {

struct ProfileArgs : api::ProfileNcclOptions {
  std::string out, summary;
  bool quiet = false;
};

int run(const ProfileArgs& a) {
  const profile::ProfileResult r = api::profile_nccl(a);
  if (!a.summary.empty()) write_output_file(a.summary, io::json_text(api::profile_summary_json(r), 2) + "\n", "the summary (--summary)");
  if (!a.out.empty()) api::write_profile_trace(a.out, r, a.nvtx);
  if (!a.quiet) std::cout << api::profile_report_text(r);
  return 0;
}

}  // namespace

Action add_profile(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "profile a real run from its logs and traces");
  cmd->require_subcommand(1);
  CLI::App* nccl = cmd->add_subcommand("nccl", "fuse NCCL_DEBUG=INFO logs with Nsight Systems SQLite exports");
  nccl->add_option("--log", a->logs, "NCCL_DEBUG=INFO log file(s), any number of ranks and nodes")->required()->expected(1, -1);
  nccl->add_option("--nsys", a->dbs, "Nsight Systems SQLite export(s) (nsys export --type sqlite), one per node")->expected(1, -1);
  nccl->add_option("--parallelism", a->parallelism, "parallelism sizes, e.g. tp=4,pp=2,dp=8 (dims tp, pp, dp, ep, cp)");
  nccl->add_option("--model", a->model,
                   "model for the §2.4 volume models: layers,hidden,seq,vocab,mbs,microbatches,iterations,bytes,params,"
                   "moe_layers,topk as KEY=N,...");
  nccl->add_option("--model-config", a->model_config, "Hugging Face config.json giving layers, hidden, seq, vocab (and MoE)");
  nccl->add_flag("--sync-clocks", a->sync_clocks, "align rank clocks by median offsets over collectives");
  nccl->add_flag("--nvtx", a->nvtx, "add the NVTX ranges of the exports as a track");
  nccl->add_option("--out", a->out, "Chrome trace to write (open in Perfetto or chrome://tracing)")->check(output_file());
  nccl->add_option("--summary", a->summary, "summary JSON to write")->check(output_file());
  nccl->add_flag("--quiet", a->quiet, "do not print the report");
  return [nccl, a]() { return nccl->parsed() ? run(*a) : -1; };
}

}  // namespace stepsim::cli

// stepsim-trace-program files with explicit dependencies, from TracedRank ops (format: docs/TRACES.md).
#include "stepsim/ingest/trace/traced_program_json.hpp"

#include <filesystem>
#include <fstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::trace {


using workload::OpKind;

namespace {

nlohmann::json transfers_json(const std::vector<TracedTransfer>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : v) a.push_back({{"peer", t.peer}, {"bytes", t.bytes}});
  return a;
}

}  // namespace

nlohmann::json traced_op_json(const TracedOp& o) {
  nlohmann::json j;
  j["kind"] = o.kind == OpKind::Compute ? "compute" : o.kind == OpKind::P2P ? "p2p" : "collective";
  j["name"] = o.name;
  if (o.kind == OpKind::Compute) {
    j["duration_ns"] = o.duration_ns;
    j["category"] = workload::name_of(o.category);
    j["phase"] = workload::name_of(o.phase);
    if (o.flops > 0) j["flops"] = o.flops;
    if (o.hbm_bytes > 0) j["hbm_bytes"] = o.hbm_bytes;
  } else if (o.kind == OpKind::Collective) {
    j["coll"] = workload::name_of(o.coll);
    j["group"] = workload::name_of(o.group.value_or(workload::GroupKind::Dp));
    if (o.measured_time) {
      j["bytes"] = nullptr;  // no size: the simulator replays the measured time
      j["duration_ns"] = o.duration_ns;
    } else {
      j["bytes"] = o.bytes;
    }
    j["group_ranks"] = o.group_ranks;
  } else {
    j["group"] = "pp";
    if (!o.sends.empty()) j["sends"] = transfers_json(o.sends);
    if (!o.recvs.empty()) j["recvs"] = transfers_json(o.recvs);
  }
  if (o.mem_alloc_bytes != 0) j["mem_alloc_bytes"] = o.mem_alloc_bytes;
  if (o.mem_free_bytes != 0) j["mem_free_bytes"] = o.mem_free_bytes;
  j["after"] = o.after;
  return j;
}

nlohmann::json traced_program_json(const TracedRank& r, const std::string& source, const nlohmann::json& extra) {
  nlohmann::json ops = nlohmann::json::array();
  for (const TracedOp& o : r.ops) ops.push_back(traced_op_json(o));
  nlohmann::json prog = {{"format", "stepsim-trace-program"}, {"version", 1}, {"rank", r.rank}, {"source", source}};
  if (r.world_size > 0) prog["world_size"] = r.world_size;  // unknown: the job's
  if (r.static_memory_bytes > 0) prog["static_memory_bytes"] = r.static_memory_bytes;
  for (auto it = extra.begin(); it != extra.end(); ++it) prog[it.key()] = it.value();
  prog["ops"] = std::move(ops);
  return prog;
}

void write_output_text(const std::string& path, const std::string& text, const std::string& option) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path + ": cannot write (" + option + ")");
  out << text;
  out.flush();
  if (!out) throw InputError(path + ": cannot write (" + option + ")");
}

void check_rank_file_size(const std::string& path, uintmax_t bytes, uintmax_t limit) {
  if (bytes <= limit) return;
  const uintmax_t mib = (bytes + (uintmax_t{1} << 20) - 1) >> 20;  // rounded up: never "128 MiB, more than 128 MiB"
  throw InputError(path + ": the rank's program would be " + std::to_string(mib) + " MiB, more than the " +
                   std::to_string(limit >> 20) + " MiB a rank file of `simulate --workload` may hold; trace fewer " +
                   "steps (torch.profiler's schedule with active=1) or a smaller part of the run");
}

void check_workload_size(const std::string& dir, uintmax_t bytes) {
  if (bytes <= kMaxWorkloadBytes) return;
  const uintmax_t mib = (bytes + (uintmax_t{1} << 20) - 1) >> 20;
  throw InputError(dir + ": the rank files hold " + std::to_string(mib) + " MiB together, more than the " +
                   std::to_string(kMaxWorkloadBytes >> 20) + " MiB `simulate --workload` reads from one folder; " +
                   "keep one traced rank per pipeline stage (the others reuse a data-parallel peer's trace) or " +
                   "trace fewer steps");
}

RankFileBudget::~RankFileBudget() {
  std::error_code ec;
  for (const std::string& path : written_) std::filesystem::remove(path, ec);
}

void RankFileBudget::add(uintmax_t bytes) {
  used_ += bytes;
  check_workload_size(dir_, used_);
}

void write_rank_file(const std::string& path, const std::string& text, RankFileBudget* budget) {
  check_rank_file_size(path, text.size());
  if (budget) {
    budget->add(text.size());
    budget->wrote(path);  // before the write: a file cut short by a failed write is removed too
  }
  write_output_text(path, text);
}

}  // namespace stepsim::trace

#include "stepsim/ingest/trace/workload_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"
#include "stepsim/ingest/trace/tracer_workload.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"
#include "stepsim/ingest/trace/workload_json.hpp"

namespace stepsim::trace {

namespace fs = std::filesystem;
using workload::OpKind;

namespace {

// A rank's program is parsed into a JSON tree, then built and simulated: a 130 MB file of 740,000 compute ops peaked at
// 1.51 GB (`stepsim simulate --workload`, 4 ranks, Release), 230 MB at 2.70 GB; 96 MiB per file and per folder
// (kMaxWorkloadBytes) keeps any input under 2 GiB.
// GPT-3 175B's step on one rank is about 120,000 kernels (20 MB).
constexpr uintmax_t kMaxFileBytes = kMaxRankFileBytes;  // traced_program_json.hpp: the writers keep to it too
constexpr int64_t kMaxOpNs = 100'000'000'000;           // 100 s per op; x the ops of 2 GiB (< 5.4e7) < 2^63 ns
constexpr int64_t kMaxStartNs = int64_t{1} << 56;       // trace timestamps (~2.3 years of ns): start + duration fits

std::vector<TracedTransfer> read_transfers(const JsonField& f) {
  std::vector<TracedTransfer> out;
  if (f.absent()) return out;
  for (size_t i = 0; i < f.size(); ++i) {
    const JsonField t = f.at(i);
    const int64_t peer = t["peer"].integer(0);
    if (peer > INT32_MAX) t["peer"].fail("rank " + std::to_string(peer) + " is too large");
    out.push_back({static_cast<int>(peer), t["bytes"].message_bytes()});
  }
  return out;
}

// One op of a stepsim-trace-program file.
TracedOp read_program_op(const JsonField& o, size_t index, const std::vector<std::string>& names) {
  TracedOp op;
  const std::string kind = o["kind"].string();
  if (kind == "compute") op.kind = OpKind::Compute;
  else if (kind == "collective") op.kind = OpKind::Collective;
  else if (kind == "p2p") op.kind = OpKind::P2P;
  else o["kind"].fail("must be compute, collective or p2p, not '" + kind + "'");
  const JsonField name = o["name"];
  if (name.is_string()) {
    op.name = name.string();
  } else {
    const int64_t n = name.integer(0);
    if (n >= static_cast<int64_t>(names.size())) name.fail("index " + std::to_string(n) + " is beyond `names`");
    op.name = names[static_cast<size_t>(n)];
  }
  op.duration_ns = o["duration_ns"].integer_or(0, 0);
  // Bounded so that no sum of a program's times can overflow the engine's int64 nanoseconds: at most 100 s an op (no
  // kernel, transfer or host gap of one step is longer) times the ops a 2 GiB file can hold stays below 2^63.
  if (op.duration_ns > kMaxOpNs) o["duration_ns"].fail("must be at most " + std::to_string(kMaxOpNs) + " (100 s)");
  op.start_ns = o["start_ns"].integer_or(-1, 0);
  if (op.start_ns > kMaxStartNs) o["start_ns"].fail("must be at most " + std::to_string(kMaxStartNs));
  if (op.kind == OpKind::Compute && o["duration_ns"].absent()) o["duration_ns"].fail("is required for compute ops");
  op.category = o["category"].enum_or(workload::ComputeCategory::Elementwise);
  op.phase = o["phase"].enum_or(workload::Phase::Forward);
  op.flops = o["flops"].number_or(0, 0);
  op.hbm_bytes = static_cast<uint64_t>(o["hbm_bytes"].integer_or(0, 0));
  op.mem_alloc_bytes = o["mem_alloc_bytes"].integer_or(0, 0);
  op.mem_free_bytes = o["mem_free_bytes"].integer_or(0, 0);
  if (!o["group"].absent()) op.group = o["group"].enumeration<workload::GroupKind>();
  if (op.kind == OpKind::Collective) {
    op.coll = o["coll"].enumeration<workload::CollType>();
    if (o["bytes"].is_null()) {
      // The trace recorded no shapes: the model cannot time it, so it keeps the time the trace measured.
      if (o["duration_ns"].absent()) o["bytes"].fail("is null and no duration_ns is given: nothing can time this collective");
      op.measured_time = true;
    } else {
      op.bytes = o["bytes"].message_bytes();
    }
    for (int64_t g : o["group_ranks"].int_list_or_empty(0)) {
      if (g > INT32_MAX) o["group_ranks"].fail("rank " + std::to_string(g) + " is too large");
      op.group_ranks.push_back(static_cast<int>(g));
    }
    std::sort(op.group_ranks.begin(), op.group_ranks.end());
    op.group_size = static_cast<int>(o["group_size"].integer_or(-1, 1));
    if (std::adjacent_find(op.group_ranks.begin(), op.group_ranks.end()) != op.group_ranks.end()) {
      o["group_ranks"].fail("lists a rank twice");
    }
  } else if (op.kind == OpKind::P2P) {
    op.sends = read_transfers(o["sends"]);
    op.recvs = read_transfers(o["recvs"]);
    if (op.sends.empty() && op.recvs.empty()) {
      o["sends"].fail("p2p op without `sends` or `recvs`: the trace does not say which rank it exchanges with");
    }
  }
  const JsonField after = o["after"];
  for (const int64_t d : after.int_list_or_empty(0)) {
    if (d >= static_cast<int64_t>(index)) after.fail("must name earlier ops (indices below " + std::to_string(index) + ")");
    op.after.push_back(static_cast<int>(d));
  }
  return op;
}

// Imported traces may span several ProfilerSteps: keep one (steps cut by fill_unknown_steps).
// Memory allocated in the steps before the kept one stays allocated: it joins the static memory.
// Returns the step kept (-1: the file has no step information).
// The kept step starts at its ProfilerStep's CPU start (`step_start`, when the file gives it), or where the
// previous step's kernels ended if that is later: the GPU idle until its first kernel is then a host gap, as in
// the measured step (the data loader, the CPU ahead of the first launch).
int select_step(std::vector<TracedOp>& ops, std::vector<int>& steps, const std::optional<int>& want,
                const std::string& path, int64_t& static_memory, const std::map<int, int64_t>& step_start) {
  if (!fill_unknown_steps(steps)) return -1;  // no step information at all: the whole file is the step
  const int chosen = want ? *want : *std::max_element(steps.begin(), steps.end());
  std::vector<TracedOp> kept;
  int64_t previous_end = INT64_MIN;  // last end of an earlier step's kernel
  for (size_t i = 0; i < ops.size(); ++i) {
    if (steps[i] == chosen) {
      kept.push_back(std::move(ops[i]));
    } else if (steps[i] < chosen) {
      static_memory += ops[i].mem_alloc_bytes - ops[i].mem_free_bytes;
      if (ops[i].start_ns >= 0) previous_end = std::max(previous_end, ops[i].start_ns + ops[i].duration_ns);
    }
  }
  static_memory = std::max<int64_t>(0, static_memory);
  if (kept.empty()) throw InputError(path + ": --step " + std::to_string(chosen) + ": no op of this ProfilerStep");
  const bool timed = kept.front().start_ns >= 0;  // -1: the file gives no start times
  int64_t t0 = kept.front().start_ns;
  if (auto it = step_start.find(chosen); it != step_start.end() && timed) {
    t0 = std::min(t0, std::max(it->second, previous_end));
  }
  for (TracedOp& op : kept) {
    if (op.start_ns >= 0 && timed) op.start_ns -= t0;
  }
  ops = std::move(kept);
  return chosen;
}

// "rank<r>.json" or "rank<r>.workload.json" -> r (at most 9 digits read); anything else -> none.
std::optional<int> rank_file_rank(const std::string& name) {
  constexpr std::string_view kPrefix = "rank";
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  size_t i = kPrefix.size();
  const size_t digits_begin = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == digits_begin) return std::nullopt;
  const std::string_view rest = std::string_view(name).substr(i);
  if (rest != ".json" && rest != ".workload.json") return std::nullopt;
  return std::stoi(name.substr(digits_begin, std::min<size_t>(i - digits_begin, 9)));
}

TracedRank parse_program(const JsonField& root, const std::string& path, const WorkloadReadOptions& opt) {
  TracedRank r;
  r.path = path;
  if (root["version"].integer(1) != 1) root["version"].fail("only version 1 is known");
  r.rank = static_cast<int>(root["rank"].integer(0));
  r.world_size = static_cast<int>(root["world_size"].integer_or(-1, 1));
  r.static_memory_bytes = root["static_memory_bytes"].integer_or(0, 0);
  r.eager_sends = !root["chakra"].absent();  // written by `trace import` of Chakra traces
  std::vector<std::string> names;
  const JsonField jn = root["names"];
  for (size_t i = 0; !jn.absent() && i < jn.size(); ++i) names.push_back(jn.at(i).string());
  const JsonField ops = root["ops"];
  std::vector<int> steps;
  for (size_t i = 0; i < ops.size(); ++i) {
    const JsonField o = ops.at(i);
    r.ops.push_back(read_program_op(o, i, names));
    if (!r.ops.back().after.empty()) r.explicit_deps = true;
    steps.push_back(static_cast<int>(o["step"].integer_or(-1, 0)));
  }
  if (r.explicit_deps && opt.step) root["ops"].fail("--step applies to imported traces; this file lists `after` dependencies");
  if (!r.explicit_deps) {
    // Measured ProfilerStep spans (stepsim trace import): start on the ops' clock and duration.
    std::map<int, int64_t> start_of, duration_of;
    const JsonField spans = root["steps"];
    for (size_t i = 0; !spans.absent() && i < spans.size(); ++i) {
      const JsonField sp = spans.at(i);
      const int64_t number = sp["number"].integer(INT32_MIN);
      if (number > INT32_MAX) sp["number"].fail("must be below 2^31");
      duration_of[static_cast<int>(number)] = sp["duration_ns"].integer(0);
      if (duration_of[static_cast<int>(number)] > kMaxStartNs) sp["duration_ns"].fail("must be at most " + std::to_string(kMaxStartNs));
      if (!sp["start_ns"].absent()) start_of[static_cast<int>(number)] = sp["start_ns"].integer(INT64_MIN / 4);
    }
    const int chosen = select_step(r.ops, steps, opt.step, path, r.static_memory_bytes, start_of);
    if (auto it = duration_of.find(chosen); chosen >= 0 && it != duration_of.end()) {
      r.measured_step_s = static_cast<double>(it->second) * 1e-9;
    }
  }
  return r;
}

nlohmann::json parse_rank_json(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not JSON (" + std::string(e.what()) + ")");
  }
}

TracedRank traced_rank_of(const nlohmann::json& doc, const std::string& path, const WorkloadReadOptions& opt) {
  const JsonField root(doc, path, "");
  if (!doc.is_object()) root.fail("must be a JSON object");
  const std::string format = root["format"].string();
  TracedRank r;
  if (format == "stepsim-trace-program") r = parse_program(root, path, opt);
  else if (format == "stepsim.workload") r = parse_tracer_workload(root, path);
  else root["format"].fail("must be stepsim-trace-program or stepsim.workload, not '" + format + "'");
  if (r.world_size == 0 || r.world_size < -1) root["world_size"].fail("must be positive");
  return r;
}

}  // namespace

TracedRank parse_traced_rank(const std::string& text, const std::string& path, const WorkloadReadOptions& opt) {
  return traced_rank_of(parse_rank_json(text, path), path, opt);
}

TracedRank read_traced_rank(const std::string& path, const WorkloadReadOptions& opt) {
  std::string text = spec::read_whole_file(path, "a rank's workload file", kMaxFileBytes);
  nlohmann::json doc = parse_rank_json(text, path);
  std::string().swap(text);  // the tree holds it now: not both at once
  return traced_rank_of(doc, path, opt);
}

std::vector<TracedRank> read_workload_dir(const std::string& dir, const WorkloadReadOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir + ": --workload must be a directory");
  std::map<int, std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::optional<int> rank_of_name = rank_file_rank(name);
    if (!rank_of_name) continue;
    const int rank = *rank_of_name;
    auto [it, fresh] = files.emplace(rank, e.path().string());
    if (!fresh) throw InputError(dir + ": rank " + std::to_string(rank) + " has two files (" + it->second + ", " + name + ")");
  }
  if (ec) throw InputError(dir + ": cannot list (" + ec.message() + ")");
  // The folder's total, before any file is read. A file that is not regular, or above the per-file limit, is named by
  // read_whole_file instead: its own rule is the nearer one.
  uintmax_t total = 0;
  bool one_too_big = false;
  for (const auto& [rank, file] : files) {
    const uintmax_t bytes = fs::is_regular_file(file, ec) ? fs::file_size(file, ec) : 0;
    if (ec) continue;
    total += bytes;
    one_too_big |= bytes > kMaxFileBytes;
  }
  if (!one_too_big) check_workload_size(dir, total);
  if (files.empty()) {
    throw InputError(dir + ": no rank<r>.json or rank<r>.workload.json (write them with `stepsim trace import`, "
                     "`stepsim trace extrapolate` or `python3 -m stepsim.trace`)");
  }
  // DIR/summary.json of an import holds each rank's measured step.
  std::map<int, double> measured;
  if (std::ifstream s(fs::path(dir) / "summary.json"); s) {
    try {
      const nlohmann::json j = nlohmann::json::parse(s);
      for (const auto& r : j.at("ranks")) {
        if (r.contains("step_time_s") && r["step_time_s"].is_number()) measured[r.at("rank").get<int>()] = r["step_time_s"];
      }
    } catch (const nlohmann::json::exception&) {
      // Not an import summary: no measured steps.
    }
  }
  std::vector<TracedRank> out;
  for (const auto& [rank, file] : files) {
    TracedRank tr = read_traced_rank(file, opt);
    if (tr.ops.empty() && tr.comm_only) continue;  // traced with --no-profile: reuse a peer's program instead
    if (tr.rank != rank) {
      throw InputError(file + ": rank: the file says " + std::to_string(tr.rank) + ", its name " + std::to_string(rank));
    }
    if (auto it = measured.find(rank); it != measured.end() && !tr.measured_step_s) tr.measured_step_s = it->second;
    out.push_back(std::move(tr));
  }
  return out;
}

}  // namespace stepsim::trace

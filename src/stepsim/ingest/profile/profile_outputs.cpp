#include "stepsim/ingest/profile/profile_outputs.hpp"
#include "stepsim/io/utf8.hpp"

#include <cstdio>
#include <algorithm>
#include <map>
#include <sstream>

#include "stepsim/ingest/profile/volume_table.hpp"

namespace stepsim::profile {
namespace {

using nlohmann::json;

constexpr size_t kMaxListedUnmatched = 1000;

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Power-of-two bucket label: "<=4KiB" style upper bounds.
std::string bucket(int64_t bytes) {
  int64_t ub = 1;
  while (ub < bytes && ub < (int64_t{1} << 62)) ub <<= 1;
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  int64_t v = ub;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return "<=" + std::to_string(v) + units[u];
}

}  // namespace

json summary_json(const ProfileResult& r) {
  const NcclLog& L = r.log;
  json s;
  s["files"] = L.files;
  s["nccl_version"] = L.nccl_version;
  s["timing"] = r.timing;
  const ParallelismSizes& ps = r.parallelism;
  s["parallelism_sizes"] = {{"tp", std::max(ps.tp, 1)}, {"pp", std::max(ps.pp, 1)}, {"dp", std::max(ps.dp, 1)},
                            {"ep", std::max(ps.ep, 1)}, {"cp", std::max(ps.cp, 1)},
                            {"source", r.parallelism_inferred ? "inferred" : "given"}};
  s["lines"] = L.lines;
  s["garbled_lines"] = L.garbled_lines;
  s["unread_calls"] = L.unread_calls;
  s["garbled_examples"] = L.garbled_examples;
  json by_type = json::object(), bytes_type = json::object();
  std::map<int64_t, std::pair<std::string, int64_t>> hist;  // bucket upper bound → (label, count)
  std::map<int, json> per_rank;
  for (const auto& p : r.ranks) {
    json jr;
    jr["rank"] = p.rank;
    jr["host"] = p.host;
    jr["pid"] = p.pid;
    jr["cuda_dev"] = p.cuda_dev;
    jr["ops"] = json::object();
    jr["bytes"] = json::object();
    jr["volume_by_parallelism"] = json::object();
    jr["calls"] = p.calls.size();
    jr["kernels"] = p.kernels.size();
    jr["matched"] = 0;
    jr["batched_2to1"] = p.batched;
    jr["mismatches"] = p.mismatches;
    jr["clock_offset_ns"] = p.clock_offset_ns;
    per_rank[p.rank] = jr;
  }
  json records = json::array(), unmatched_ops = json::array();
  int64_t unmatched_calls = 0;
  // Where a record's communicator sits, for calibration: its members' distinct hosts and the most on one host
  // (a communicator the profiler could not infer counts as the call's rank alone on its host).
  std::map<int, std::string> host_of;
  for (const auto& p : r.ranks) host_of[p.rank] = p.host;
  auto placement = [&](const ProfiledCall& c, int n) {
    std::map<std::string, int> per_host;
    if (c.comm >= 0) {
      for (int m : r.comms[c.comm].ranks) ++per_host[host_of[m]];
    }
    if (per_host.empty() || static_cast<int>(r.comms[c.comm].ranks.size()) != n) return std::pair{1, n};
    int most = 0;
    for (const auto& [h, k] : per_host) most = std::max(most, k);
    return std::pair{static_cast<int>(per_host.size()), most};
  };
  for (const auto& c : r.calls) {
    const NcclCall& call = L.calls[c.call];
    const std::string op(op_name(call.op));
    const int64_t b = call.bytes();
    by_type[op] = by_type.value(op, int64_t{0}) + 1;
    bytes_type[op] = bytes_type.value(op, int64_t{0}) + b;
    int64_t ub = 1;
    while (ub < b && ub < (int64_t{1} << 62)) ub <<= 1;
    auto& h = hist[ub];
    h.first = bucket(b);
    ++h.second;
    json& jr = per_rank[c.rank];
    jr["ops"][op] = jr["ops"].value(op, int64_t{0}) + 1;
    jr["bytes"][op] = jr["bytes"].value(op, int64_t{0}) + b;
    const std::string par = call_parallelism(r, c);
    jr["volume_by_parallelism"][par] = jr["volume_by_parallelism"].value(par, int64_t{0}) + b;
    if (c.kernel >= 0) {
      jr["matched"] = jr["matched"].get<int64_t>() + 1;
      const NsysKernel& k = r.kernels[c.kernel];
      const int n = c.comm >= 0 ? r.comms[c.comm].size : call.nranks;
      const auto [nodes, per_node] = placement(c, n);
      records.push_back({{"op", op},
                         {"bytes", b},
                         {"size_bytes", algbw_bytes(call, n)},
                         {"nranks", n},
                         {"nodes", nodes},
                         {"ranks_per_node", per_node},
                         {"rank", c.rank},
                         {"duration_us", static_cast<double>(k.end_ns - k.start_ns) / 1e3},
                         {"algorithm", !call.algorithm.empty() ? call.algorithm : (k.nccl ? k.nccl->algorithm : "")},
                         {"protocol", !call.protocol.empty() ? call.protocol : (k.nccl ? k.nccl->protocol : "")},
                         {"algbw_GBps", c.algbw_GBps},
                         {"busbw_GBps", c.busbw_GBps}});
    } else if (r.timing) {
      ++unmatched_calls;
      if (unmatched_ops.size() < kMaxListedUnmatched)
        unmatched_ops.push_back({{"source", "log"},
                                 {"rank", c.rank},
                                 {"op", op},
                                 {"opCount", hex(call.op_count)},
                                 {"bytes", b},
                                 {"file", L.files[call.at.file]},
                                 {"line", call.at.line}});
    }
  }
  for (int64_t k : r.unmatched_kernels) {
    if (unmatched_ops.size() >= kMaxListedUnmatched) break;
    const NsysKernel& kn = r.kernels[k];
    unmatched_ops.push_back({{"source", "nsys"},
                             {"pid", kn.pid},
                             {"kernel", kn.name},
                             {"start_ns", kn.start_ns},
                             {"op", kn.nccl ? std::string(op_name(kn.nccl->op)) : "Unknown"}});
  }
  s["ops_by_type"] = by_type;
  s["bytes_by_type"] = bytes_type;
  json ranks = json::array();
  for (auto& [rank, jr] : per_rank) ranks.push_back(jr);
  s["ranks"] = ranks;
  s["matched"] = r.matched;
  s["unmatched_calls"] = unmatched_calls;
  s["unmatched_kernels"] = r.unmatched_kernels.size();
  s["unmatched"] = unmatched_calls + static_cast<int64_t>(r.unmatched_kernels.size());
  s["unmatched_ops"] = unmatched_ops;
  json h = json::array();
  for (const auto& [ub, v] : hist) h.push_back({{"upper_bytes", ub}, {"label", v.first}, {"count", v.second}});
  s["message_size_histogram"] = h;
  json comms = json::array();
  for (const auto& c : r.comms)
    comms.push_back({{"name", c.name},
                     {"parallelism", c.parallelism},
                     {"size", c.size},
                     {"ranks", c.ranks},  // the members in the log (fewer than size for a log of some ranks)
                     {"bottleneck_link", c.bottleneck_link},
                     {"bottleneck_GBps", c.bottleneck_GBps}});
  s["communicators"] = comms;
  s["records"] = records;
  if (r.model) s["volume_vs_model"] = volume_vs_model_json(r);
  return s;
}

namespace {

// Every trace event, in order, handed to `emit` one at a time.
void for_each_trace_event(const ProfileResult& r, bool nvtx, const std::function<void(json&&)>& emit) {
  const NcclLog& L = r.log;
  struct Sink {
    const std::function<void(json&&)>& emit;
    void push_back(json&& e) const { emit(std::move(e)); }
  } ev{emit};
  for (const auto& p : r.ranks) {
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", p.rank}, {"args", {{"name", "Rank " + std::to_string(p.rank) + " (" + p.host + " GPU " + std::to_string(p.cuda_dev) + ")"}}}});
    ev.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", p.rank}, {"args", {{"sort_index", p.rank + 1}}}});
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", p.rank}, {"tid", 0}, {"args", {{"name", "NCCL ops"}}}});
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", p.rank}, {"tid", 1}, {"args", {{"name", "Parallelism"}}}});
  }
  std::map<int, int64_t> seq;  // logs only: ops laid out in log order, 1 µs apart
  for (const auto& c : r.calls) {
    const NcclCall& call = L.calls[c.call];
    if (r.timing && c.kernel < 0) continue;
    const std::string op(op_name(call.op));
    const std::string par = call_parallelism(r, c);
    json args = {{"Op Count (Hex)", hex(call.op_count)},
                 {"Send Buffer", hex(call.sendbuff)},
                 {"Recv Buffer", hex(call.recvbuff)},
                 {"Root Rank", call.root},
                 {"Communicator Ptr", hex(call.comm)},
                 {"NCCL_Stream_Ptr", hex(call.stream)},
                 {"Element Count", call.count},
                 {"Data Type", std::string(datatype_name(call.datatype))},
                 {"Reduction Op", std::string(redop_name(call.red_op))},
                 {"Message Size (Bytes)", call.bytes()},
                 {"NCCL Algorithm", call.algorithm},
                 {"NCCL Protocol", call.protocol},
                 {"Communicator Size", c.comm >= 0 ? r.comms[c.comm].size : call.nranks},
                 {"Communicator", c.comm >= 0 ? r.comms[c.comm].name : ""},
                 {"Parallelism Type", par},
                 {"Log", L.files[call.at.file] + ":" + std::to_string(call.at.line)}};
    double ts_us, dur_us;
    if (c.kernel >= 0) {
      const NsysKernel& k = r.kernels[c.kernel];
      args["CUDA Kernel"] = k.name;
      args["CUDA Grid"] = "<<" + std::to_string(k.grid[0]) + ", " + std::to_string(k.grid[1]) + ", " + std::to_string(k.grid[2]) + ">>";
      args["CUDA Block"] = "<<" + std::to_string(k.block[0]) + ", " + std::to_string(k.block[1]) + ", " + std::to_string(k.block[2]) + ">>";
      args["Shared Mem (Static)"] = k.static_smem;
      args["Shared Mem (Dynamic)"] = k.dynamic_smem;
      args["Registers Per Thread"] = k.registers;
      args["CUDA Stream ID"] = k.stream;
      args["CUDA Correlation ID"] = k.correlation;
      args["Algo BW (GB/s)"] = c.algbw_GBps;
      args["Bus BW (GB/s)"] = c.busbw_GBps;
      args["Bus Factor"] = c.bus_factor;
      if (c.comm >= 0 && r.comms[c.comm].bottleneck_GBps > 0) {
        args["Theo Algo BW (GB/s)"] = c.theo_algbw_GBps;
        args["Theo Bus BW (GB/s)"] = c.theo_busbw_GBps;
        args["Bottleneck Link"] = r.comms[c.comm].bottleneck_link;
        args["Efficiency (%)"] = c.efficiency_pct;
        args["Bus Efficiency (%)"] = c.bus_efficiency_pct;
      }
      ts_us = static_cast<double>(c.start_ns) / 1e3;
      dur_us = static_cast<double>(c.end_ns - c.start_ns) / 1e3;
    } else {
      args["Timing"] = "none (NCCL log only: ops in log order, 1 us apart)";
      ts_us = static_cast<double>(seq[c.rank]++);
      dur_us = 1;
    }
    ev.push_back({{"ph", "X"}, {"name", op}, {"cat", "nccl"}, {"pid", c.rank}, {"tid", 0}, {"ts", ts_us}, {"dur", dur_us}, {"args", args}});
    ev.push_back({{"ph", "X"}, {"name", par}, {"cat", "parallelism"}, {"pid", c.rank}, {"tid", 1}, {"ts", ts_us}, {"dur", dur_us}});
  }
  if (nvtx && !r.nvtx.empty()) {
    // One shared NVTX track (thesis Fig. 4.3): ranges of the first process that has any (deduplication).
    const int nvtx_pid = -1;
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", nvtx_pid}, {"args", {{"name", "NVTX"}}}});
    ev.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", nvtx_pid}, {"args", {{"sort_index", 0}}}});
    const auto key = std::make_pair(r.nvtx.front().db, r.nvtx.front().pid);
    for (const auto& n : r.nvtx) {
      if (std::make_pair(n.db, n.pid) != key) continue;
      if (n.end_ns < 0)
        ev.push_back({{"ph", "i"}, {"s", "p"}, {"name", n.text}, {"pid", nvtx_pid}, {"tid", 0}, {"ts", n.start_ns / 1e3}});
      else
        ev.push_back({{"ph", "X"}, {"name", n.text}, {"cat", "nvtx"}, {"pid", nvtx_pid}, {"tid", 0}, {"ts", n.start_ns / 1e3}, {"dur", (n.end_ns - n.start_ns) / 1e3}});
    }
  }
}

}  // namespace

json chrome_trace(const ProfileResult& r, bool nvtx) {
  json ev = json::array();
  for_each_trace_event(r, nvtx, [&](json&& e) { ev.push_back(std::move(e)); });
  return {{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
}

void write_chrome_trace(std::ostream& out, const ProfileResult& r, bool nvtx) {
  // nlohmann orders object keys: displayTimeUnit before traceEvents, as chrome_trace(...).dump() writes them.
  out << R"({"displayTimeUnit":"ns","traceEvents":[)";
  bool first = true;
  for_each_trace_event(r, nvtx, [&](json&& e) {
    if (!first) out << ',';
    first = false;
    out << io::json_text(e);
  });
  out << "]}";
}

std::string report_text(const ProfileResult& r) {
  const json s = summary_json(r);
  std::ostringstream o;
  o << "NCCL profile: " << r.log.files.size() << " log file(s), " << r.log.calls.size() << " calls on " << r.ranks.size()
    << " rank(s)";
  if (!r.log.nccl_version.empty()) o << ", NCCL " << r.log.nccl_version;
  o << "\n";
  if (r.log.garbled_lines) o << "skipped " << r.log.garbled_lines << " garbled line(s), e.g. " << r.log.garbled_examples.front() << "\n";
  if (!r.log.unread_calls.empty()) {
    o << "not read:";
    for (const auto& [name, n] : r.log.unread_calls) o << " " << n << " " << name << " call(s)";
    o << " (collectives this profile does not analyse; left out of every table below)\n";
  }
  o << "\nop               calls          bytes\n";
  for (auto& [op, n] : s["ops_by_type"].items()) {
    char line[128];
    std::snprintf(line, sizeof line, "%-14s %7lld %14lld\n", op.c_str(), static_cast<long long>(n.get<int64_t>()),
                  static_cast<long long>(s["bytes_by_type"][op].get<int64_t>()));
    o << line;
  }
  o << "\nrank  host                    calls  kernels  matched  volume by parallelism (bytes)\n";
  for (const auto& jr : s["ranks"]) {
    char line[256];
    std::snprintf(line, sizeof line, "%4d  %-22.22s %6lld %8lld %8lld  ", jr["rank"].get<int>(),
                  jr["host"].get<std::string>().c_str(), static_cast<long long>(jr["calls"].get<int64_t>()),
                  static_cast<long long>(jr["kernels"].get<int64_t>()), static_cast<long long>(jr["matched"].get<int64_t>()));
    o << line;
    for (auto& [par, b] : jr["volume_by_parallelism"].items()) o << par << " " << b.get<int64_t>() << "  ";
    o << "\n";
  }
  if (r.model) o << volume_vs_model_text(s["volume_vs_model"]);
  {
    const ParallelismSizes& ps = r.parallelism;
    o << "\ncommunicators (sizes " << (r.parallelism_inferred ? "inferred" : "given") << ": tp " << std::max(ps.tp, 1)
      << " pp " << std::max(ps.pp, 1) << " dp " << std::max(ps.dp, 1) << " ep " << std::max(ps.ep, 1) << " cp "
      << std::max(ps.cp, 1) << "):\n";
  }
  for (const auto& c : r.comms) {
    o << "  " << c.name << " size " << c.size;
    if (static_cast<int>(c.ranks.size()) != c.size) o << " (" << c.ranks.size() << " in this log)";
    o << " ranks";
    for (int k : c.ranks) o << " " << k;
    if (c.bottleneck_GBps > 0) o << "  bottleneck " << c.bottleneck_link << " " << c.bottleneck_GBps << " GB/s";
    o << "\n";
  }
  o << "\nmessage sizes:";
  for (const auto& h : s["message_size_histogram"]) o << "  " << h["label"].get<std::string>() << ": " << h["count"];
  o << "\n";
  if (r.timing)
    o << "\naligned: " << s["matched"] << " matched, " << s["unmatched_calls"] << " log calls and " << s["unmatched_kernels"]
      << " kernels unmatched\n";
  else
    o << "\nno --nsys export: counts and volumes only (no timing, no bandwidth)\n";
  return o.str();
}

}  // namespace stepsim::profile

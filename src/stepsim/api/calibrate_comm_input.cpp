#include "stepsim/api/calibrate_comm_input.hpp"
#include "stepsim/io/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <map>
#include <set>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/calibrate/nccl_records.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {
namespace {

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string at(const std::string& path, int line) { return path + ":" + std::to_string(line); }

// The catalog name of a GPU as a file prints it ("NVIDIA A100-PCIE-40GB", "A100 (SXM, 8-GPU node)"); "" if none.
std::string catalog_gpu(const std::string& printed) {
  for (std::string s : {printed, printed.substr(0, printed.find(" ("))}) {
    if (s.empty()) continue;
    try {
      return catalog::shipped().gpu(s).name;
    } catch (const InputError&) {
    }
  }
  return "";
}

// "NVLink3/NVSwitch (300 GB/s uni per GPU)" -> 300; 0 when the text has no "N GB/s".
double bandwidth_in(const std::string& text) {
  const size_t p = text.find(" GB/s");
  if (p == std::string::npos) return 0;
  size_t b = p;
  while (b > 0 && (std::isdigit(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '.')) --b;
  try {
    return b < p ? std::stod(text.substr(b, p - b)) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

bool overrides_key(const std::vector<std::string>& overrides, const std::string& prefix) {
  return std::any_of(overrides.begin(), overrides.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

std::string version_core(const std::string& v) { return v.substr(0, v.find('+')); }

struct Collected {
  std::vector<cost::CommPoint> points;
  std::map<std::string, std::string> gpus;           // catalog name -> file:line that says so
  std::map<double, std::string> intra_GBps;          // from CSV interconnect columns
  std::map<std::string, std::string> versions;       // NCCL version -> file
  std::vector<std::string> notes;
  std::vector<std::string> sources;
};

void add_nccl_tests(const std::string& path, const CalibrateOptions& o, Collected& c) {
  const cost::NcclTestsFile f = cost::read_nccl_tests(path);
  std::optional<cost::BenchCollective> forced;
  if (!o.collective.empty()) {
    forced = cost::parse_bench_collective(o.collective);
    if (!forced) throw InputError("--collective " + o.collective + ": unknown; one of all_reduce, all_gather, "
                                  "reduce_scatter, alltoall, broadcast, reduce, sendrecv, gather, scatter");
  }
  std::set<std::string> colls;
  for (const auto& t : f.tables) {
    if (forced && t.collective && *t.collective != *forced) {
      throw InputError(at(path, t.line) + ": the text names " + cost::name_of(*t.collective) + "_perf but --collective says " +
                       cost::name_of(*forced));
    }
    const auto coll = t.collective ? t.collective : forced;
    if (!coll) {
      throw InputError(at(path, t.line) + ": the text names no nccl-tests binary (*_perf); give --collective");
    }
    const int ranks = t.ranks > 0 ? t.ranks : o.gpus;
    if (ranks <= 0) {
      throw InputError(at(path, t.line) + ": no device list ('#  Rank  0 ... device  0 ...') and no num_gpus column; "
                       "give --gpus");
    }
    if (ranks > (1 << 20)) throw InputError(at(path, t.line) + ": " + std::to_string(ranks) + " ranks; at most 1048576");
    int nodes = t.nodes;
    if (nodes <= 0) {
      const int gpn = o.gpus_per_node > 0 ? o.gpus_per_node : 8;
      nodes = (ranks + gpn - 1) / gpn;
      c.notes.push_back(at(path, t.line) + ": no host names; " + std::to_string(nodes) + " node(s) from " +
                        std::to_string(ranks) + " ranks / " + std::to_string(gpn) + " GPUs per node" +
                        (o.gpus_per_node > 0 ? "" : " (default; set --gpus-per-node)"));
    }
    if (nodes > ranks) throw InputError(at(path, t.line) + ": " + std::to_string(nodes) + " nodes for " + std::to_string(ranks) + " ranks");
    if (!t.gpu.empty()) {
      const std::string g = catalog_gpu(t.gpu);
      if (g.empty()) c.notes.push_back(at(path, t.line) + ": GPU '" + t.gpu + "' is not in the GPU catalog; cluster.gpu decides");
      else c.gpus.emplace(g, at(path, t.line));
    }
    if (const double bw = bandwidth_in(t.interconnect); bw > 0) c.intra_GBps.emplace(bw, at(path, t.line));
    colls.insert(cost::name_of(*coll));
    for (const auto& r : t.rows) {
      cost::CommPoint p;
      p.collective = *coll;
      p.bytes = r.bytes;
      p.geometry = {ranks, nodes, (ranks + nodes - 1) / nodes};
      p.time_us = r.time_us;
      p.where = at(path, r.line);
      c.points.push_back(std::move(p));
    }
  }
  if (!f.nccl_version.empty()) c.versions.emplace(version_core(f.nccl_version), path);
  std::string summary = path + ": " + std::to_string(f.row_count()) + " rows";
  if (f.garbled_lines > 0) {
    summary += ", " + std::to_string(f.garbled_lines) + " garbled line(s) skipped (first: line " +
               std::to_string(f.garbled_line_numbers.front()) + ")";
  }
  c.notes.push_back(summary);
  for (size_t i = 0; i < f.mismatches.size() && i < 5; ++i) {
    c.notes.push_back(at(path, f.mismatches[i].line) + ": " + f.mismatches[i].what);
  }
  if (f.mismatches.size() > 5) c.notes.push_back(path + ": " + std::to_string(f.mismatches.size() - 5) + " more rows fail the cross-check");
  std::string cs;
  for (const auto& s : colls) cs += (cs.empty() ? "" : ", ") + s;
  c.sources.push_back(base_name(path) + " (" + cs + ")");
}

void add_records(const std::string& path, Collected& c) {
  const cost::KernelRecords k = cost::read_kernel_records(path);
  std::set<std::string> colls;
  for (const auto& r : k.records) {
    c.points.push_back(cost::comm_point(r, at(path, r.line)));
    colls.insert(cost::name_of(r.collective));
  }
  std::string summary = path + ": " + std::to_string(k.records.size()) + " kernel records";
  if (k.bad_lines > 0) {
    summary += ", " + std::to_string(k.bad_lines) + " bad row(s) skipped (first: line " +
               std::to_string(k.bad_line_numbers.front()) + ")";
  }
  c.notes.push_back(summary);
  std::string cs;
  for (const auto& s : colls) cs += (cs.empty() ? "" : ", ") + s;
  c.sources.push_back(base_name(path) + " (records: " + cs + ")");
}

// A profile summary can hold a record per NCCL call of a long run; beyond this it is not read (its JSON tree is about
// 5x the text: 256 MiB keeps the read under 2 GB).
constexpr size_t kMaxProfileBytes = size_t{256} << 20;

// The aligned records of a `stepsim profile nccl` summary (docs/PROFILER.md): one measured call each.
void add_profile(const std::string& path, Collected& c) {
  const std::string text = spec::read_whole_file(path, "the profile summary", kMaxProfileBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not JSON at byte " + std::to_string(e.byte) + " (a `stepsim profile nccl --summary` file?)");
  }
  if (!j.is_object() || !j.contains("records") || !j["records"].is_array())
    throw InputError(path + ": key records: missing; the summary of `stepsim profile nccl --nsys ...` has it");
  if (j.contains("nccl_version") && j["nccl_version"].is_string() && !j["nccl_version"].get<std::string>().empty())
    c.versions.emplace(version_core(j["nccl_version"].get<std::string>()), path);
  std::set<std::string> colls;
  int bad = 0, first_bad = -1, index = -1;
  for (const auto& r : j["records"]) {
    ++index;
    auto num = [&](const char* k, double lo, double hi, double& out) {
      if (!r.is_object() || !r.contains(k) || !r[k].is_number()) return false;
      out = r[k].get<double>();
      return std::isfinite(out) && out >= lo && out <= hi;
    };
    // A size or duration that is there but no measurement (negative, NaN, or outside what a collective can give:
    // cost::collective_measurement_violation) is refused with its record, as the nccl-tests reader refuses such a
    // row; a record without the fields (an unaligned call) is skipped and counted.
    auto refuse = [&](const std::string& why) {
      throw InputError(path + ": records[" + std::to_string(index) + "]: " + why +
                       "; not a measurement a collective can give");
    };
    for (const char* k : {"size_bytes", "duration_us"}) {
      if (!r.is_object() || !r.contains(k) || !r[k].is_number()) continue;
      const double v = r[k].get<double>();
      if (!std::isfinite(v) || v <= 0) refuse(std::string(k) + " " + io::json_text(r[k]) + " is not positive");
    }
    double bytes = 0, ranks = 0, nodes = 0, per_node = 0, us = 0;
    std::optional<cost::BenchCollective> coll;
    if (r.is_object() && r.contains("op") && r["op"].is_string()) coll = cost::parse_bench_collective(r["op"].get<std::string>());
    bool ok = coll && num("size_bytes", 1, 1e18, bytes) && num("nranks", 1, 1 << 20, ranks) &&
              num("nodes", 1, ranks, nodes) && num("ranks_per_node", std::ceil(ranks / nodes), ranks, per_node) &&
              num("duration_us", 1e-9, 1e12, us);
    cost::CommPoint p;
    if (ok) {
      const std::string why = cost::collective_measurement_violation(static_cast<uint64_t>(bytes), us);
      if (!why.empty()) refuse(why);
      p.collective = *coll;
      p.bytes = static_cast<uint64_t>(bytes);
      p.geometry = {static_cast<int>(ranks), static_cast<int>(nodes), static_cast<int>(per_node)};
      p.time_us = us;
      p.where = path + ": records[" + std::to_string(index) + "]";
      const std::string a = r.value("algorithm", std::string()), pr = r.value("protocol", std::string());
      if (!a.empty()) {
        const auto parsed = cost::parse_algorithm(a);
        ok = parsed.has_value();
        if (ok) p.algorithm = *parsed;
      }
      if (ok && !pr.empty()) {
        p.protocol = cost::parse_protocol(pr);
        ok = p.protocol.has_value();
      }
    }
    if (!ok) {
      if (bad++ == 0) first_bad = index;
      continue;
    }
    colls.insert(cost::name_of(p.collective));
    c.points.push_back(std::move(p));
  }
  if (colls.empty()) throw InputError(path + ": no usable records (aligned calls with op, size_bytes, nranks, nodes, "
                                      "ranks_per_node, duration_us)");
  std::string summary = path + ": " + std::to_string(index + 1 - bad) + " profiled calls";
  if (bad > 0) summary += ", " + std::to_string(bad) + " record(s) skipped (first: records[" + std::to_string(first_bad) + "])";
  c.notes.push_back(summary);
  std::string cs;
  for (const auto& s : colls) cs += (cs.empty() ? "" : ", ") + s;
  c.sources.push_back(base_name(path) + " (profile: " + cs + ")");
}

}  // namespace

CalibrationInput load_calibration_input(const CalibrateOptions& o) {
  if (o.nccl_tests.empty() && o.records.empty() && o.profiles.empty())
    throw InputError("calibrate comm: give --nccl-tests FILE..., --records CSV... or --from-profile SUMMARY.json...");
  if (o.gpus < 0 || o.gpus > (1 << 20)) throw InputError("--gpus " + std::to_string(o.gpus) + ": must be 1..1048576");
  if (o.gpus_per_node < 0 || o.gpus_per_node > (1 << 16)) throw InputError("--gpus-per-node: must be 1..65536");
  Collected c;
  for (const auto& f : o.nccl_tests) add_nccl_tests(f, o, c);
  for (const auto& f : o.records) add_records(f, c);
  for (const auto& f : o.profiles) add_profile(f, c);

  CalibrationInput in;
  in.files = o.nccl_tests;
  in.files.insert(in.files.end(), o.records.begin(), o.records.end());
  in.files.insert(in.files.end(), o.profiles.begin(), o.profiles.end());
  for (const auto& s : c.sources) in.source += (in.source.empty() ? "" : "; ") + s;

  if (!o.nccl_version.empty()) {
    in.nccl_version = version_core(o.nccl_version);
  } else if (c.versions.size() > 1) {
    auto it = c.versions.begin();
    const auto first = *it++;
    throw InputError(it->second + ": NCCL " + it->first + ", but " + first.second + " ran NCCL " + first.first +
                     "; calibrate them separately or give --nccl-version");
  } else if (!c.versions.empty()) {
    in.nccl_version = c.versions.begin()->first;
  }

  // The machine: GPUs per node from the option or the data; enough nodes for the largest group.
  int gpn = o.gpus_per_node, max_nodes = 1;
  for (const auto& p : c.points) {
    if (o.gpus_per_node > 0 && p.geometry.ranks_per_node > o.gpus_per_node) {
      throw InputError(p.where + ": " + std::to_string(p.geometry.ranks_per_node) + " ranks on one node exceed --gpus-per-node " +
                       std::to_string(o.gpus_per_node));
    }
    if (o.gpus_per_node <= 0) gpn = std::max(gpn, p.geometry.ranks_per_node);
    max_nodes = std::max(max_nodes, p.geometry.nodes);
  }
  gpn = std::max(gpn, 1);

  // The measured GPU and link rate come first, so that the cluster file and --set can still override them.
  std::vector<std::string> overrides;
  if (c.gpus.size() > 1) {
    auto it = c.gpus.begin();
    const auto first = *it++;
    throw InputError(it->second + ": measured on " + it->first + ", but " + first.second + " on " + first.first +
                     "; calibrate each GPU separately");
  }
  if (!c.gpus.empty() && !overrides_key(o.overrides, "cluster.gpu=")) {
    overrides.push_back("cluster.gpu=" + c.gpus.begin()->first);
    c.notes.push_back("cluster.gpu " + c.gpus.begin()->first + " from " + c.gpus.begin()->second);
  }
  if (!c.intra_GBps.empty() && o.cluster_path.empty() && !overrides_key(o.overrides, "cluster.intra_node")) {
    const auto& [bw, where] = *c.intra_GBps.begin();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", bw);
    overrides.push_back(std::string("cluster.intra_node.bandwidth_GBps=") + buf);
    c.notes.push_back(std::string("cluster.intra_node.bandwidth_GBps ") + buf + " from the interconnect column at " + where);
  }
  overrides.insert(overrides.end(), o.overrides.begin(), o.overrides.end());
  in.cluster = spec::load_cluster(catalog::shipped().gpus, o.cluster_path, gpn * max_nodes, gpn, overrides);
  in.points = std::move(c.points);
  in.notes = std::move(c.notes);
  return in;
}

}  // namespace stepsim::api

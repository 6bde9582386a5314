// nccl-tests output -> NcclTestsFile. The text format is what nccl-tests' src/common.cu prints (header, device list,
// column header, one row per size); NCCL's own log lines may be interleaved anywhere and are skipped.
#include "stepsim/calibrate/nccl_tests_reader.hpp"

#include <cstdio>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "stepsim/io/csv_table.hpp"
#include "stepsim/calibrate/nccl_tests_text.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

std::string normalized_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

const char* name_of(BenchCollective c) {
  switch (c) {
    case BenchCollective::AllReduce: return "all_reduce";
    case BenchCollective::AllGather: return "all_gather";
    case BenchCollective::ReduceScatter: return "reduce_scatter";
    case BenchCollective::AllToAll: return "alltoall";
    case BenchCollective::Broadcast: return "broadcast";
    case BenchCollective::Reduce: return "reduce";
    case BenchCollective::SendRecv: return "sendrecv";
    case BenchCollective::Gather: return "gather";
    case BenchCollective::Scatter: return "scatter";
  }
  return "?";
}

std::optional<BenchCollective> parse_bench_collective(std::string_view s) {
  std::string k = normalized_name(s);
  if (k.size() > 4 && k.compare(k.size() - 4, 4, "perf") == 0) k.resize(k.size() - 4);
  if (k.size() > 4 && k.compare(0, 4, "nccl") == 0) k.erase(0, 4);
  static const std::pair<const char*, BenchCollective> kNames[] = {
      {"allreduce", BenchCollective::AllReduce},        {"allgather", BenchCollective::AllGather},
      {"reducescatter", BenchCollective::ReduceScatter}, {"alltoall", BenchCollective::AllToAll},
      {"broadcast", BenchCollective::Broadcast},        {"reduce", BenchCollective::Reduce},
      {"sendrecv", BenchCollective::SendRecv},          {"send", BenchCollective::SendRecv},
      {"recv", BenchCollective::SendRecv},              {"gather", BenchCollective::Gather},
      {"scatter", BenchCollective::Scatter}};
  for (const auto& [name, c] : kNames) {
    if (k == name) return c;
  }
  return std::nullopt;
}

double bench_bus_factor(BenchCollective c, int n) {
  const double r = n > 0 ? static_cast<double>(n) : 1.0;
  switch (c) {
    case BenchCollective::AllReduce: return 2 * (r - 1) / r;
    case BenchCollective::AllGather:
    case BenchCollective::ReduceScatter:
    case BenchCollective::AllToAll:
    case BenchCollective::Gather:
    case BenchCollective::Scatter: return (r - 1) / r;
    case BenchCollective::Broadcast:
    case BenchCollective::Reduce:
    case BenchCollective::SendRecv: return 1.0;
  }
  return 1.0;
}

void check_measurement_text(std::string_view text, const std::string& path) {
  size_t control = 0;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    if (c == 0) {
      throw InputError(path + ":" + std::to_string(line) + ": binary data (NUL byte at offset " + std::to_string(i) +
                       "), not nccl-tests text or CSV");
    }
    // Tabs, line ends, form feeds and ANSI colour escapes occur in real logs; other control bytes do not.
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b) ++control;
  }
  if (control * 100 > text.size()) {
    throw InputError(path + ": binary data (" + std::to_string(control) + " control bytes in " +
                     std::to_string(text.size()) + "), not nccl-tests text or CSV");
  }
}

std::string read_measurement_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a measurement file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the measurement file");
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxMeasurementFileBytes) {
      throw InputError(path + ": larger than the " + std::to_string(kMaxMeasurementFileBytes >> 20) +
                       " MiB limit for measurement files");
    }
  }
  check_measurement_text(text, path);
  return text;
}

size_t NcclTestsFile::row_count() const {
  size_t n = 0;
  for (const auto& t : tables) n += t.rows.size();
  return n;
}

namespace {

// algbw = bytes / time and busbw = algbw x factor, each within the rounding of the printed digits.
void cross_check(const NcclTestsTable& t, std::vector<NcclTestsIssue>& out) {
  auto overlap = [](double lo1, double hi1, double lo2, double hi2) {
    const double slack = 1e-9 * (1 + std::max(std::fabs(hi1), std::fabs(hi2)));
    return lo1 <= hi2 + slack && lo2 <= hi1 + slack;
  };
  for (const auto& r : t.rows) {
    if (!r.wrong.empty()) {
      double w = 0;
      if (parse_number(r.wrong, w) && w > 0) {
        out.push_back({r.line, r.wrong + " wrong elements: the run failed nccl-tests' result check"});
      }
    }
    if (!r.has_bandwidths || r.bytes == 0 || r.time_us <= 0) continue;
    const double S = static_cast<double>(r.bytes);
    const double t_lo = r.time_us - r.time_tol, t_hi = r.time_us + r.time_tol;
    const double a_lo = S / (t_hi * 1e3);
    const double a_hi = t_lo > 0 ? S / (t_lo * 1e3) : std::numeric_limits<double>::infinity();
    const double p_lo = r.algbw_GBps - r.algbw_tol, p_hi = r.algbw_GBps + r.algbw_tol;
    if (!overlap(a_lo, a_hi, p_lo, p_hi)) {
      std::ostringstream m;
      m << "algbw " << r.algbw_GBps << " GB/s disagrees with size/time = " << r.bytes << " B / " << r.time_us
        << " us = " << S / (r.time_us * 1e3) << " GB/s";
      out.push_back({r.line, m.str()});
      continue;
    }
    if (t.ranks <= 0 || !t.collective) continue;
    const double f = bench_bus_factor(*t.collective, t.ranks);
    const double b_lo = f * std::max(a_lo, p_lo), b_hi = f * std::min(a_hi, p_hi);
    if (!overlap(b_lo, b_hi, r.busbw_GBps - r.busbw_tol, r.busbw_GBps + r.busbw_tol)) {
      std::ostringstream m;
      m << "busbw " << r.busbw_GBps << " GB/s is not algbw x " << f << " (" << name_of(*t.collective) << ", "
        << t.ranks << " ranks): wrong collective or rank count?";
      out.push_back({r.line, m.str()});
    }
  }
}

NcclTestsFile parse_csv_results(std::string_view text, const std::string& path) {
  const CsvTable csv = parse_csv(text, path);
  auto col = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (const int c = csv.column(n); c >= 0) return c;
    }
    return -1;
  };
  const int c_coll = col({"collective"}), c_size = col({"message_size_bytes", "size_bytes", "bytes"});
  const int c_time = col({"time_us"}), c_gpus = col({"num_gpus", "ranks"}), c_nodes = col({"num_nodes", "nodes"});
  const int c_gpu = col({"gpu"}), c_ic = col({"intra_node_interconnect", "interconnect"});
  const int c_alg = col({"algbw_gbps"}), c_bus = col({"busbw_gbps"});
  const int c_count = col({"count"}), c_type = col({"type"});
  if (c_coll < 0 || c_size < 0 || c_time < 0) {
    throw InputError(path + ":" + std::to_string(csv.header_line) +
                     ": CSV header needs the columns collective, message_size_bytes and time_us");
  }
  NcclTestsFile f;
  f.path = path;
  auto garbled = [&](int line) {
    ++f.garbled_lines;
    f.garbled_line_numbers.push_back(line);
  };
  for (int l : csv.bad_lines) garbled(l);
  for (const auto& row : csv.rows) {
    const auto& v = row.fields;
    NcclTestsRow r;
    r.line = row.line;
    const auto coll = parse_bench_collective(v[c_coll]);
    int ranks = 0, nodes = 0;
    refuse_impossible_number(path, row.line, "time_us", v[c_time], 0);
    refuse_impossible_number(path, row.line, "message_size_bytes", v[c_size], 0);
    if (c_gpus >= 0) refuse_impossible_number(path, row.line, "num_gpus", v[c_gpus], 1);
    if (c_nodes >= 0) refuse_impossible_number(path, row.line, "num_nodes", v[c_nodes], 1);
    if (!coll || !parse_u64(v[c_size], r.bytes) || !parse_number(v[c_time], r.time_us, &r.time_tol) ||
        (c_gpus >= 0 && (!parse_int(v[c_gpus], ranks) || ranks > (1 << 20))) ||
        (c_nodes >= 0 && (!parse_int(v[c_nodes], nodes) || (ranks > 0 && nodes > ranks)))) {
      garbled(row.line);
      continue;
    }
    if (c_count >= 0 && !parse_u64(v[c_count], r.count)) r.count = 0;
    if (c_type >= 0) r.type = v[c_type];
    r.has_bandwidths = c_alg >= 0 && c_bus >= 0 && parse_number(v[c_alg], r.algbw_GBps, &r.algbw_tol) &&
                       parse_number(v[c_bus], r.busbw_GBps, &r.busbw_tol);
    const std::string gpu = c_gpu >= 0 ? v[c_gpu] : "", ic = c_ic >= 0 ? v[c_ic] : "";
    // Rows of one run share collective, ranks, nodes and hardware; a CSV may hold several runs.
    auto it = std::find_if(f.tables.begin(), f.tables.end(), [&](const NcclTestsTable& t) {
      return t.collective == coll && t.ranks == ranks && t.nodes == nodes && t.gpu == gpu && t.interconnect == ic;
    });
    if (it == f.tables.end()) {
      NcclTestsTable t;
      t.line = row.line;
      t.collective = coll;
      t.ranks = ranks;
      t.nodes = nodes;
      t.gpu = gpu;
      t.interconnect = ic;
      f.tables.push_back(std::move(t));
      it = f.tables.end() - 1;
    }
    check_collective_measurement(path, r.line, r.bytes, r.time_us);
    it->rows.push_back(std::move(r));
  }
  std::sort(f.garbled_line_numbers.begin(), f.garbled_line_numbers.end());
  if (f.garbled_line_numbers.size() > 20) f.garbled_line_numbers.resize(20);
  return f;
}

bool looks_like_csv(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string head(line.substr(0, 11));
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return head == "collective,";
  }
  return false;
}

}  // namespace

NcclTestsFile parse_nccl_tests(std::string_view text, const std::string& path) {
  check_measurement_text(text, path);
  NcclTestsFile f = looks_like_csv(text) ? parse_csv_results(text, path) : parse_nccl_tests_text(text, path);
  for (const auto& t : f.tables) cross_check(t, f.mismatches);
  std::stable_sort(f.mismatches.begin(), f.mismatches.end(),
                   [](const NcclTestsIssue& a, const NcclTestsIssue& b) { return a.line < b.line; });
  if (f.row_count() == 0) {
    std::string msg = path + ": no nccl-tests result rows (expected the table an nccl-tests *_perf binary prints, " +
                      "or a CSV with columns collective,message_size_bytes,...,time_us)";
    if (f.garbled_lines > 0) {
      msg += "; " + std::to_string(f.garbled_lines) + " line(s) looked like rows but did not parse, the first at line " +
             std::to_string(f.garbled_line_numbers.front());
    }
    throw InputError(msg);
  }
  return f;
}

NcclTestsFile read_nccl_tests(const std::string& path) { return parse_nccl_tests(read_measurement_file(path), path); }

void refuse_impossible_number(const std::string& path, int line, const std::string& column, const std::string& cell,
                              int min) {
  std::string t;
  for (char c : cell) {
    if (!std::isspace(static_cast<unsigned char>(c))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.erase(0, 1);
  const bool non_finite = t == "nan" || t == "inf" || t == "infinity";
  double x = 0;
  const bool below = !non_finite && parse_number(cell, x) && x < min;
  if (non_finite || below) {
    throw InputError(path + ":" + std::to_string(line) + ": column " + column + ": '" + cell + "' is not a measurement "
                     "(must be a finite number of at least " + std::to_string(min) + ")");
  }
}

std::string collective_measurement_violation(uint64_t bytes, double time_us) {
  constexpr uint64_t kMaxBytes = uint64_t{1} << 48;
  constexpr double kMinUs = 0.01, kMaxUs = 1e9, kMaxAlgbwGBps = 1e5;
  if (bytes > kMaxBytes) return "message size " + std::to_string(bytes) + " bytes is over 2^48";
  char buf[128];
  if (!(time_us >= kMinUs && time_us <= kMaxUs)) {
    std::snprintf(buf, sizeof buf, "time %.6g us is outside 0.01 .. 1e9 us", time_us);
    return buf;
  }
  const double algbw = static_cast<double>(bytes) / (time_us * 1e3);  // GB/s
  if (algbw > kMaxAlgbwGBps) {
    std::snprintf(buf, sizeof buf, "%llu bytes in %.6g us is %.6g GB/s, over 1e5 GB/s",
                  static_cast<unsigned long long>(bytes), time_us, algbw);
    return buf;
  }
  return "";
}

void check_collective_measurement(const std::string& path, int line, uint64_t bytes, double time_us) {
  const std::string why = collective_measurement_violation(bytes, time_us);
  if (!why.empty())
    throw InputError(path + ":" + std::to_string(line) + ": " + why + "; not a measurement a collective can give");
}

}  // namespace stepsim::cost

#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stepsim/cost/collective/collective_algorithm.hpp"
#include "stepsim/io/csv_table.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"

namespace stepsim::overlap {
namespace {

enum Col {
  kGpu, kKernel, kKernelType, kIsolatedUs, kSm, kMem, kDram, kOcc, kL1, kL2,
  kCollective, kAlgorithm, kProtocol, kBucket, kChannels, kSlowdown, kSource, kNumCols
};

const std::array<const char*, kNumCols> kNames = {
    "gpu", "kernel", "kernel_type", "isolated_us", "sm_throughput_pct", "memory_throughput_pct",
    "dram_throughput_pct", "achieved_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct", "collective",
    "algorithm", "protocol", "bucket_bytes", "channels", "slowdown", "source"};

bool optional_column(int c) { return c == kKernel || c == kSource; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Field values are echoed in messages; keep the message one short line whatever the input holds.
std::string shown(std::string_view v) {
  std::string out;
  for (char c : v.substr(0, 40)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  if (v.size() > 40) out += "...";
  return out;
}

struct RowParser {
  const std::string& path;
  int line;
  const std::vector<std::string>& fields;
  const std::array<int, kNumCols>& index;

  std::string_view field(int c) const { return index[c] < 0 ? std::string_view{} : fields[index[c]]; }

  [[noreturn]] void fail(int c, const std::string& rule) const {
    throw InputError(path + ":" + std::to_string(line) + ": column " + kNames[c] + ": '" + shown(field(c)) + "' " +
                     rule);
  }

  double number(int c, double lo, double hi, bool lo_open) const {
    const std::string_view v = field(c);
    double x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x)) fail(c, "is not a number");
    if ((lo_open ? x <= lo : x < lo) || x > hi) {
      std::ostringstream rule;
      rule << "is out of range " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
      fail(c, rule.str());
    }
    return x;
  }

  double percent(int c) const { return field(c).empty() ? NAN : number(c, 0, 100, false); }

  uint64_t integer(int c, uint64_t lo, uint64_t hi) const {
    const std::string_view v = field(c);
    uint64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) fail(c, "is not a whole number");
    if (x < lo || x > hi) fail(c, "is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }

  std::string text(int c, size_t max_len, bool required) const {
    const std::string_view v = field(c);
    if (required && v.empty()) fail(c, "is empty");
    if (v.size() > max_len) fail(c, "is longer than " + std::to_string(max_len) + " characters");
    for (char ch : v) {
      if (!std::isprint(static_cast<unsigned char>(ch))) fail(c, "holds a control or non-ASCII character");
    }
    return std::string(v);
  }

  std::string word(int c) const {
    const std::string w = lower(text(c, 64, true));
    for (char ch : w) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') {
        fail(c, "is not a word (letters, digits, _ - .)");
      }
    }
    return w;
  }

  SlowdownRow row() const {
    SlowdownRow r;
    r.line = line;
    r.gpu = text(kGpu, 64, true);
    r.kernel = text(kKernel, 256, false);
    r.kernel_type = word(kKernelType);
    r.isolated_us = number(kIsolatedUs, 0, 1e9, true);
    r.sm_throughput_pct = percent(kSm);
    r.memory_throughput_pct = percent(kMem);
    r.dram_throughput_pct = percent(kDram);
    r.achieved_occupancy_pct = percent(kOcc);
    r.l1_hit_rate_pct = percent(kL1);
    r.l2_hit_rate_pct = percent(kL2);
    r.collective = canonical_collective(field(kCollective));
    if (r.collective.empty()) {
      fail(kCollective, "is not all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or sendrecv");
    }
    if (!field(kAlgorithm).empty()) {
      const std::string a = lower(field(kAlgorithm));
      bool known = false;
      for (auto alg : {cost::Algorithm::Ring, cost::Algorithm::Tree, cost::Algorithm::Nvls, cost::Algorithm::NvlsTree,
                       cost::Algorithm::Pat, cost::Algorithm::Direct, cost::Algorithm::CollNetDirect,
                       cost::Algorithm::CollNetChain}) {
        known = known || a == cost::name_of(alg);
      }
      if (!known) fail(kAlgorithm, "is not ring, tree, nvls, nvls_tree, pat, direct, collnet_direct, collnet_chain or empty");
      r.algorithm = a;
    }
    if (!field(kProtocol).empty()) {
      const std::string p = lower(field(kProtocol));
      if (p == "ll") r.protocol = "LL";
      else if (p == "ll128") r.protocol = "LL128";
      else if (p == "simple") r.protocol = "Simple";
      else fail(kProtocol, "is not LL, LL128, Simple or empty");
    }
    r.bucket_bytes = integer(kBucket, 1, uint64_t{1} << 50);
    r.channels = field(kChannels).empty() ? 0 : static_cast<int>(integer(kChannels, 1, 1024));
    r.slowdown = number(kSlowdown, -1, 1000, true);
    r.source = text(kSource, 64, false);
    return r;
  }
};

// The header's column of each known name (-1 when absent); InputError for unknown, repeated or missing columns.
std::array<int, kNumCols> header_index(const std::vector<std::string>& header, const std::string& path, int line) {
  std::array<int, kNumCols> index;
  index.fill(-1);
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string name = lower(header[i]);
    const auto it = std::find(kNames.begin(), kNames.end(), name);
    const std::string where = path + ":" + std::to_string(line) + ": header column " + std::to_string(i + 1);
    if (it == kNames.end()) throw InputError(where + " '" + shown(name) + "' is not a dataset column (docs/SLOWDOWN-MODEL.md)");
    const int c = static_cast<int>(it - kNames.begin());
    if (index[c] >= 0) throw InputError(where + " '" + name + "' appears twice");
    index[c] = static_cast<int>(i);
  }
  for (int c = 0; c < kNumCols; ++c) {
    if (index[c] < 0 && !optional_column(c)) {
      throw InputError(path + ":" + std::to_string(line) + ": header lacks the required column '" + kNames[c] + "'");
    }
  }
  return index;
}

void append_number(std::string& out, double x) {
  if (std::isnan(x)) return;  // empty cell = not measured
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);  // shortest text that reads back to the same double
  out.append(buf, res.ptr);
}

void append_text(std::string& out, const std::string& s) {
  // Quoted when a reader would otherwise split, trim, or take the line for a comment.
  const bool plain = s.find_first_of(",\"") == std::string::npos && (s.empty() || (s.front() != '#' &&
                     s.front() != ' ' && s.back() != ' ' && s.front() != '\t' && s.back() != '\t'));
  if (plain) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  out += '"';
}

}  // namespace

const std::vector<std::string>& slowdown_columns() {
  static const std::vector<std::string> k(kNames.begin(), kNames.end());
  return k;
}

std::string canonical_collective(std::string_view s) {
  const std::string k = lower(s);
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "sendrecv"}) {
    if (k == c) return c;
  }
  if (k == "allreduce") return "all_reduce";
  if (k == "allgather") return "all_gather";
  if (k == "reducescatter") return "reduce_scatter";
  if (k == "alltoall") return "all_to_all";
  if (k == "send_recv" || k == "p2p") return "sendrecv";
  return "";
}

SlowdownDataset parse_slowdown_csv(std::string_view text, const std::string& path) {
  if (text.size() > kMaxDatasetBytes) {
    throw InputError(path + ": slowdown dataset is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                     std::to_string(kMaxDatasetBytes));
  }
  if (text.find('\0') != std::string_view::npos) throw InputError(path + ": binary data, not a slowdown dataset CSV");
  SlowdownDataset ds;
  ds.path = path;
  std::array<int, kNumCols> index{};
  size_t width = 0;  // fields per row, 0 until the header is read
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const auto fields = cost::split_csv_line(line);
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (!fields) throw InputError(where + "unterminated quote");
    if (width == 0) {
      index = header_index(*fields, path, line_no);
      width = fields->size();
      continue;
    }
    if (fields->size() != width) {
      throw InputError(where + std::to_string(fields->size()) + " fields, the header has " + std::to_string(width));
    }
    if (ds.rows.size() >= kMaxDatasetRows) {
      throw InputError(where + "more than " + std::to_string(kMaxDatasetRows) + " rows, the limit of a dataset");
    }
    ds.rows.push_back(RowParser{path, line_no, *fields, index}.row());
  }
  if (width == 0) throw InputError(path + ": no header line (docs/SLOWDOWN-MODEL.md lists the columns)");
  if (ds.rows.empty()) throw InputError(path + ": no data rows after the header");
  return ds;
}

SlowdownDataset read_slowdown_csv(const std::string& path) {
  return parse_slowdown_csv(spec::read_whole_file(path, "slowdown dataset", kMaxDatasetBytes), path);
}

std::string write_slowdown_csv(const std::vector<SlowdownRow>& rows) {
  std::string out;
  for (int c = 0; c < kNumCols; ++c) out += std::string(c ? "," : "") + kNames[c];
  out += '\n';
  for (const SlowdownRow& r : rows) {
    append_text(out, r.gpu);
    out += ',';
    append_text(out, r.kernel);
    out += ',' + r.kernel_type + ',';
    append_number(out, r.isolated_us);
    for (double m : {r.sm_throughput_pct, r.memory_throughput_pct, r.dram_throughput_pct, r.achieved_occupancy_pct,
                     r.l1_hit_rate_pct, r.l2_hit_rate_pct}) {
      out += ',';
      append_number(out, m);
    }
    out += ',' + r.collective + ',' + r.algorithm + ',' + r.protocol + ',' + std::to_string(r.bucket_bytes) + ',';
    if (r.channels > 0) out += std::to_string(r.channels);
    out += ',';
    append_number(out, r.slowdown);
    out += ',';
    append_text(out, r.source);
    out += '\n';
  }
  return out;
}

}  // namespace stepsim::overlap

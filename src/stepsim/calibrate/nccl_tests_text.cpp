// The text nccl-tests prints (src/common.cu): "# nThread ..." header, "#  Rank  0 Group  0 Pid ... on HOST device 0
// [busid] NAME" device list, a two-line column header, one row per size (out-of-place then in-place), "# Avg bus
// bandwidth". Launchers prefix lines ("[1,0]<stdout>:", "0: "); NCCL_DEBUG lines may sit anywhere, even between
// rows. Several runs in one file become several tables.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "stepsim/calibrate/nccl_tests_text.hpp"

namespace stepsim::cost {

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_number(std::string_view s, double& out, double* half_unit) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  // Only plain decimal spellings: from_chars would also take "inf", "nan" and hex floats.
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E') {
      return false;
    }
  }
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::general);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(out)) return false;
  if (half_unit) {
    const size_t e = s.find_first_of("eE");
    const std::string_view mant = s.substr(0, e);
    const size_t dot = mant.find('.');
    const int decimals = dot == std::string_view::npos ? 0 : static_cast<int>(mant.size() - dot - 1);
    int exp = 0;
    if (e != std::string_view::npos) {
      std::string_view es = s.substr(e + 1);
      if (!es.empty() && es.front() == '+') es.remove_prefix(1);
      if (!parse_int(es, exp)) return false;
    }
    *half_unit = 0.5 * std::pow(10.0, std::clamp(exp - decimals, -300, 300));
  }
  return true;
}

namespace {

using Tokens = std::vector<std::string_view>;

Tokens split_ws(std::string_view s) {
  Tokens out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

bool is_identifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Where each field sits in a result row.
struct ColumnLayout {
  size_t tokens = 0;
  int size = -1, count = -1, type = -1, redop = -1, root = -1, time = -1, algbw = -1, busbw = -1, wrong = -1;
  int ip_time = -1, ip_algbw = -1, ip_busbw = -1;
};

// From the column header ("size count type redop root time algbw busbw #wrong time algbw busbw #wrong"; older
// versions have no root and "error" for "#wrong"). nullopt when it is not one.
std::optional<ColumnLayout> layout_from_header(const Tokens& t) {
  ColumnLayout L;
  L.tokens = t.size();
  bool in_place = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string_view k = t[i];
    const int idx = static_cast<int>(i);
    if (k == "time") {
      if (L.time >= 0) in_place = true;
      (in_place ? L.ip_time : L.time) = idx;
    } else if (k == "algbw") {
      (in_place ? L.ip_algbw : L.algbw) = idx;
    } else if (k == "busbw") {
      (in_place ? L.ip_busbw : L.busbw) = idx;
    } else if (k == "#wrong" || k == "wrong" || k == "error" || k == "#error") {
      if (!in_place) L.wrong = idx;
    } else if (k == "size") {
      L.size = idx;
    } else if (k == "count") {
      L.count = idx;
    } else if (k == "type") {
      L.type = idx;
    } else if (k == "redop") {
      L.redop = idx;
    } else if (k == "root") {
      L.root = idx;
    }
  }
  if (L.size < 0 || L.time < 0 || L.algbw < 0 || L.busbw < 0) return std::nullopt;
  return L;
}

// Without a column header (the top of the file was cut): the two layouts nccl-tests has printed.
std::optional<ColumnLayout> default_layout(const Tokens& t) {
  ColumnLayout L;
  L.tokens = t.size();
  L.size = 0;
  L.count = 1;
  L.type = 2;
  if (t.size() == 13) {
    L.redop = 3;
    L.root = 4;
    L.time = 5, L.algbw = 6, L.busbw = 7, L.wrong = 8, L.ip_time = 9, L.ip_algbw = 10, L.ip_busbw = 11;
    return L;
  }
  if (t.size() == 12) {
    int v = 0;
    (parse_int(t[3], v) ? L.root : L.redop) = 3;
    L.time = 4, L.algbw = 5, L.busbw = 6, L.wrong = 7, L.ip_time = 8, L.ip_algbw = 9, L.ip_busbw = 10;
    return L;
  }
  return std::nullopt;
}

std::optional<NcclTestsRow> parse_row(const Tokens& t, const ColumnLayout& L, int line) {
  if (t.size() != L.tokens) return std::nullopt;
  NcclTestsRow r;
  r.line = line;
  if (!parse_u64(t[L.size], r.bytes)) return std::nullopt;
  if (L.count >= 0 && !parse_u64(t[L.count], r.count)) return std::nullopt;
  if (L.type >= 0) {
    if (!is_identifier(t[L.type])) return std::nullopt;
    r.type = t[L.type];
  }
  if (L.redop >= 0) {
    if (!is_identifier(t[L.redop])) return std::nullopt;
    r.redop = t[L.redop];
  }
  if (L.root >= 0 && !parse_int(t[L.root], r.root)) return std::nullopt;
  if (!parse_number(t[L.time], r.time_us, &r.time_tol) || r.time_us < 0) return std::nullopt;
  if (!parse_number(t[L.algbw], r.algbw_GBps, &r.algbw_tol)) return std::nullopt;
  if (!parse_number(t[L.busbw], r.busbw_GBps, &r.busbw_tol)) return std::nullopt;
  if (L.wrong >= 0) {
    double w = 0;
    if (t[L.wrong] != "N/A" && !parse_number(t[L.wrong], w)) return std::nullopt;
    r.wrong = t[L.wrong];
  }
  if (L.ip_time >= 0) {
    double v = 0;
    if (!parse_number(t[L.ip_time], v) || v < 0) return std::nullopt;
    r.inplace_time_us = v;
  }
  if (L.ip_algbw >= 0) {
    double v = 0;
    if (!parse_number(t[L.ip_algbw], v)) return std::nullopt;
    r.inplace_algbw_GBps = v;
  }
  if (L.ip_busbw >= 0) {
    double v = 0;
    if (!parse_number(t[L.ip_busbw], v)) return std::nullopt;
    r.inplace_busbw_GBps = v;
  }
  return r;
}

// "[1,0]<stdout>:" (Open MPI --tag-output), "[0] " (mpirun), "0: " (srun --label).
std::string_view strip_launcher_prefix(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    size_t i = 1;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == ',')) ++i;
    if (i > 1 && i < s.size() && s[i] == ']') {
      s.remove_prefix(i + 1);
      for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
        if (s.substr(0, tag.size()) == tag) s.remove_prefix(tag.size());
      }
      return s;
    }
  }
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i > 0 && i + 1 < s.size() && s[i] == ':' && s[i + 1] == ' ') s.remove_prefix(i + 2);
  return s;
}

// "2.16.5" from "NCCL version 2.16.5+cuda11.8".
std::string version_after(std::string_view s, size_t pos) {
  size_t e = pos;
  while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '.')) ++e;
  std::string v(s.substr(pos, e - pos));
  while (!v.empty() && v.back() == '.') v.pop_back();
  const auto dots = std::count(v.begin(), v.end(), '.');
  return dots >= 1 && dots <= 3 && std::isdigit(static_cast<unsigned char>(v.front())) ? v : "";
}

// "nccl-library=21806" (nccl-tests' own header): NCCL_VERSION_CODE, major*10000 + minor*100 + patch since 2.9.
std::string version_of_code(std::string_view digits) {
  int code = 0;
  if (!parse_int(digits, code) || code < 1000) return "";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// The last "<name>_perf" on a line that names an nccl-tests binary.
std::optional<BenchCollective> perf_binary_in(std::string_view s) {
  std::optional<BenchCollective> found;
  for (size_t p = s.find("_perf"); p != std::string_view::npos; p = s.find("_perf", p + 1)) {
    size_t b = p;
    while (b > 0 && (std::isalpha(static_cast<unsigned char>(s[b - 1])) || s[b - 1] == '_')) --b;
    const size_t e = p + 5;
    if (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) continue;
    if (auto c = parse_bench_collective(s.substr(b, p - b))) found = c;
  }
  return found;
}

class TextParser {
 public:
  explicit TextParser(const std::string& path) { f_.path = path; }

  void line(std::string_view raw, int no) {
    std::string_view s = strip_launcher_prefix(raw);
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i == s.size()) return;
    if (s[i] == '#') return comment(s.substr(i + 1), no);
    const Tokens tok = split_ws(s);
    if (starts_like_row(tok.front())) return row(tok, s, no);
    const bool nccl_log = s.find("NCCL INFO") != std::string_view::npos ||
                          s.find("NCCL WARN") != std::string_view::npos ||
                          s.find("NCCL TRACE") != std::string_view::npos;
    version(s);
    if (!nccl_log) mention(s);
  }

  NcclTestsFile finish() {
    close_table();
    if (f_.nccl_version.empty()) f_.nccl_version = library_version_;
    return std::move(f_);
  }

 private:
  // A number first (a negative one too: row() refuses it as an impossible size, rather than the line vanishing).
  static bool starts_like_row(std::string_view t) {
    if (t.size() > 1 && t.front() == '-') t.remove_prefix(1);
    if (t.empty() || !std::isdigit(static_cast<unsigned char>(t.front()))) return false;
    return std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
  }

  void open_table(int no) {
    close_table();
    cur_.emplace();
    cur_->line = no;
    cur_->collective = pending_;
    layout_.reset();
    ranks_.clear();
    hosts_.clear();
  }

  void close_table() {
    if (cur_ && !cur_->rows.empty()) {
      cur_->ranks = static_cast<int>(ranks_.size());
      cur_->nodes = static_cast<int>(hosts_.size());
      f_.tables.push_back(std::move(*cur_));
    }
    cur_.reset();
  }

  // A device list, column header or "# nThread" after rows starts the next run.
  void ensure_fresh_table(int no) {
    if (!cur_ || !cur_->rows.empty()) open_table(no);
  }

  void garbled(int no) {
    ++f_.garbled_lines;
    if (f_.garbled_line_numbers.size() < 20) f_.garbled_line_numbers.push_back(no);
  }

  void row(const Tokens& tok, std::string_view s, int no) {
    if (s.find("NCCL ") != std::string_view::npos) return garbled(no);  // a row cut by a log line
    const std::optional<ColumnLayout> L = layout_ ? layout_ : default_layout(tok);
    // A negative size or time in a row that is otherwise one is an impossible measurement, not a garbled line.
    if (L && tok.size() == L->tokens) {
      refuse_impossible_number(f_.path, no, "size", std::string(tok[L->size]), 0);
      refuse_impossible_number(f_.path, no, "time", std::string(tok[L->time]), 0);
    }
    std::optional<NcclTestsRow> r = L ? parse_row(tok, *L, no) : std::nullopt;
    if (!r) return garbled(no);
    check_collective_measurement(f_.path, no, r->bytes, r->time_us);
    if (!cur_) open_table(no);
    cur_->rows.push_back(std::move(*r));
  }

  void comment(std::string_view body, int no) {
    const Tokens tok = split_ws(body);
    if (tok.empty()) return;
    if (tok[0] == "nThread") {
      open_table(no);
    } else if (tok[0] == "Collective" && tok.size() >= 4 && tok[1] == "test" && tok[2] == "starting:") {
      pending_ = parse_bench_collective(tok[3]);
      if (cur_ && !cur_->rows.empty()) close_table();
      if (cur_) cur_->collective = pending_;
    } else if (tok[0] == "Rank" && tok.size() >= 2) {
      device(tok, body, no);
    } else if (std::find(tok.begin(), tok.end(), "size") != tok.end() &&
               std::find(tok.begin(), tok.end(), "algbw") != tok.end()) {
      if (auto L = layout_from_header(tok)) {
        ensure_fresh_table(no);
        layout_ = L;
      }
    } else if (tok[0] == "Avg" && tok.size() >= 5 && tok[1] == "bus" && tok[2] == "bandwidth") {
      double v = 0;
      const std::string_view last = tok.back();
      if (cur_ && !cur_->rows.empty() && parse_number(last, v)) cur_->avg_busbw_GBps = v;
    } else {
      version(body);
      mention(body);
    }
  }

  // "Rank  0 Group  0 Pid 101855 on  n013 device  0 [0000:81:00] NVIDIA A100-PCIE-40GB" (no Group before 2.11).
  void device(const Tokens& tok, std::string_view body, int no) {
    int rank = 0;
    if (!parse_int(tok[1], rank) || rank < 0) return;
    const auto on = std::find(tok.begin(), tok.end(), "on");
    if (on == tok.end() || on + 1 == tok.end()) return;
    if (cur_ && !cur_->rows.empty()) open_table(no);
    if (!cur_) open_table(no);
    ranks_.insert(rank);
    hosts_.insert(std::string(*(on + 1)));
    // The GPU name is everything after the bracketed bus id.
    const size_t close = body.find(']');
    if (cur_->gpu.empty() && close != std::string_view::npos) {
      std::string_view name = body.substr(close + 1);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
      cur_->gpu = name;
    }
  }

  void version(std::string_view s) {
    if (const size_t p = s.find("NCCL version "); p != std::string_view::npos && f_.nccl_version.empty()) {
      f_.nccl_version = version_after(s, p + 13);
    }
    if (const size_t p = s.find("nccl-library="); p != std::string_view::npos && library_version_.empty()) {
      size_t e = p + 13;
      while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
      library_version_ = version_of_code(s.substr(p + 13, e - p - 13));
    }
  }

  void mention(std::string_view s) {
    if (auto c = perf_binary_in(s)) {
      pending_ = c;
      if (cur_ && cur_->rows.empty()) cur_->collective = c;
    }
  }

  NcclTestsFile f_;
  std::optional<NcclTestsTable> cur_;
  std::optional<ColumnLayout> layout_;
  std::set<int> ranks_;
  std::set<std::string> hosts_;
  std::optional<BenchCollective> pending_;
  std::string library_version_;
};

}  // namespace

NcclTestsFile parse_nccl_tests_text(std::string_view text, const std::string& path) {
  TextParser p(path);
  size_t pos = 0;
  int no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    p.line(line, ++no);
  }
  return p.finish();
}

}  // namespace stepsim::cost

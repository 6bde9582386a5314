// Reader of published-runs CSV files: strict about numbers (a typo in a measured figure must not become a silent
// zero), lenient about column order and extra columns.
#include "stepsim/validate/published_run.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "stepsim/io/csv_table.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"

namespace stepsim::validate {
namespace {

constexpr size_t kMaxRows = 100000;

class RowReader {
 public:
  RowReader(const cost::CsvTable& t, const cost::CsvTable::Row& r, const std::string& source)
      : t_(t), r_(r), source_(source) {}

  std::string text(const char* col) const {
    const int i = t_.column(col);
    return i < 0 ? std::string() : r_.fields[static_cast<size_t>(i)];
  }
  [[noreturn]] void fail(const char* col, const std::string& rule) const {
    throw InputError(source_ + ":" + std::to_string(r_.line) + ": column " + col + ": " + rule);
  }
  std::optional<double> number(const char* col, double lo, double hi) const {
    const std::string s = text(col);
    if (s.empty()) return std::nullopt;
    double v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) fail(col, "'" + s + "' is not a number");
    if (v < lo || v > hi) fail(col, "'" + s + "' is outside " + fmt(lo) + " .. " + fmt(hi));
    return v;
  }
  std::optional<int64_t> integer(const char* col, int64_t lo, int64_t hi) const {
    const std::optional<double> v = number(col, static_cast<double>(lo), static_cast<double>(hi));
    if (!v) return std::nullopt;
    if (*v != std::floor(*v)) fail(col, "'" + text(col) + "' is not a whole number");
    return static_cast<int64_t>(*v);
  }
  int64_t required(const char* col, int64_t lo, int64_t hi) const {
    const std::optional<int64_t> v = integer(col, lo, hi);
    if (!v) fail(col, "is required");
    return *v;
  }
  std::optional<int> small(const char* col, int lo, int hi) const {
    const std::optional<int64_t> v = integer(col, lo, hi);
    return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
  }
  std::optional<bool> boolean(const char* col) const {
    const std::string s = text(col);
    if (s.empty()) return std::nullopt;
    if (s == "true" || s == "yes" || s == "1") return true;
    if (s == "false" || s == "no" || s == "0") return false;
    fail(col, "'" + s + "' is not true/false");
  }
  // One word of a fixed list, in any case (blank: ""), returned lower-cased; any other word names the list.
  std::string choice(const char* col, std::initializer_list<const char*> names) const {
    const std::string s = lower_case(text(col));
    if (s.empty()) return s;
    std::string list;
    size_t i = 0;
    for (const char* n : names) {
      if (s == n) return s;
      list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(n);
      ++i;
    }
    fail(col, "'" + s + "' is not " + list);
  }

 private:
  static std::string fmt(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }
  const cost::CsvTable& t_;
  const cost::CsvTable::Row& r_;
  const std::string& source_;
};

// Sources write precision and recompute in many ways ("BF16", "bf16 mixed", "FP8 (delayed)", "full (uniform)"): the
// first known name in the cell decides, the most specific first; "?" when none is there.
std::string precision_of(const std::string& cell) {
  if (cell.empty()) return "";
  for (const char* name : {"nvfp4", "mxfp8", "fp8", "bf16", "fp16", "fp32", "tf32", "16bit", "16-bit"}) {
    if (cell.find(name) != std::string::npos) {
      const std::string n = name;
      return n == "tf32" ? "fp32" : n == "16-bit" ? "16bit" : n;
    }
  }
  return "?";
}

std::string recompute_of(const std::string& cell) {
  if (cell.empty() || cell == "no" || cell.find("none") != std::string::npos) return cell.empty() ? "" : "none";
  if (cell.find("selective") != std::string::npos) return "selective";
  if (cell.find("full") != std::string::npos || cell.find("uniform") != std::string::npos ||
      cell.find("block") != std::string::npos || cell == "yes") {
    return "full";
  }
  return "?";
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// A peak memory written in a row's notes: "Memory 82.4 GiB", "peak memory 80 GB" (any case; 1-6 digits, at most 4
// decimals, one space each side; "GiB" is 2^30 bytes, "GB" and any other spelling 10^9). Scanned by hand: a regular
// expression over every row's notes was most of the reader's time.
struct Figure {
  double value = 0;
  bool gib = false;
  size_t end = 0;  // one past the unit
};

// " 82.4 GiB" at `at`, the unit ending a word.
std::optional<Figure> figure_after(const std::string& t, size_t at) {
  auto digits = [&](size_t& i, size_t most) {
    const size_t start = i;
    while (i < t.size() && i - start < most + 1 && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    return i - start;
  };
  size_t i = at;
  if (i >= t.size() || t[i] != ' ') return std::nullopt;
  const size_t number = ++i;
  const size_t whole = digits(i, 6);
  if (whole < 1 || whole > 6) return std::nullopt;
  if (i < t.size() && t[i] == '.') {
    size_t j = i + 1;
    const size_t decimals = digits(j, 4);
    if (decimals >= 1 && decimals <= 4) i = j;
  }
  const size_t number_end = i;
  if (i >= t.size() || t[i] != ' ') return std::nullopt;
  ++i;
  Figure f;
  for (std::string_view unit : {"GiB", "GB"}) {
    if (i + unit.size() <= t.size() && equal_ignoring_case(std::string_view(t).substr(i, unit.size()), unit) &&
        (i + unit.size() == t.size() || !is_word_char(t[i + unit.size()]))) {
      f.gib = t.compare(i, unit.size(), "GiB") == 0;
      f.end = i + unit.size();
      f.value = std::stod(t.substr(number, number_end - number));
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

size_t find_word(const std::string& text, std::string_view word, size_t from) {
  for (size_t at = from; at + word.size() <= text.size(); ++at) {
    const bool starts_word = at == 0 || !is_word_char(text[at - 1]);
    if (starts_word && equal_ignoring_case(std::string_view(text).substr(at, word.size()), word)) return at;
  }
  return std::string::npos;
}

std::optional<double> peak_memory_in_notes(const std::string& notes, std::string* from, bool logged_in_gib) {
  std::optional<double> bytes;
  int found = 0;
  for (size_t at = find_word(notes, "memory", 0); at != std::string::npos; at = find_word(notes, "memory", at + 1)) {
    const std::optional<Figure> f = figure_after(notes, at + 6);
    if (!f) continue;
    // "peak memory 80 GiB" is one figure, named from "peak".
    const bool peak = at >= 5 && equal_ignoring_case(notes.substr(at - 5, 5), "peak ") &&
                      (at == 5 || !is_word_char(notes[at - 6]));
    const size_t begin = peak ? at - 5 : at;
    ++found;
    bytes = f->value * (f->gib || logged_in_gib ? kGiB : 1e9);
    if (from) {
      const bool read_as_gib = logged_in_gib && !f->gib;
      *from = "notes: '" + notes.substr(begin, f->end - begin) + "'" + (read_as_gib ? " (GiB as logged)" : "");
    }
    at = f->end - 1;
  }
  if (found == 1) return bytes;
  if (from) from->clear();
  return std::nullopt;
}

std::vector<PublishedRun> parse_published_runs(const std::string& text, const std::string& source) {
  const cost::CsvTable t = cost::parse_csv(text, source);
  if (t.header.empty()) throw InputError(source + ": no header line (a published-runs CSV starts with its column names)");
  for (const char* col : {"id", "layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len", "gpu", "num_gpus", "tp",
                          "pp", "global_batch"}) {
    if (t.column(col) < 0) {
      throw InputError(source + ":" + std::to_string(t.header_line) + ": column " + col + ": is required in the header");
    }
  }
  if (!t.bad_lines.empty()) {
    throw InputError(source + ":" + std::to_string(t.bad_lines.front()) + ": has " +
                     "another number of fields than the header (or an unterminated quote)");
  }
  if (t.rows.size() > kMaxRows) {
    throw InputError(source + ": " + std::to_string(t.rows.size()) + " rows, more than the limit of " +
                     std::to_string(kMaxRows));
  }
  constexpr int64_t kBig = int64_t{1} << 30;
  std::vector<PublishedRun> runs;
  for (const auto& row : t.rows) {
    const RowReader r(t, row, source);
    PublishedRun run;
    run.line = row.line;
    run.id = r.text("id");
    if (run.id.empty()) r.fail("id", "is required");
    run.source = r.text("source");
    run.model = r.text("model");
    run.layers = static_cast<int>(r.required("layers", 1, 100000));
    run.hidden = r.required("hidden", 1, kBig);
    run.heads = static_cast<int>(r.required("heads", 1, 1 << 16));
    run.kv_heads = r.small("kv_heads", 1, 1 << 16).value_or(0);
    run.ffn_hidden = r.required("ffn_hidden", 1, kBig);
    run.vocab = r.required("vocab", 1, kBig);
    run.seq_len = r.required("seq_len", 1, kBig);
    run.moe_experts = r.small("moe_experts", 1, 1 << 16).value_or(0);
    run.moe_topk = r.small("moe_topk", 1, 1 << 16).value_or(0);
    run.moe_ffn_hidden = r.integer("moe_ffn_hidden", 1, kBig).value_or(0);
    if ((run.moe_experts > 0) != (run.moe_topk > 0)) r.fail("moe_topk", "moe_experts and moe_topk are given together");
    run.gpu = r.text("gpu");
    if (run.gpu.empty()) r.fail("gpu", "is required");
    run.num_gpus = static_cast<int>(r.required("num_gpus", 1, 1 << 20));
    run.gpus_per_node = r.small("gpus_per_node", 1, 1 << 16);
    run.intra_node_bw_GBps = r.number("intra_node_bw_GBps", 1e-3, 1e6);
    run.inter_node_bw_Gbps_per_gpu = r.number("inter_node_bw_Gbps_per_gpu", 1e-3, 1e6);
    run.tp = static_cast<int>(r.required("tp", 1, 1 << 20));
    run.pp = static_cast<int>(r.required("pp", 1, 1 << 20));
    run.cp = r.small("cp", 1, 1 << 20).value_or(1);
    run.ep = r.small("ep", 1, 1 << 20).value_or(1);
    run.dp = r.small("dp", 1, 1 << 20);
    run.vp = r.small("vp", 1, 4096);
    run.micro_batch = r.small("micro_batch", 1, 1 << 16);
    run.global_batch = r.required("global_batch", 1, kBig);
    run.precision = precision_of(lower_case(r.text("precision")));
    if (run.precision == "?") r.fail("precision", "'" + r.text("precision") + "' names none of nvfp4, mxfp8, fp8, bf16, fp16, 16bit, fp32/tf32");
    run.recompute = recompute_of(lower_case(r.text("recompute")));
    if (run.recompute == "?") {
      r.fail("recompute", "'" + r.text("recompute") + "' names none of full (uniform, block), selective, none or blank");
    }
    run.dist_optimizer = r.text("dist_optimizer");
    run.step_time_s = r.number("step_time_s", 1e-9, 1e9);
    run.tflops_per_gpu = r.number("tflops_per_gpu", 1e-9, 1e9);
    run.mfu = r.number("mfu", 1e-9, 1.0);
    run.tokens_per_s_per_gpu = r.number("tokens_per_s_per_gpu", 1e-9, 1e12);
    if (!run.step_time_s && !run.tflops_per_gpu && !run.mfu && !run.tokens_per_s_per_gpu) {
      r.fail("step_time_s", "the row gives no measurement (step_time_s, tflops_per_gpu, mfu or tokens_per_s_per_gpu)");
    }
    run.notes = r.text("notes");
    run.flop_convention = r.choice("flop_convention", {"model", "hardware"});
    run.sequence_parallel = r.boolean("sequence_parallel");
    run.tp_comm_overlap = r.boolean("tp_comm_overlap");
    run.overlap_moe_expert_parallel_comm = r.boolean("overlap_moe_expert_parallel_comm");
    run.delay_wgrad_compute = r.boolean("delay_wgrad_compute");
    run.token_dispatcher = r.choice("token_dispatcher", {"alltoall", "allgather", "flex"});
    run.optimizer_state_dtype = r.choice("optimizer_state_dtype", {"fp32", "bf16", "fp16"});
    run.attention_backend = r.choice("attention_backend", {"flash", "unfused"});
    run.pipeline_layout = r.text("pipeline_layout");
    // One cell, the modules separated by spaces (a recipe's list, e.g. "mla_up_proj mlp"); the job checks the names.
    {
      std::istringstream modules(r.text("recompute_modules"));
      for (std::string m; modules >> m;) run.recompute_modules.push_back(lower_case(m));
      if (!run.recompute_modules.empty() && !run.recompute.empty() && run.recompute != "selective") {
        r.fail("recompute_modules", "applies to selective recompute only, but recompute is '" + run.recompute + "'");
      }
    }
    run.zero_stage = r.small("zero_stage", 0, 3);
    run.framework = r.choice("framework", {"megatron", "torchtitan", "composer", "deepspeed", "jax"});
    if (run.framework.empty()) {
      run.framework = framework_of_row(run);
      run.framework_inferred = !run.framework.empty();
    }
    if (const auto gib = r.number("peak_memory_GiB", 1e-3, 1e6)) {
      run.peak_memory_bytes = *gib * kGiB;
      run.peak_memory_from = "column peak_memory_GiB";
    } else {
      // torchtitan logs its peak only in GiB (components/metrics.py; torchao's parse_torchtitan_logs.py reads that
      // line into its "Peak Memory (GB)" tables).
      run.peak_memory_bytes = peak_memory_in_notes(run.notes, &run.peak_memory_from, run.framework == "torchtitan");
    }
    runs.push_back(std::move(run));
  }
  if (runs.empty()) throw InputError(source + ": no rows");
  return runs;
}

std::string framework_of_row(const PublishedRun& run) {
  if (!run.framework.empty()) return run.framework;
  return lower_case(run.dist_optimizer).find("deepspeed") != std::string::npos ? "deepspeed" : "";
}

bool framework_costed_as_megatron(const std::string& framework) {
  return framework == "deepspeed" || framework == "composer" || framework == "jax";
}

bool deepspeed_plan(const PublishedRun& run) {
  if (run.framework != "deepspeed" || run.framework_inferred) return false;
  const std::string dopt = lower_case(run.dist_optimizer);
  const bool zero3 = run.zero_stage ? *run.zero_stage == 3
                                    : dopt.find("zero-3") != std::string::npos || dopt.find("zero3") != std::string::npos;
  return zero3 && run.tp == 1 && run.pp == 1 && run.cp == 1 && run.moe_experts == 0;
}

std::string lower_case(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<PublishedRun> read_published_runs(const std::string& path) {
  return parse_published_runs(spec::read_text_file(path, "published-runs CSV"), path);
}

}  // namespace stepsim::validate

#include "stepsim/io/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/eventhandler.h>

#include "stepsim/io/input_error.hpp"

namespace stepsim::spec {

bool parse_int64(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty() || s.size() > 64) return false;
  char* end = nullptr;
  const std::string z(s);
  out = std::strtod(z.c_str(), &end);
  return end == z.c_str() + z.size() && std::isfinite(out);
}

StrictSection::StrictSection(const YAML::Node& node, std::string path, std::string source)
    : node_(node), path_(std::move(path)), source_(std::move(source)) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) {
    throw InputError(source_ + ": key " + (path_.empty() ? "<root>" : path_) + ": must be a mapping");
  }
  if (node_ && node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.IsScalar()) index_.emplace(kv.first.Scalar(), kv.second);  // the first of equal keys, as yaml-cpp
    }
  }
}

YAML::Node StrictSection::value(const std::string& key) const {
  const auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  return node_ && node_.IsMap() ? node_[key] : YAML::Node();
}

std::string StrictSection::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void StrictSection::fail(const std::string& key, const std::string& rule) const {
  // A rule that failed while a required key was absent most likely failed on its stand-in value: report the cause.
  if (!missing_.empty() && key != missing_) {
    const std::string typo = closest_unknown_to(missing_);
    if (!typo.empty()) unknown(typo);
    throw InputError(source_ + ": key " + key_path(missing_) + ": is required");
  }
  throw InputError(source_ + ": key " + key_path(key) + ": " + rule);
}

namespace {

// The letter-by-letter comparisons below are on data, not on the parsers' branches: libFuzzer's coverage of them only
// slows the fuzzers (every unknown key is compared with hundreds of known ones) and fills their corpora with inputs
// that differ in a letter. Plain arrays and pointers keep library calls (which would be instrumented) out of the loops.
#if defined(__clang__)
#define STEPSIM_NOT_FUZZ_COVERED __attribute__((no_sanitize("coverage")))
#else
#define STEPSIM_NOT_FUZZ_COVERED
#endif

constexpr size_t kLongestComparedKey = 64;

size_t min3(size_t x, size_t y, size_t z) { return x < y ? (x < z ? x : z) : (y < z ? y : z); }

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring), or any value >= limit
// once the distance is known to reach it: the comparison stops early and keeps three rows instead of the whole table.
// Both strings at most kLongestComparedKey letters.
STEPSIM_NOT_FUZZ_COVERED size_t edit_distance_below(const char* a, size_t n, const char* b, size_t m, size_t limit) {
  if ((n > m ? n - m : m - n) >= limit) return limit;
  size_t rows[3][kLongestComparedKey + 1];
  size_t* before = rows[0];
  size_t* prev = rows[1];
  size_t* cur = rows[2];
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    size_t row_min = i;
    for (size_t j = 1; j <= m; ++j) {
      size_t d = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1));
      const bool swapped = i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1];
      if (swapped && before[j - 2] + 1 < d) d = before[j - 2] + 1;
      cur[j] = d;
      if (d < row_min) row_min = d;
    }
    // A row's entries are at least the smaller of the row before's minimum and the one two back plus one (a
    // transposition), and the row before's minimum is at least this one's minus one (a deletion): once a row is at the
    // limit, every later one is.
    if (row_min >= limit) return limit;
    size_t* oldest = before;
    before = prev;
    prev = cur;
    cur = oldest;
  }
  return prev[m];
}

// A lower bound of the edit distance from the letters alone: an edit changes at most one letter's count each way (a
// transposition none), so the distance is at least the larger of the letters `a` has beyond `b` and those `b` has
// beyond `a`. Linear in b, where the distance is quadratic: most known keys are ruled out here. `a_counts` holds a's
// letter counts and is left as it was.
STEPSIM_NOT_FUZZ_COVERED size_t letter_bound(int* a_counts, size_t a_size, const char* b, size_t m) {
  size_t matched = 0;
  for (size_t j = 0; j < m; ++j) matched += a_counts[static_cast<unsigned char>(b[j])]-- > 0 ? 1 : 0;
  for (size_t j = 0; j < m; ++j) ++a_counts[static_cast<unsigned char>(b[j])];
  const size_t surplus = a_size - matched, deficit = m - matched;
  return surplus > deficit ? surplus : deficit;
}

}  // namespace

std::string did_you_mean(const std::string& key, const std::set<std::string>& known) {
  // Keys longer than any job key are not compared (bounded work for hostile input).
  if (key.size() > kLongestComparedKey) return "";
  int counts[256] = {};
  for (unsigned char c : key) ++counts[c];
  std::string best;
  size_t best_d = std::max<size_t>(2, key.size() / 3) + 1;
  for (const std::string& k : known) {
    if (k.size() > kLongestComparedKey || letter_bound(counts, key.size(), k.data(), k.size()) >= best_d) continue;
    const size_t dist = edit_distance_below(key.data(), key.size(), k.data(), k.size(), best_d);
    if (dist < best_d) best_d = dist, best = k;
  }
  return best;
}

void StrictSection::unknown(const std::string& key) const {
  std::set<std::string> known(used_.begin(), used_.end());  // sorted: of keys as close, the first is suggested
  known.insert(asked_.begin(), asked_.end());
  known.erase(key);
  const std::string hint = did_you_mean(key, known);
  throw InputError(source_ + ": unknown key " + key_path(key) +
                   (hint.empty() ? "" : " (did you mean " + key_path(hint) + "?)"));
}

// An unread key of this section within typo distance of `key`.
std::string StrictSection::closest_unknown_to(const std::string& key) const {
  if (!node_ || !node_.IsMap()) return "";
  std::set<std::string> unread;
  // The first 256 unread keys: a section has a few dozen keys, a hostile file may have millions.
  for (auto it = node_.begin(); it != node_.end() && unread.size() < 256; ++it) {
    if (it->first.IsScalar() && !used_.count(it->first.Scalar())) unread.insert(it->first.Scalar());
  }
  return did_you_mean(key, unread);
}

bool StrictSection::has(const std::string& key) const {
  asked_.insert(key);
  const auto it = index_.find(key);
  return it != index_.end() && it->second.IsDefined() && !it->second.IsNull();
}

std::string StrictSection::scalar(const std::string& key) {
  used_.insert(key);
  const YAML::Node v = value(key);
  if (!v.IsScalar()) fail(key, "must be a single value, not a list or mapping");
  return v.Scalar();
}

int64_t StrictSection::get_int(const std::string& key, int64_t def, int64_t min, int64_t max) {
  if (!has(key)) {
    used_.insert(key);
    return def;
  }
  const std::string v = scalar(key);
  int64_t x = 0;
  if (!parse_int64(v, x)) {
    double d = 0;
    // Accept integral floats written as 1e9 / 2.0, refuse 1.5.
    if (parse_double(v, d) && d == std::floor(d) && std::fabs(d) < 9e18) {
      x = static_cast<int64_t>(d);
    } else {
      fail(key, "must be an integer, got '" + v + "'");
    }
  }
  if (x < min || x > max) {
    fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(x));
  }
  return x;
}

int64_t StrictSection::require_int(const std::string& key, int64_t min, int64_t max) {
  if (!has(key)) {
    if (missing_.empty()) missing_ = key;
    used_.insert(key);
    return min;
  }
  return get_int(key, 0, min, max);
}

double StrictSection::get_double(const std::string& key, double def, double min, double max) {
  if (!has(key)) {
    used_.insert(key);
    return def;
  }
  const std::string v = scalar(key);
  double x = 0;
  if (!parse_double(v, x)) fail(key, "must be a number, got '" + v + "'");
  if (!(x >= min && x <= max)) {
    fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + v);
  }
  return x;
}

bool parse_bool(const std::string& s, bool& out) {
  if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") {
    out = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") {
    out = false;
    return true;
  }
  return false;
}

bool StrictSection::get_bool(const std::string& key, bool def) {
  if (!has(key)) {
    used_.insert(key);
    return def;
  }
  const std::string v = scalar(key);
  bool b = false;
  if (!parse_bool(v, b)) fail(key, "must be true or false, got '" + v + "'");
  return b;
}

std::string StrictSection::get_string(const std::string& key, const std::string& def) {
  if (!has(key)) {
    used_.insert(key);
    return def;
  }
  return scalar(key);
}

YAML::Node StrictSection::child(const std::string& key) {
  used_.insert(key);
  if (!node_ || !node_.IsMap()) return YAML::Node();
  return value(key);
}

std::vector<int64_t> StrictSection::get_int_list(const std::string& key, int64_t min, int64_t max) {
  used_.insert(key);
  std::vector<int64_t> out;
  if (!has(key)) return out;
  const YAML::Node v = value(key);
  if (!v.IsSequence()) fail(key, "must be a list of integers");
  if (v.size() > 1u << 20) fail(key, "list too long");
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t x = 0;
    if (!v[i].IsScalar() || !parse_int64(v[i].Scalar(), x)) {
      fail(key, "entry " + std::to_string(i) + " must be an integer");
    }
    if (x < min || x > max) {
      fail(key, "entry " + std::to_string(i) + " must be in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "], got " + std::to_string(x));
    }
    out.push_back(x);
  }
  return out;
}

std::map<int64_t, double> StrictSection::get_int_double_map(const std::string& key, int64_t kmin, int64_t kmax,
                                                            double vmin, double vmax) {
  used_.insert(key);
  std::map<int64_t, double> out;
  if (!has(key)) return out;
  const YAML::Node v = value(key);
  if (!v.IsMap()) fail(key, "must be a mapping {rank: factor}");
  for (auto it = v.begin(); it != v.end(); ++it) {
    int64_t k = 0;
    double x = 0;
    if (!it->first.IsScalar() || !parse_int64(it->first.Scalar(), k) || k < kmin || k > kmax) {
      fail(key, "keys must be integers in [" + std::to_string(kmin) + ", " + std::to_string(kmax) + "]");
    }
    if (!it->second.IsScalar() || !parse_double(it->second.Scalar(), x) || !(x >= vmin && x <= vmax)) {
      fail(key + "." + std::to_string(k), "must be a number in [" + std::to_string(vmin) + ", " +
                                               std::to_string(vmax) + "]");
    }
    out[k] = x;
  }
  return out;
}

void StrictSection::finish() const {
  if (node_ && node_.IsMap()) {
    for (const auto& kv : node_) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("<non-scalar key>");
      if (!used_.count(k)) unknown(k);
    }
  }
  if (!missing_.empty()) throw InputError(source_ + ": key " + key_path(missing_) + ": is required");
}

// yaml-cpp keeps both entries of a repeated key and reads the first; a user who wrote the key twice meant one of
// them, so it is an error naming the line of the second. The walk also counts the nodes as every later reader sees
// them, aliases expanded, against a budget of two nodes per byte of the text (without aliases no two nodes take less
// than a byte): nested aliases that would expand a small file into millions of nodes (an "alias bomb") are refused
// here, in time linear in the file, instead of hanging whichever reader walks the tree next.
static void reject_duplicate_keys(const YAML::Node& node, const std::string& source, int64_t& budget, int depth = 0) {
  if (depth > 64) return;  // parse_yaml refused deeper nesting already
  if (--budget < 0) {
    throw InputError(source + ": malformed YAML: its aliases expand it past two nodes per byte of its text or " +
                     std::to_string(kMaxYamlNodes) + " nodes (an alias bomb?); write the values out");
  }
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && !seen.insert(it->first.Scalar()).second) {
        throw InputError(source + ":" + std::to_string(it->first.Mark().line + 1) + ": key '" + it->first.Scalar() +
                         "' appears twice in one mapping");
      }
      reject_duplicate_keys(it->second, source, budget, depth + 1);
    }
  } else if (node.IsSequence()) {
    for (const auto& child : node) reject_duplicate_keys(child, source, budget, depth + 1);
  }
}

int64_t tree_positive_integer(const YAML::Node& v, const std::string& key, const std::string& source, int log2_max) {
  int64_t x = 0;
  try {
    x = v.IsScalar() ? v.as<int64_t>() : 0;
  } catch (const YAML::Exception&) {
    x = 0;
  }
  if (x < 1 || x > (int64_t{1} << log2_max)) {
    throw InputError(source + ": " + key + ": must be an integer in [1, 2^" + std::to_string(log2_max) + "]");
  }
  return x;
}

void check_yaml_tree(const YAML::Node& root, size_t text_bytes, const std::string& source) {
  // "{a,b}": a key and a null value in two bytes.
  int64_t budget = std::min<int64_t>(2 * static_cast<int64_t>(text_bytes) + 64, kMaxYamlNodes);
  reject_duplicate_keys(root, source, budget);
}

namespace {

// Counts the nodes a YAML text holds (as written, aliases once) without building them: yaml-cpp's tree takes about
// 460 bytes per node, so a 16 MiB file of one long list ("[1,1,1,...]", 8 M nodes) would take 3.7 GiB to load.
class NodeCounter : public YAML::EventHandler {
 public:
  struct TooMany {};
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { count(); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { count(); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { count(); }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    count();
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    count();
  }
  void OnMapEnd() override {}

 private:
  void count() {
    if (++nodes_ > kMaxYamlNodes) throw TooMany{};
  }
  int64_t nodes_ = 0;
};

// A count over the text's bytes (data, not a parser's branches: kept out of the fuzzers' coverage, like the letter
// loops above, where seven compares a byte were a tenth of a YAML fuzzer's time).
STEPSIM_NOT_FUZZ_COVERED int64_t yaml_separators(const std::string& text) {
  int64_t separators = 1;
  for (char c : text) separators += c == ',' || c == ':' || c == '-' || c == '[' || c == '{' || c == '?' || c == '\n';
  return separators;
}

void refuse_too_many_nodes(const std::string& text, const std::string& source) {
  // Each node but the first needs one of these characters before it ("a: b", "- a", "[a, b]", "{a}", "? a", a new
  // line) and adds at most three nodes with it ("{a, b}": a key, its null value, and the mapping): below the cap, the
  // events need not be counted (a 16 MiB scalar is then parsed once, not twice).
  if (4 * yaml_separators(text) <= kMaxYamlNodes) return;
  std::istringstream in(text);
  YAML::Parser parser(in);
  NodeCounter counter;
  try {
    parser.HandleNextDocument(counter);
  } catch (const NodeCounter::TooMany&) {
    throw InputError(source + ": YAML of more than " + std::to_string(kMaxYamlNodes) + " nodes (keys, values, " +
                     "lists and mappings); a job, cluster or data file holds a few thousand");
  }
}

}  // namespace

// The 1-based line of a document start marker (`---` alone or followed by a space) that comes after content, 0 if
// none. Comment lines and blank lines are no content; a marker before any content opens the first document.
static int second_document_line(const std::string& text) {
  bool content = false;
  int line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view l(text.data() + pos, nl - pos);
    ++line;
    const bool marker = l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\r');
    if (marker && content) return line;
    const size_t first = l.find_first_not_of(" \t\r");
    if (!marker && first != std::string_view::npos && l[first] != '#') content = true;
    if (nl == text.size()) break;
    pos = nl + 1;
  }
  return 0;
}

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  if (text.size() > kMaxInputFileBytes) throw InputError(source + ": input larger than the limit");
  // yaml-cpp recurses per nesting level; refuse absurd nesting before it can exhaust the stack.
  int depth = 0, max_depth = 0;
  for (char c : text) {
    if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  if (max_depth > 64) throw InputError(source + ": malformed YAML: nesting deeper than 64 levels");
  try {
    refuse_too_many_nodes(text, source);
    YAML::Node root = YAML::Load(text);
    // A second document (a `---` line after content) is an error rather than silently ignored. Found by scanning
    // the text, not by YAML::LoadAll, which loops forever on some malformed inputs (yaml-cpp 0.7, found by
    // fuzz_job_yaml).
    if (const int line = second_document_line(text); line > 0) {
      throw InputError(source + ":" + std::to_string(line) + ": a second YAML document; a job or cluster file holds one");
    }
    check_yaml_tree(root, text.size(), source);
    return root;
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": malformed YAML: " + msg);
  }
}

}  // namespace stepsim::spec

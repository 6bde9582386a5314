#pragma once
// StrictSection: reads one YAML mapping of the job file, converting scalars with range checks and
// reporting any key it was not asked about as unknown. Every error names source, full key and rule.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

// The most nodes (keys, values, lists, mappings) a YAML input may hold, aliases expanded: about 120 MiB of yaml-cpp's
// tree (460 bytes a node), counted in 0.4 s. Job, cluster and data files hold a few thousand.
constexpr int64_t kMaxYamlNodes = int64_t{1} << 18;

// Parses YAML text; syntax errors become InputError "<source>:<line>:<col>: malformed YAML: ...".
YAML::Node parse_yaml(const std::string& text, const std::string& source);
// The checks parse_yaml makes on a tree read from `text_bytes` of text: no key twice in one mapping, and no more than
// two nodes per byte once aliases are expanded (an alias bomb). For YAML read some other way (a --set value).
void check_yaml_tree(const YAML::Node& root, size_t text_bytes, const std::string& source);

// A tree value the converters of other tools' configs read back after --set may have edited it (a parallel degree,
// a batch): an integer in [1, 2^log2_max], else InputError "<source>: <key>: must be an integer in [1, 2^N]".
int64_t tree_positive_integer(const YAML::Node& v, const std::string& key, const std::string& source, int log2_max);

class StrictSection {
 public:
  // `node` must be a mapping (or null/absent = empty section); `path` is the dotted key prefix.
  StrictSection(const YAML::Node& node, std::string path, std::string source);

  bool has(const std::string& key) const;
  std::string key_path(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& rule) const;

  int64_t get_int(const std::string& key, int64_t def, int64_t min, int64_t max);
  // A required key that is absent is not reported at once: finish() reports an unknown key first (most often the
  // same key misspelt) and then the missing one; until then `min` stands in, and a rule that fails on it reports
  // the missing key instead (a misspelt key close to it as unknown).
  int64_t require_int(const std::string& key, int64_t min, int64_t max);
  double get_double(const std::string& key, double def, double min, double max);
  bool get_bool(const std::string& key, bool def);
  std::string get_string(const std::string& key, const std::string& def);
  // Enumerated string: one of `choices` (first of each pair is the accepted spelling).
  template <class E>
  E get_enum(const std::string& key, E def, const std::vector<std::pair<std::string, E>>& choices);
  // A sub-mapping; marks the key as used. Absent -> null node.
  YAML::Node child(const std::string& key);
  // Sequence of integers in [min, max]; absent -> empty.
  std::vector<int64_t> get_int_list(const std::string& key, int64_t min, int64_t max);
  // Mapping int -> double (e.g. slow_ranks).
  std::map<int64_t, double> get_int_double_map(const std::string& key, int64_t kmin, int64_t kmax,
                                               double vmin, double vmax);
  // Marks a key as read (when the caller handles it by other means).
  void mark(const std::string& key) { used_.insert(key); }
  // Throws on the first key never read (with the closest known key as a suggestion), else on the first required
  // key that is absent.
  void finish() const;

  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }

 private:
  std::string scalar(const std::string& key);
  // The mapping's value at `key` (an undefined node where absent), by the index below.
  YAML::Node value(const std::string& key) const;
  YAML::Node node_;
  // The mapping's scalar keys: yaml-cpp finds a key by comparing it with every key of the mapping, and a section is
  // asked about each of the hundred keys it knows, most of them absent.
  std::unordered_map<std::string, YAML::Node> index_;
  std::string path_;
  std::string source_;
  // Hashed: a section is asked about each of the hundred keys it knows, and each is recorded as asked and as read.
  std::unordered_set<std::string> used_;
  std::string missing_;  // the first required key found absent
  mutable std::unordered_set<std::string> asked_;  // every key has() was asked about: known keys, for suggestions
  [[noreturn]] void unknown(const std::string& key) const;
  std::string closest_unknown_to(const std::string& key) const;
};

// The known key closest to `key` by edit distance (insertions, deletions, substitutions, adjacent swaps), when it is
// near enough to be a typo (at most 2 edits, or a third of the length); "" otherwise.
std::string did_you_mean(const std::string& key, const std::set<std::string>& known);

// Parses a whole string as a signed integer / finite double; false on any junk.
bool parse_int64(const std::string& s, int64_t& out);
bool parse_double(const std::string& s, double& out);
// A YAML boolean as users write it: true/True/TRUE/yes/on or false/False/FALSE/no/off; false on anything else.
bool parse_bool(const std::string& s, bool& out);

template <class E>
E StrictSection::get_enum(const std::string& key, E def, const std::vector<std::pair<std::string, E>>& choices) {
  if (!has(key)) {
    used_.insert(key);  // a known key, for did_you_mean
    return def;
  }
  const std::string v = scalar(key);
  std::string lower;
  for (char c : v) lower += static_cast<char>((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
  std::string allowed;
  for (const auto& [name, value] : choices) {
    if (lower == name) return value;
    allowed += (allowed.empty() ? "" : " | ") + name;
  }
  fail(key, "must be one of " + allowed + ", got '" + v + "'");
}

}  // namespace stepsim::spec

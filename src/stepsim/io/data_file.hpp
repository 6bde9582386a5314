#pragma once
// The strict reader of the project's data files (data/gpus.yaml, efficiency.yaml, nccl-tuner.yaml and the copies
// users edit): the text through read_text_file and parse_yaml, as for a job file (size and nesting limits, one
// document, no key twice, syntax errors with their line), then one set of checks for every mapping and scalar. Each
// table keeps only its own value rules. Messages read "<file>: <key>: <rule> (line N)".
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

class DataFile {
 public:
  // Reads and parses `path`; `what` names the file in messages ("GPU catalog file").
  DataFile(const std::string& path, const std::string& what);

  const YAML::Node& root() const { return root_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const;
  // The same, with the line of `at` after the rule.
  [[noreturn]] void fail_at(const YAML::Node& at, const std::string& key, const std::string& rule) const;

  // The keys of the mapping `n` at `key`: every one of `required` present, none outside `required` and `optional`.
  std::set<std::string> keys(const YAML::Node& n, const std::string& key, const std::vector<std::string>& required,
                             const std::vector<std::string>& optional = {}) const;
  // Scalars: a finite number, a whole number, true/false, a non-empty string.
  double number(const YAML::Node& n, const std::string& key) const;
  int64_t integer(const YAML::Node& n, const std::string& key) const;
  bool boolean(const YAML::Node& n, const std::string& key) const;
  std::string text(const YAML::Node& n, const std::string& key) const;

 private:
  std::string path_;
  YAML::Node root_;
};

// " (line N)" of a node read from a file, "" for one that is absent.
std::string line_of(const YAML::Node& n);

}  // namespace stepsim::spec

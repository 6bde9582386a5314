#include "stepsim/io/data_file.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::spec {

std::string line_of(const YAML::Node& n) {
  if (!n.IsDefined()) return "";
  const YAML::Mark m = n.Mark();
  return m.line < 0 ? "" : " (line " + std::to_string(m.line + 1) + ")";
}

DataFile::DataFile(const std::string& path, const std::string& what)
    : path_(path), root_(parse_yaml(read_text_file(path, what), path)) {}

void DataFile::fail(const std::string& key, const std::string& rule) const {
  throw InputError(path_ + ": " + key + ": " + rule);
}

void DataFile::fail_at(const YAML::Node& at, const std::string& key, const std::string& rule) const {
  fail(key, rule + line_of(at));
}

std::set<std::string> DataFile::keys(const YAML::Node& n, const std::string& key,
                                     const std::vector<std::string>& required,
                                     const std::vector<std::string>& optional) const {
  auto list = [&] {
    std::string s;
    for (const auto& k : required) s += (s.empty() ? "" : ", ") + k;
    for (const auto& k : optional) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  if (!n.IsMap()) fail_at(n, key, "must be a mapping with keys " + list());
  std::set<std::string> seen;
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();
    seen.insert(k);
    const bool known = std::find(required.begin(), required.end(), k) != required.end() ||
                       std::find(optional.begin(), optional.end(), k) != optional.end();
    if (!known) {
      std::set<std::string> known_keys(required.begin(), required.end());
      known_keys.insert(optional.begin(), optional.end());
      const std::string near = did_you_mean(k, known_keys);
      fail(key + "." + k, "unknown key" + line_of(kv.first) + (near.empty() ? "" : "; did you mean " + near + "?") +
                              "; allowed: " + list());
    }
  }
  for (const auto& k : required)
    if (!seen.count(k)) fail_at(n, key + "." + k, "missing required key");
  return seen;
}

double DataFile::number(const YAML::Node& n, const std::string& key) const {
  double v = 0;
  if (!n.IsScalar() || !parse_double(n.Scalar(), v)) fail_at(n, key, "must be a number");
  if (!std::isfinite(v)) fail_at(n, key, "must be a finite number");
  return v;
}

int64_t DataFile::integer(const YAML::Node& n, const std::string& key) const {
  int64_t v = 0;
  if (!n.IsScalar() || !parse_int64(n.Scalar(), v)) fail_at(n, key, "must be an integer");
  return v;
}

bool DataFile::boolean(const YAML::Node& n, const std::string& key) const {
  bool b = false;
  if (!n.IsScalar() || !parse_bool(n.Scalar(), b)) fail_at(n, key, "must be true or false");
  return b;
}

std::string DataFile::text(const YAML::Node& n, const std::string& key) const {
  if (!n.IsScalar()) fail_at(n, key, "must be a string");
  if (n.Scalar().empty()) fail_at(n, key, "must not be empty");
  return n.Scalar();
}

}  // namespace stepsim::spec

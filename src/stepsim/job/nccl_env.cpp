#include "stepsim/job/nccl_env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "stepsim/io/input_error.hpp"

namespace stepsim::spec {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= v.size()) {
    const size_t e = std::min(v.find(',', b), v.size());
    std::string item = v.substr(b, e - b);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    b = e + 1;
  }
  return out;
}

// NCCL's names (case-insensitive, as its parser compares them) to stepsim's.
const std::vector<std::pair<std::string, std::string>>& algorithm_names() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"ring", "ring"}, {"tree", "tree"}, {"nvls", "nvls"}, {"nvlstree", "nvls_tree"}, {"nvls_tree", "nvls_tree"},
      {"pat", "pat"}, {"collnetdirect", "collnet_direct"}, {"collnet_direct", "collnet_direct"},
      {"collnetchain", "collnet_chain"}, {"collnet_chain", "collnet_chain"}};
  return k;
}

// A list with an optional leading ^ (exclude what follows) against `all`: the allowed names.
using Names = std::vector<std::pair<std::string, std::string>>;

// `what` is "algorithm" or "protocol"; `hint` lists NCCL's names for the error.
std::vector<std::string> allowed(const std::string& value, const Names& names, const std::vector<std::string>& all,
                                 const std::string& key, const char* what, const std::string& hint) {
  const bool exclude = !value.empty() && value[0] == '^';
  std::vector<std::string> listed;
  for (const std::string& item : split_list(exclude ? value.substr(1) : value)) {
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == lower(item); });
    if (it == names.end()) throw InputError(key + ": unknown '" + item + "' (" + hint + ")");
    listed.push_back(it->second);
  }
  if (listed.empty()) throw InputError(key + ": names no " + what);
  if (!exclude) return listed;
  std::vector<std::string> out;
  for (const std::string& a : all) {
    if (std::find(listed.begin(), listed.end(), a) == listed.end()) out.push_back(a);
  }
  return out;
}

int64_t whole(const std::string& key, const std::string& v, int64_t min, int64_t max) {
  int64_t x = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || x < min || x > max) {
    throw InputError(key + ": must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                     ", got '" + v + "'");
  }
  return x;
}

}  // namespace

NcclEnv parse_nccl_env(const std::vector<std::pair<std::string, std::string>>& vars, const std::string& where) {
  NcclEnv e;
  const std::vector<std::string> all_algos = {"ring", "tree", "nvls", "nvls_tree", "pat", "collnet_direct",
                                              "collnet_chain"};
  const Names protos = {{"ll", "LL"}, {"ll128", "LL128"}, {"simple", "Simple"}};
  for (const auto& var : vars) {
    // Named copies, not a structured binding: clang does not let a lambda capture one (C++17 rules).
    const std::string& name = var.first;
    const std::string& value = var.second;
    const std::string key = where + "." + name;
    if (name.rfind("NCCL_", 0) != 0) throw InputError(key + ": not an NCCL variable (NCCL_ALGO, NCCL_PROTO, ...)");
    if (std::any_of(e.as_written.begin(), e.as_written.end(), [&](const auto& w) { return w.first == name; })) {
      throw InputError(key + ": given twice");
    }
    e.as_written.emplace_back(name, value);
    if (name == "NCCL_ALGO") {
      if (value.find_first_of(":;") != std::string::npos) {
        throw InputError(key + ": per-collective lists (allreduce:ring;...) are not modelled; give one list for all");
      }
      e.algorithms = allowed(value, algorithm_names(), all_algos, key, "algorithm",
                             "NCCL's algorithms: Ring, Tree, NVLS, NVLSTree, PAT, CollnetDirect, CollnetChain");
    } else if (name == "NCCL_PROTO") {
      e.protocols =
          allowed(value, protos, {"LL", "LL128", "Simple"}, key, "protocol", "NCCL's protocols: LL, LL128, Simple");
    } else if (name == "NCCL_MIN_NCHANNELS") {
      e.min_channels = static_cast<int>(whole(key, value, 1, 64));
    } else if (name == "NCCL_MAX_NCHANNELS") {
      e.max_channels = static_cast<int>(whole(key, value, 1, 64));
    } else if (name == "NCCL_NVLS_ENABLE") {
      e.nvls_disabled = whole(key, value, 0, 2) == 0;
    } else if (name == "NCCL_BUFFSIZE") {
      e.buffsize = whole(key, value, 4096, int64_t{1} << 32);
    } else {
      e.unmodelled.push_back(name);
    }
  }
  if (e.min_channels > 0 && e.max_channels > 0 && e.min_channels > e.max_channels) {
    throw InputError(where + ".NCCL_MIN_NCHANNELS: " + std::to_string(e.min_channels) +
                     " is above NCCL_MAX_NCHANNELS " + std::to_string(e.max_channels));
  }
  return e;
}

std::string nccl_env_text(const NcclEnv& e) {
  std::string s;
  for (const auto& [name, value] : e.as_written) s += (s.empty() ? "" : " ") + name + "=" + value;
  return s;
}

}  // namespace stepsim::spec

// comm_group.json of a Chakra trace set (format in comm_groups.hpp).
#include "stepsim/ingest/chakra/comm_groups.hpp"
#include "stepsim/io/utf8.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::chakra {

namespace {
constexpr size_t kMaxCommGroups = size_t{1} << 20;
constexpr size_t kMaxGroupRanks = size_t{1} << 20;
constexpr size_t kMaxCommGroupFileBytes = size_t{256} << 20;
}  // namespace

CommGroups parse_comm_groups(const std::string& text, const std::string& path) {
  if (text.size() > kMaxCommGroupFileBytes) throw InputError(path + ": larger than 256 MiB, the most a group file may be");
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(path + ": is not valid JSON");
  if (!j.is_object()) throw InputError(path + ": must be a JSON object {\"<group id>\": [rank, ...], ...}");
  if (j.size() > kMaxCommGroups) throw InputError(path + ": more than " + std::to_string(kMaxCommGroups) + " groups");
  CommGroups g;
  g.path = path;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string where = path + ": group \"" + it.key() + "\"";
    if (!it.value().is_array()) throw InputError(where + ": must be an array of ranks");
    if (it.value().empty()) throw InputError(where + ": has no ranks");
    if (it.value().size() > kMaxGroupRanks) throw InputError(where + ": more than " + std::to_string(kMaxGroupRanks) + " ranks");
    std::vector<int> ranks;
    for (const auto& r : it.value()) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= (int64_t{1} << 24)) {
        throw InputError(where + ": ranks must be integers in [0, 2^24)");
      }
      ranks.push_back(r.get<int>());
    }
    std::sort(ranks.begin(), ranks.end());
    if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) throw InputError(where + ": lists a rank twice");
    g.groups[it.key()] = std::move(ranks);
  }
  return g;
}

CommGroups read_comm_groups(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the communicator-group file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_comm_groups(ss.str(), path);
}

std::string comm_groups_json(const std::vector<std::vector<int>>& groups_by_id, int first_id) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < groups_by_id.size(); ++i) j[std::to_string(first_id + static_cast<int>(i))] = groups_by_id[i];
  return io::json_text(j) + "\n";
}

}  // namespace stepsim::chakra

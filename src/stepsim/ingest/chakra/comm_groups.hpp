#pragma once
// The communicator-group file that goes with a set of Chakra traces (ASTRA-sim's --comm-group-configuration):
// {"<id>": [rank, ...], ...}. A collective node names its group by the id in its `pg_name` attribute.
#include <map>
#include <string>
#include <vector>

namespace stepsim::chakra {

struct CommGroups {
  std::map<std::string, std::vector<int>> groups;  // id -> sorted global ranks
  std::string path;                                // for messages
};

// At most 1 Mi groups of at most 1 Mi ranks each; InputError naming the file, the group and the rule.
CommGroups parse_comm_groups(const std::string& text, const std::string& path);
CommGroups read_comm_groups(const std::string& path);
// Ids in numeric order (ASTRA-sim reads each key with std::stoi).
std::string comm_groups_json(const std::vector<std::vector<int>>& groups_by_id, int first_id);

}  // namespace stepsim::chakra

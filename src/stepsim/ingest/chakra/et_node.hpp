#pragma once
// A Chakra execution-trace node as stepsim reads and writes it, independent of the file's encoding (protobuf .et or
// the JSON that Chakra's tools print): id, name, node type, dependencies, duration and the named attributes that
// carry the rest ("comm_type", "comm_size", "pg_name", "num_ops", ...). Schema: et_def.proto beside this file.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace stepsim::chakra {

// Chakra's NodeType and CollectiveCommType values (et_def.proto).
enum class NodeType : int { Invalid = 0, Metadata = 1, MemLoad = 2, MemStore = 3, Comp = 4, CommSend = 5, CommRecv = 6,
                            CommColl = 7 };
enum class CommType : int { AllReduce = 0, Reduce = 1, AllGather = 2, Gather = 3, Scatter = 4, Broadcast = 5,
                            AllToAll = 6, ReduceScatter = 7, ReduceScatterBlock = 8, Barrier = 9 };

// An attribute's value. On reading, every integer kind of the schema widens to int64 (uint64 values above INT64_MAX
// stay unsigned), float to double; list values are not used by stepsim and are dropped. On writing, the alternative
// picks the schema's kind: readers look at one kind only (ASTRA-sim reads comm_src/comm_dst/comm_tag as int32_val,
// tensor_size as uint64_val, num_ops/comm_size/comm_type as int64_val).
using AttrValue = std::variant<int64_t, uint64_t, double, bool, std::string, int32_t>;

struct EtAttr {
  std::string name;
  AttrValue value;
};

struct EtNode {
  uint64_t id = 0;
  std::string name;
  int type = 0;  // NodeType, kept as read (an unknown type is an error only where it matters)
  std::vector<uint64_t> data_deps, ctrl_deps;
  uint64_t duration_micros = 0;
  std::vector<EtAttr> attrs;

  const EtAttr* find(const std::string& attr) const;
};

// One rank's file: the GlobalMetadata message (schema version and attributes) and the nodes in file order.
struct EtGraph {
  std::string version;
  std::vector<EtAttr> metadata;
  std::vector<EtNode> nodes;
};

}  // namespace stepsim::chakra

// Chakra execution traces -> trace-driven programs (rules in et_import.hpp; docs/CHAKRA.md).
#include "stepsim/ingest/chakra/et_import.hpp"
#include "stepsim/io/utf8.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "stepsim/ingest/chakra/et_file.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/kernel_naming.hpp"
#include "stepsim/ingest/trace/text_buffer.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"

namespace stepsim::chakra {

using trace::TracedOp;
using workload::CollType;
using workload::OpKind;

namespace {

constexpr size_t kMaxChakraJsonBytes = size_t{256} << 20;
constexpr size_t kMaxResolvedDeps = size_t{64} << 20;  // dependency entries after skipping CPU nodes

std::optional<int64_t> attr_int(const EtNode& n, const char* name) {
  const EtAttr* a = n.find(name);
  if (!a) return std::nullopt;
  if (const auto* v = std::get_if<int64_t>(&a->value)) return *v;
  return std::nullopt;
}
std::optional<std::string> attr_string(const EtNode& n, const char* name) {
  const EtAttr* a = n.find(name);
  if (!a) return std::nullopt;
  if (const auto* v = std::get_if<std::string>(&a->value)) return *v;
  return std::nullopt;
}
bool attr_true(const EtNode& n, const char* name) {
  const EtAttr* a = n.find(name);
  if (!a) return false;
  if (const auto* b = std::get_if<bool>(&a->value)) return *b;
  if (const auto* i = std::get_if<int64_t>(&a->value)) return *i != 0;
  return false;
}

template <typename E>
std::optional<E> enum_by_name(const std::string& s, int count) {
  for (int i = 0; i < count; ++i) {
    if (s == workload::name_of(static_cast<E>(i))) return static_cast<E>(i);
  }
  return std::nullopt;
}

std::optional<CollType> coll_of_chakra(int64_t t) {
  switch (static_cast<CommType>(t)) {
    case CommType::AllReduce: return CollType::AllReduce;
    case CommType::Reduce: return CollType::Reduce;
    case CommType::AllGather: return CollType::AllGather;
    case CommType::Broadcast: return CollType::Broadcast;
    case CommType::AllToAll: return CollType::AllToAll;
    case CommType::ReduceScatter:
    case CommType::ReduceScatterBlock: return CollType::ReduceScatter;
    default: return std::nullopt;
  }
}

class GraphImporter {
 public:
  GraphImporter(const EtGraph& g, const std::string& path, const CommGroups* groups, int files_world)
      : g_(g), path_(path), groups_(groups), files_world_(files_world) {
    for (const EtAttr& a : g_.metadata) {
      if (const auto* v = std::get_if<int64_t>(&a.value); v && a.name == "world_size") world_size_ = *v;
    }
  }

  ImportedRank run(std::optional<int> rank) {
    ImportedRank out;
    out.nodes = static_cast<int64_t>(g_.nodes.size());
    for (const EtAttr& a : g_.metadata) {
      if (const auto* v = std::get_if<int64_t>(&a.value)) {
        if (a.name == "rank") rank = static_cast<int>(*v);
        if (a.name == "world_size") out.rank.world_size = static_cast<int>(*v);
        if (a.name == "static_memory_bytes") out.rank.static_memory_bytes = std::max<int64_t>(0, *v);
      }
    }
    if (!rank) throw InputError(path_ + ": cannot tell the rank: name the file <name>.<rank>.et (or give the metadata a rank)");
    if (*rank < 0 || *rank >= (1 << 24)) throw InputError(path_ + ": rank " + std::to_string(*rank) + " is out of range");
    if (out.rank.world_size == 0 || out.rank.world_size < -1 || out.rank.world_size > (1 << 24)) {
      throw InputError(path_ + ": metadata world_size must be in [1, 2^24]");
    }
    out.rank.rank = *rank;
    out.rank.path = path_;
    out.rank.explicit_deps = true;
    out.rank.eager_sends = true;  // ASTRA-sim completes a Chakra send on its own
    index_nodes(out);
    resolve_deps();
    order_ops();
    build_ops(out.rank);
    if (world_from_files_) {
      out.world_from_files = true;
      out.rank.world_size = files_world_;  // simulate then refuses a job of another size, as for world_size metadata
    }
    for (const TracedOp& o : out.rank.ops) {
      if (o.kind == OpKind::Compute) ++out.compute_ops, out.compute_s += static_cast<double>(o.duration_ns) * 1e-9;
      else ++out.comm_ops;
    }
    return out;
  }

 private:
  [[noreturn]] void fail(size_t node, const std::string& rule) const {
    const EtNode& n = g_.nodes[node];
    throw InputError(path_ + ": node " + std::to_string(n.id) + " (" + n.name.substr(0, 80) + "): " + rule);
  }

  // Which nodes are GPU work and which op each belongs to.
  void index_nodes(ImportedRank& out) {
    const size_t n = g_.nodes.size();
    op_of_.assign(n, -1);
    std::unordered_map<int64_t, int> by_stepsim_op;
    for (size_t i = 0; i < n; ++i) {
      const EtNode& e = g_.nodes[i];
      if (!pos_of_.emplace(e.id, i).second) fail(i, "a second node with this id");
      const auto type = static_cast<NodeType>(e.type);
      const bool gpu_type = type == NodeType::Comp || type == NodeType::CommColl || type == NodeType::CommSend ||
                            type == NodeType::CommRecv;
      if (!gpu_type) {
        if (e.type < 0 || e.type > 10) fail(i, "unknown NodeType " + std::to_string(e.type));
        ++out.other_nodes_skipped;
        continue;
      }
      if (attr_true(e, "is_cpu_op")) {
        ++out.cpu_nodes_skipped;
        continue;
      }
      const auto so = attr_int(e, "stepsim_op");
      if (so) {
        auto [it, added] = by_stepsim_op.try_emplace(*so, static_cast<int>(op_nodes_.size()));
        if (added) op_nodes_.emplace_back();
        op_of_[i] = it->second;
      } else {
        op_of_[i] = static_cast<int>(op_nodes_.size());
        op_nodes_.emplace_back();
      }
      op_nodes_[op_of_[i]].push_back(i);
    }
  }

  // GPU ops each skipped node stands for as a dependency (its GPU ancestors), then every op's dependencies.
  void resolve_deps() {
    const size_t n = g_.nodes.size();
    std::vector<std::vector<int>> anc(n);
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the stack, 2 done
    size_t total = 0;
    auto dep_index = [&](size_t node, uint64_t id) {
      if (id == g_.nodes[node].id) fail(node, "data_deps names the node itself (a node cannot wait for itself)");
      auto it = pos_of_.find(id);
      if (it == pos_of_.end()) fail(node, "data_deps names node " + std::to_string(id) + ", which the file does not hold");
      return it->second;
    };
    // Iterative depth-first walk over skipped nodes only (chains of CPU nodes can be long).
    auto ancestors = [&](size_t start) {
      std::vector<std::pair<size_t, size_t>> stack{{start, 0}};
      state[start] = 1;
      while (!stack.empty()) {
        auto& [v, k] = stack.back();
        const EtNode& e = g_.nodes[v];
        if (k < e.data_deps.size()) {
          const size_t d = dep_index(v, e.data_deps[k++]);
          if (op_of_[d] >= 0) {
            anc[v].push_back(op_of_[d]);
          } else if (state[d] == 0) {
            state[d] = 1;
            stack.emplace_back(d, 0);
          } else if (state[d] == 1) {
            fail(d, "its data_deps form a cycle");
          } else {
            anc[v].insert(anc[v].end(), anc[d].begin(), anc[d].end());
          }
        } else {
          auto& a = anc[v];
          std::sort(a.begin(), a.end());
          a.erase(std::unique(a.begin(), a.end()), a.end());
          total += a.size();
          if (total > kMaxResolvedDeps) fail(v, "too many dependencies through skipped CPU nodes to resolve");
          state[v] = 2;
          const size_t done = v;
          stack.pop_back();
          if (!stack.empty()) {
            const size_t parent = stack.back().first;
            anc[parent].insert(anc[parent].end(), anc[done].begin(), anc[done].end());
          }
        }
      }
    };
    deps_.assign(op_nodes_.size(), {});
    for (size_t op = 0; op < op_nodes_.size(); ++op) {
      for (size_t node : op_nodes_[op]) {
        for (uint64_t id : g_.nodes[node].data_deps) {
          const size_t d = dep_index(node, id);
          if (op_of_[d] >= 0) {
            deps_[op].push_back(op_of_[d]);
          } else {
            if (state[d] == 0) ancestors(d);
            deps_[op].insert(deps_[op].end(), anc[d].begin(), anc[d].end());
          }
        }
      }
      auto& dv = deps_[op];
      std::sort(dv.begin(), dv.end());
      dv.erase(std::unique(dv.begin(), dv.end()), dv.end());
      dv.erase(std::remove(dv.begin(), dv.end(), static_cast<int>(op)), dv.end());
      total += dv.size();
      if (total > kMaxResolvedDeps) fail(op_nodes_[op].front(), "too many dependencies to resolve");
    }
  }

  // File order where the dependencies allow it (Kahn's algorithm, smallest file position first).
  void order_ops() {
    const size_t m = op_nodes_.size();
    std::vector<int> indeg(m, 0);
    std::vector<std::vector<int>> users(m);
    for (size_t op = 0; op < m; ++op) {
      for (int d : deps_[op]) {
        ++indeg[op];
        users[d].push_back(static_cast<int>(op));
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;  // op index = order of first node in the file
    for (size_t op = 0; op < m; ++op) {
      if (indeg[op] == 0) ready.push(static_cast<int>(op));
    }
    order_.clear();
    while (!ready.empty()) {
      const int op = ready.top();
      ready.pop();
      order_.push_back(op);
      for (int u : users[op]) {
        if (--indeg[u] == 0) ready.push(u);
      }
    }
    if (order_.size() != m) {
      for (size_t op = 0; op < m; ++op) {
        if (indeg[op] > 0) fail(op_nodes_[op].front(), "its data_deps form a cycle");
      }
    }
  }

  int64_t duration_ns(const EtNode& e, size_t node) const {
    if (const auto ns = attr_int(e, "duration_ns")) {
      if (*ns < 0 || *ns > int64_t{100'000'000'000}) fail(node, "duration_ns must be in [0, 100 s]");
      return *ns;
    }
    if (e.duration_micros > 100'000'000) fail(node, "duration_micros must be at most 100 s");
    return static_cast<int64_t>(e.duration_micros) * 1000;
  }

  uint64_t size_attr(const EtNode& e, size_t node) const {
    const auto s = attr_int(e, "comm_size");
    if (!s) fail(node, "a send or receive needs comm_size (bytes)");
    if (*s < 0 || *s > (int64_t{1} << 50)) fail(node, "comm_size must be in [0, 2^50] bytes");
    return static_cast<uint64_t>(*s);
  }

  int peer_attr(const EtNode& e, size_t node, const char* key) const {
    const auto p = attr_int(e, key);
    if (!p) fail(node, std::string("a ") + (e.type == static_cast<int>(NodeType::CommSend) ? "send" : "receive") +
                           " needs " + key + " (the peer's rank)");
    if (*p < 0 || *p >= (1 << 24)) fail(node, std::string(key) + " must be a rank in [0, 2^24)");
    return static_cast<int>(*p);
  }

  uint64_t gathered_bytes(const EtNode& e, size_t node, uint64_t part, const std::vector<int>& ranks) const {
    if (const auto exact = attr_int(e, "stepsim_bytes")) {
      if (*exact < 0 || *exact > (int64_t{1} << 50)) fail(node, "stepsim_bytes must be in [0, 2^50] bytes");
      return static_cast<uint64_t>(*exact);
    }
    const int64_t n = !ranks.empty() ? static_cast<int64_t>(ranks.size()) : whole_world();
    if (n <= 0) {
      fail(node, "an all-gather over the whole world needs its size (metadata world_size, or a pg_name) to turn "
                 "comm_size, each rank's part, into the gathered bytes; one rank file does not tell it: give every "
                 "rank's file, whose count is then the world");
    }
    if (part > (uint64_t{1} << 50) / static_cast<uint64_t>(n)) {
      fail(node, "an all-gather of comm_size x group size above 2^50 bytes");
    }
    return part * static_cast<uint64_t>(n);
  }

  // The size of the world a collective without a pg_name runs over: the metadata's world_size, else the rank files
  // given (ASTRA-sim runs such a collective over every NPU it simulates); -1 when neither tells it (one file).
  int64_t whole_world() const {
    if (world_size_ > 0) return world_size_;
    if (files_world_ > 1) {
      world_from_files_ = true;
      return files_world_;
    }
    return -1;
  }

  std::vector<int> group_ranks(const EtNode& e, size_t node) const {
    const auto pg = attr_string(e, "pg_name");
    if (!pg) {  // the whole world
      whole_world();
      return {};
    }
    if (!groups_) fail(node, "pg_name '" + *pg + "' names a communicator group, and no group file was given "
                             "(--comm-groups; default: comm_group.json beside the traces)");
    auto it = groups_->groups.find(*pg);
    if (it == groups_->groups.end()) fail(node, "pg_name '" + *pg + "' is not a group of " + groups_->path);
    return it->second;
  }

  TracedOp build_op(size_t op) const {
    const std::vector<size_t>& nodes = op_nodes_[op];
    const EtNode& first = g_.nodes[nodes.front()];
    TracedOp o;
    o.name = first.name;
    if (const auto ph = attr_string(first, "phase")) {
      o.phase = enum_by_name<workload::Phase>(*ph, 4).value_or(workload::Phase::Forward);
    }
    if (const auto a = attr_int(first, "mem_alloc_bytes")) o.mem_alloc_bytes = std::max<int64_t>(0, *a);
    if (const auto f = attr_int(first, "mem_free_bytes")) o.mem_free_bytes = std::max<int64_t>(0, *f);
    const auto type = static_cast<NodeType>(first.type);
    if (type == NodeType::Comp) {
      if (nodes.size() > 1) fail(nodes[1], "stepsim_op joins a compute node with other nodes");
      o.kind = OpKind::Compute;
      o.duration_ns = duration_ns(first, nodes.front());
      const auto cat = attr_string(first, "category");
      o.category = cat ? enum_by_name<workload::ComputeCategory>(*cat, static_cast<int>(workload::ComputeCategory::Host) + 1)
                             .value_or(trace::category_of_kernel(first.name))
                       : trace::category_of_kernel(first.name);
      if (const auto f = attr_int(first, "num_ops")) o.flops = static_cast<double>(std::max<int64_t>(0, *f));
      if (const auto b = attr_int(first, "tensor_size")) o.hbm_bytes = static_cast<uint64_t>(std::max<int64_t>(0, *b));
      return o;
    }
    if (const auto grp = attr_string(first, "stepsim_group")) {
      o.group = enum_by_name<workload::GroupKind>(*grp, workload::kNumGroupKinds);
    }
    if (attr_string(first, "stepsim_coll").value_or("") == "send_recv") {
      o.kind = OpKind::Collective;
      o.coll = CollType::SendRecv;
      o.bytes = size_attr(first, nodes.front());
      o.group_ranks = group_ranks(first, nodes.front());
      return o;
    }
    if (type == NodeType::CommColl) {
      if (nodes.size() > 1) fail(nodes[1], "stepsim_op joins a collective with other nodes");
      o.kind = OpKind::Collective;
      std::optional<CollType> c;
      if (const auto t = attr_int(first, "comm_type")) {
        c = coll_of_chakra(*t);
        if (!c) fail(nodes.front(), "comm_type " + std::to_string(*t) + " (gather, scatter or barrier) is not modelled");
      } else if (const auto k = trace::nccl_kind_of_kernel(first.name); k && !k->p2p) {
        c = k->coll;
      } else {
        fail(nodes.front(), "a collective needs comm_type, or an NCCL kernel name that says which collective it is");
      }
      o.coll = *c;
      o.group_ranks = group_ranks(first, nodes.front());
      if (const auto s = attr_int(first, "comm_size")) {
        if (*s < 0 || *s > (int64_t{1} << 50)) fail(nodes.front(), "comm_size must be in [0, 2^50] bytes");
        o.bytes = static_cast<uint64_t>(*s);
        // An all-gather's comm_size is each rank's part (ASTRA-sim's reading, and what Chakra's converter writes):
        // the gathered output is that times the group's size; stepsim's own export keeps the exact output too.
        if (o.coll == CollType::AllGather) o.bytes = gathered_bytes(first, nodes.front(), o.bytes, o.group_ranks);
      } else {
        o.measured_time = true;  // no size: replay the time the trace measured
        o.duration_ns = duration_ns(first, nodes.front());
        if (o.duration_ns == 0) fail(nodes.front(), "a collective with neither comm_size nor a duration: nothing can time it");
      }
      return o;
    }
    o.kind = OpKind::P2P;
    for (size_t node : nodes) {
      const EtNode& e = g_.nodes[node];
      if (e.type == static_cast<int>(NodeType::CommSend)) {
        o.sends.push_back({peer_attr(e, node, "comm_dst"), size_attr(e, node)});
      } else if (e.type == static_cast<int>(NodeType::CommRecv)) {
        o.recvs.push_back({peer_attr(e, node, "comm_src"), size_attr(e, node)});
      } else {
        fail(node, "stepsim_op joins a send or receive with a node of another kind");
      }
    }
    return o;
  }

  void build_ops(trace::TracedRank& r) const {
    std::vector<int> new_index(op_nodes_.size(), -1);
    for (size_t k = 0; k < order_.size(); ++k) new_index[order_[k]] = static_cast<int>(k);
    r.ops.reserve(order_.size());
    for (int op : order_) {
      TracedOp o = build_op(static_cast<size_t>(op));
      for (int d : deps_[op]) o.after.push_back(new_index[d]);
      std::sort(o.after.begin(), o.after.end());
      r.ops.push_back(std::move(o));
    }
  }

  const EtGraph& g_;
  int64_t world_size_ = -1;  // metadata world_size; -1: not given
  const std::string& path_;
  const CommGroups* groups_;
  int files_world_;                         // rank files given to the import; 0: unknown
  mutable bool world_from_files_ = false;   // a whole-world collective took its size from files_world_
  std::unordered_map<uint64_t, size_t> pos_of_;
  std::vector<int> op_of_;                      // node -> op, -1 when skipped
  std::vector<std::vector<size_t>> op_nodes_;   // op -> its nodes, in file order
  std::vector<std::vector<int>> deps_;          // op -> ops it waits for
  std::vector<int> order_;                      // ops in issue order
};

// A JSON scalar as an attribute value; false for arrays and objects.
bool json_attr(const nlohmann::json& v, AttrValue& out) {
  if (v.is_boolean()) out = v.get<bool>();
  else if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) out = static_cast<int64_t>(u);
    else out = u;
  } else if (v.is_number_integer()) out = v.get<int64_t>();
  else if (v.is_number_float()) out = v.get<double>();
  else if (v.is_string()) out = v.get<std::string>();
  else return false;
  return true;
}

}  // namespace

std::optional<int> rank_from_file_name(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".gz", ".et", ".json"}) {
    const std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) name.resize(name.size() - e.size());
  }
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || dot + 1 == name.size() || name.size() - dot - 1 > 7) return std::nullopt;
  int r = 0;
  for (size_t i = dot + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    r = r * 10 + (name[i] - '0');
  }
  return r;
}

ImportedRank import_graph(const EtGraph& g, const std::string& path, std::optional<int> rank, const CommGroups* groups,
                          int files_world) {
  return GraphImporter(g, path, groups, files_world).run(rank);
}

bool is_chakra_json(const std::string& text) {
  // A .et stream starts with the metadata message's length, which may happen to be the byte '{' (123): look for the
  // JSON trace's key too.
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' && text.find("\"workload_graph\"") != std::string::npos;
}

EtGraph parse_chakra_json(const std::string& text, const std::string& path) {
  if (text.size() > kMaxChakraJsonBytes) throw InputError(path + ": larger than 256 MiB, the most a Chakra JSON trace may be");
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(path + ": is neither a Chakra .et trace nor valid JSON");
  if (!j.is_object() || !j.contains("workload_graph") || !j["workload_graph"].is_array()) {
    throw InputError(path + ": workload_graph: a Chakra JSON trace holds its nodes in a workload_graph array");
  }
  const auto& nodes = j["workload_graph"];
  if (nodes.size() > kMaxEtNodes) throw InputError(path + ": workload_graph: more than " + std::to_string(kMaxEtNodes) + " nodes");
  EtGraph g;
  g.version = "json";
  if (j.contains("ngpus") && j["ngpus"].is_number_unsigned()) {  // the world size, where the JSON gives it
    g.metadata.push_back({"world_size", static_cast<int64_t>(std::min<uint64_t>(j["ngpus"].get<uint64_t>(), 1u << 30))});
  }
  g.nodes.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    const std::string where = path + ": workload_graph[" + std::to_string(i) + "]";
    if (!n.is_object()) throw InputError(where + ": must be an object");
    EtNode e;
    auto integer = [&](const char* key, const char* alt, uint64_t& out) {
      const auto* v = n.contains(key) ? &n[key] : n.contains(alt) ? &n[alt] : nullptr;
      if (!v) return false;
      if (!v->is_number_integer() || (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0)) {
        throw InputError(where + "." + key + ": must be a non-negative integer");
      }
      out = v->get<uint64_t>();
      return true;
    };
    if (!integer("Id", "id", e.id)) throw InputError(where + ".Id: is required");
    uint64_t type = 0;
    if (!integer("NodeType", "type", type)) throw InputError(where + ".NodeType: is required");
    if (type > 10) throw InputError(where + ".NodeType: unknown node type " + std::to_string(type));
    e.type = static_cast<int>(type);
    integer("runtime", "duration_micros", e.duration_micros);
    for (const char* key : {"Name", "name"}) {
      if (n.contains(key) && n[key].is_string()) e.name = n[key].get<std::string>();
    }
    auto deps = [&](const char* key, const char* alt, std::vector<uint64_t>& out) {
      const auto* v = n.contains(key) ? &n[key] : n.contains(alt) ? &n[alt] : nullptr;
      if (!v) return;
      if (!v->is_array()) throw InputError(where + "." + key + ": must be an array of node ids");
      for (const auto& d : *v) {
        if (!d.is_number_unsigned()) throw InputError(where + "." + key + ": must be an array of node ids");
        out.push_back(d.get<uint64_t>());
      }
    };
    deps("data_deps", "dataDeps", e.data_deps);
    deps("ctrlDeps", "ctrl_deps", e.ctrl_deps);
    for (auto it = n.begin(); it != n.end(); ++it) {
      static const char* const kFields[] = {"Id", "id", "NodeType", "type", "runtime", "duration_micros", "Name",
                                            "name", "data_deps", "dataDeps", "ctrlDeps", "ctrl_deps"};
      if (std::find_if(std::begin(kFields), std::end(kFields), [&](const char* f) { return it.key() == f; }) !=
          std::end(kFields)) {
        continue;
      }
      EtAttr a;
      a.name = it.key();
      if (json_attr(it.value(), a.value)) e.attrs.push_back(std::move(a));
    }
    g.nodes.push_back(std::move(e));
  }
  return g;
}

ImportedRank import_file(const std::string& path, const CommGroups* groups, int files_world) {
  const std::optional<int> rank = rank_from_file_name(path);
  trace::TextBuffer buf = trace::read_text_file(path, kMaxEtFileBytes);
  std::string text(buf.data.get(), buf.size);
  buf = {};
  if (is_chakra_json(text)) return import_graph(parse_chakra_json(text, path), path, rank, groups, files_world);
  return import_graph(parse_et(text, path), path, rank, groups, files_world);
}

bool looks_like_chakra(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".et") == 0) return true;
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) return false;
  std::string head(65536, '\0');
  const int n = gzread(f, head.data(), static_cast<unsigned>(head.size()));
  gzclose(f);
  if (n <= 0) return false;
  head.resize(static_cast<size_t>(n));
  return is_chakra_json(head);
}

ChakraImport import_chakra(const std::vector<std::string>& paths, const std::string& comm_groups_path,
                           const ProgressFn& progress) {
  ChakraImport c;
  CommGroups groups;
  std::string gpath = comm_groups_path;
  if (gpath.empty() && !paths.empty()) {
    const std::filesystem::path beside = std::filesystem::path(paths.front()).parent_path() / "comm_group.json";
    std::error_code ec;
    if (std::filesystem::exists(beside, ec)) gpath = beside.string();
  }
  if (!gpath.empty()) {
    groups = read_comm_groups(gpath);
    c.comm_groups = gpath;
  }
  std::map<int, std::string> seen;
  const auto total = static_cast<int64_t>(paths.size());
  const int files_world = static_cast<int>(std::min<size_t>(paths.size(), size_t{1} << 24));
  for (const std::string& p : paths) {
    if (progress) progress("reading Chakra traces", static_cast<int64_t>(c.ranks.size()), total);
    ImportedRank r = import_file(p, gpath.empty() ? nullptr : &groups, files_world);
    auto [it, added] = seen.emplace(r.rank.rank, p);
    if (!added) throw InputError(p + ": rank " + std::to_string(r.rank.rank) + " again (also " + it->second + ")");
    c.ranks.push_back(std::move(r));
  }
  if (progress) progress("reading Chakra traces", total, total);
  std::sort(c.ranks.begin(), c.ranks.end(), [](const ImportedRank& a, const ImportedRank& b) { return a.rank.rank < b.rank.rank; });
  const auto assumed =
      std::count_if(c.ranks.begin(), c.ranks.end(), [](const ImportedRank& r) { return r.world_from_files; });
  if (assumed > 0) {
    // The files are the world only if they are all of it: ranks 0 .. count - 1 (distinct, so the highest tells).
    const ImportedRank& last = c.ranks.back();
    if (last.rank.rank >= files_world) {
      throw InputError(last.rank.path + ": rank " + std::to_string(last.rank.rank) + ", but the " +
                       std::to_string(files_world) + " rank files given are the world of the collectives without a " +
                       "pg_name (no world_size metadata says otherwise): give the files of ranks 0 to " +
                       std::to_string(std::max(files_world, last.rank.rank + 1) - 1));
    }
    const std::string n = std::to_string(files_world);
    c.notes.push_back(std::to_string(assumed) + " of " + n + " ranks have collectives without a pg_name and no " +
                      "world_size metadata: they run over all " + n + " ranks given, as ASTRA-sim runs them over " +
                      "every NPU it simulates (an all-gather gathers comm_size x " + n + "); the programs say " +
                      "world_size " + n + ", so simulate needs a job of " + n + " GPUs");
  }
  return c;
}

void write_chakra_import(const ChakraImport& c, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir + ": cannot create the output folder (--out): " + ec.message());
  nlohmann::json ranks = nlohmann::json::array();
  trace::RankFileBudget budget(dir);
  for (const ImportedRank& r : c.ranks) {
    nlohmann::json block = {{"nodes", r.nodes}, {"cpu_nodes_skipped", r.cpu_nodes_skipped},
                            {"other_nodes_skipped", r.other_nodes_skipped},
                            {"comm_groups", c.comm_groups.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(c.comm_groups)}};
    if (r.world_from_files) block["world_size_from"] = "the count of rank files given to the import";
    const nlohmann::json prog = trace::traced_program_json(r.rank, r.rank.path, {{"chakra", block}});
    trace::write_rank_file(dir + "/rank" + std::to_string(r.rank.rank) + ".json", io::json_text(prog) + "\n", &budget);
    ranks.push_back({{"rank", r.rank.rank}, {"kernels", r.compute_ops}, {"nccl_kernels", r.comm_ops},
                     {"compute_busy_s", r.compute_s}, {"step_time_s", nullptr}, {"nodes", r.nodes},
                     {"cpu_nodes_skipped", r.cpu_nodes_skipped}, {"other_nodes_skipped", r.other_nodes_skipped}});
  }
  trace::write_output_text(dir + "/summary.json",
                           io::json_text(nlohmann::json{{"ranks", ranks}, {"notes", c.notes}}, 2) + "\n");
  budget.commit();
}

}  // namespace stepsim::chakra

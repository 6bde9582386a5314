// Workload -> Chakra ET files (what each node holds: et_export.hpp; the format: docs/CHAKRA.md).
#include "stepsim/ingest/chakra/et_export.hpp"

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>
#include <utility>

#include "stepsim/ingest/chakra/comm_groups.hpp"
#include "stepsim/ingest/chakra/et_file.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"

namespace stepsim::chakra {

using workload::CollType;
using workload::GroupKind;
using workload::Op;
using workload::OpKind;
using workload::Program;

int chakra_comm_type(CollType c) {
  switch (c) {
    case CollType::AllReduce: return static_cast<int>(CommType::AllReduce);
    case CollType::AllGather: return static_cast<int>(CommType::AllGather);
    case CollType::ReduceScatter: return static_cast<int>(CommType::ReduceScatter);
    case CollType::AllToAll: return static_cast<int>(CommType::AllToAll);
    case CollType::Broadcast: return static_cast<int>(CommType::Broadcast);
    case CollType::Reduce: return static_cast<int>(CommType::Reduce);
    case CollType::SendRecv: break;
  }
  return -1;
}

namespace {

// Communicator groups met while writing, numbered from 1 in the order first met (ranks ascending, ops in order).
class GroupTable {
 public:
  explicit GroupTable(const workload::Workload& w) : w_(w) {}

  // The id of the group a collective of `rank` runs on, and its members.
  int id(int rank, const Op& op) {
    std::pair<int, int> key;
    if (op.comm >= 0) {
      key = {-1, w_.bindings[rank].comms[op.comm]};
    } else {
      key = {static_cast<int>(op.group), w_.layout.group_id(op.group, rank)};
    }
    auto [it, added] = ids_.try_emplace(key, static_cast<int>(members_.size()) + 1);
    if (added) {
      if (op.comm >= 0) {
        members_.push_back(w_.communicators[key.second]);
      } else {
        std::vector<int> m;
        const int n = w_.layout.group_size(op.group);
        for (int i = 0; i < n; ++i) m.push_back(w_.layout.member(op.group, key.second, i));
        std::sort(m.begin(), m.end());
        members_.push_back(std::move(m));
      }
    }
    return it->second;
  }
  const std::vector<int>& members(int id) const { return members_[id - 1]; }
  const std::vector<std::vector<int>>& all() const { return members_; }

 private:
  const workload::Workload& w_;
  std::map<std::pair<int, int>, int> ids_;
  std::vector<std::vector<int>> members_;
};

EtAttr attr(const char* name, AttrValue v) { return EtAttr{name, std::move(v)}; }

// Writes one rank's program as nodes. Node ids are 1-based and dense; ops_nodes[i] are op i's nodes.
class RankWriter {
 public:
  RankWriter(const workload::Workload& w, int rank, GroupTable& groups,
             std::map<std::pair<int, int>, int32_t>& sends, std::map<std::pair<int, int>, int32_t>& recvs)
      : w_(w), p_(w.program_of_rank(rank)), rank_(rank), groups_(groups), sent_(sends), received_(recvs) {}

  EtGraph graph() {
    EtGraph g;
    g.version = "0.0.4";
    g.metadata = {attr("producer", std::string("stepsim")), attr("rank", int64_t{rank_}),
                  attr("world_size", int64_t{w_.layout.world()}),
                  attr("static_memory_bytes", p_.static_memory.total())};
    // position of every op in its stream, for the same-stream predecessor
    std::vector<uint32_t> pos(p_.ops.size(), 0);
    for (const auto& so : p_.stream_ops) {
      for (size_t k = 0; k < so.size(); ++k) pos[so[k]] = static_cast<uint32_t>(k);
    }
    nodes_of_.assign(p_.ops.size(), {});
    for (size_t i = 0; i < p_.ops.size(); ++i) {
      const Op& op = p_.ops[i];
      std::vector<uint64_t> deps;
      const auto& so = p_.stream_ops[static_cast<int>(op.stream)];
      if (pos[i] > 0) add_deps(so[pos[i] - 1], deps);
      for (uint32_t k = 0; k < op.wait_count; ++k) {
        const workload::Wait& wt = p_.waits[op.wait_begin + k];
        if (wt.count > 0) add_deps(p_.stream_ops[static_cast<int>(wt.stream)][wt.count - 1], deps);
      }
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      emit(static_cast<int64_t>(i), op, deps, g.nodes);
    }
    return g;
  }

 private:
  void add_deps(uint32_t op, std::vector<uint64_t>& deps) const {
    deps.insert(deps.end(), nodes_of_[op].begin(), nodes_of_[op].end());
  }

  EtNode base(int64_t i, const Op& op, NodeType type, const std::vector<uint64_t>& deps) {
    EtNode n;
    n.id = next_id_++;
    n.name = p_.name(op);
    n.type = static_cast<int>(type);
    n.data_deps = deps;
    n.attrs = {attr("is_cpu_op", false), attr("stepsim_op", i), attr("phase", std::string(workload::name_of(op.phase)))};
    return n;
  }

  // A send or a receive between this rank and `peer`; its tag is the exchange's number in that direction.
  EtNode transfer(int64_t i, const Op& op, bool send, int peer, uint64_t bytes, const std::vector<uint64_t>& deps) {
    EtNode n = base(i, op, send ? NodeType::CommSend : NodeType::CommRecv, deps);
    const int src = send ? rank_ : peer, dst = send ? peer : rank_;
    auto& counter = send ? sent_ : received_;
    const int32_t tag = counter[{src, dst}]++;
    n.attrs.push_back(attr("comm_src", int32_t{src}));
    n.attrs.push_back(attr("comm_dst", int32_t{dst}));
    n.attrs.push_back(attr("comm_tag", int32_t{tag}));
    n.attrs.push_back(attr("comm_size", static_cast<int64_t>(bytes)));
    return n;
  }

  void emit(int64_t i, const Op& op, const std::vector<uint64_t>& deps, std::vector<EtNode>& out) {
    std::vector<EtNode> made;
    if (op.kind == OpKind::Compute) {
      EtNode n = base(i, op, NodeType::Comp, deps);
      // duration_micros is whole microseconds (the schema's unit); a kernel shorter than half of one keeps 1 so that
      // ASTRA-sim does not drop it as empty. duration_ns keeps the exact time for stepsim.
      n.duration_micros = op.duration_ns > 0 ? std::max<uint64_t>(1, static_cast<uint64_t>((op.duration_ns + 500) / 1000)) : 0;
      n.attrs.push_back(attr("duration_ns", op.duration_ns));
      n.attrs.push_back(attr("category", std::string(workload::name_of(op.category))));
      n.attrs.push_back(attr("num_ops", static_cast<int64_t>(op.flops)));
      n.attrs.push_back(attr("tensor_size", static_cast<uint64_t>(op.bytes)));
      if (op.category == workload::ComputeCategory::Gemm && op.gemm_m > 0 && op.gemm_m <= INT32_MAX &&
          op.gemm_n > 0 && op.gemm_n <= INT32_MAX && op.gemm_k > 0 && op.gemm_k <= INT32_MAX) {
        n.attrs.push_back(attr("is_matmul", true));
        n.attrs.push_back(attr("M", static_cast<int32_t>(op.gemm_m)));
        n.attrs.push_back(attr("N", static_cast<int32_t>(op.gemm_n)));
        n.attrs.push_back(attr("K", static_cast<int32_t>(op.gemm_k)));
      }
      made.push_back(std::move(n));
    } else if (op.kind == OpKind::Collective && w_.group_size_of(rank_, op) > 1) {
      const int gid = groups_.id(rank_, op);
      if (op.coll == CollType::SendRecv) {
        // A ring step over the group: send to the successor, receive from the predecessor.
        const auto& m = groups_.members(gid);
        const auto at = std::lower_bound(m.begin(), m.end(), rank_) - m.begin();
        const int n = static_cast<int>(m.size());
        made.push_back(transfer(i, op, true, m[(at + 1) % n], op.bytes, deps));
        made.push_back(transfer(i, op, false, m[(at + n - 1) % n], op.bytes, deps));
        for (EtNode& e : made) {
          e.attrs.push_back(attr("pg_name", std::to_string(gid)));
          e.attrs.push_back(attr("stepsim_coll", std::string("send_recv")));
          e.attrs.push_back(attr("stepsim_group", std::string(workload::name_of(op.group))));
        }
      } else {
        EtNode n = base(i, op, NodeType::CommColl, deps);
        n.attrs.push_back(attr("comm_type", int64_t{chakra_comm_type(op.coll)}));
        // ASTRA-sim (and Chakra's PyTorch converter, which sums a collective's input tensors) reads an all-gather's
        // comm_size as each rank's part, not the gathered output; stepsim_bytes keeps the exact output for the way back.
        const auto members = static_cast<uint64_t>(groups_.members(gid).size());
        const bool gather = op.coll == CollType::AllGather;
        n.attrs.push_back(attr("comm_size", static_cast<int64_t>(gather ? op.bytes / members : op.bytes)));
        if (gather) n.attrs.push_back(attr("stepsim_bytes", static_cast<int64_t>(op.bytes)));
        n.attrs.push_back(attr("pg_name", std::to_string(gid)));
        n.attrs.push_back(attr("stepsim_group", std::string(workload::name_of(op.group))));
        made.push_back(std::move(n));
      }
    } else if (op.kind == OpKind::P2P) {
      const int prev = w_.layout.prev_stage_rank(rank_), next = w_.layout.next_stage_rank(rank_);
      if (op.part_count > 0) {
        const auto& peers = w_.bindings[rank_].peers;
        for (uint32_t k = 0; k < op.part_count; ++k) {
          const workload::P2PPart& part = p_.p2p_parts[op.part_begin + k];
          made.push_back(transfer(i, op, part.send, peers[part.peer], part.bytes, deps));
        }
      } else {
        if (op.send_prev) made.push_back(transfer(i, op, true, prev, op.send_prev, deps));
        if (op.send_next) made.push_back(transfer(i, op, true, next, op.send_next, deps));
        if (op.recv_prev) made.push_back(transfer(i, op, false, prev, op.recv_prev, deps));
        if (op.recv_next) made.push_back(transfer(i, op, false, next, op.recv_next, deps));
      }
    }
    if (made.empty()) {
      // Nothing to send (a collective over a group of one): whatever waits for this op waits for what it waited for.
      nodes_of_[i] = deps;
      return;
    }
    for (EtNode& n : made) {
      nodes_of_[i].push_back(n.id);
      if (op.mem_alloc_at_start != 0 && &n == &made.front()) n.attrs.push_back(attr("mem_alloc_bytes", op.mem_alloc_at_start));
      if (op.mem_free_at_end != 0 && &n == &made.front()) n.attrs.push_back(attr("mem_free_bytes", op.mem_free_at_end));
      out.push_back(std::move(n));
    }
  }

  const workload::Workload& w_;
  const Program& p_;
  int rank_;
  GroupTable& groups_;
  std::map<std::pair<int, int>, int32_t>& sent_;
  std::map<std::pair<int, int>, int32_t>& received_;
  std::vector<std::vector<uint64_t>> nodes_of_;
  uint64_t next_id_ = 1;
};

}  // namespace

void check_export_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 200 && name[0] != '.' &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                  });
  if (!ok) {
    throw InputError("--name '" + name + "': must be a file-name prefix of letters, digits, '.', '_' and '-' (not " +
                     "starting with '.'; at most 200 characters): the files go into --out");
  }
}

namespace {

// The bytes every rank's file would take, from one rank of each program: sends' and receives' peers and tags differ
// between ranks of a program, and change a file by a few bytes of varint.
double estimated_export_bytes(const workload::Workload& w) {
  GroupTable groups(w);  // a scratch table: the real one numbers the groups in rank order
  std::map<const workload::Program*, double> bytes_of;
  std::map<std::pair<int, int>, int32_t> sends, recvs;  // a scratch count: the real one starts again at zero
  std::string bytes;
  double total = 0;
  for (int r = 0; r < w.layout.world(); ++r) {
    const workload::Program* p = &w.program_of_rank(r);
    auto it = bytes_of.find(p);
    if (it == bytes_of.end()) {
      RankWriter writer(w, r, groups, sends, recvs);
      bytes.clear();
      write_et(writer.graph(), bytes);
      it = bytes_of.emplace(p, static_cast<double>(bytes.size())).first;
    }
    total += it->second;
  }
  return total;
}

void check_export_size(const workload::Workload& w, const ExportOptions& opt) {
  if (!(opt.max_gib > 0) || opt.max_gib > 1e6) throw InputError("--max-gib: must be above 0 (and at most 10^6)");
  const double gib = estimated_export_bytes(w) / double(1 << 30);
  if (gib <= opt.max_gib) return;
  std::ostringstream m;
  m << std::fixed << std::setprecision(1) << "the export would write about " << gib << " GiB in "
    << w.layout.world() << " files to " << opt.dir << ", above --max-gib " << opt.max_gib
    << "; raise --max-gib to write it, or export a smaller job";
  throw InputError(m.str());
}

}  // namespace

ExportSummary export_chakra(const workload::Workload& w, const ExportOptions& opt) {
  check_export_name(opt.name);
  check_export_size(w, opt);
  std::error_code ec;
  std::filesystem::create_directories(opt.dir, ec);
  if (ec) throw InputError(opt.dir + ": cannot create the output folder (--out): " + ec.message());
  ExportSummary s;
  GroupTable groups(w);
  // Tags count exchanges per (source, destination) pair over the whole job, each side in its own program order.
  std::map<std::pair<int, int>, int32_t> sends, recvs;
  std::string bytes;
  for (int r = 0; r < w.layout.world(); ++r) {
    RankWriter writer(w, r, groups, sends, recvs);
    const EtGraph g = writer.graph();
    bytes.clear();
    write_et(g, bytes);
    trace::write_output_text(opt.dir + "/" + opt.name + "." + std::to_string(r) + ".et", bytes);
    s.nodes += static_cast<int64_t>(g.nodes.size());
    s.bytes += static_cast<int64_t>(bytes.size());
    ++s.ranks;
    if (opt.progress) opt.progress("writing Chakra traces", r + 1, w.layout.world());
  }
  s.comm_group_file = opt.dir + "/comm_group.json";
  trace::write_output_text(s.comm_group_file, comm_groups_json(groups.all(), 1));
  s.comm_groups = static_cast<int>(groups.all().size());
  return s;
}

}  // namespace stepsim::chakra

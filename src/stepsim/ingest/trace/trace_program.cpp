#include "stepsim/ingest/trace/trace_program.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "stepsim/ingest/trace/kernel_naming.hpp"

namespace stepsim::trace {
namespace {

using workload::CollType;
using workload::GroupKind;
using workload::OpKind;
using workload::Stream;

constexpr size_t kMaxProgramNames = 65000;  // Program::names is indexed by uint16

// S of nccl-tests: all-gather counts the gathered output, every other collective its input.
int64_t message_bytes(CollType coll, const CollMeta& m, int group_size, int elem) {
  if (elem <= 0) return -1;
  int64_t n = m.in_nelems;
  if (coll == CollType::AllGather) n = m.out_nelems >= 0 ? m.out_nelems : (n >= 0 && group_size > 0 ? n * group_size : -1);
  if (n < 0 || n > (int64_t{1} << 56)) return -1;
  return n * elem;
}

// The GPU allocator's events (profile_memory=True), charged to kernels by CPU time: an allocation to the first
// kernel launched after it (memory held from that kernel's start), a free to the last kernel launched before it
// (released at that kernel's end). Events before the first launch set the static baseline. Only the device that
// ran most kernels counts.
void charge_memory(const KinetoTrace& k, RankImport& r) {
  if (k.memory.empty() || k.kernels.empty()) return;
  std::map<int64_t, int64_t> per_device;
  for (const Kernel& kn : k.kernels) ++per_device[kn.device];
  const int64_t device = std::max_element(per_device.begin(), per_device.end(), [](const auto& a, const auto& b) {
                           return a.second < b.second;
                         })->first;
  std::vector<std::pair<int64_t, size_t>> launches;  // (launch time, kernel index)
  for (size_t i = 0; i < k.kernels.size(); ++i) {
    if (k.kernels[i].launch_ns != INT64_MIN) launches.push_back({k.kernels[i].launch_ns, i});
  }
  if (launches.empty()) return;
  std::sort(launches.begin(), launches.end());
  bool baseline_set = false;
  for (const MemoryEvent& e : k.memory) {
    if (e.device_type != 1 || e.device != device) continue;
    if (!baseline_set && e.total_allocated >= 0) {
      r.static_memory_bytes = std::max<int64_t>(0, e.total_allocated - e.bytes);
      baseline_set = true;
    }
    ++r.memory_events;
    auto after = std::lower_bound(launches.begin(), launches.end(), std::make_pair(e.ts_ns, size_t{0}));
    if (e.bytes >= 0) {
      if (after == launches.end()) --after;  // after the last launch: held by the last kernel
      r.ops[after->second].mem_alloc += e.bytes;
      r.program.ops[after->second].mem_alloc_at_start += e.bytes;
    } else if (after == launches.begin()) {
      r.static_memory_bytes = std::max<int64_t>(0, r.static_memory_bytes + e.bytes);  // freed before any launch
    } else {
      --after;
      r.ops[after->second].mem_free -= e.bytes;
      r.program.ops[after->second].mem_free_at_end -= e.bytes;
    }
  }
  r.program.static_memory.traced = r.static_memory_bytes;
}

}  // namespace

GroupKind guess_group(bool p2p, CollType coll, const std::vector<int>& ranks, int world_size) {
  if (p2p) return GroupKind::Pp;
  if (coll == CollType::AllToAll) return GroupKind::Ep;
  if (ranks.size() >= 2 && (world_size < 0 || static_cast<int>(ranks.size()) < world_size)) {
    bool consecutive = true;
    for (size_t i = 1; i < ranks.size(); ++i) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
    if (consecutive) return GroupKind::Tp;
  }
  return GroupKind::Dp;
}

bool fill_unknown_steps(std::vector<int>& steps) {
  const auto first = std::find_if(steps.begin(), steps.end(), [](int s) { return s >= 0; });
  if (first == steps.end()) return false;
  int last = *first;
  for (int& s : steps) {
    if (s >= 0) last = s;
    else s = last;
  }
  return true;
}

RankImport build_rank_import(const KinetoTrace& k, const ExecutionTrace* et, int rank) {
  RankImport r;
  r.rank = rank;
  r.world_size = k.world_size;
  r.source = k.path;
  r.launches_found = k.launches_found;
  if (et) r.execution_trace = et->path;
  std::vector<int> et_of_kernel = et ? link_kernels_to_nodes(k, *et) : std::vector<int>(k.kernels.size(), -1);

  std::unordered_map<uint32_t, uint32_t> name_map;  // trace name index -> r.names index
  auto name_id = [&](uint32_t trace_name) {
    auto [it, added] = name_map.try_emplace(trace_name, static_cast<uint32_t>(r.names.size()));
    if (added) r.names.push_back(k.names[trace_name]);
    return it->second;
  };

  const int64_t origin = k.kernels.empty() ? 0 : k.kernels.front().start_ns;
  workload::ProgramBuilder builder(r.program);
  int seq = 0;
  int64_t busy = 0, cover_end = INT64_MIN;  // union of compute intervals, kernels in start order
  for (size_t i = 0; i < k.kernels.size(); ++i) {
    const Kernel& kn = k.kernels[i];
    ImportedOp op;
    op.name = name_id(kn.name);
    op.cuda_stream = kn.stream;
    op.start_ns = kn.start_ns - origin;
    op.duration_ns = kn.dur_ns;
    op.correlation = kn.correlation;
    op.step = kn.step;
    if (kn.cpu_op >= 0) op.cpu_op = static_cast<int32_t>(name_id(k.cpu_ops[kn.cpu_op].name));
    if (et_of_kernel[i] >= 0) {
      op.et_node = et->nodes[et_of_kernel[i]].id;
      ++r.et_linked;
    }
    ++r.kernels;
    const std::string& kname = k.names[kn.name];
    if (!kn.nccl) {
      op.category = category_of_kernel(kname);
      const int64_t end = kn.start_ns + kn.dur_ns;
      if (end > cover_end) {
        busy += end - std::max(kn.start_ns, cover_end);
        cover_end = end;
      }
    } else {
      ++r.nccl_kernels;
      // Metadata: the kernel's own args, else the enclosing record_param_comms / nccl:* CPU op's.
      CollMeta meta;
      if (kn.meta >= 0) meta = k.metas[kn.meta];
      if (kn.comm_op >= 0 && k.cpu_ops[kn.comm_op].meta >= 0) {
        const CollMeta& m = k.metas[k.cpu_ops[kn.comm_op].meta];
        if (meta.name.empty()) meta.name = m.name;
        if (meta.in_nelems < 0) meta.in_nelems = m.in_nelems;
        if (meta.out_nelems < 0) meta.out_nelems = m.out_nelems;
        if (meta.dtype.empty()) meta.dtype = m.dtype;
        if (meta.group_size < 0) meta.group_size = m.group_size;
        if (meta.group_ranks.empty()) meta.group_ranks = m.group_ranks;
      }
      if (meta.name.empty() && et_of_kernel[i] >= 0) meta.name = et->nodes[et_of_kernel[i]].collective;
      // The kernel says what ran; the CPU-side name tells an all-to-all made of send/recv from a p2p exchange.
      NcclKind kind = nccl_kind_of_kernel(kname).value_or(NcclKind{});
      const auto by_name = nccl_kind_of_collective(meta.name);
      if (!nccl_kind_of_kernel(kname) && by_name) kind = *by_name;
      if (kind.p2p && by_name && !by_name->p2p) kind = *by_name;
      op.kind = kind.p2p ? OpKind::P2P : OpKind::Collective;
      op.coll = kind.coll;
      op.collective = meta.name;
      op.dtype = meta.dtype.empty() ? nccl_kernel_dtype(kname) : meta.dtype;
      op.group_ranks = meta.group_ranks;
      op.group_size = meta.group_size >= 0 ? meta.group_size
                                           : (!meta.group_ranks.empty() ? static_cast<int>(meta.group_ranks.size())
                                                                        : (kind.p2p ? 2 : -1));
      int elem = dtype_bytes(meta.dtype);
      if (elem == 0) elem = dtype_bytes(nccl_kernel_dtype(kname));
      op.bytes = message_bytes(op.coll, meta, op.group_size, elem);
      op.group = guess_group(kind.p2p, op.coll, op.group_ranks, k.world_size);
      op.seq = seq++;
    }
    // The same op as the engine sees it.
    workload::Op w;
    w.kind = op.kind;
    w.stream = op.kind == OpKind::Compute ? Stream::Compute : stream_of(op.group);
    w.category = op.category;
    w.coll = op.coll;
    w.group = op.group;
    w.bytes = op.bytes > 0 ? static_cast<uint64_t>(op.bytes) : 0;
    w.duration_ns = op.duration_ns;
    w.microbatch = -1;
    const bool room = r.program.names.size() < kMaxProgramNames;
    builder.emit(w, room ? kname.substr(0, kname.find('(')) : std::string("kernel"));
    r.ops.push_back(std::move(op));
  }
  charge_memory(k, r);
  // Divisions, not x 1e-9: whole nanoseconds then print as the shortest decimal (0.001246, not 0.0012460000000000001).
  r.compute_busy_s = static_cast<double>(busy) / 1e9;
  if (!k.steps.empty()) {
    double sum = 0;
    for (const ProfilerStep& s : k.steps) sum += static_cast<double>(s.dur_ns);
    r.step_time_s = sum / static_cast<double>(k.steps.size()) / 1e9;
  }
  r.profiler_steps = static_cast<int>(k.steps.size());
  for (const ProfilerStep& s : k.steps) r.steps.push_back({s.number, s.start_ns - origin, s.dur_ns});
  return r;
}

}  // namespace stepsim::trace

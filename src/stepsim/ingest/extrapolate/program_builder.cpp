#include "stepsim/ingest/extrapolate/program_builder.hpp"

#include <algorithm>

namespace stepsim::extrapolate {

using workload::CollType;
using workload::GroupKind;
using workload::OpKind;
using workload::Phase;

namespace {

class Emitter {
 public:
  std::vector<trace::TracedOp> ops;

  int compute(const std::string& name, workload::ComputeCategory c, Phase ph, int64_t ns) {
    trace::TracedOp o;
    o.name = name;
    o.category = c;
    o.phase = ph;
    o.duration_ns = ns;
    if (last_compute_ >= 0) o.after.push_back(last_compute_);
    o.after.insert(o.after.end(), waits_.begin(), waits_.end());
    waits_.clear();
    last_compute_ = push(std::move(o));
    return last_compute_;
  }
  // Issued after the compute op `after` (-1: the latest); `blocking`: the next compute op waits for it.
  int collective(CollType c, GroupKind g, uint64_t bytes, const std::vector<int>& ranks, const std::string& name,
                 int after, bool blocking) {
    trace::TracedOp o;
    o.kind = OpKind::Collective;
    o.name = name;
    o.coll = c;
    o.group = g;
    o.bytes = bytes;
    o.group_ranks = ranks;
    const int a = after >= 0 ? after : last_compute_;
    if (a >= 0) o.after.push_back(a);
    const int i = push(std::move(o));
    if (blocking) waits_.push_back(i);
    return i;
  }
  // A batched send/recv; sends carry what the latest compute op produced. The next compute op waits for it, as
  // Megatron's (non-overlapped) p2p_communicate does.
  void p2p(std::vector<trace::TracedTransfer> sends, std::vector<trace::TracedTransfer> recvs, const std::string& name) {
    if (sends.empty() && recvs.empty()) return;
    trace::TracedOp o;
    o.kind = OpKind::P2P;
    o.group = GroupKind::Pp;
    o.name = name;
    if (!sends.empty() && last_compute_ >= 0) o.after.push_back(last_compute_);
    o.sends = std::move(sends);
    o.recvs = std::move(recvs);
    waits_.push_back(push(std::move(o)));
  }
  void wait_for(const std::vector<int>& ops_) { waits_.insert(waits_.end(), ops_.begin(), ops_.end()); }

 private:
  int push(trace::TracedOp o) {
    ops.push_back(std::move(o));
    return static_cast<int>(ops.size()) - 1;
  }
  int last_compute_ = -1;
  std::vector<int> waits_;
};

}  // namespace

std::vector<trace::TracedOp> build_program(const StepPlan& plan, int tp_rank, int stage) {
  const SourceStep& src = *plan.src;
  const workload::RankLayout& L = plan.layout;
  const int p = L.pipeline(), m = plan.micro_batches;
  const auto rank_at = [&](int tp, int dp, int st) { return L.rank_of({tp, 0, dp, st}); };
  std::vector<int> tp_group, dp_group;
  for (int t = 0; t < L.tensor(); ++t) tp_group.push_back(rank_at(t, 0, stage));
  for (int d = 0; d < L.data(); ++d) dp_group.push_back(rank_at(tp_rank, d, stage));
  const uint64_t to_next = stage + 1 < p ? plan.boundary_bytes[static_cast<size_t>(stage)] : 0;
  const uint64_t from_prev = stage > 0 ? plan.boundary_bytes[static_cast<size_t>(stage - 1)] : 0;
  const int next = stage + 1 < p ? rank_at(tp_rank, 0, stage + 1) : -1;
  const int prev = stage > 0 ? rank_at(tp_rank, 0, stage - 1) : -1;

  std::vector<int> fwd, bwd, tail;
  for (size_t i = 0; i < src.ops.size(); ++i) {
    const int st = plan.stage_of_op[i];
    if (st < 0) tail.push_back(static_cast<int>(i));
    else if (st == stage) (src.ops[i].phase == Phase::Backward ? bwd : fwd).push_back(static_cast<int>(i));
  }
  // Host time is work: the CPU-bound idle time before each traced op is replayed wherever the op runs, once per
  // micro-batch (the training loop's Python, launches and data loading run again for each), on the op's stage.
  const bool gaps = plan.host_gaps;
  const std::vector<Bucket>& buckets = plan.buckets[static_cast<size_t>(stage)];

  Emitter e;
  std::vector<int> dp_ops;
  auto run = [&](const std::vector<int>& list, bool last_backward) {
    int last = -1;
    for (int i : list) {
      const SourceOp& op = src.ops[static_cast<size_t>(i)];
      // The tail (optimizer) is shared out among the stages, its host time with it.
      const bool shared_tail = plan.stage_of_op[static_cast<size_t>(i)] < 0 && p > 1;
      if (gaps && op.gap_ns > 0)
        e.compute("host gap", workload::ComputeCategory::Host, op.phase, shared_tail ? op.gap_ns / p : op.gap_ns);
      int64_t ns = plan.duration_ns[static_cast<size_t>(i)];
      if (shared_tail) ns = std::max<int64_t>(1, ns / p);
      last = e.compute(op.name, op.category, op.phase, ns);
      for (const TpCollective& c : plan.tp) {
        if (c.after_op == i && L.tensor() > 1) e.collective(c.coll, GroupKind::Tp, c.bytes, tp_group, c.name, last, true);
      }
      if (last_backward && !plan.dp_after_backward && L.data() > 1) {
        for (size_t b = 0; b < buckets.size(); ++b) {
          if (buckets[b].ready_op == i)
            dp_ops.push_back(e.collective(CollType::AllReduce, GroupKind::Dp, buckets[b].bytes, dp_group,
                                          "ddp bucket " + std::to_string(b) + " all_reduce", last, false));
        }
      }
    }
    if (last_backward && plan.dp_after_backward && L.data() > 1) {
      for (size_t b = 0; b < buckets.size(); ++b)
        dp_ops.push_back(e.collective(CollType::AllReduce, GroupKind::Dp, buckets[b].bytes, dp_group,
                                      "ddp bucket " + std::to_string(b) + " all_reduce", -1, false));
    }
  };
  using T = trace::TracedTransfer;
  auto none = std::vector<T>{};
  auto recv_fwd = [&] { if (prev >= 0) e.p2p(none, {T{prev, from_prev}}, "recv_forward"); };
  auto send_fwd = [&] { if (next >= 0) e.p2p({T{next, to_next}}, none, "send_forward"); };
  auto recv_bwd = [&] { if (next >= 0) e.p2p(none, {T{next, to_next}}, "recv_backward"); };
  auto send_bwd = [&] { if (prev >= 0) e.p2p({T{prev, from_prev}}, none, "send_backward"); };
  auto send_fwd_recv_bwd = [&] { if (next >= 0) e.p2p({T{next, to_next}}, {T{next, to_next}}, "send_forward_recv_backward"); };
  auto send_bwd_recv_fwd = [&] { if (prev >= 0) e.p2p({T{prev, from_prev}}, {T{prev, from_prev}}, "send_backward_recv_forward"); };
  auto F = [&](int) { run(fwd, false); };
  auto B = [&](int j) { run(bwd, j == m - 1); };

  if (!plan.one_f_one_b) {  // GPipe: all forwards, then all backwards
    for (int j = 0; j < m; ++j) recv_fwd(), F(j), send_fwd();
    for (int j = 0; j < m; ++j) recv_bwd(), B(j), send_bwd();
  } else {  // Megatron-LM's forward_backward_pipelining_without_interleaving
    const int warmup = std::min(p - stage - 1, m), remaining = m - warmup;
    for (int j = 0; j < warmup; ++j) recv_fwd(), F(j), send_fwd();
    if (remaining > 0) recv_fwd();
    for (int i = 0; i < remaining; ++i) {
      F(warmup + i);
      send_fwd_recv_bwd();
      B(i);
      if (i == remaining - 1) send_bwd();
      else send_bwd_recv_fwd();
    }
    for (int j = remaining; j < m; ++j) recv_bwd(), B(j), send_bwd();
  }
  e.wait_for(dp_ops);  // the optimizer needs the reduced gradients
  run(tail, false);
  return std::move(e.ops);
}

}  // namespace stepsim::extrapolate

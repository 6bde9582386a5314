#include "stepsim/plan/plan_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "stepsim/plan/estimate/host_flow_shop.hpp"
#include "stepsim/workload/dp_buckets.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "stepsim/workload/optimizer_offload.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "stepsim/workload/working_memory.hpp"

namespace stepsim::plan {

using workload::GroupKind;
using workload::Op;

ProbeKey probe_key(const Plan& p) {
  return ProbeKey{p.tensor, p.context, p.expert, p.micro_batch_size, p.recompute, p.tp_comm_overlap, p.cp_comm_type,
                  p.expert_tensor, p.fp8_recipe, p.ep_overlap, p.cp_a2a};
}

namespace {

constexpr double kNs = 1e-9;

void add(LayerCosts::Part& a, const LayerCosts::Part& b) {
  a.compute_s += b.compute_s;
  a.tp_s += b.tp_s;
  a.cp_s += b.cp_s;
  a.ep_s += b.ep_s;
  a.host_s += b.host_s;
  a.issue_s += b.issue_s;
}

}  // namespace

namespace {

using estimate::chunk_cycle;
using estimate::CycleWaits;
using estimate::host_waits_with_syncs;
using estimate::IssueBlock;

// The optimizer step of one rank's shard as the builder emits it: the GPU's Adam, and under CPU offload the copies down,
// the CPU's Adam and the copies up (in series, or pipelined in kOffloadChunks with the first copy down and the last
// copy up exposed), the GPU's share running beside the first copy down.
double optimizer_seconds(const spec::TrainingSpec& tr, const workload::BytesPerParam& bpp, double params,
                         const cost::ComputeModel& compute) {
  auto seconds = [&](workload::ComputeCategory c, double bytes) {
    if (bytes <= 0) return 0.0;
    Op op;
    op.category = c;
    op.bytes = static_cast<uint64_t>(bytes);
    return static_cast<double>(compute.duration_ns(op)) * kNs;
  };
  const double host = tr.optimizer_offload ? std::round(params * tr.optimizer_offload_fraction) : 0.0;
  const double gpu = seconds(workload::ComputeCategory::Optimizer, (params - host) * bpp.step_traffic);
  if (host <= 0) return gpu;
  const int chunks = tr.optimizer_offload_overlap ? workload::kOffloadChunks : 1;
  const double copy = seconds(workload::ComputeCategory::Offload, host / chunks * workload::kOffloadCopyBytesPerParam);
  const double cpu = seconds(workload::ComputeCategory::CpuOptimizer, host * workload::kCpuAdamBytesPerParam);
  return std::max(gpu, copy) + cpu + copy;
}

// Stage 0's first model chunk under overlap_grad_reduce / overlap_param_gather, unit by unit as the builder buckets
// it (workload::StageBuilder::plan_buckets): units in backward order (the head when the chunk is the whole model,
// the layers last to first, the embedding), dense and expert parameters in separate buckets that close once they
// hold `limit` parameters. A bucket's gradients are reduced when the unit closing it has finished its backward
// (last micro-batch); its parameters are all-gathered at the step's start, in forward order, and the first unit of
// it in forward order waits for them. One FIFO data-parallel stream carries both.
struct BucketUnit {
  double fwd_s = 0, bwd_s = 0, dense = 0, expert = 0;
};
struct DpBucket {
  double reduce_s = 0, gather_s = 0;
  size_t close = 0;  // backward-order index of the unit that completes it (its first unit in forward order)
};
std::vector<DpBucket> plan_dp_buckets(const std::vector<BucketUnit>& units, double limit,
                                      const std::function<double(bool, double)>& reduce_s,
                                      const std::function<double(bool, double)>& gather_s) {
  std::vector<workload::UnitParams> params;
  params.reserve(units.size());
  for (const BucketUnit& u : units) params.push_back({u.dense, u.expert});
  std::vector<DpBucket> out;
  for (const workload::DpBucketSpan& b : workload::form_dp_buckets(params, limit))
    out.push_back({reduce_s(b.expert, b.params), gather_s(b.expert, b.params), b.last});
  return out;
}
// Seconds the stream runs on after the chunk's last backward (overlapped gradient reduction).
// `stream`: when the data-parallel stream is free, on the clock where 0 is the start of the chunk's last backward.
double exposed_grad_reduce(const std::vector<BucketUnit>& units, const std::vector<DpBucket>& buckets, double stream) {
  double t = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    t += units[u].bwd_s;
    for (const DpBucket& b : buckets) {
      if (b.close == u) stream = std::max(stream, t) + b.reduce_s;
    }
  }
  return std::max(0.0, stream - t);
}
// Seconds the chunk's first forward waits for its parameters (overlapped parameter all-gather).
double exposed_param_gather(const std::vector<BucketUnit>& units, const std::vector<DpBucket>& buckets) {
  // Gathers in forward order: buckets close in backward order, so the last one formed is gathered first.
  std::vector<double> ready(units.size(), 0.0);
  double stream = 0;
  for (size_t i = buckets.size(); i-- > 0;) {
    stream += buckets[i].gather_s;
    // A bucket holds backward-order units first..close: in forward order `close` comes first.
    ready[buckets[i].close] = std::max(ready[buckets[i].close], stream);
  }
  double t = 0, work = 0;
  for (size_t u = units.size(); u-- > 0;) {  // forward order
    t = std::max(t, ready[u]) + units[u].fwd_s;
    work += units[u].fwd_s;
  }
  return std::max(0.0, t - work);
}

// ZeRO-2/3: a stage's data-parallel stream replayed against its compute over the whole step, pass by pass in the
// schedule's order, with the pipeline's waits of balanced stages between the passes (the stream runs on in them).
// Stage 3 gathers each unit's parameters before it computes: with prefetch unit i + 1's gather is issued when unit i
// starts (units 0 and 1 at the pass start), else when the unit before has finished; after each unit's backward its
// gradients are reduce-scattered (stages 2 and 3), all on one FIFO stream, so a backlog of reduce-scatters delays
// the next pass's gathers. The host issues the units' ops on a timeline of its own that never waits for the GPU
// (no syncs in a dense model): a unit ends no earlier than its host has issued it, so host-bound passes and the GPU's
// waits for gathers overlap as in the engine (a replay with host-bound passes made longer, waits added on top, was
// 3-11 % high; with the GPU's passes alone the stream looked idle beside host-bound passes, and a ZeRO-2 plan of
// Llama-2 70B was 35 % high). Returns the time the compute stood idle waiting for a gather, how long the stream runs
// on after the last pass's compute, and when that is.
struct ZeroUnits {
  // Per unit, in the pass's order: the GPU's time (kernels and communication waits), the host's time to issue it
  // (0 where the GPU's time already holds the host's waits: MoE), the gather before it and the reduce-scatter after.
  std::vector<double> compute, issue, gather, scatter;
};
struct ZeroReplay {
  double exposed_s = 0, trailing_s = 0, end_s = 0;  // end_s: the last pass's end
  double first_pass_s = 0, last_pass_s = 0;          // the waits for gathers in the first and in the last pass
  double stream_s = 0;  // when the stream would end if it never idled after the first reduce-scatter
};
class ZeroStream {
 public:
  explicit ZeroStream(bool prefetch) : prefetch_(prefetch) {}
  // `pipeline_wait`: how long the pass waits for its input from the neighbouring stage (the fill and drain of the
  // pipeline): the gathers issued at the pass's start run meanwhile, and only what they take beyond it is exposed.
  void pass(const ZeroUnits& u, bool backward, double pipeline_wait = 0) {
    const size_t n = u.compute.size();
    gathered_.assign(n, -1);
    const double idle_before = idle_;
    for (size_t i = 0; i < n; ++i) {
      issue(u, i);
      if (prefetch_) issue(u, i + 1);
      if (i == 0) comp_ += pipeline_wait;
      const double start = std::max(comp_, gathered_[i]);
      idle_ += start - comp_;
      // The host issues on without waiting for the GPU (no syncs): a unit ends no earlier than its last op is issued.
      host_ += u.issue[i];
      comp_ = std::max(start + u.compute[i], host_);
      if (backward && u.scatter[i] > 0) {
        if (first_scatter_ < 0) first_scatter_ = std::max(dp_, comp_);
        dp_ = std::max(dp_, comp_) + u.scatter[i];
        work_ += u.scatter[i];
      }
    }
    if (passes_++ == 0) first_idle_ = idle_ - idle_before;
    last_idle_ = idle_ - idle_before;
  }
  ZeroReplay result() const {
    return {idle_, std::max(0.0, dp_ - comp_), comp_, first_idle_, last_idle_, std::max(0.0, first_scatter_) + work_};
  }
  // The replay's state, and `times` more repetitions of a stretch that moved it by `d` (the steady state's shortcut).
  struct State {
    double dp = 0, comp = 0, idle = 0, host = 0, work = 0;
  };
  State state() const { return {dp_, comp_, idle_, host_, work_}; }
  void repeat(const State& d, double times) {
    dp_ += d.dp * times;
    comp_ += d.comp * times;
    idle_ += d.idle * times;
    host_ += d.host * times;
    work_ += d.work * times;
  }

 private:
  void issue(const ZeroUnits& u, size_t k) {
    if (k >= u.compute.size() || gathered_[k] >= 0) return;
    if (u.gather[k] <= 0) {
      gathered_[k] = 0;
      return;
    }
    dp_ = std::max(dp_, comp_) + u.gather[k];
    if (first_scatter_ >= 0) work_ += u.gather[k];
    gathered_[k] = dp_;
  }
  bool prefetch_;
  double dp_ = 0, comp_ = 0, idle_ = 0, host_ = 0;
  double first_scatter_ = -1, work_ = 0;  // when the first reduce-scatter starts; the stream's collectives in all
  double first_idle_ = 0, last_idle_ = 0;  // the waits for gathers in the first and in the last pass
  int passes_ = 0;
  std::vector<double> gathered_;
};

}  // namespace

Estimate estimate_plan(const spec::JobSpec& job, const LayerCosts& lc, const cost::ComputeModel& compute,
                       const cost::CollectiveModel& comm) {
  const auto& par = job.parallelism;
  const auto& tr = job.training;
  const int p = par.pipeline, v = par.virtual_stages;
  const int64_t m = job.num_microbatches();
  const workload::ModelDims d = workload::make_dims(job);
  // The builder's layout, expert tensor parallel size included (it sets the expert-DP group that shards the experts'
  // optimizer states and reduces their gradients).
  const workload::RankLayout layout(par.tensor, par.context, par.data, par.pipeline, par.expert,
                                    std::min(job.cluster.gpus_per_node, job.cluster.num_gpus), par.expert_tensor,
                                    par.cp_a2a_size());
  const workload::BytesPerParam bpp = workload::bytes_per_param(tr);

  // Layers of each model chunk (global chunk order), as job_for placed them.
  const int chunks = p * v;
  std::vector<int> chunk_len = par.pipeline_layers;
  if (chunk_len.empty()) chunk_len.assign(chunks, job.model.num_layers / chunks);
  std::vector<int> chunk_first(chunks, 0);
  for (int c = 1; c < chunks; ++c) chunk_first[c] = chunk_first[c - 1] + chunk_len[c - 1];

  const int communicators = layout.communicators();
  const auto dp_geo = layout.geometry(GroupKind::Dp, 0), edp_geo = layout.geometry(GroupKind::Edp, 0);
  const int64_t dp_shards = layout.group_size(GroupKind::Dp), edp_shards = layout.group_size(GroupKind::Edp);
  const bool dist = tr.distributed_optimizer;

  struct Stage {
    LayerCosts::Part f, b;
    double stored = 0, dense = 0, expert = 0, bf16 = 0;  // bf16: parameters of layers fp8 jobs keep in bf16
    double zero_wait = 0;  // ZeRO-3: compute idle waiting for parameter gathers, per micro-batch (step / m)
    // ZeRO-2/3: the stage's data-parallel stream replay (all 0 otherwise). Its end_s bounds the stage's step where the
    // stream is the bottleneck, which the GPU's passes plus the waits (total) understate when the passes are
    // host-bound; its first and last passes' gather waits count in the pipeline's fill and drain.
    ZeroReplay zero;
    double total() const { return f.total() + b.total() + zero_wait; }
  };
  std::vector<Stage> st(p);
  for (int s = 0; s < p; ++s) {
    Stage& x = st[s];
    for (int k = 0; k < v; ++k) {
      const int c = s + k * p;
      for (int l = chunk_first[c]; l < chunk_first[c] + chunk_len[c]; ++l) {
        add(x.f, lc.fwd[l]);
        add(x.b, lc.bwd[l]);
        x.stored += lc.stored_bytes[l];
        const bool moe = job.model.is_moe_layer(l);
        x.dense += static_cast<double>(d.layer_params_dense(moe));
        if (moe) x.expert += static_cast<double>(d.params_moe_experts);
        if (tr.layer_in_bf16(l, job.model.num_layers))
          x.bf16 += static_cast<double>(d.layer_params(moe));
      }
    }
    if (s == 0) {
      add(x.f, lc.first_fwd);
      add(x.b, lc.first_bwd);
      x.stored += lc.first_stored;
      x.dense += static_cast<double>(d.params_embedding);
    }
    if (s == p - 1) {
      add(x.f, lc.last_fwd);
      add(x.b, lc.last_bwd);
      x.stored += lc.last_stored;
      x.dense += static_cast<double>(d.params_output + d.params_final_norm);
    }
  }

  // With host syncs (MoE) the host's lead ends at every sync (an MoE layer's forward, and its recomputation), so a
  // stage's micro-batch is a chain of sync-to-sync segments: host_waits_with_syncs. They replace the probe's waits,
  // which it saw with the whole model's backward between two forwards, where a stage of a few layers per chunk has a
  // backward that may barely outrun its host. Under the combined 1F1B EP overlap the probe's costs are kept (the
  // pair, below).
  if (lc.host_syncs && lc.paired_ep_s.empty()) {
    for (int s = 0; s < p; ++s) {
      std::vector<IssueBlock> cycle;
      for (int k = 0; k < v; ++k) {
        const int c = s + k * p;
        const std::vector<IssueBlock> chunk = chunk_cycle(lc, chunk_first[c], chunk_len[c], c == 0, c == chunks - 1);
        cycle.insert(cycle.end(), chunk.begin(), chunk.end());
      }
      const CycleWaits w = host_waits_with_syncs(cycle);
      st[s].f.host_s = w.fluid_s + lc.sync_wait_s * w.syncs;
      st[s].b.host_s = 0;
    }
  }
  // Without host syncs the GPU's waits for the host are not per layer (the probe did not replay the host, so host_s
  // is 0): the host issues the next micro-batch while the GPU works through this one's backward and through the
  // pipeline's waits, so a stage is host-bound only where its host needs longer for the whole step than its GPU
  // (host_bound below).
  // How long a pass takes beside the overlapped gradient buckets and parameter gathers (the bucket replays below): a
  // host-bound pass lasts as long as its host takes to issue it, and the stream runs meanwhile. (The ZeRO-2/3 replay
  // runs the host on its own timeline instead: ZeroStream.)
  auto wall = [&](const LayerCosts::Part& x) { return lc.host_syncs ? x.total() : std::max(x.total(), x.issue_s); };

  // Combined 1F1B EP overlap: the steady state's forward/backward pairs leave each MoE layer's paired exposure instead
  // of the two unpaired ones; the warm-up forwards and cool-down backwards (one more warm-up under the overlap) keep
  // theirs. Averaged over the stage's m v passes.
  std::vector<double> paired_share(p, 0.0);  // per stage: the share of its passes that run in combined pairs
  // A layer's forward and backward as a stage with `share` of its passes in pairs sees them on average: the pair's
  // exposed EP, TP and CP time (charged to the forward) instead of the unpaired passes'.
  auto pair_layer = [&](int l, double share, LayerCosts::Part& f, LayerCosts::Part& b) {
    f.ep_s = (1 - share) * f.ep_s + share * lc.paired_ep_s[l];
    f.tp_s = (1 - share) * f.tp_s + share * lc.paired_tp_s[l];
    f.cp_s = (1 - share) * f.cp_s + share * lc.paired_cp_s[l];
    f.host_s = (1 - share) * f.host_s + share * lc.paired_host_s[l];
    b.ep_s = (1 - share) * b.ep_s;
    b.tp_s = (1 - share) * b.tp_s;
    b.cp_s = (1 - share) * b.cp_s;
    b.host_s = (1 - share) * b.host_s;
  };
  if (!lc.paired_ep_s.empty()) {
    for (int s = 0; s < p; ++s) {
      const int total = static_cast<int>(m) * v;
      const int warm = workload::warmup_steps(par.schedule, s, p, v, static_cast<int>(m), true);
      const double paired = static_cast<double>(total - warm) / static_cast<double>(total);
      paired_share[s] = paired;
      Stage& x = st[s];
      for (int k = 0; k < v; ++k) {
        const int c = s + k * p;
        for (int l = chunk_first[c]; l < chunk_first[c] + chunk_len[c]; ++l) {
          LayerCosts::Part f = lc.fwd[l], b = lc.bwd[l];
          pair_layer(l, paired, f, b);
          x.f.ep_s += f.ep_s - lc.fwd[l].ep_s, x.f.tp_s += f.tp_s - lc.fwd[l].tp_s, x.f.cp_s += f.cp_s - lc.fwd[l].cp_s;
          x.b.ep_s += b.ep_s - lc.bwd[l].ep_s, x.b.tp_s += b.tp_s - lc.bwd[l].tp_s, x.b.cp_s += b.cp_s - lc.bwd[l].cp_s;
          x.f.host_s += f.host_s - lc.fwd[l].host_s, x.b.host_s += b.host_s - lc.bwd[l].host_s;
        }
      }
    }
  }

  // ZeRO-2/3: each stage's passes against its data-parallel stream (ZeroStream).
  // One collective over the data-parallel group (expert: the expert-data-parallel one); 0 where it has one rank.
  auto coll = [&](workload::CollType c, bool expert, double bytes) {
    const int64_t shards = expert ? edp_shards : dp_shards;
    if (shards <= 1 || bytes <= 0) return 0.0;
    return static_cast<double>(comm.collective_ns(c, static_cast<uint64_t>(bytes), expert ? edp_geo : dp_geo)) * kNs;
  };

  const int zero = tr.zero_stage;
  if (zero >= 2 && (dp_shards > 1 || edp_shards > 1)) {
    // Per unit: the dense parameters' collective plus the experts', each memoised (a 405B plan replays thousands of
    // units of a few sizes).
    std::map<std::pair<int, uint64_t>, double> memo;  // (collective and group, bytes) -> seconds
    auto coll_s = [&](workload::CollType c, double dense, double expert, double bytes_per_param) {
      double t = 0;
      const double params[2] = {dense, expert};
      for (int k = 0; k < 2; ++k) {
        const uint64_t bytes = static_cast<uint64_t>(params[k] * bytes_per_param);
        auto [it, fresh] = memo.try_emplace({static_cast<int>(c) * 2 + k, bytes}, 0.0);
        if (fresh) it->second = coll(c, k == 1, params[k] * bytes_per_param);
        t += it->second;
      }
      return t;
    };
    const bool prefetch = tr.zero3_param_fetch == spec::Zero3Fetch::Prefetch;
    std::vector<std::vector<ZeroUnits>> fwd_of(p), bwd_of(p);
    for (int s = 0; s < p; ++s) {
      // Units of each of the stage's chunks, forward order then backward order: embedding (first chunk), the layers,
      // the head (last chunk).
      std::vector<ZeroUnits>& fwd = fwd_of[s];
      std::vector<ZeroUnits>& bwd = bwd_of[s];
      fwd.resize(v), bwd.resize(v);
      for (int k = 0; k < v; ++k) {
        const int c = s + k * p;
        auto unit = [&](const LayerCosts::Part& f, const LayerCosts::Part& b, double dense, double expert) {
          const double g = zero == 3 ? coll_s(workload::CollType::AllGather, dense, expert, bpp.weight) : 0.0;
          const double r = coll_s(workload::CollType::ReduceScatter, dense, expert, bpp.gradient);
          fwd[k].compute.push_back(f.total());
          fwd[k].issue.push_back(lc.host_syncs ? 0.0 : f.issue_s);
          fwd[k].gather.push_back(g);
          fwd[k].scatter.push_back(0);
          bwd[k].compute.insert(bwd[k].compute.begin(), b.total());
          bwd[k].issue.insert(bwd[k].issue.begin(), lc.host_syncs ? 0.0 : b.issue_s);
          bwd[k].gather.insert(bwd[k].gather.begin(), g);
          bwd[k].scatter.insert(bwd[k].scatter.begin(), r);
        };
        if (c == 0) unit(lc.first_fwd, lc.first_bwd, static_cast<double>(d.params_embedding), 0);
        for (int l = chunk_first[c]; l < chunk_first[c] + chunk_len[c]; ++l) {
          const bool moe = job.model.is_moe_layer(l);
          LayerCosts::Part f = lc.fwd[l], b = lc.bwd[l];
          if (!lc.paired_ep_s.empty()) {
            // Combined 1F1B EP overlap: the passes are as short as their pairs make them (as for the stage above),
            // so the data-parallel stream has less compute to hide behind.
            pair_layer(l, paired_share[s], f, b);
          }
          unit(f, b, static_cast<double>(d.layer_params_dense(moe)), moe ? static_cast<double>(d.params_moe_experts) : 0.0);
        }
        if (c == chunks - 1) unit(lc.last_fwd, lc.last_bwd, static_cast<double>(d.params_output + d.params_final_norm), 0);
      }
    }
    // `extra_first`, `extra_last`: how much longer than the stages' passes alone the first forward waits for its input
    // and the last backward for its gradient (the other stages' own waits for gathers in the fill and the drain).
    auto replay = [&](int s, double extra_first, double extra_last) {
      const std::vector<ZeroUnits>& fwd = fwd_of[s];
      const std::vector<ZeroUnits>& bwd = bwd_of[s];
      // The stage's passes in Megatron's order (schedule.cpp): the warm-up forwards, then forward k + warm-up and
      // backward k alternating, then the cool-down backwards; virtual micro-batch k runs chunk (k mod p v) / p
      // forward, v - 1 minus that backward. The steady part repeats every p v pairs: once two consecutive periods
      // move the stream's state by the same amount, the remaining whole periods are added at once.
      const int total = static_cast<int>(m) * v, group = p * v;
      const int warm = workload::warmup_steps(par.schedule, s, p, v, static_cast<int>(m));
      auto chunk_of = [&](int k) { return (k % group) / p; };
      // The pipeline's waits in stage s's timeline, from the stages' chunk passes F_j and B_j (the stream's own waits
      // left out): the forwards of the stages before it before its first forward; the stages after it forward and
      // back, less its own warm-up forwards meanwhile, before its first backward; their forwards spread over its
      // cool-down backwards; and in the steady state, a stage lighter than the slowest waits for its pace every
      // pair. The stream works through these waits (the engine's does): a deep pipeline hides gathers and drains
      // reduce-scatters there. (The steady-state lag is left out with host syncs: there the passes are the host's
      // own, chained per layer, and with it Mixtral's sampled ZeRO-2 plans went from -3.3 to -4.8 %.)
      double before_f = 0, after_fb = 0, after_f = 0, pace = 0;
      for (int j = 0; j < p; ++j) {
        const double fj = st[j].f.total() / v, bj = st[j].b.total() / v;
        if (j < s) before_f += fj;
        if (j > s) after_fb += fj + bj, after_f += fj;
        pace = std::max(pace, fj + bj);
      }
      const double f_own = st[s].f.total() / v, b_own = st[s].b.total() / v;
      const int cooldown = std::max(1, warm);
      const double first_wait = before_f + extra_first, backward_wait = std::max(0.0, after_fb - (p - 1 - s) * f_own),
                   cooldown_wait = after_f / cooldown,
                   lag = lc.host_syncs ? 0.0 : std::max(0.0, pace - f_own - b_own);
      ZeroStream stream(prefetch);
      for (int k = 0; k < warm; ++k) stream.pass(fwd[chunk_of(k)], false, k == 0 ? first_wait : 0.0);
      const int steady = total - warm;
      ZeroStream::State last{}, before = stream.state();
      bool have_last = false;
      for (int k = 0; k < steady; ++k) {
        stream.pass(fwd[chunk_of(k + warm)], false, k == 0 && warm == 0 ? first_wait : 0.0);
        stream.pass(bwd[v - 1 - chunk_of(k)], true, k == 0 ? backward_wait : lag);
        if ((k + 1) % group != 0) continue;
        const ZeroStream::State now = stream.state();
        const ZeroStream::State d{now.dp - before.dp, now.comp - before.comp, now.idle - before.idle,
                                  now.host - before.host, now.work - before.work};
        auto same = [](double a, double b) { return std::fabs(a - b) <= 1e-12 + 1e-9 * std::fabs(b); };
        const int periods_left = (steady - k - 1) / group;
        if (have_last && periods_left > 0 && same(d.dp, last.dp) && same(d.comp, last.comp) && same(d.idle, last.idle) &&
            same(d.host, last.host)) {
          stream.repeat(d, periods_left);
          k += periods_left * group;
        }
        last = d;
        have_last = true;
        before = stream.state();
      }
      for (int k = steady; k < total; ++k) {  // (all forwards first when m == p under the interleaved schedule)
        stream.pass(bwd[v - 1 - chunk_of(k)], true,
                    cooldown_wait + (k == 0 ? backward_wait : 0.0) + (k == total - 1 ? extra_last : 0.0));
      }
      return stream.result();
    };
    std::vector<ZeroReplay> zs(p);
    for (int s = 0; s < p; ++s) zs[s] = replay(s, 0, 0);
    if (zero == 3 && p > 1 && v == 1) {
      // ZeRO-3 through a pipeline: a stage's first forward also waits for the gathers the stages before it waited for
      // in theirs, and its last backward for those of the stages after it in their last backward; the stream catches
      // up meanwhile, so replayed once more with those waits (from the first replay) its own fill and drain waits are
      // shorter. Only those two come from the second replay: the rest, the step's bounds among them, keeps the first
      // replay's timeline, on which the pipeline's fill and drain are counted apart (with the second replay's end,
      // the drain's waits taken from the first replay's longer ones, GPT-3's plan below was 1.8 % high). (With the
      // stages' passes alone, GPT-3 TP 1 PP 24 CP 4 ZeRO-3 was 3.5 % high, its drain counting each stage's whole
      // last-backward gathers.) Not under the interleaved schedule, whose fill and drain pass chunk by chunk: there it
      // took a sampled Mixtral VP 2 ZeRO-3 plan from -1.4 to -3.1 %.
      std::vector<double> fill(p), drain(p);
      for (int s = 0; s < p; ++s) {
        double before = 0, after = 0;
        for (int j = 0; j < s; ++j) before += zs[j].first_pass_s;
        for (int j = s + 1; j < p; ++j) after += zs[j].last_pass_s;
        const ZeroReplay again = replay(s, before, after);
        fill[s] = again.first_pass_s, drain[s] = again.last_pass_s;
      }
      for (int s = 0; s < p; ++s) zs[s].first_pass_s = fill[s], zs[s].last_pass_s = drain[s];
    }
    for (int s = 0; s < p; ++s) {
      const ZeroReplay& z = zs[s];
      st[s].zero_wait = z.exposed_s / static_cast<double>(m);
      st[s].zero = z;
    }
  }

  Estimate e;
  // Pipeline: the slowest stage paces m micro-batches; the fill and drain add the other stages' passes, 1 / v of
  // a micro-batch each ((p - 1) / v of the slowest's when the stages are even; less when the slowest stage is the
  // heavy one, as the last stage with the output layer and the loss often is). Under ZeRO-3 each of those stages adds
  // the gathers its first forward and its last backward waited for, not its steady state's average: the fill finds
  // its stream empty, and the drain's reduce-scatters run beside the next stage's backward (with the steady state's
  // waits in the fill and drain a GPT-3 TP 1 PP 24 ZeRO-3 plan was 10 % high, without any 14 % low at PP 6).
  int slow = 0;
  for (int s = 1; s < p; ++s) {
    if (st[s].total() > st[slow].total()) slow = s;
  }
  const double t_mb = st[slow].total();
  double others = 0;
  for (int s = 0; s < p; ++s) {
    if (s != slow) others += (st[s].f.total() + st[s].b.total()) / v + st[s].zero.first_pass_s + st[s].zero.last_pass_s;
  }
  const double bubble = others;
  const double pipe = t_mb * static_cast<double>(m) + bubble;
  double sends = 0;
  if (p > 1) {
    // Each stage boundary's exchange at its own link's rate (stages on one node or across nodes: a pipeline whose
    // later stages meet across a slow link was up to 44 % low when every boundary was timed as stage 0's).
    const uint64_t act = static_cast<uint64_t>(bpp.weight) * d.tokens_sp * d.h;
    std::vector<double> xb(p - 1);
    double fill_drain = 0;
    for (int b = 0, r = 0; b + 1 < p; ++b, r = layout.next_stage_rank(r)) {
      xb[b] = static_cast<double>(comm.p2p_ns(act, layout.node_of(r) == layout.node_of(layout.next_stage_rank(r)))) * kNs;
      fill_drain += 2.0 * xb[b];
    }
    // Blocking exchanges (1F1B): the fill's forward sends and the drain's backward sends over every boundary, and in
    // the steady state each stage's own per forward/backward pair: one combined exchange with each neighbour
    // (send-forward-receive-backward with the next, send-backward-receive-forward with the previous), so the
    // pipeline's pace is its slowest stage with its exchanges. With the interleaved schedule's overlapped p2p only
    // the fill and drain wait.
    double pace = 0;
    for (int s = 0; s < p; ++s)
      pace = std::max(pace, st[s].total() + (s > 0 ? xb[s - 1] : 0.0) + (s + 1 < p ? xb[s] : 0.0));
    sends = v == 1 ? (pace - t_mb) * static_cast<double>(m) + fill_drain : fill_drain;
  }

  // Stage 0's first model chunk unit by unit, in backward order, for the bucket replays.
  auto chunk0_units = [&] {
    std::vector<BucketUnit> u;
    if (chunks == 1)
      u.push_back({wall(lc.last_fwd), wall(lc.last_bwd), static_cast<double>(d.params_output + d.params_final_norm), 0});
    for (int l = chunk_first[0] + chunk_len[0] - 1; l >= chunk_first[0]; --l) {
      const bool moe = job.model.is_moe_layer(l);
      u.push_back({wall(lc.fwd[l]), wall(lc.bwd[l]), static_cast<double>(d.layer_params_dense(moe)),
                   moe ? static_cast<double>(d.params_moe_experts) : 0.0});
    }
    u.push_back({wall(lc.first_fwd), wall(lc.first_bwd), static_cast<double>(d.params_embedding), 0});
    return u;
  };
  const double bucket_limit = workload::dp_bucket_limit(tr, dp_shards);
  // Tail after the last backward, per stage: gradient reduction (on stage 0 replayed bucket by bucket under
  // overlap_grad_reduce; later stages finish their backwards earlier), SP gradient all-reduce, optimizer, parameter
  // all-gather (or its exposed part before the first forward under overlap_param_gather).
  double tail = 0, head = 0, dp_exposed = 0, update = 0;
  double host_bound = 0;  // no host syncs: the longest stage's host issue of m micro-batches, then its tail
  double zero_bound = 0;  // ZeRO-2/3 without host syncs: the longest stage's replay (Stage::zero.end_s), then its tail
  int64_t peak = 0;
  int peak_stage = 0;
  for (int s = 0; s < p; ++s) {
    const Stage& x = st[s];
    const double grad_bytes = static_cast<double>(bpp.gradient);
    const auto reduce = dist && !tr.zero1_grad_all_reduce ? workload::CollType::ReduceScatter
                                                          : workload::CollType::AllReduce;
    // Gradients reduced and parameters gathered once per step; under ZeRO-2/3 the gradients were reduce-scattered
    // during every backward (the passes above), stage 2 still gathers the updated parameters at the end of the step
    // and stage 3 gathers them per layer in the next step.
    const auto ag = workload::CollType::AllGather;
    const double t_rs = zero >= 2 ? 0.0 : coll(reduce, false, x.dense * grad_bytes) + coll(reduce, true, x.expert * grad_bytes);
    const double t_ag = zero == 3 || (zero < 2 && !dist)
                            ? 0.0
                            : coll(ag, false, x.dense * bpp.weight) + coll(ag, true, x.expert * bpp.weight);
    const bool overlap_reduce = tr.overlap_grad_reduce && zero < 2;
    const bool chunk_buckets = overlap_reduce && v > 1 && (dp_shards > 1 || edp_shards > 1);
    // Interleaved with overlap_grad_reduce: each model chunk but stage 0's first reduces its gradients as one bucket
    // once its last backward has run, and the cool-down runs the chunks' last p backwards one chunk after another
    // (local chunk v - 1 first), so chunk k's bucket can start k p chunk-backwards before the stage's last backward
    // ends. Returns when the stream is through chunks v - 1 .. `last` on that clock (0 = the last backward's end).
    auto chunk_bucket_stream = [&](int last) {
      const double b_chunk = wall(x.b) / v;
      double stream = -std::numeric_limits<double>::infinity();
      for (int k = v - 1; k >= last; --k) {
        const int c = s + k * p;
        double dense = 0, expert = 0;
        for (int l = chunk_first[c]; l < chunk_first[c] + chunk_len[c]; ++l) {
          const bool moe = job.model.is_moe_layer(l);
          dense += static_cast<double>(d.layer_params_dense(moe));
          if (moe) expert += static_cast<double>(d.params_moe_experts);
        }
        if (c == chunks - 1) dense += static_cast<double>(d.params_output + d.params_final_norm);
        stream = std::max(stream, -static_cast<double>(k) * p * b_chunk) + coll(reduce, false, dense * grad_bytes) +
                 coll(reduce, true, expert * grad_bytes);
      }
      return stream;
    };
    // Only what the stream still has to do after the last backward is exposed (with the whole stage's reduction
    // exposed, Mixtral TP 8 PP 2 VP 4 plans were 4 % high).
    const double exposed_rs =
        zero >= 2 ? x.zero.trailing_s : (chunk_buckets && s > 0 ? std::max(0.0, chunk_bucket_stream(0)) : t_rs);
    double dp_s = std::max(0.0, exposed_rs - static_cast<double>(s) * wall(x.b) / v);
    const bool overlap_gather = dist && tr.overlap_param_gather && zero < 3;
    if (s == 0 && (overlap_reduce || overlap_gather) && (dp_shards > 1 || edp_shards > 1)) {
      // Stage 0's first chunk bucket by bucket; the other chunks reduce one bucket each during the cool-down.
      const std::vector<BucketUnit> units = chunk0_units();
      const std::vector<DpBucket> buckets = plan_dp_buckets(
          units, bucket_limit, [&](bool e, double params) { return coll(reduce, e, params * grad_bytes); },
          [&](bool e, double params) { return dist ? coll(workload::CollType::AllGather, e, params * bpp.weight) : 0.0; });
      // Stage 0's other chunks go first on the same stream (their reductions left when chunk 0's last backward starts,
      // one chunk-backward before the end).
      const double backlog = chunk_buckets ? chunk_bucket_stream(1) + wall(x.b) / v : 0.0;
      if (overlap_reduce) dp_s = exposed_grad_reduce(units, buckets, std::max(0.0, backlog));
      if (overlap_gather) head = std::max(head, exposed_param_gather(units, buckets));
    }
    const double opt_params = dist ? x.dense / static_cast<double>(dp_shards) + x.expert / static_cast<double>(edp_shards)
                                   : x.dense + x.expert;
    const double opt_s = optimizer_seconds(tr, bpp, opt_params, compute);
    const double ag_tail = dist && !tr.overlap_param_gather ? t_ag : 0;
    if (dist && tr.overlap_param_gather && s > 0) head = std::max(head, t_ag - wall(x.f));
    const double end = dp_s + opt_s + ag_tail;
    if (!lc.host_syncs) host_bound = std::max(host_bound, (x.f.issue_s + x.b.issue_s) * static_cast<double>(m) + end);
    // With host syncs the replay's passes carry the probe's per-layer host waits, not the stage's chained ones, so its
    // passes' end is no bound; its stream's start plus the stream's work is (a stream busy to the end of the step: with
    // the pipeline's passes plus the stream's tail alone, Mixtral TP 8 PP 8 VP 2 ZeRO-2 with expert tensor parallel 1
    // was 3.3 % low).
    if (x.zero.end_s > 0 && !lc.host_syncs) zero_bound = std::max(zero_bound, x.zero.end_s + end);
    if (x.zero.stream_s > 0 && lc.host_syncs) zero_bound = std::max(zero_bound, x.zero.stream_s + opt_s + ag_tail);
    if (end > tail) {
      tail = end;
      dp_exposed = dp_s + ag_tail;
      update = opt_s;
    }
    // Memory: static (weights, gradients, optimizer shards, overheads) + the activations of the micro-batch
    // chunks in flight at the end of the warm-up, + the probe's working memory.
    const int64_t bf16_params = d.fp8_exempt_params(s == 0, s == p - 1, static_cast<int64_t>(x.bf16));
    workload::StaticMemory sm =
        workload::static_memory(job, static_cast<int64_t>(x.dense), static_cast<int64_t>(x.expert), dp_shards,
                                edp_shards, communicators, bf16_params);
    const int in_flight =
        workload::warmup_steps(par.schedule, s, p, v, static_cast<int>(m), job.training.overlap_moe_expert_parallel_comm) + 1;
    const double act = static_cast<double>(in_flight) * x.stored / v + lc.transient_bytes;
    sm.allocator_reserve = workload::allocator_reserve_bytes(job, act);
    const int64_t total = sm.total() + static_cast<int64_t>(act);
    if (total > peak) {
      peak = total;
      peak_stage = s;
    }
  }

  const double gpu_bound = std::max(0.0, head) + pipe + sends + tail;
  e.step_time_s = std::max({gpu_bound, host_bound, zero_bound});
  e.peak_memory_bytes = peak;
  e.peak_stage = peak_stage;
  const Stage& x = st[slow];
  e.stages.compute_s = (x.f.compute_s + x.b.compute_s) * static_cast<double>(m);
  e.stages.tp_s = (x.f.tp_s + x.b.tp_s) * static_cast<double>(m);
  e.stages.cp_s = (x.f.cp_s + x.b.cp_s) * static_cast<double>(m);
  e.stages.ep_s = (x.f.ep_s + x.b.ep_s) * static_cast<double>(m);
  e.stages.host_s = lc.host_syncs ? (x.f.host_s + x.b.host_s) * static_cast<double>(m) : e.step_time_s - gpu_bound;
  e.stages.pp_s = bubble + sends;
  e.stages.dp_s = dp_exposed + std::max(0.0, head) + x.zero_wait * static_cast<double>(m);
  // (Without host syncs the host column takes what the bounds add; with them a stream-bound step is the stream's.)
  if (lc.host_syncs) e.stages.dp_s += e.step_time_s - gpu_bound;
  e.stages.update_s = update;
  // Model FLOPs as the engine's summary counts them: 3 x forward, every rank of every stage, no recompute.
  const double ranks_per_stage = static_cast<double>(par.tensor) * par.context * par.data;
  const double model_flops = 3.0 * lc.forward_flops * static_cast<double>(m) * ranks_per_stage;
  e.tflops_per_gpu = model_flops / (static_cast<double>(job.cluster.num_gpus) * e.step_time_s) / 1e12;
  return e;
}

}  // namespace stepsim::plan

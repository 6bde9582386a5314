// The per-layer probe (plan_estimate.hpp): the real Megatron workload of the model on one pipeline stage, timed op by
// op with the engine's cost models and replayed on one rank's streams (sim/stream_replay.hpp).
#include <algorithm>
#include <numeric>

#include "stepsim/cost/compute/host_issue.hpp"
#include "stepsim/plan/estimate/host_flow_shop.hpp"
#include "stepsim/plan/estimate/probe_tally.hpp"
#include "stepsim/workload/megatron/features.hpp"
#include "stepsim/plan/estimate/probe_waits.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/sim/stream_replay.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::plan {

namespace {

// The smallest data degree that holds the expert groups: EP must divide DP x CP.
int probe_data_degree(const ProbeKey& k) { return k.expert / std::gcd(k.expert, k.context); }

Plan probe_plan(const ProbeKey& k) {
  Plan p{k.tensor, 1, probe_data_degree(k), k.context, k.expert, k.micro_batch_size, 1, k.recompute};
  p.tp_comm_overlap = k.tp_comm_overlap;
  p.cp_comm_type = k.cp_comm_type;
  p.cp_a2a = k.cp_a2a;
  p.expert_tensor = k.expert_tensor;
  p.fp8_recipe = k.fp8_recipe;
  p.ep_overlap = k.ep_overlap;
  return p;
}

// How the probe runs. Under the combined 1F1B EP overlap it runs two micro-batches: the unpaired forward 0 and
// backward 1 give the costs, the pair between them its exposed EP time. An MoE model under the host issue model runs
// two as well and takes its costs from the second: in a step the host issues micro-batch i + 1 while the GPU still
// runs micro-batch i's backward, so a forward starts with the lead the host gained there (lost again at its first MoE
// layer's sync), not with the empty launch queue of the step's first micro-batch. A dense model's host has no syncs
// and is not replayed: its waits are not per layer (estimate_plan bounds the step by the host's issue time instead),
// and a replay would hide the GPU's own waits for communication behind them.
struct ProbeShape {
  double host_scale = 0;  // 0 when the host is not modelled (and under CUDA graphs)
  bool replay_host = false;
  bool host_lead = false;  // costs from the second micro-batch
  int microbatches = 1;
};
ProbeShape probe_shape(const catalog::Catalog& cat, const spec::JobSpec& base, const ProbeKey& k) {
  ProbeShape s;
  s.host_scale = sim::host_time_scale(cat, base);
  s.replay_host = s.host_scale > 0 && base.model.moe.has_value();
  s.host_lead = !k.ep_overlap && s.replay_host;
  s.microbatches = k.ep_overlap || s.host_lead ? 2 : 1;
  return s;
}

// An MoE model repeats its layers: after the first_k_dense dense layers, a period of layer_freq layers (one MoE layer,
// the rest dense). The probe builds the dense layers and three periods: the first (a forward starts with the host's
// lead, lost at the first MoE layer's sync), the last (a backward starts with the lead the forward left) and one
// between, whose costs every middle period takes: past one period each way the layers run alike. A 61-layer
// DeepSeek-V3 probe builds 6 layers (issue 46 item 4: MoE searches in seconds). Features that make a layer's cost
// depend on its index keep the whole model: fp8's bf16 first/last layers, block or grouped full recompute, activation
// offload, and sliding-window attention on some layers only.
//
// Under the combined 1F1B EP overlap the pair runs layer l's forward beside layer L - 1 - l's backward, so a layer's
// pair costs depend on its partner too: a dense forward beside an MoE backward differs from two MoE layers. The probe
// then keeps an edge of the dense layers and two periods at each end, mirrored (the partners of the first edge are
// the last edge), and one period between whose layers, and whose partners, are past both edges.
struct ProbeReduction {
  int kept = 0;  // layers the probe builds; 0 = the whole model
  int edge = 0;  // layers kept as they are at each end (0: the first k + f and the last f, without the overlap)
};

ProbeReduction reduced_probe_layers(const spec::JobSpec& job, bool ep_overlap) {
  const spec::ModelSpec& m = job.model;
  const spec::TrainingSpec& t = job.training;
  if (!m.moe || m.moe->layer_freq < 1 || (m.num_layers - m.moe->first_k_dense) % m.moe->layer_freq != 0) return {};
  if (m.window_size > 0 && !m.window_layers.empty()) return {};
  if (t.fp8_bf16_first_layers > 0 || t.fp8_bf16_last_layers > 0 || t.activation_offload_layers > 0) return {};
  if (t.recompute == spec::Recompute::Full &&
      (t.recompute_method != spec::RecomputeMethod::Uniform || t.recompute_num_layers != 1)) {
    return {};
  }
  const int k = m.moe->first_k_dense, f = m.moe->layer_freq;
  if (!ep_overlap) {
    const int kept = k + 3 * f;
    return kept < m.num_layers ? ProbeReduction{kept, 0} : ProbeReduction{};
  }
  // Periods: both edges of k + 2f layers and one between, rounded up to whole periods after the dense layers.
  const int edge = k + 2 * f;
  const int periods = (2 * edge + f - k + f - 1) / f;
  const int kept = k + periods * f;
  return kept < m.num_layers ? ProbeReduction{kept, edge} : ProbeReduction{};
}

// The layer of the reduced probe whose costs layer `l` of the whole model takes. Without the overlap: the dense layers
// and the first period themselves, the last period the probe's last, a middle one the same position in the probe's
// middle period. Under it: each edge itself (the last from the probe's end), a middle layer the layer just past the
// first edge at the same position in its period (its partner then has the same position too, L - kept being whole
// periods).
int probe_layer_of(const spec::ModelSpec& m, int l, const ProbeReduction& r) {
  const int k = m.moe->first_k_dense, f = m.moe->layer_freq, layers = m.num_layers;
  if (r.edge > 0) {
    if (l < r.edge) return l;
    if (l >= layers - r.edge) return r.kept - (layers - l);
    return r.edge + (l - r.edge) % f;
  }
  const int last = layers - f;
  if (l < k + f) return l;
  if (l >= last) return k + 2 * f + (l - last);
  return k + f + (l - k) % f;
}

// The reduced probe's per-layer costs spread over the whole model's layers.
void expand_layers(LayerCosts& out, const spec::ModelSpec& m, const ProbeReduction& r) {
  const int layers = m.num_layers;
  auto spread = [&](auto& v) {
    if (v.size() != static_cast<size_t>(r.kept)) return;
    auto copy = v;
    v.resize(layers);
    for (int l = 0; l < layers; ++l) v[l] = copy[probe_layer_of(m, l, r)];
  };
  double flops = 0;
  for (int l = 0; l < layers; ++l) flops += out.layer_forward_flops[probe_layer_of(m, l, r)];
  for (int l = 0; l < r.kept; ++l) flops -= out.layer_forward_flops[l];
  out.forward_flops += flops;
  spread(out.fwd);
  spread(out.bwd);
  spread(out.stored_bytes);
  spread(out.layer_forward_flops);
  spread(out.paired_ep_s);
  spread(out.paired_tp_s);
  spread(out.paired_cp_s);
  spread(out.paired_host_s);
}

// The whole model (or its reduced probe) on one stage.
spec::JobSpec probe_job(const spec::JobSpec& base, const ProbeKey& k, const ProbeShape& shape) {
  const int data = probe_data_degree(k);
  spec::JobSpec job = job_for(base, probe_plan(k), k.tensor * k.context * data,
                              int64_t{k.micro_batch_size} * data * shape.microbatches);
  job.parallelism.pipeline_layers.clear();
  return job;
}

workload::Workload build_probe(const spec::JobSpec& job, const ProbeShape& shape, const cost::ComputeModel& compute) {
  workload::Workload w = workload::build_megatron_workload(job);
  sim::assign_compute_durations(w, compute);
  cost::assign_host_issue(w, shape.host_scale);
  return w;
}

// The flow shop of host_waits_with_syncs is a fluid one: it misses the GPU's wait, after each sync, for the host to
// issue the next op, and the last op's run after its issue. Per sync, they are the probe's measured waits beyond the
// flow shop's over its own cycle (the whole model as one chunk, as it ran).
double sync_wait_per_sync(const LayerCosts& out, int layers) {
  const estimate::CycleWaits fluid = estimate::host_waits_with_syncs(estimate::chunk_cycle(out, 0, layers, true, true));
  double measured = out.first_fwd.host_s + out.first_bwd.host_s + out.last_fwd.host_s + out.last_bwd.host_s;
  for (int l = 0; l < layers; ++l) measured += out.fwd[l].host_s + out.bwd[l].host_s;
  return fluid.syncs > 0 ? std::max(0.0, (measured - fluid.fluid_s) / fluid.syncs) : 0.0;
}

void add_paired_exposure(LayerCosts& out, const workload::Program& prog, const sim::StreamReplay& rp, int layers) {
  for (const LayerCosts::Part& x : estimate::paired_exposure(prog, rp, layers)) {
    out.paired_ep_s.push_back(x.ep_s);
    out.paired_tp_s.push_back(x.tp_s);
    out.paired_cp_s.push_back(x.cp_s);
    out.paired_host_s.push_back(x.host_s);
  }
}

// DeepSpeed ZeRO-3's module hooks: one op per unit and pass on the compute stream while the host runs them
// (grad_sync.cpp). The probe runs without ZeRO (every optimizer variant shares it), so they are added here.
void add_deepspeed_hooks(LayerCosts& out, const spec::JobSpec& base) {
  if (base.training.zero_stage != 3) return;
  // The builder's own profile: the hook time and the modules per unit it emits them for.
  const workload::megatron::FrameworkProfile p =
      workload::megatron::Features::resolve(base, base.parallelism.sequence_parallel, 2).profile;
  if (p.zero3_module_hook_us <= 0) return;
  const double s = p.zero3_module_hook_us * 1e-6;
  for (auto* parts : {&out.fwd, &out.bwd})
    for (LayerCosts::Part& x : *parts) x.host_s += p.layer_modules * s;
  out.first_fwd.host_s += p.embedding_modules * s;
  out.first_bwd.host_s += p.embedding_modules * s;
  out.last_fwd.host_s += p.head_modules * s;
  out.last_bwd.host_s += p.head_modules * s;
}

}  // namespace

LayerCosts probe_layer_costs(const catalog::Catalog& cat, const spec::JobSpec& base, const ProbeKey& k,
                             const cost::ComputeModel& compute, const cost::CollectiveModel& comm, bool reduce) {
  const ProbeShape shape = probe_shape(cat, base, k);
  spec::JobSpec job = probe_job(base, k, shape);
  const ProbeReduction reduction = reduce ? reduced_probe_layers(job, k.ep_overlap) : ProbeReduction{};
  if (reduction.kept > 0) job.model.num_layers = reduction.kept;
  const workload::Workload w = build_probe(job, shape, compute);
  const workload::Program& prog = w.programs[0];
  const int layers = job.model.num_layers;  // the probe's (reduced_probe_layers)
  // The kernels beside the probe's own collectives (sequence-parallel gathers, the ring's exchanges, an EP pair's
  // all-to-alls) slowed as the engine slows them; the data-parallel stream's are added per plan (DpCollectives).
  const std::shared_ptr<const cost::OverlapModel> overlap = sim::make_overlap_model(cat, base);
  const hw::GpuSpec& gpu = hw::effective_gpu(cat.gpus, base.cluster);
  const sim::StreamReplay rp = sim::replay_streams(
      w, comm, shape.replay_host, {overlap.get(), gpu.peak_flops(base.training.precision), gpu.hbm_bandwidth_Bps});
  estimate::ProbeTally tally(prog, rp, layers, {shape.host_lead ? 1 : -1, k.ep_overlap});
  for (size_t i = 0; i < prog.ops.size(); ++i) tally.add(i);
  LayerCosts out = tally.finish();
  out.overlap = overlap;
  add_deepspeed_hooks(out, base);
  // Under the EP overlap two micro-batches' activations are stored at the pair's start (forward 1 begins before
  // backward 0 frees); otherwise one micro-batch's are (the host-lead probe frees micro-batch 0 before forward 1).
  const int stored_microbatches = k.ep_overlap ? 2 : 1;
  out.transient_bytes =
      std::max(0.0, static_cast<double>(prog.activation_peak) - stored_microbatches * tally.stored_total());
  if (k.ep_overlap) add_paired_exposure(out, prog, rp, layers);
  out.host_syncs = shape.replay_host && !prog.host_syncs.empty();
  if (out.host_syncs && !k.ep_overlap) out.sync_wait_s = sync_wait_per_sync(out, layers);
  if (reduction.kept > 0) expand_layers(out, base.model, reduction);
  return out;
}

}  // namespace stepsim::plan

#include "stepsim/plan/plan_space.hpp"

#include <numeric>
#include <optional>
#include <sstream>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::plan {

const char* rule_name(Rule r) {
  switch (r) {
    case Rule::TpWithinNode: return "tp-within-node";
    case Rule::TpDividesModel: return "tp-divides-model";
    case Rule::CpDividesSequence: return "cp-divides-sequence";
    case Rule::ExpertDegree: return "expert-degree";
    case Rule::BatchDivisible: return "batch-divisible";
    case Rule::MicrobatchesPerStage: return "microbatches-per-stage";
    case Rule::LayersPerStage: return "layers-per-stage";
    case Rule::Interleaving: return "interleaving";
    case Rule::ProgramSize: return "program-size";
    case Rule::Framework: return "framework";
    case Rule::Constraint: return "constraint";
    case Rule::Megatron: return "megatron-checks";
    case Rule::Memory: return "memory";
    case Rule::kCount: break;
  }
  return "?";
}

const char* rule_explanation(Rule r) {
  switch (r) {
    case Rule::TpWithinNode:
      return "TP <= GPUs per node (MoFa 4.1 rule 4): TP all-reduces run in every layer and must stay on NVLink";
    case Rule::TpDividesModel:
      return "TP divides the attention heads, the query groups and the FFN widths (Megatron shards them evenly)";
    case Rule::CpDividesSequence:
      return "2 x CP divides the sequence (load-balanced context chunks), and TP x CP under sequence parallelism";
    case Rule::ExpertDegree:
      return "EP divides the expert count and DP x CP (experts are folded into the data-parallel ranks); EP 1 without MoE";
    case Rule::BatchDivisible:
      return "global batch divisible by micro-batch x DP (MoFa 4.1 rule 2)";
    case Rule::MicrobatchesPerStage:
      return "micro-batches per pipeline >= PP (MoFa 4.1 rule 3): fewer leave stages idle for most of the step";
    case Rule::LayersPerStage:
      return "PP x VP divides the layers, or the layers + 2 (first and last chunk one layer fewer for embedding and loss)";
    case Rule::Interleaving:
      return "VP > 1 needs PP >= 2 and micro-batches a multiple of PP (Megatron's interleaved 1F1B)";
    case Rule::ProgramSize:
      return "micro-batches x layers per stage above the workload builder's op limit (8M ops per rank)";
    case Rule::Framework:
      return "a plan the job's framework does not run, or does not search unless asked (plan --allow)";
    case Rule::Constraint:
      return "outside the constraints given (plan --fix, --allow, --exclude)";
    case Rule::Megatron:
      return "any other Megatron start-up check (stepsim's job validation)";
    case Rule::Memory:
      return "what PyTorch allocates on every stage, with the CUDA context and NCCL, <= GPU memory (MoFa eq. 42), from "
             "the analytic memory model; a plan whose reserved peak alone is over is kept, tight, and ranked at risk";
    case Rule::kCount: break;
  }
  return "";
}

namespace {

std::vector<int> divisors(int64_t n) {
  std::vector<int> d;
  for (int64_t i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(static_cast<int>(i));
  }
  return d;
}

// Leaves under one (t, c, p, e) node: micro-batch sizes x virtual stages x recomputes x layout variants x optimizer
// variants.
int64_t leaves_per_expert_node(const SpaceOptions& o, int64_t layout_variants) {
  return static_cast<int64_t>(o.micro_batch_sizes.size() * o.virtual_stages.size() * o.recomputes.size()) *
         layout_variants * static_cast<int64_t>(o.optimizer_variants.size());
}

// The rule a value of a dimension breaks (framework first), or nullopt.
std::optional<Rule> dimension_rule(const SearchConstraints& c, PlanKey k, int v) {
  if (!c.framework.allows(k, v)) return Rule::Framework;
  if (!c.user.allows(k, v)) return Rule::Constraint;
  return std::nullopt;
}

}  // namespace

int hierarchical_cp_a2a(const spec::ModelSpec& m, int tensor, int context, int gpus_per_node) {
  if (tensor < 1 || m.num_attention_heads % tensor != 0) return 0;
  const int heads = m.num_attention_heads / tensor;
  for (int a = context / 2; a >= 2; --a) {
    if (context % a == 0 && int64_t{tensor} * a <= gpus_per_node && heads % a == 0) return a;
  }
  return 0;
}

std::vector<LayoutVariant> layout_variants(const spec::ModelSpec& m, int tensor, int context,
                                           const std::vector<spec::Fp8Recipe>& fp8_recipes, int gpus_per_node) {
  std::vector<LayoutVariant> out{LayoutVariant{}};
  auto expand = [&](auto&& set, const auto& values) {
    std::vector<LayoutVariant> next;
    for (const LayoutVariant& v : out)
      for (const auto& x : values) {
        LayoutVariant w = v;
        set(w, x);
        next.push_back(w);
      }
    out = std::move(next);
  };
  if (tensor > 1) expand([](LayoutVariant& v, bool x) { v.tp_comm_overlap = x; }, std::vector<bool>{false, true});
  if (context > 1) {
    std::vector<std::pair<spec::CpCommType, int>> cp = {
        {spec::CpCommType::P2P, 0}, {spec::CpCommType::AllGather, 0}, {spec::CpCommType::A2A, 0}};
    if (const int a = hierarchical_cp_a2a(m, tensor, context, gpus_per_node)) cp.emplace_back(spec::CpCommType::A2AP2P, a);
    expand([](LayoutVariant& v, const std::pair<spec::CpCommType, int>& x) {
      v.cp_comm_type = x.first;
      v.cp_a2a = x.second;
    }, cp);
  }
  if (m.moe && tensor > 1) expand([](LayoutVariant& v, int x) { v.expert_tensor = x; }, std::vector<int>{0, 1});
  if (m.moe) expand([](LayoutVariant& v, bool x) { v.ep_overlap = x; }, std::vector<bool>{false, true});
  if (!fp8_recipes.empty()) {
    expand([](LayoutVariant& v, spec::Fp8Recipe x) { v.fp8_recipe = static_cast<int>(x); }, fp8_recipes);
  }
  return out;
}

std::vector<int> chunk_layers(int layers, int chunks, bool& ok) {
  ok = true;
  if (layers % chunks == 0) return {};
  if ((layers + 2) % chunks == 0 && (layers + 2) / chunks >= 2) {
    std::vector<int> v(chunks, (layers + 2) / chunks);
    v.front() -= 1;
    v.back() -= 1;
    return v;
  }
  ok = false;
  return {};
}

spec::JobSpec job_for(const spec::JobSpec& base, const Plan& p, int gpus, int64_t global_batch) {
  spec::JobSpec j = base;
  auto& par = j.parallelism;
  par.tensor = p.tensor;
  par.pipeline = p.pipeline;
  par.data = p.data;
  par.context = p.context;
  par.expert = p.expert;
  par.sequence_parallel = p.tensor > 1;
  par.virtual_stages = p.virtual_stages;
  par.schedule = p.virtual_stages > 1 ? spec::PipelineSchedule::Interleaved1F1B : spec::PipelineSchedule::OneFOneB;
  par.overlap_p2p_comm = p.virtual_stages > 1;
  par.cp_comm_type = p.cp_comm_type;
  // Hierarchical CP keeps the job's all-to-all group size a (the ring gets the rest: [a, c/a]); other types have none.
  auto& hcp = par.hierarchical_context_parallel_sizes;
  if (p.cp_comm_type != spec::CpCommType::A2AP2P) hcp.clear();
  else if (p.cp_a2a > 0 && p.context % p.cp_a2a == 0) hcp = {p.cp_a2a, p.context / p.cp_a2a};
  else if (!hcp.empty() && hcp[0] > 0 && p.context % hcp[0] == 0) hcp = {hcp[0], p.context / hcp[0]};
  par.expert_tensor = p.expert_tensor > 0 ? p.expert_tensor : p.tensor;
  bool ok = true;
  par.pipeline_layers = chunk_layers(j.model.num_layers, p.pipeline * p.virtual_stages, ok);
  // The plan's own split replaces the base job's split requests (validate() made them into pipeline_layers).
  par.first_stage_layers = par.last_stage_layers = 0;
  par.account_for_embedding_in_pipeline_split = par.account_for_loss_in_pipeline_split = false;
  par.pipeline_layout.clear();  // a layout pins one pipeline x virtual-stage shape
  auto& tr = j.training;
  tr.micro_batch_size = p.micro_batch_size;
  tr.global_batch_size = global_batch;
  tr.recompute = p.recompute;
  // A plan's selective recompute re-runs the modules the base job lists (Megatron-Core's default core_attn if none).
  if (tr.recompute != spec::Recompute::Selective) tr.recompute_modules = spec::module_bit(spec::RecomputeModule::CoreAttn);
  // The plan's ZeRO stage (a plan that sets only distributed_optimizer is stage 1). A stage-3 plan keeps the base job's
  // way of fetching parameters (DeepSpeed 2021's blocking fetch, else prefetch); DeepSpeed's all-reduce of ZeRO-1
  // gradients is kept only at stage 1, the only one it exists at.
  tr.zero_stage = p.zero_stage > 0 ? p.zero_stage : (p.distributed_optimizer ? 1 : 0);
  tr.distributed_optimizer = tr.zero_stage >= 1;
  if (tr.zero_stage != 3) tr.zero3_param_fetch = spec::Zero3Fetch::Prefetch;
  if (tr.zero_stage != 1) tr.zero1_grad_all_reduce = false;
  tr.overlap_grad_reduce = p.overlap_grad_reduce;
  tr.overlap_param_gather = p.overlap_param_gather;
  tr.tp_comm_overlap = p.tp_comm_overlap;
  // The combined 1F1B EP overlap comes with the delayed weight gradients, as every recipe that sets it (a job's own
  // setting is kept when it already had the overlap).
  if (p.ep_overlap != tr.overlap_moe_expert_parallel_comm) tr.delay_wgrad_compute = p.ep_overlap;
  tr.overlap_moe_expert_parallel_comm = p.ep_overlap;
  if (p.fp8_recipe >= 0) tr.fp8_recipe = static_cast<spec::Fp8Recipe>(p.fp8_recipe);
  spec::set_num_gpus(j.cluster, gpus);
  return j;
}

std::string layout_label(const Plan& p) {
  std::string s;
  auto add = [&](const char* x) {
    if (!s.empty()) s += '+';
    s += x;
  };
  if (p.tp_comm_overlap) add("tpo");
  if (p.context > 1) {
    add(p.cp_comm_type == spec::CpCommType::P2P      ? "cp:ring"
        : p.cp_comm_type == spec::CpCommType::A2A    ? "cp:a2a"
        : p.cp_comm_type == spec::CpCommType::A2AP2P ? "cp:a2a+p2p"
                                                     : "cp:ag");
  }
  if (p.expert_tensor == 1 && p.tensor > 1) add("etp1");
  if (p.ep_overlap) add("ep1f1b");
  if (p.fp8_recipe >= 0) s += (s.empty() ? "fp8:" : "+fp8:") + std::string(spec::name_of(static_cast<spec::Fp8Recipe>(p.fp8_recipe)));
  return s.empty() ? "-" : s;
}

std::string describe(const Plan& p) {
  std::ostringstream s;
  s << "TP " << p.tensor << " PP " << p.pipeline << " DP " << p.data << " CP " << p.context << " EP " << p.expert
    << " mbs " << p.micro_batch_size << " VP " << p.virtual_stages << " recompute " << spec::name_of(p.recompute)
    << (p.zero_stage >= 2 ? (p.zero_stage == 2 ? " zero2" : " zero3") : p.distributed_optimizer ? " dist-opt" : "")
    << (p.overlap_grad_reduce ? " ogr" : "")
    << (p.overlap_param_gather ? " opg" : "") << " layout " << layout_label(p);
  return s.str();
}

PlanSpace enumerate_plans(const hw::GpuCatalog& gpus, const spec::JobSpec& base, const SpaceOptions& o) {
  PlanSpace out;
  const spec::ModelSpec& m = base.model;
  const int n = o.gpus;
  const int gpn = base.cluster.gpus_per_node;
  const std::vector<int> experts = m.moe ? divisors(m.moe->num_experts) : std::vector<int>{1};
  auto variants_of = [&](int t, int c) {
    if (o.search_layouts) return layout_variants(m, t, c, o.fp8_recipes, gpn);
    LayoutVariant own;  // the job's own settings
    own.tp_comm_overlap = t > 1 && base.training.tp_comm_overlap;
    own.cp_comm_type = base.parallelism.cp_comm_type;
    own.expert_tensor = base.parallelism.expert_tensor == 1 ? 1 : 0;
    own.ep_overlap = base.training.overlap_moe_expert_parallel_comm;
    if (o.fp8_recipes.empty()) return std::vector<LayoutVariant>{own};
    std::vector<LayoutVariant> out;
    for (spec::Fp8Recipe r : o.fp8_recipes) {
      own.fp8_recipe = static_cast<int>(r);
      out.push_back(own);
    }
    return out;
  };
  // Leaves under a (t, c, p, e) node, a (t, c) node and a t node, for rules that cut high in the tree.
  auto per_e_of = [&](int t, int c) {
    return leaves_per_expert_node(o, static_cast<int64_t>(variants_of(t, c).size()));
  };
  auto drop = [&](Rule r, int64_t leaves) { out.removed[static_cast<int>(r)] += leaves; };
  auto leaves_c = [&](int t, int c, int64_t rest) {
    return static_cast<int64_t>(divisors(rest).size()) * per_e_of(t, c) * static_cast<int64_t>(experts.size());
  };
  auto leaves_t = [&](int t, int64_t rest) {
    int64_t s = 0;
    for (int c : divisors(rest)) s += leaves_c(t, c, rest / c);
    return s;
  };

  const SearchConstraints& sc = o.constraints;
  for (int t : divisors(n)) {
    const int64_t t_leaves = leaves_t(t, n / t);
    out.enumerated += t_leaves;
    if (t > gpn) { drop(Rule::TpWithinNode, t_leaves); continue; }
    if (const auto r = dimension_rule(sc, PlanKey::Tensor, t)) { drop(*r, t_leaves); continue; }
    const bool shards = m.num_attention_heads % t == 0 && m.ffn_hidden_size % t == 0 &&
                        (m.attention == spec::AttentionType::Mla || m.num_query_groups % t == 0) &&
                        (!m.moe || m.moe->ffn_hidden_size % t == 0);
    if (!shards) { drop(Rule::TpDividesModel, t_leaves); continue; }
    for (int c : divisors(n / t)) {
      const int64_t c_leaves = leaves_c(t, c, n / t / c);
      const std::vector<LayoutVariant> variants = variants_of(t, c);
      const int64_t per_e = per_e_of(t, c);
      const bool seq_ok = (c == 1 || m.seq_length % (2 * int64_t{c}) == 0) &&
                          (t == 1 || m.seq_length % (int64_t{t} * c) == 0);
      if (!seq_ok) { drop(Rule::CpDividesSequence, c_leaves); continue; }
      if (const auto r = dimension_rule(sc, PlanKey::Context, c)) { drop(*r, c_leaves); continue; }
      for (int p : divisors(n / t / c)) {
        const int d = n / t / c / p;
        const int64_t p_leaves = per_e * static_cast<int64_t>(experts.size());
        if (const auto r = dimension_rule(sc, PlanKey::Pipeline, p)) { drop(*r, p_leaves); continue; }
        if (const auto r = dimension_rule(sc, PlanKey::Data, d)) { drop(*r, p_leaves); continue; }
        for (int e : experts) {
          if ((int64_t{d} * c) % e != 0) { drop(Rule::ExpertDegree, per_e); continue; }
          if (const auto r = dimension_rule(sc, PlanKey::Expert, e)) { drop(*r, per_e); continue; }
          const int64_t per_mbs = per_e / static_cast<int64_t>(o.micro_batch_sizes.size());
          for (int mbs : o.micro_batch_sizes) {
            if (const auto r = dimension_rule(sc, PlanKey::MicroBatch, mbs)) { drop(*r, per_mbs); continue; }
            if (o.global_batch % (int64_t{mbs} * d) != 0) { drop(Rule::BatchDivisible, per_mbs); continue; }
            const int64_t mb = o.global_batch / (int64_t{mbs} * d);
            if (mb < p) { drop(Rule::MicrobatchesPerStage, per_mbs); continue; }
            const int64_t per_v = per_mbs / static_cast<int64_t>(o.virtual_stages.size());
            for (int v : o.virtual_stages) {
              if (const auto r = dimension_rule(sc, PlanKey::VirtualStages, v)) { drop(*r, per_v); continue; }
              bool layers_ok = true;
              chunk_layers(m.num_layers, p * v, layers_ok);
              if (!layers_ok) { drop(Rule::LayersPerStage, per_v); continue; }
              if (v > 1 && (p < 2 || mb % p != 0)) { drop(Rule::Interleaving, per_v); continue; }
              // The builder's own size guard (workload/megatron/build.cpp), checked before building anything.
              const double ops = static_cast<double>(mb) * (static_cast<double>(m.num_layers) / p + 2.0) *
                                 (m.moe ? 60.0 : 40.0);
              if (ops > static_cast<double>(workload::kMaxOpsPerProgram)) { drop(Rule::ProgramSize, per_v); continue; }
              for (spec::Recompute rc : o.recomputes) {
                for (const LayoutVariant& lv : variants) {
                  for (const OptimizerVariant& ov : o.optimizer_variants) {
                    Plan pl{t, p, d, c, e, mbs, v, rc};
                    pl.zero_stage = ov.zero_stage;
                    pl.distributed_optimizer = ov.zero_stage >= 1;
                    pl.overlap_grad_reduce = ov.overlap_grad_reduce;
                    pl.overlap_param_gather = ov.overlap_param_gather;
                    pl.tp_comm_overlap = lv.tp_comm_overlap;
                    pl.cp_comm_type = lv.cp_comm_type;
                    pl.cp_a2a = lv.cp_a2a;
                    pl.expert_tensor = lv.expert_tensor;
                    pl.ep_overlap = lv.ep_overlap;
                    pl.fp8_recipe = lv.fp8_recipe;
                    if (sc.framework.refuses(pl) || framework_rule(o.framework, pl)) {
                      drop(Rule::Framework, 1);
                      continue;
                    }
                    if (sc.user.refuses(pl)) {
                      drop(Rule::Constraint, 1);
                      continue;
                    }
                    spec::JobSpec j = job_for(base, pl, n, o.global_batch);
                    // Megatron-Core's preconditions of the combined 1F1B EP overlap, asked before validate: most MoE
                    // candidates fail them, and a refusal by validate costs an exception.
                    if (pl.ep_overlap && spec::ep_overlap_refusal(j)) {
                      drop(Rule::Megatron, 1);
                      continue;
                    }
                    try {
                      spec::validate(gpus, j);
                    } catch (const InputError&) {
                      drop(Rule::Megatron, 1);
                      continue;
                    }
                    out.plans.push_back(pl);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace stepsim::plan

#pragma once
// What the planner may vary, and what it may not: the plans a training framework runs (its own ZeRO stages,
// schedules, overlaps and CP types) and the user's constraints on the search (`plan --fix tensor=8`,
// `--allow zero_stage=1,3`, `--exclude tp_comm_overlap`). docs/PLANNER.md, "Frameworks and constraints".
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/plan/plan.hpp"

namespace stepsim::plan {

// The plan's dimensions a constraint can name (job-file names, with the short aliases users type: tp, pp, ...).
enum class PlanKey {
  Tensor, Pipeline, Data, Context, Expert, MicroBatch, VirtualStages, Recompute, ZeroStage, TpCommOverlap,
  CpCommType, ExpertTensor, EpOverlap, OverlapGradReduce, OverlapParamGather, kCount
};
constexpr int kNumPlanKeys = static_cast<int>(PlanKey::kCount);
const char* key_name(PlanKey k);

// The plan's value of `k` as an integer: booleans 0/1, recompute and cp_comm_type as their enum, expert_tensor as the
// size it resolves to (TP unless the plan folds experts to 1).
int value_of(const Plan& p, PlanKey k);
// A value as a user writes it ("full", "a2a+p2p", "true", "8").
std::string value_text(PlanKey k, int v);

// Per key: the values allowed (none given: any) and the values excluded.
struct Constraints {
  std::array<std::optional<std::vector<int>>, kNumPlanKeys> allowed;
  std::array<std::vector<int>, kNumPlanKeys> excluded;
  bool allows(PlanKey k, int v) const;
  // The first key whose value in `p` is not allowed, or nullopt.
  std::optional<PlanKey> refuses(const Plan& p) const;
  bool empty() const;
  // "tensor=8; zero_stage in {1,3}; not tp_comm_overlap=true", for the plan's notes.
  std::string describe() const;
};

// `--fix K=V`, `--allow K=V1,V2`, `--exclude K=V1,V2` (or `--exclude K` for a switch: K=true). A key given twice in
// fix/allow is refused; InputError names the flag, the key and the rule.
Constraints parse_constraints(const std::vector<std::string>& fix, const std::vector<std::string>& allow,
                              const std::vector<std::string>& exclude);

// The constraints of the job file's plan section and of the flags, merged: the file's items for the keys the flags do
// not constrain, then the flags' (the flags win). Items whose key is unknown are kept for parse_constraints to refuse.
struct ConstraintArgs {
  std::vector<std::string> fix, allow, exclude;
};
ConstraintArgs merge_constraint_args(const ConstraintArgs& file, const ConstraintArgs& flags);

// `--max-tp-per-nvlink-domain N`: TP limited to the divisors of the NVLink domain (`domain_gpus`) up to N, within what
// `user` already allows of TP. InputError when nothing is left.
void cap_tensor_parallel(Constraints& user, int max_tp, int domain_gpus);

// What a framework runs (limits: never searched, a user constraint outside them is refused) and what it does not
// search unless asked (defaults: a user's fix/allow of that key replaces them).
struct FrameworkSpace {
  spec::Framework framework = spec::Framework::MegatronCore;
  Constraints limits, defaults;
  std::vector<OptimizerVariant> optimizer_variants;
  std::vector<spec::Recompute> recomputes;
  std::string summary;  // one line for the notes: what the space holds
};
FrameworkSpace framework_space(spec::Framework f);

// Why `p` is not a plan framework `f` runs, across keys (torchtitan's FSDP2 becomes ZeRO-1 communication under a
// pipeline and ZeRO-3 without one), or nullptr.
const char* framework_rule(spec::Framework f, const Plan& p);

// The framework's space narrowed by the user's constraints: the effective limits (the framework's limits and, for
// keys the user did not fix or allow, its defaults) and the user's own constraints. InputError when a user value is
// one the framework does not run.
struct SearchConstraints {
  Constraints framework;  // counted against the rule "framework"
  Constraints user;       // counted against the rule "constraint"
};
SearchConstraints merge_constraints(const FrameworkSpace& fs, const Constraints& user);

}  // namespace stepsim::plan

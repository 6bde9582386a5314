#pragma once
// Plans the model cannot tell apart (issue 46 item 3): ranked plans whose objective lies within the model's
// plan-to-plan error of the first plan of their group are one tie group, ordered by a stated secondary rule instead of
// by differences the model does not resolve (docs/PLANNER.md, "Ties").
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/plan/plan.hpp"

namespace stepsim::plan {

struct RankedPlan;

// How far apart the errors of two plans of one job have been: the median of |error_i - error_j| over the pairs of
// development runs of one model, GPU count, batch and precision with different layouts (6.5 % over 22 pairs;
// tests/test_plan_ties.cpp recomputes it from the runs).
inline constexpr double kDefaultTieTolerance = 0.065;

// Model-parallel dimensions and options a plan turns on: TP, PP, CP, EP, interleaving, recompute, ZeRO-2/3, TP overlap,
// the combined 1F1B EP overlap, expert TP folding. Fewer is simpler to run and to debug.
int layout_complexity(const Plan& p);

// Walks `plans` (already ranked: plans at memory risk after the others) and gives each a tie group from 1: a group
// starts at a plan and takes the following ones of the same memory class whose objective is at most (1 + tolerance)
// times the group's first. Each group is then ordered by layout_complexity, then peak memory in steps of
// kHeadroomStep of `capacity_bytes` (more headroom first; smaller differences are not headroom a user can count on),
// then the objective. tolerance 0: every plan its own group, the order untouched.
void group_ties(std::vector<RankedPlan>& plans, double tolerance, int64_t capacity_bytes);
inline constexpr double kHeadroomStep = 0.10;

// The secondary rule, as the output states it.
std::string tie_rule_text();

}  // namespace stepsim::plan

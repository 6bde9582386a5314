"""Plan a job, adopt the best plan, then ask what doubling the GPUs would do to it.

Run from the repository root after the build (docs/PYTHON.md):
    PYTHONPATH=build/python /usr/bin/python3 examples/python/plan_then_whatif.py
"""
import os

import stepsim

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llama2-7b-8.yaml")
SMALL = {"model.num_layers": 8}  # a quarter of Llama-2 7B's layers keeps the example quick

# 1. The ranked plans for the job's 8 GPUs (the best two re-timed by the engine).
plans = stepsim.plan(JOB, overrides=SMALL, top=3, simulate=1)
print("%d candidate plans, the best %d:" % (plans.json["enumerated"], len(plans)))
for p in plans:
    print("  TP %d PP %d DP %d CP %d, micro-batch %d, recompute %-9s %.4f s (%s)" % (
        p["tensor"], p["pipeline"], p["data"], p["context"], p["micro_batch_size"], p["recompute"],
        p["step_time_s"], p["timed_by"]))

# 2. The best plan as overrides of the job.
best = plans[0]
adopted = dict(SMALL)
for key in ("tensor", "pipeline", "data", "context", "expert", "expert_tensor", "virtual_stages", "cp_comm_type"):
    adopted["parallelism." + key] = best[key]
for key in ("micro_batch_size", "recompute", "distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
            "tp_comm_overlap", "zero_stage"):
    if key in best:  # zero_stage: plans that search ZeRO stages say which
        adopted["training." + key] = best[key]
step = stepsim.simulate(JOB, overrides=adopted)
print("adopted plan: %.4f s per step, MFU %.1f %%" % (step.step_time_s, 100 * step.summary["mfu"]))
if best["timed_by"] == "engine":
    assert step.step_time_s == best["step_time_s"], "the engine timed this plan: the same job gives the same step"
else:  # plan #1 of a tie group may be an estimate (docs/PLANNER.md, "Ties")
    print("  (estimated at %.4f s: %+.1f %% from the engine)" % (best["step_time_s"],
                                                             100 * (step.step_time_s / best["step_time_s"] - 1)))

# 3. What if the job ran on twice the GPUs (data parallelism doubles, and the global batch with it)?
w = stepsim.whatif(JOB, overrides=adopted, scale={"num_gpus": 2, "global_batch_size": 2}, steps=1000)
b, a = w["before"], w["after"]
print("what if num_gpus x2, global batch x2: %d -> %d GPUs, step %.4f -> %.4f s, end-to-end %.0f -> %.0f s, GPU-hours %.2f -> %.2f" % (
    b["gpus"], a["gpus"], b["step_time_s"], a["step_time_s"], b["e2e_time_s"], a["e2e_time_s"],
    b["gpu_hours"], a["gpu_hours"]))

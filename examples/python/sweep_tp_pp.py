"""Sweep tensor x pipeline parallelism of Llama-2 7B on 8 H100 and collect the results in a pandas DataFrame.

Run from the repository root after the build (docs/PYTHON.md):
    PYTHONPATH=build/python /usr/bin/python3 examples/python/sweep_tp_pp.py
"""
import os
import sys

import pandas as pd

import stepsim

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llama2-7b-8.yaml")
GPUS = 8
LAYERS = int(sys.argv[1]) if len(sys.argv) > 1 else 8  # fewer layers than the real 32 keep the sweep quick

rows = []
for tp in (1, 2, 4, 8):
    for pp in (1, 2, 4, 8):
        if tp * pp > GPUS:
            continue
        overrides = {"model.num_layers": LAYERS, "parallelism.tensor": tp, "parallelism.pipeline": pp,
                     "parallelism.data": GPUS // (tp * pp)}
        try:
            r = stepsim.simulate(JOB, overrides=overrides)
        except stepsim.InputError as e:  # a plan the rules refuse (e.g. layers not divisible by PP): say why
            rows.append({"tp": tp, "pp": pp, "refused": str(e)})
            continue
        row = r.to_pandas("raw").iloc[0]
        rows.append({"tp": tp, "pp": pp, "step_time_s": row["step_time_s"], "mfu": row["mfu"],
                     "fits": row["fits"], "peak_GiB": row["memory.peak_bytes_max"] / 2**30,
                     "exposed_tp_s": row["breakdown_s.exposed_comm.tp"], "bubble_s": row["breakdown_s.pipeline_bubble"],
                     "refused": ""})

df = pd.DataFrame(rows).sort_values("step_time_s")
pd.set_option("display.width", 160)
print("Llama-2 7B (%d layers) on %d x H100, TP x PP sweep:" % (LAYERS, GPUS))
print(df.to_string(index=False, float_format=lambda x: "%.4f" % x))
best = df.iloc[0]
print("fastest: TP %d, PP %d: %.4f s per step" % (best["tp"], best["pp"], best["step_time_s"]))

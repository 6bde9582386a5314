#!/usr/bin/env python3
"""Writes synthetic.csv: overlap-slowdown rows in stepsim's dataset format whose slowdown follows a known formula,
so tests/test_slowdown_model.cpp can check that the learned model recovers it. Seeded: the same file every run.

  s = g * (0.05 + 2.0 * dram/100 * channels/32 * p * sqrt(min(1, bucket/64 MiB)) + 0.5 * sm/100 * channels/32)

g: GPU factor (H800 1.0, A800 1.3); p: protocol factor (LL 0.5, LL128 0.8, Simple 1.0). The other columns are
random and carry no signal.
"""
import math
import random

rng = random.Random(20240607)
GPU = {"H800": 1.0, "A800": 1.3}
PROTO = {"LL": 0.5, "LL128": 0.8, "Simple": 1.0}
KINDS = ["gemm", "attention", "elementwise", "norm", "fused_softmax"]
COLLS = ["all_reduce", "all_gather", "reduce_scatter"]
COLS = ("gpu,kernel,kernel_type,isolated_us,sm_throughput_pct,memory_throughput_pct,dram_throughput_pct,"
        "achieved_occupancy_pct,l1_hit_rate_pct,l2_hit_rate_pct,collective,algorithm,protocol,bucket_bytes,"
        "channels,slowdown,source")

def r2(x):
    return round(x, 2)

lines = ["# synthetic overlap-slowdown rows (tests/data/slowdown/make_synthetic.py); formula in that script", COLS]
for i in range(500):
    gpu = rng.choice(sorted(GPU))
    kind = rng.choice(KINDS)
    iso = r2(10 * math.exp(rng.uniform(0, math.log(200))))
    sm = r2(rng.uniform(10, 95))
    mem = r2(rng.uniform(10, 95))
    dram = r2(mem * rng.uniform(0.6, 1.0))
    occ = r2(rng.uniform(10, 90))
    l1 = r2(rng.uniform(0, 80))
    l2 = r2(rng.uniform(30, 95))
    coll = rng.choice(COLLS)
    algo = rng.choice(["ring", "tree"])
    proto = rng.choice(sorted(PROTO))
    bucket = 2 ** rng.randint(20, 28)
    ch = rng.choice([2, 4, 8, 16, 24, 32])
    s = GPU[gpu] * (0.05 + 2.0 * dram / 100 * ch / 32 * PROTO[proto] * math.sqrt(min(1.0, bucket / 2**26))
                    + 0.5 * sm / 100 * ch / 32)
    lines.append(f"{gpu},k{i},{kind},{iso},{sm},{mem},{dram},{occ},{l1},{l2},{coll},{algo},{proto},{bucket},{ch},"
                 f"{round(s, 5)},synthetic")
with open("synthetic.csv", "w") as f:
    f.write("\n".join(lines) + "\n")

#!/usr/bin/env python3
"""Fills the Nsight Compute columns of an overlap_bench dataset from an ncu CSV export.

usage: merge_ncu.py DATASET.csv NCU.csv > DATASET-with-metrics.csv

NCU.csv comes from `ncu --nvtx --print-nvtx-rename kernel --csv --page raw --metrics ... ./overlap_bench
--profile-only` (README.md): the profile-only run launches each compute case once inside an NVTX range named like
the dataset's `kernel` column, so ncu reports the kernel under that name. When a range holds several kernels (a
cuBLAS GEMM with a split-K reduction), the longest one stands for the case. Rows whose kernel ncu did not report
keep empty metric cells (stepsim treats them as missing). Untested on hardware in the session that wrote it.
"""
import csv
import sys

METRICS = {  # dataset column: ncu metric
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1_hit_rate_pct": "l1tex__t_sector_hit_rate.pct",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
}
DURATION = "gpu__time_duration.sum"


def number(text):
    return float(text.replace(",", ""))


def ncu_metrics(path):
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("==")]  # ncu's own log lines
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.DictReader(lines[start:]))
    best = {}
    for r in rows[1:]:  # rows[0] holds the units
        name = r["Kernel Name"]
        dur = number(r.get(DURATION) or "0")
        if name not in best or dur > best[name][0]:
            best[name] = (dur, {col: min(100.0, max(0.0, number(r[m]))) for col, m in METRICS.items() if r.get(m)})
    return {name: m for name, (_, m) in best.items()}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    metrics = ncu_metrics(sys.argv[2])
    with open(sys.argv[1], newline="") as f:
        lines = f.read().splitlines()
    comments = [l for l in lines if l.startswith("#")]
    reader = csv.DictReader(l for l in lines if l and not l.startswith("#"))
    out = csv.DictWriter(sys.stdout, fieldnames=reader.fieldnames, lineterminator="\n")
    for c in comments:
        sys.stdout.write(c + "\n")
    sys.stdout.write("# Nsight Compute metrics merged from " + sys.argv[2] + "\n")
    out.writeheader()
    for row in reader:
        for col, v in metrics.get(row["kernel"], {}).items():
            row[col] = "%.2f" % v
        out.writerow(row)


if __name__ == "__main__":
    main()

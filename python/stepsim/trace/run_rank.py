"""Runs a training script as one rank in this process and writes that rank's files (docs/TRACER.md).

fake: this process is simulated rank R of N alone (fake_dist.py), profiled; writes rankR.comm.json,
      rankR.workload.json, rankR.kineto.json (the profiler's Chrome trace) and, when torch has an
      execution-trace observer, rankR.et.json.
real: one of N real processes (the launcher set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); calls pass
      through to torch.distributed and are only recorded; writes rankR.comm.json.
Each rank runs in a fresh process, so no state of one rank's run leaks into the next.
"""
import argparse
import json
import os
import runpy
import sys

import torch

from . import fake_dist
from .profile_step import StepProfile
from .recorder import Recorder, install_passthrough

FORMAT_VERSION = 1


def _run_script(script, script_args):
    sys.argv = [script] + list(script_args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m stepsim.trace.run_rank")
    ap.add_argument("--mode", choices=["fake", "real"], required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-profile", action="store_true")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--")  # options -- SCRIPT [ARGS...]
    a = ap.parse_args(argv[:cut])
    a.script, a.script_args = argv[cut + 1], argv[cut + 2:]
    rank, world = a.rank, a.world_size
    recorder = Recorder(rank, world)
    base = os.path.join(a.out, "rank%d" % rank)

    if a.mode == "real":
        install_passthrough(recorder)
        _run_script(a.script, a.script_args)
        recorder.write(base + ".comm.json")
        return 0

    # The script sees the simulated rank through the usual launcher variables too; one device.
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": "0",
                       "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    fake_dist.install(recorder)
    profile = None
    if a.no_profile:
        _run_script(a.script, a.script_args)
    else:
        profile = StepProfile(et_path=base + ".et.json", device=a.device)
        with profile.running():
            _run_script(a.script, a.script_args)
    recorder.write(base + ".comm.json")
    workload = {"format": "stepsim.workload", "version": FORMAT_VERSION, "rank": rank, "world_size": world,
                "torch_version": torch.__version__, "device": a.device,
                "script": a.script, "script_args": list(a.script_args), "comm": recorder.comm_json()}
    if profile is not None:
        workload.update(profile.to_json())
        workload["execution_trace"] = os.path.basename(profile.et_path) if profile.et_written else None
        profile.prof.export_chrome_trace(base + ".kineto.json")  # what `stepsim trace import` reads
        workload["kineto_trace"] = os.path.basename(base + ".kineto.json")
    with open(base + ".workload.json", "w") as f:
        json.dump(workload, f, indent=None, separators=(",", ":"))
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

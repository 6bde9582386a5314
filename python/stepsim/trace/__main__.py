"""python3 -m stepsim.trace --world-size N --out DIR [--ranks 0,1] [--real] -- SCRIPT [ARGS...]

Default (ex-situ): runs SCRIPT once per traced rank, one after the other, each in a fresh process that is
that rank alone (torch.distributed patched, one step profiled); writes DIR/rank<r>.{comm,workload}.json
and DIR/manifest.json. --real: runs the N ranks for real at once on this machine (the script's own
backend, e.g. gloo on CPU) and records only their communication, to check the tracer against.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _parse_ranks(text, world):
    if text is None:
        return list(range(world))
    ranks = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        ranks.extend(range(int(lo), int(hi or lo) + 1))
    bad = [r for r in ranks if not 0 <= r < world]
    if bad:
        raise SystemExit("stepsim.trace: --ranks %s outside 0..%d" % (bad, world - 1))
    return sorted(set(ranks))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(mode, rank, a, script_argv, extra=()):
    return [sys.executable, "-m", "stepsim.trace.run_rank", "--mode", mode, "--rank", str(rank),
            "--world-size", str(a.world_size), "--out", a.out, "--device", a.device, *extra, "--", *script_argv]


def _env(extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = _PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def _trace(a, ranks, script_argv):
    for r in ranks:
        t0 = time.perf_counter()
        extra = ["--no-profile"] if a.no_profile else []
        rc = subprocess.call(_worker("fake", r, a, script_argv, extra), env=_env({}))
        if rc != 0:
            print("stepsim.trace: rank %d failed (exit %d)" % (r, rc), file=sys.stderr)
            return 1
        if not a.quiet:
            print("stepsim.trace: rank %d traced in %.1f s" % (r, time.perf_counter() - t0), file=sys.stderr)
    return 0


def _real(a, ranks, script_argv):
    port = str(_free_port())
    procs = []
    for r in range(a.world_size):
        env = _env({"RANK": str(r), "WORLD_SIZE": str(a.world_size), "LOCAL_RANK": str(r),
                    "LOCAL_WORLD_SIZE": str(a.world_size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        procs.append(subprocess.Popen(_worker("real", r, a, script_argv), env=env))
    deadline = time.monotonic() + a.timeout
    failed = False
    while any(p.poll() is None for p in procs):
        if time.monotonic() > deadline or any(p.returncode not in (None, 0) for p in procs):
            failed = True  # one rank died or the job hangs: the others would wait forever
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
    codes = [p.returncode for p in procs]
    if failed or any(codes):
        print("stepsim.trace: real run failed, exit codes %s" % codes, file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        argv.append("--")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(prog="python3 -m stepsim.trace", usage=__doc__.splitlines()[0])
    ap.add_argument("--world-size", type=int, required=True, help="ranks of the simulated job")
    ap.add_argument("--out", required=True, help="folder for rank<r>.*.json and manifest.json")
    ap.add_argument("--ranks", help="ranks to trace, e.g. 0,1 or 0-3 (default: all)")
    ap.add_argument("--real", action="store_true", help="run all ranks for real and record their communication")
    ap.add_argument("--device", help="device the script computes on (default: cuda if available, else cpu)")
    ap.add_argument("--no-profile", action="store_true", help="record communication only")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a --real run may take")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv[:cut])
    script_argv = argv[cut + 1:]
    if not script_argv:
        ap.error("missing -- SCRIPT [ARGS...]")
    if a.world_size < 1:
        ap.error("--world-size must be >= 1")
    if a.device is None:
        import torch
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    script_argv[0] = os.path.abspath(script_argv[0])
    ranks = _parse_ranks(a.ranks, a.world_size)
    rc = _real(a, ranks, script_argv) if a.real else _trace(a, ranks, script_argv)
    if rc == 0:
        manifest = {"format": "stepsim.trace", "version": 1, "world_size": a.world_size,
                    "mode": "real" if a.real else "ex-situ",
                    "traced_ranks": list(range(a.world_size)) if a.real else ranks,
                    "script": script_argv[0], "script_args": script_argv[1:], "device": a.device}
        with open(os.path.join(a.out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())

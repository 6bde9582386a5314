"""stepsim's Python API: the CLI's commands as functions (docs/PYTHON.md).

Each function mirrors its command's options as keyword arguments (``--failure-rate`` is ``failure_rate``) and returns
what the command's ``--json`` writes, as Python objects. Every check and every figure is the C++ library's
(src/stepsim/api/, bound in python/binding/); this file only turns Python values into the command's options. Bad input
raises :class:`stepsim.InputError` with the CLI's exit-2 message. The GIL is released while the library runs, so
threads can simulate in parallel.
"""
import json
import os
from collections.abc import Mapping

from . import _stepsim_native as _native
from .errors import InputError

__all__ = ["simulate", "memory", "comm", "plan", "whatif", "reliability", "validate", "profile_nccl",
           "SimulationResult", "Rows"]

_SECTIONS = ("model", "parallelism", "training", "cluster", "simulation")


def _json_value(o):
    # numpy scalars and similar (sweeps often hold them): their Python value
    if hasattr(o, "item"):
        return o.item()
    raise TypeError("%r (%s) is not a job value" % (o, type(o).__name__))


def _dumps(v):
    return json.dumps(v, default=_json_value)


def _set_value(v):
    """A Python value as the text after '=' of --set: strings as written, everything else as JSON (= YAML flow)."""
    return v if isinstance(v, str) else _dumps(v)


def _overrides(overrides):
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return ["%s=%s" % (k, _set_value(v)) for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return [str(x) for x in overrides]


def _cluster_of(d, cluster, what):
    if cluster is None:
        raise InputError("%s needs --cluster CLUSTER.yaml" % what)
    if isinstance(cluster, Mapping):
        d["cluster_text"] = _dumps(dict(cluster))
    else:
        d["cluster_path"] = os.fspath(cluster)


def _job(job=None, *, megatron_args=None, torchtitan_config=None, deepspeed_config=None, cluster=None,
         hf_config=None, model=None, parallelism=None, training=None, simulation=None, overrides=None,
         required=True):
    """The job's source in the form of the library's JobInput (api/job_input.hpp)."""
    d = {"overrides": _overrides(overrides)}
    sections = {"model": model, "parallelism": parallelism, "training": training, "simulation": simulation}
    for name, config in (("torchtitan_config", torchtitan_config), ("deepspeed_config", deepspeed_config)):
        if config is None:
            continue
        others = [job, megatron_args, torchtitan_config if name != "torchtitan_config" else None,
                  deepspeed_config if name != "deepspeed_config" else None]
        if any(v is not None for v in others) or any(v is not None for v in sections.values()):
            raise InputError("give one job: a job, megatron_args, torchtitan_config or deepspeed_config")
        d[name] = os.fspath(config)
        _cluster_of(d, cluster, "--" + name.replace("_", "-"))
        if hf_config is not None:
            if name != "deepspeed_config":
                raise InputError("hf_config= is the model of a deepspeed_config; a torchtitan config names its own")
            if isinstance(hf_config, Mapping):
                d["hf_config_text"] = _dumps(dict(hf_config))
            else:
                d["hf_config_path"] = os.fspath(hf_config)
        return d
    if isinstance(job, str) and job.lstrip().startswith("--"):
        if megatron_args is not None:
            raise InputError("give the Megatron arguments once (as job or as megatron_args)")
        megatron_args, job = job, None
    if megatron_args is not None:
        if job is not None or hf_config is not None or any(v is not None for v in sections.values()):
            raise InputError("give a job or megatron_args, not both")
        d["megatron_args"] = megatron_args
        _cluster_of(d, cluster, "--megatron-args")
        return d
    if isinstance(job, (str, os.PathLike)):
        if hf_config is not None or cluster is not None or any(v is not None for v in sections.values()):
            raise InputError("a job file holds its sections; change them with overrides={'key': value}")
        d["job_path"] = os.fspath(job)
        return d
    if job is None and hf_config is None and all(v is None for v in sections.values()) and cluster is None:
        if required:
            raise InputError("missing job: a job file, a dict in the job-file schema, hf_config= with "
                             "parallelism/training/cluster dicts, or megatron_args= with cluster=")
        return d
    if job is not None and not isinstance(job, Mapping):
        raise InputError("job: a path, a dict in the job-file schema or a Megatron argument string, not %s"
                         % type(job).__name__)
    tree = dict(job) if job is not None else {}
    sections["cluster"] = cluster
    for k, v in sections.items():
        if v is not None:
            tree[k] = os.fspath(v) if k == "cluster" and isinstance(v, os.PathLike) else v
    if hf_config is not None:
        if isinstance(hf_config, Mapping):
            d["hf_config_text"] = _dumps(dict(hf_config))
        else:
            m = dict(tree.get("model") or {})
            m["hf_config"] = os.fspath(hf_config)
            tree["model"] = m
    d["job_text"] = _dumps(tree)
    d["text_source"] = "job dict"
    return d


def _job_kwargs(kw):
    return {k: kw.pop(k) for k in ("megatron_args", "torchtitan_config", "deepspeed_config", "cluster", "hf_config",
                                   "model", "parallelism", "training", "simulation", "overrides") if k in kw}


def _options(kw, allowed, command):
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise TypeError("stepsim.%s: unknown option(s) %s; options: %s"
                        % (command, ", ".join(unknown), ", ".join(sorted(allowed))))
    return {k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in kw.items() if v is not None}


def _pandas():
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - Debian's python3-pandas is installed where tests run
        raise ImportError("to_pandas needs pandas (Debian: apt install python3-pandas)") from e
    return pandas


class Rows(list):
    """A list of JSON rows (plans, comm sizes) with ``json`` (everything --json wrote) and ``to_pandas()``."""

    def __init__(self, rows, json_doc=None):
        super().__init__(rows)
        self.json = json_doc if json_doc is not None else list(rows)

    def to_pandas(self):
        """One row per entry; nested keys become dotted columns."""
        return _pandas().json_normalize(list(self), sep=".")


def _flatten(d, prefix=""):
    out = []
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.extend(_flatten(v, prefix + k + "."))
        else:
            out.append((prefix + k, v))
    return out


class SimulationResult:
    """One simulated step.

    summary         dict: every key of the summary JSON (``stepsim simulate --json``)
    breakdown       list of {"part", "seconds"}: summary["breakdown_s"], nested keys dotted (exposed_comm.tp, ...)
    memory_series   list of {"rank", "time_s": [...], "allocated_bytes": [...]}: memory over the step of the
                    recorded ranks (``rank``, and one rank per pipeline stage or ``trace_ranks``), as --memory-csv
    text            the summary as ``stepsim simulate`` prints it
    """

    def __init__(self, native):
        self.summary = native["summary"]
        self.memory_series = native["memory_series"]
        self.text = native["text"]
        self.breakdown = [{"part": k, "seconds": v} for k, v in _flatten(self.summary["breakdown_s"])]

    @property
    def step_time_s(self):
        return self.summary["step_time_s"]

    @property
    def mfu(self):
        """Model FLOPs utilisation, a fraction (summary["mfu"])."""
        return self.summary["mfu"]

    @property
    def fits(self):
        """Whether every rank's peak memory fits in its GPU (summary["fits"])."""
        return self.summary["fits"]

    def table(self):
        """The step's headline figures with units in the names, scaled for reading (GiB, %, ms), in the order the
        summary prints them: a dict, one row of ``to_pandas("table")``."""
        s, b = self.summary, self.summary["breakdown_s"]
        m = s["memory"]
        gib = float(1 << 30)
        row = {"step time (s)": s["step_time_s"]}
        if "step_time_interval_s" in s:
            row["80% interval low (s)"], row["80% interval high (s)"] = s["step_time_interval_s"]
        row.update({
            "tokens/s": s["tokens_per_s"],
            "TFLOP/s per GPU": s["tflops_per_gpu"],
            "MFU (%)": 100 * s["mfu"],
            "peak memory (GiB)": m["peak_bytes_max"] / gib,
            "PyTorch reserved (GiB)": m["peak_reserved_bytes"] / gib,
            "GPU memory (GiB)": m["capacity_bytes"] / gib,
            "fits": s["fits"],
            "compute (ms)": 1e3 * b["compute"],
            "pipeline bubble (ms)": 1e3 * b["pipeline_bubble"],
            "optimizer (ms)": 1e3 * b["optimizer"],
            "host gaps (ms)": 1e3 * b["host_gap"],
            "offload (ms)": 1e3 * b["offload"],
        })
        for k in ("tp", "cp", "ep", "pp", "dp", "world"):
            row["exposed %s comm (ms)" % k.upper()] = 1e3 * b["exposed_comm"][k]
        return row

    def to_pandas(self, what="summary"):
        """A DataFrame of ``what``: "summary" (one row, every key of the summary JSON, nested keys dotted, raw units
        as the JSON names them: concatenate the rows of a sweep), "table" (one row of :meth:`table`: units in the
        column names, GiB, % and ms), "breakdown" (part, seconds) or "memory" (rank, time_s, allocated_bytes: one
        row per change)."""
        pd = _pandas()
        if what == "summary":
            return pd.json_normalize(self.summary, sep=".")
        if what == "table":
            return pd.DataFrame([self.table()])
        if what == "breakdown":
            return pd.DataFrame(self.breakdown, columns=["part", "seconds"])
        if what == "memory":
            rows = [(s["rank"], t, b) for s in self.memory_series for t, b in zip(s["time_s"], s["allocated_bytes"])]
            return pd.DataFrame(rows, columns=["rank", "time_s", "allocated_bytes"])
        raise ValueError("to_pandas(what): one of 'summary', 'table', 'breakdown', 'memory', not %r" % (what,))

    def plot(self, ax=None):
        """Where the step goes, as a horizontal stacked bar in milliseconds (matplotlib; ImportError saying so when it
        is not installed). Returns the axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("SimulationResult.plot needs matplotlib (Debian: apt install python3-matplotlib): %s"
                              % e) from None
        if ax is None:
            ax = plt.subplots(figsize=(8, 1.8))[1]
        left = 0.0
        for part in self.breakdown:
            ms = 1e3 * part["seconds"]
            if ms > 0:
                ax.barh([0], [ms], left=left, label=part["part"])
                left += ms
        ax.set_yticks([])
        ax.set_xlabel("time in the step (ms)")
        ax.set_title("step %.3f s, MFU %.1f %%" % (self.step_time_s, 100 * self.mfu))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, fontsize="small", frameon=False)
        return ax

    def __repr__(self):
        return "<stepsim.SimulationResult step_time_s=%r mfu=%r fits=%r>" % (
            self.summary.get("step_time_s"), self.summary.get("mfu"), self.summary.get("fits"))


def simulate(job=None, overrides=None, **kw):
    """``stepsim simulate``: one training step of the job on every rank.

    job: a job YAML path; a dict in the job-file schema; a Megatron-LM argument string (starting with "--") with
    ``cluster=`` (path or dict); or None with ``hf_config=`` (a config.json path or dict) and ``parallelism=``,
    ``training=``, ``cluster=`` (path or dict), ``model=`` (keys over the config's), ``simulation=`` dicts.
    overrides: {"model.num_layers": 4} or ["model.num_layers=4"], as --set.
    Options (as the CLI's): rank, trace, trace_ranks, memory_csv, json, dump_job, require_fit, workload, step,
    no_host_gaps. Returns a :class:`SimulationResult`.
    """
    jk = _job_kwargs(kw)
    opts = _options(kw, ("rank", "trace", "trace_ranks", "memory_csv", "json", "dump_job", "require_fit", "workload",
                         "step", "no_host_gaps"), "simulate")
    return SimulationResult(_native.simulate(_job(job, overrides=overrides, **jk), opts))


def memory(job=None, overrides=None, **kw):
    """``stepsim memory``: analytic per-rank memory of every pipeline stage (the --json dict). Job as simulate();
    option json (a path to write it to)."""
    jk = _job_kwargs(kw)
    return _native.memory(_job(job, overrides=overrides, **jk), _options(kw, ("json",), "memory"))


def whatif(job=None, scale=None, overrides=None, to=None, **kw):
    """``stepsim whatif``: the job before and after scaling or setting keys (the --json dict).

    scale: {"inter_node_bandwidth": 2} or ["inter_node_bandwidth=2"] (keys: docs/WHATIF.md).
    to: {"cluster.gpu": "B200"} or ["cluster.gpu=B200"]: any key set on the after side, as --to.
    Options: steps or tokens (a token budget: each side's steps from its batch), failure_rate, storage_GBps, price,
    replan (True: the after side runs plan #1 of ``plan`` for it), json.
    """
    jk = _job_kwargs(kw)
    opts = _options(kw, ("steps", "tokens", "failure_rate", "storage_GBps", "price", "replan", "json"), "whatif")
    opts["scale"] = _overrides(scale)
    opts["to"] = _overrides(to)
    return _native.whatif(_job(job, overrides=overrides, **jk), opts)


def reliability(job=None, overrides=None, **kw):
    """``stepsim reliability``: end-to-end time with failures and checkpoints (the --json dict). The job is
    optional when step_time, nodes and save_time (or checkpoint_GB) are given.

    Options: steps (required, or tokens with a job: a token budget), step_time, nodes, failure_rate, recovery_time,
    recovery_mix, recovery_level_times, save_time, checkpoint_GB, storage_GBps, init_time, interval, monte_carlo, seed.
    """
    jk = _job_kwargs(kw)
    opts = _options(kw, ("steps", "tokens", "step_time", "nodes", "failure_rate", "recovery_time", "recovery_mix",
                         "recovery_level_times", "save_time", "checkpoint_GB", "storage_GBps", "init_time",
                         "interval", "monte_carlo", "seed", "json"), "reliability")
    if "seed" in opts:
        opts["seed"] = str(opts["seed"])
    return _native.reliability(_job(job, overrides=overrides, required=False, **jk), opts)


def plan(job=None, overrides=None, **kw):
    """``stepsim plan``: the ranked parallel plans of the job (best first) as a :class:`Rows` list of plan dicts;
    ``.json`` is everything --json writes (model, gpus, capacity, the rules' counts, ...).

    Options: gpus, global_batch, top, simulate, threads, memory_margin, tie_tolerance, objective ("step" | "e2e"),
    steps (or tokens), failure_rate, storage_GBps, init_time, price, keep_layout, fp8_recipes, json. With
    ``memory_map=True`` (and gpus, global_batch, csv) the (TP, PP) memory-feasibility map instead, one row per pair as
    --csv writes it.

    The space (docs/PLANNER.md, "Frameworks and constraints"): ``framework`` ("megatron" | "torchtitan" | "deepspeed";
    default the job's), ``fix`` ({"tensor": 8}), ``allow`` ({"zero_stage": [1, 3]}), ``exclude`` (["tp_comm_overlap"]
    or {"cp_comm_type": ["a2a"]}), ``max_tp_per_nvlink_domain`` (8), as --framework, --fix, --allow, --exclude and
    --max-tp-per-nvlink-domain; a job file's ``plan:`` section gives them too (the arguments win per key).
    """
    jk = _job_kwargs(kw)
    _plan_constraints(kw)
    if kw.pop("memory_map", False):
        opts = _options(kw, ("gpus", "global_batch", "csv"), "plan(memory_map=True)")
        return _csv_rows(_native.memory_map(_job(job, overrides=overrides, **jk), opts))
    opts = _options(kw, ("gpus", "global_batch", "top", "simulate", "threads", "memory_margin", "tie_tolerance",
                         "objective", "steps", "tokens", "failure_rate", "storage_GBps", "init_time", "price",
                         "keep_layout", "fp8_recipes", "json", "framework", "fix", "allow", "exclude",
                         "max_tp_per_nvlink_domain"),
                    "plan")
    doc = _native.plan(_job(job, overrides=overrides, **jk), opts)
    return Rows(doc["plans"], doc)


def _constraint_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_constraint_value(x) for x in v)
    return str(v)


def _plan_constraints(kw):
    """fix/allow/exclude as the CLI's KEY=VALUE strings (a mapping, or for exclude also a list of switch names)."""
    for name in ("fix", "allow", "exclude"):
        if name not in kw:
            continue
        given = kw[name]
        if isinstance(given, dict):
            kw[name] = [f"{k}={_constraint_value(v)}" for k, v in given.items()]
        elif name == "exclude" and isinstance(given, (list, tuple)) and all(isinstance(x, str) for x in given):
            kw[name] = list(given)
        else:
            raise InputError(f"plan: {name} must be a mapping of key to value(s)"
                             + (" or a list of switch names" if name == "exclude" else ""))


def _csv_rows(text):
    import csv
    import io

    def value(v):
        for t in (int, float):
            try:
                return t(v)
            except ValueError:
                pass
        return v

    return Rows([{k: value(v) for k, v in r.items()} for r in csv.DictReader(io.StringIO(text))])


def comm(collective="all_reduce", overrides=None, **kw):
    """``stepsim comm``: one collective over a range of sizes, like nccl-tests, as a :class:`Rows` list of
    {size_bytes, time_us, algbw_GBps, busbw_GBps, algorithm, protocol, channels} (what --json writes).

    Options: gpus, gpus_per_node, sizes ("1M-1G", "8M", "1K,64K"), cluster (a cluster YAML path), model
    ("alpha-beta" | "nccl" | "flow"), algo, proto ("LL" | "LL128" | "Simple", as NCCL_PROTO), store, nccl_version,
    env (NCCL variables, ["NCCL_ALGO=Ring"], as --env), launch ("procs" or "g8", as --launch), json; overrides:
    cluster keys, as --set.
    """
    opts = _options(kw, ("gpus", "gpus_per_node", "sizes", "cluster", "model", "algo", "proto", "store",
                         "nccl_version", "env", "launch", "json"), "comm")
    if isinstance(opts.get("env"), str):
        opts["env"] = [opts["env"]]
    opts["collective"] = collective
    opts["overrides"] = _overrides(overrides)
    return Rows(_native.comm(opts))


def validate(runs, overrides=None, **kw):
    """``stepsim validate RUNS.csv``: every published run simulated against its measured step time (the --json
    dict: rows, mape, mean_signed_error, by_source, failed). Unlike the CLI, refused rows do not raise: they are in
    ``failed``.

    Options: only (row ids), jobs, json, markdown, jobs_dir; overrides apply to every row's job, as --set.
    """
    opts = _options(kw, ("only", "jobs", "json", "markdown", "jobs_dir"), "validate")
    if isinstance(opts.get("only"), str):
        opts["only"] = opts["only"].split(",")
    opts["runs"] = os.fspath(runs)
    opts["overrides"] = _overrides(overrides)
    return _native.validate(opts)


def profile_nccl(log, nsys=None, **kw):
    """``stepsim profile nccl``: NCCL_DEBUG=INFO logs (a path or a list) fused with Nsight Systems SQLite exports
    (``nsys``); returns the summary dict (what --summary writes).

    Options: parallelism ("tp=4,pp=2"), model ("layers=..,hidden=.."), model_config (a config.json),
    sync_clocks, nvtx, out (Chrome trace to write), summary (path to write the summary to).
    """
    opts = _options(kw, ("parallelism", "model", "model_config", "sync_clocks", "nvtx", "out", "summary"),
                    "profile_nccl")

    def paths(x):
        return [] if x is None else [os.fspath(x)] if isinstance(x, (str, os.PathLike)) else [os.fspath(p) for p in x]

    opts["log"] = paths(log)
    opts["nsys"] = paths(nsys)
    return _native.profile_nccl(opts)

"""stepsim's Python API: the CLI's commands as functions (docs/PYTHON.md).

Each function mirrors its command's options as keyword arguments (``--failure-rate`` is ``failure_rate``) and returns
what the command's ``--json`` writes, as Python objects. Every check and every figure is the C++ library's
(src/stepsim/api/, bound in python/binding/); this file only turns Python values into the command's options. Bad input
raises :class:`stepsim.InputError` with the CLI's exit-2 message. The GIL is released while the library runs, so
threads can simulate in parallel.
"""
import contextlib
import json
import os
from collections.abc import Iterable, Mapping

from . import _stepsim_native as _native
from .errors import InputError

__all__ = ["simulate", "memory", "comm", "plan", "whatif", "reliability", "validate", "profile_nccl",
           "SimulationResult", "Rows", "Record", "Plan", "PlanResult", "WhatIfResult", "ReliabilityResult"]

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


def _overrides(overrides, name="overrides"):
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return ["%s=%s" % (k, _set_value(v)) for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    if not isinstance(overrides, Iterable):
        raise InputError("%r: give {'key': value}, 'key=value' or a list of 'key=value'" % (overrides,),
                         key=name, rule="must be a dict, a 'key=value' string or a list of them")
    return [str(x) for x in overrides]


def _cluster_of(d, cluster, what):
    if cluster is None:
        raise InputError("%s needs --cluster CLUSTER.yaml" % what, key="cluster")
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
            raise InputError("give one job: a job, megatron_args, torchtitan_config or deepspeed_config", key=name)
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
            raise InputError("give the Megatron arguments once (as job or as megatron_args)", key="megatron_args")
        megatron_args, job = job, None
    if megatron_args is not None:
        if job is not None or hf_config is not None or any(v is not None for v in sections.values()):
            raise InputError("give a job or megatron_args, not both", key="megatron_args")
        d["megatron_args"] = megatron_args
        _cluster_of(d, cluster, "--megatron-args")
        return d
    if isinstance(job, (str, os.PathLike)):
        if cluster is not None or any(v is not None for v in sections.values()):
            raise InputError("a job file holds its sections; change them with overrides={'key': value}", key="job")
        d["job_path"] = os.fspath(job)
        # A Hugging Face config beside a job file is its model, the file's model keys over it (the CLI's --hf-config).
        if isinstance(hf_config, Mapping):
            raise InputError("hf_config= beside a job file is a config.json path; a dict goes with a job dict",
                             key="hf_config")
        if hf_config is not None:
            d["hf_config_path"] = os.fspath(hf_config)
        return d
    if job is None and hf_config is None and all(v is None for v in sections.values()) and cluster is None:
        if required:
            raise InputError("missing job: a job file, a dict in the job-file schema, hf_config= with "
                             "parallelism/training/cluster dicts, or megatron_args= with cluster=", key="job")
        return d
    if job is not None and not isinstance(job, Mapping):
        raise InputError("job: a path, a dict in the job-file schema or a Megatron argument string, not %s"
                         % type(job).__name__, key="job", rule="must be a path, a dict or a Megatron argument string")
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


# JobInput's fields that hold a path -> the keyword argument that gave it.
_PATH_ARGUMENTS = (("job_path", "job"), ("torchtitan_config", "torchtitan_config"),
                   ("deepspeed_config", "deepspeed_config"), ("hf_config_path", "hf_config"),
                   ("cluster_path", "cluster"))


@contextlib.contextmanager
def _naming(paths):
    """An InputError about a file the message names by path alone (it cannot be read, or is of another kind) gets
    the argument that named the file as its key: the library knows the path, only the call knows the argument."""
    try:
        yield
    except InputError as e:
        if not e.key and e.file:
            names = [(arg, paths.get(field)) for field, arg in _PATH_ARGUMENTS] + list(paths.items())
            for arg, given in names:
                if given is not None and e.file in (given if isinstance(given, list) else [given]):
                    e.key = arg
                    break
        raise


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


def _record(v):
    """A JSON value with every mapping in it a :class:`Record`."""
    if isinstance(v, Mapping):
        return v if type(v) is Record else Record(v)
    if isinstance(v, list):
        return [_record(x) for x in v]
    return v


class Record(dict):
    """A dict of the library's JSON whose keys are also attributes: ``r.memory.peak_bytes_max`` is
    ``r["memory"]["peak_bytes_max"]``, and nested mappings are Records too. It stays a dict (``==`` a plain dict,
    ``json.dumps``, ``[]``) so code written for the plain dicts keeps working. Keys that are no identifier
    (``pruning["batch-divisible"]``) or that a dict method shadows (``items``, ``keys``, ...) are read with ``[]``."""

    def __init__(self, d=()):
        super().__init__((k, _record(v)) for k, v in dict(d).items())

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            # AttributeError (not KeyError) so that hasattr, copy and pickle see an ordinary missing attribute.
            raise AttributeError("%s has no field %r (fields: %s)" % (type(self).__name__, name, ", ".join(self))) \
                from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self if k.isidentifier()})


class Rows(list):
    """A list of JSON rows (plans, comm sizes), each a :class:`Record`, with ``json`` (everything --json wrote) and
    ``to_pandas()``."""

    def __init__(self, rows, json_doc=None):
        super().__init__(_record(list(rows)))
        self.json = _record(json_doc) if json_doc is not None else list(self)

    def to_pandas(self):
        """One row per entry; nested keys become dotted columns."""
        return _pandas().json_normalize([dict(r) if isinstance(r, Mapping) else r for r in self], sep=".")


class Plan(Record):
    """One plan of ``stepsim.plan`` (a :class:`Record` of its --json keys: tensor, pipeline, data, context, expert,
    micro_batch_size, recompute, step_time_s, timed_by, peak_memory_bytes, memory_headroom_bytes, ...); the repr is
    the layout and its step."""

    @property
    def peak_memory_gib(self):
        """peak_memory_bytes in GiB."""
        return self["peak_memory_bytes"] / _GIB

    def __repr__(self):
        g = self.get
        return "<stepsim.Plan TP %s PP %s DP %s CP %s EP %s micro-batch %s recompute %s: %.4f s (%s)>" % (
            g("tensor"), g("pipeline"), g("data"), g("context"), g("expert"), g("micro_batch_size"), g("recompute"),
            g("step_time_s", float("nan")), g("timed_by"))


class PlanResult(Rows):
    """``stepsim.plan``'s answer: the list of :class:`Plan`, best first (``plans[0]`` is plan #1), and every field of
    ``plan --json`` as an attribute: ``baseline`` (the job as written, a Plan), ``gpus``, ``global_batch``, ``gpu``,
    ``model``, ``framework``, ``objective``, ``constraints``, ``enumerated``, ``estimated``, ``simulated``,
    ``pruning``, ``tie_tolerance``, ``notes``, ...; ``json`` is the whole document."""

    def __init__(self, doc):
        plans = [Plan(p) for p in doc["plans"]]
        list.__init__(self, plans)
        self.json = Record(doc)
        self.json["plans"] = plans  # the list's own objects, in the document's key order
        if doc.get("baseline") is not None:
            self.json["baseline"] = Plan(doc["baseline"])

    @property
    def best(self):
        """Plan #1 (None when no plan fits)."""
        return self[0] if self else None

    def __getattr__(self, name):
        if name != "json" and name in self.__dict__.get("json", {}):
            return self.json[name]
        raise AttributeError("PlanResult has no field %r" % name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self.json if k.isidentifier()})

    def __repr__(self):
        return "<stepsim.PlanResult %d plans of %s enumerated for %s x %s; best: %r>" % (
            len(self), self.json.get("enumerated"), self.json.get("gpus"), self.json.get("gpu"), self.best)


class WhatIfResult(Record):
    """``stepsim.whatif``'s answer, a :class:`Record` of ``whatif --json``: ``before`` and ``after`` (each with
    step_time_s, gpus, nodes, gpu, tokens_per_s, tflops_per_gpu, mfu, oom, steps, e2e_time_s, ettr,
    checkpoint_interval_steps, gpu_hours, cost_usd), ``scales``, ``to``, ``steps``, ``usd_per_gpu_hour``, ``notes``;
    ``speedup`` is before.step_time_s / after.step_time_s."""

    @property
    def speedup(self):
        return self["before"]["step_time_s"] / self["after"]["step_time_s"]

    def __repr__(self):
        b, a = self["before"], self["after"]
        return "<stepsim.WhatIfResult step_time_s %.4f -> %.4f, gpus %s -> %s>" % (
            b["step_time_s"], a["step_time_s"], b["gpus"], a["gpus"])


class ReliabilityResult(Record):
    """``stepsim.reliability``'s answer, a :class:`Record` of ``reliability --json``: ``e2e_time_s``, ``ettr``
    (effective training time ratio), ``checkpoint_interval_steps`` (the interval used),
    ``optimal_checkpoint_interval_steps``, ``continuous_optimal_interval_steps``, ``checkpoints``,
    ``expected_failures``, ``e2e_breakdown_s`` (training, checkpoint_saves, lost_work, repair, start_up) and
    ``inputs`` (what it was computed from: step_time_s, nodes, failure_rate_per_node_day, save_time_s, ...);
    ``e2e_time_h`` is e2e_time_s in hours."""

    @property
    def e2e_time_h(self):
        return self["e2e_time_s"] / 3600

    def __repr__(self):
        return "<stepsim.ReliabilityResult e2e_time_s=%.1f ettr=%.4f checkpoint_interval_steps=%s>" % (
            self["e2e_time_s"], self["ettr"], self.get("checkpoint_interval_steps"))


def _flatten(d, prefix=""):
    out = []
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.extend(_flatten(v, prefix + k + "."))
        else:
            out.append((prefix + k, v))
    return out


_GIB = float(1 << 30)
_COMM = (("tp", "TP"), ("cp", "CP"), ("ep", "EP"), ("pp", "PP"), ("dp", "DP"), ("world", "world"))

# Summary keys (dotted) -> (column with its unit, factor from the JSON's unit to the column's; None: as is).
_COLUMNS = {
    "step_time_s": ("step time (s)", None),
    "step_time_host_bound_s": ("host-bound step time (s)", None),
    "step_time_interval_basis.kind": ("interval basis", None),
    "step_time_interval_basis.runs": ("interval runs", None),
    "tokens_per_s": ("tokens/s", None),
    "tflops_per_gpu": ("TFLOP/s per GPU", None),
    "mfu": ("MFU (%)", 100),
    "mfu_peak_tflops": ("MFU against (peak TFLOP/s)", None),
    "fits": ("fits", None),
    "memory_tight": ("tight in memory", None),
    "num_microbatches": ("micro-batches", None),
    "rank": ("rank", None),
    "memory.peak_bytes_max": ("peak memory (GiB)", 1 / _GIB),
    "memory.peak_reserved_bytes": ("PyTorch reserved (GiB)", 1 / _GIB),
    "memory.peak_allocated_bytes": ("PyTorch allocated (GiB)", 1 / _GIB),
    "memory.capacity_bytes": ("GPU memory (GiB)", 1 / _GIB),
    "memory.oom": ("out of memory", None),
    "memory.tight": ("memory tight", None),
    "memory.interval_source": ("reserved interval source", None),
    "memory.per_stage.peak_bytes": ("peak (GiB)", 1 / _GIB),
    "memory.per_stage.static_bytes": ("static (GiB)", 1 / _GIB),
    "memory.per_stage.activation_bytes": ("activations (GiB)", 1 / _GIB),
    "memory.per_stage.peak_allocated_bytes": ("PyTorch allocated (GiB)", 1 / _GIB),
    "memory.per_stage.peak_reserved_bytes": ("PyTorch reserved (GiB)", 1 / _GIB),
    "memory.per_stage.stream_pool_bytes": ("FSDP2 stream pools (GiB)", 1 / _GIB),
    "memory.per_stage.oom": ("out of memory", None),
    "memory.per_stage.tight": ("tight in memory", None),
    "breakdown_s.compute": ("compute (ms)", 1e3),
    "breakdown_s.pipeline_bubble": ("pipeline bubble (ms)", 1e3),
    "breakdown_s.optimizer": ("optimizer (ms)", 1e3),
    "breakdown_s.overlap_slowdown_s": ("overlap slowdown (ms)", 1e3),
    "breakdown_s.host_gap": ("host gaps (ms)", 1e3),
    "breakdown_s.offload": ("offload (ms)", 1e3),
    "pipeline_stages.layers": ("layers", None),
    "pipeline_stages.busy_s": ("busy (ms)", 1e3),
    "pipeline_stages.compute_s": ("compute (ms)", 1e3),
    "pipeline_stages.pipeline_bubble_s": ("pipeline bubble (ms)", 1e3),
    "pipeline_stages.optimizer_s": ("optimizer (ms)", 1e3),
    "pipeline_stages.host_gap_s": ("host gaps (ms)", 1e3),
    "bottleneck_stage": ("bottleneck stage", None),
    "pipeline_split": ("pipeline split", None),
    "power_limit_W": ("power limit (W)", None),
    "framework.name": ("framework", None),
    "framework.compile": ("torch.compile", None),
    "job.intra_node_GBps": ("job intra-node (GB/s)", None),
    "job.inter_node_Gbps_per_gpu": ("job inter-node per GPU (Gb/s)", None),
    "simulation.wall_s": ("simulation wall (ms)", 1e3),
}
for _k, _K in _COMM:
    _COLUMNS["breakdown_s.exposed_comm." + _k] = ("exposed %s comm (ms)" % _K, 1e3)
    _COLUMNS["pipeline_stages.exposed_comm_s." + _k] = ("exposed %s comm (ms)" % _K, 1e3)
    _COLUMNS["comm_message_bytes_per_rank." + _k] = ("%s comm messages per rank (GiB)" % _K, 1 / _GIB)
    _COLUMNS["comm_volume_bytes_per_rank." + _k] = ("%s comm volume per rank (GiB)" % _K, 1 / _GIB)
    _COLUMNS["comm_calls_per_rank." + _k] = ("%s comm calls per rank" % _K, None)
# Intervals ([low, high]) -> the column of each end ({} is "low" or "high").
_INTERVALS = {"step_time_interval_s": ("step time 80%% interval %s (s)", None),
              "memory.peak_reserved_interval_bytes": ("PyTorch reserved 80%% interval %s (GiB)", 1 / _GIB)}


def _column(key, v):
    """The column of a summary key the table above does not name: its words, with the unit its suffix says."""
    name, factor = _COLUMNS.get(key, (None, None))
    if name is None:
        top, _, leaf = key.rpartition(".")
        words = (top.split(".")[0] + " " if top.split(".")[0] in ("job", "simulation") else "") + leaf
        if leaf.endswith("_bytes") and isinstance(v, (int, float)):
            name, factor = words[:-len("_bytes")] + " (GiB)", 1 / _GIB
        elif leaf.endswith("_s") and isinstance(v, (int, float)):
            name, factor = words[:-len("_s")] + " (s)", None
        else:
            name = words
        name = name.replace("_", " ").replace("inter node", "inter-node").replace("intra node", "intra-node")
    if factor is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
        v = v * factor
    return name, v


def _human_summary(summary, prefix=""):
    """The summary as one row of readable columns: units in the names (s, ms, GiB, %, TFLOP/s, GB/s), values in
    them; lists of stages as "stage N ..." columns, lists of notes joined with "; "."""
    row = {}
    for key, v in _flatten(summary):
        if key in _INTERVALS and isinstance(v, list) and len(v) == 2:
            name, factor = _INTERVALS[key]
            for end, x in zip(("low", "high"), v):
                row[name % end] = x * factor if factor else x
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            # per-stage lists (memory.per_stage, pipeline_stages): one column per stage and field
            for i, x in enumerate(v):
                stage = x.get("stage", i)
                for k, y in _flatten(x):
                    if k != "stage":
                        name, y = _column(key + "." + k, y)
                        row["stage %s %s" % (stage, name)] = y
        elif isinstance(v, list):
            name = _column(key, None)[0]
            row[name] = "; ".join(str(x) for x in v) if all(isinstance(x, str) for x in v) else str(v)
        else:
            name, v = _column(key, v)
            row[name] = v
    # The headline first (the JSON's keys are in alphabetical order), then everything else.
    ordered = {k: row[k] for k in _TABLE if k in row}
    ordered.update(row)
    return ordered


# The headline columns of table() (the summary's first lines), in the order the CLI prints them.
_TABLE = ("step time (s)", "step time 80% interval low (s)", "step time 80% interval high (s)", "tokens/s",
          "TFLOP/s per GPU", "MFU (%)", "peak memory (GiB)", "PyTorch reserved (GiB)", "GPU memory (GiB)", "fits",
          "tight in memory",
          "compute (ms)", "pipeline bubble (ms)", "optimizer (ms)", "host gaps (ms)", "offload (ms)",
          *("exposed %s comm (ms)" % K for _, K in _COMM))


def _list_of(name):
    return property(lambda self: self.summary.get(name, []), doc="summary[%r] ([] when it has none)" % name)


def _field(name, doc):
    return property(lambda self: self.summary.get(name), doc=doc)


class SimulationResult:
    """One simulated step (docs/PYTHON.md, "The functions").

    summary         every key of the summary JSON (``stepsim simulate --json``), a :class:`Record`; each top-level
                    key is also an attribute of the result (``r.tokens_per_s``, ``r.memory.peak_bytes_max``,
                    ``r.breakdown_s.exposed_comm.dp``); keys the job leaves out are None ([] for the notes)
    breakdown       list of {"part", "seconds"}: summary["breakdown_s"], nested keys dotted (exposed_comm.tp, ...)
    memory_series   list of {"rank", "time_s": [...], "allocated_bytes": [...]}: memory over the step of the
                    recorded ranks (``rank``, and one rank per pipeline stage or ``trace_ranks``), as --memory-csv
    text            the summary as ``stepsim simulate`` prints it
    peak_bytes, peak_memory_gib, gpu_memory_gib: the highest rank's peak memory and the GPU's, in bytes and GiB
    """

    step_time_s = _field("step_time_s", "the step's time, seconds")
    step_time_interval_s = _field("step_time_interval_s", "[low, high]: the step time's 80% interval, seconds "
                                  "(None without calibration residuals for the GPU)")
    step_time_interval_basis = _field("step_time_interval_basis", "{kind, runs}: the residuals the interval is from")
    step_time_host_bound_s = _field("step_time_host_bound_s", "the step time the host's launches bound, seconds "
                                    "(None when they do not)")
    tokens_per_s = _field("tokens_per_s", "training tokens per second, the whole job")
    tflops_per_gpu = _field("tflops_per_gpu", "model TFLOP/s per GPU")
    mfu = _field("mfu", "model FLOPs utilisation, a fraction")
    fits = _field("fits", "whether what PyTorch allocates on every rank, with the CUDA context and NCCL, fits its GPU")
    memory_tight = _field("memory_tight", "True when it fits but a rank's reserved peak does not: it runs as PyTorch's "
                          "caching allocator gives back cached blocks (docs/MODEL.md section 8)")
    num_microbatches = _field("num_microbatches", "micro-batches per pipeline in a step")
    rank = _field("rank", "the rank the summary reports")
    breakdown_s = _field("breakdown_s", "where the step goes, seconds: compute, pipeline_bubble, optimizer, "
                         "overlap_slowdown_s, host_gap, offload, exposed_comm.{tp,cp,ep,pp,dp,world}")
    memory = _field("memory", "peak memory: peak_bytes_max, capacity_bytes, oom, tight, peak_allocated_bytes, "
                    "peak_reserved_bytes, per_stage [{stage, peak_bytes, static_bytes, activation_bytes, ...}]")
    comm_message_bytes_per_rank = _field("comm_message_bytes_per_rank", "bytes of the messages one rank's "
                                         "collectives take, per group (tp, cp, ep, pp, dp, world)")
    comm_volume_bytes_per_rank = _field("comm_volume_bytes_per_rank", "bytes one rank sends, per group")
    comm_calls_per_rank = _field("comm_calls_per_rank", "collective calls of one rank, per group")
    job = _field("job", "the job's setup: parameters, active_parameters, zero_stage, data_parallel, links, ...")
    simulation = _field("simulation", "the engine's run: ranks, simulated_ranks, mirrored_ranks, events, wall_s, "
                        "comm_model")
    framework = _field("framework", "{name, compile} for a framework other than Megatron-Core (None for it)")
    pipeline_stages = _list_of("pipeline_stages")
    bottleneck_stage = _field("bottleneck_stage", "the slowest pipeline stage (None without pipeline_stages)")
    pipeline_layers = _field("pipeline_layers", "layers per model chunk (None for an even split)")
    pipeline_split = _field("pipeline_split", "the rule that split the layers (None for an even split)")
    power_limit_W = _field("power_limit_W", "the GPUs' power limit, W (None when the job sets none)")
    notes = _list_of("notes")
    assumptions = _list_of("assumptions")
    gpu_notes = _list_of("gpu_notes")
    input_notes = _list_of("input_notes")
    network_notes = _list_of("network_notes")

    def __init__(self, native):
        self.summary = Record(native["summary"])
        self.memory_series = native["memory_series"]
        self.text = native["text"]
        self.breakdown = [{"part": k, "seconds": v} for k, v in _flatten(self.summary["breakdown_s"])]

    @property
    def peak_bytes(self):
        """The highest rank's peak memory, bytes (memory.peak_bytes_max)."""
        return self.summary["memory"]["peak_bytes_max"]

    @property
    def peak_memory_gib(self):
        """The highest rank's peak memory, GiB."""
        return self.peak_bytes / _GIB

    @property
    def gpu_memory_gib(self):
        """The GPU's memory, GiB (memory.capacity_bytes)."""
        return self.summary["memory"]["capacity_bytes"] / _GIB

    def __getattr__(self, name):
        # A summary key a newer library writes and this class does not list yet is an attribute all the same.
        summary = self.__dict__.get("summary")
        if summary is not None and name in summary:
            return summary[name]
        raise AttributeError("SimulationResult has no attribute %r" % name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self.summary if k.isidentifier()})

    def table(self):
        """The step's headline figures with units in the names, scaled for reading (GiB, %, ms), in the order the
        summary prints them: a dict, one row of ``to_pandas("table")``."""
        row = _human_summary(self.summary)
        return {k: row[k] for k in _TABLE if k in row}

    def to_pandas(self, what="summary"):
        """A DataFrame of ``what``: "summary" (one row, every field of the summary with its unit in the column name
        and its value in it: s, ms, GiB, %, TFLOP/s; stages as "stage N ..." columns: concatenate the rows of a
        sweep), "raw" (one row, every key of the summary JSON, nested keys dotted, values as the JSON has them:
        bytes and seconds), "table" (one row of :meth:`table`), "breakdown" (part, seconds) or "memory" (rank,
        time_s, allocated_bytes: one row per change)."""
        pd = _pandas()
        if what == "summary":
            return pd.DataFrame([_human_summary(self.summary)])
        if what == "raw":
            return pd.json_normalize(dict(self.summary), sep=".")
        if what == "table":
            return pd.DataFrame([self.table()])
        if what == "breakdown":
            return pd.DataFrame(self.breakdown, columns=["part", "seconds"])
        if what == "memory":
            rows = [(s["rank"], t, b) for s in self.memory_series for t, b in zip(s["time_s"], s["allocated_bytes"])]
            return pd.DataFrame(rows, columns=["rank", "time_s", "allocated_bytes"])
        raise ValueError("to_pandas(what): one of 'summary', 'raw', 'table', 'breakdown', 'memory', not %r" % (what,))

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
    d = _job(job, overrides=overrides, **jk)
    with _naming(d):
        return SimulationResult(_native.simulate(d, opts))


def memory(job=None, overrides=None, **kw):
    """``stepsim memory``: analytic per-rank memory of every pipeline stage (the --json dict, a :class:`Record`).
    Job as simulate();
    option json (a path to write it to)."""
    jk = _job_kwargs(kw)
    d = _job(job, overrides=overrides, **jk)
    with _naming(d):
        return Record(_native.memory(d, _options(kw, ("json",), "memory")))


def whatif(job=None, scale=None, overrides=None, to=None, **kw):
    """``stepsim whatif``: the job before and after scaling or setting keys, a :class:`WhatIfResult` (the --json
    dict with its fields as attributes).

    scale: {"inter_node_bandwidth": 2} or ["inter_node_bandwidth=2"] (keys: docs/WHATIF.md).
    to: {"cluster.gpu": "B200"} or ["cluster.gpu=B200"]: any key set on the after side, as --to.
    Options: steps or tokens (a token budget: each side's steps from its batch), failure_rate, storage_GBps, price,
    replan (True: the after side runs plan #1 of ``plan`` for it), json.
    """
    jk = _job_kwargs(kw)
    opts = _options(kw, ("steps", "tokens", "failure_rate", "storage_GBps", "price", "replan", "json"), "whatif")
    opts["scale"] = _overrides(scale, "scale")
    opts["to"] = _overrides(to)
    d = _job(job, overrides=overrides, **jk)
    with _naming(d):
        return WhatIfResult(_native.whatif(d, opts))


def reliability(job=None, overrides=None, **kw):
    """``stepsim reliability``: end-to-end time with failures and checkpoints, a :class:`ReliabilityResult` (the
    --json dict with its fields as attributes). The job is
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
    d = _job(job, overrides=overrides, required=False, **jk)
    with _naming(d):
        return ReliabilityResult(_native.reliability(d, opts))


def plan(job=None, overrides=None, **kw):
    """``stepsim plan``: the ranked parallel plans of the job (best first) as a :class:`PlanResult` list of
    :class:`Plan`; the fields --json writes (baseline, gpus, enumerated, the rules' counts, ...) are its attributes
    and ``.json`` the whole document.

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
        d = _job(job, overrides=overrides, **jk)
        with _naming(d):
            return _csv_rows(_native.memory_map(d, opts))
    opts = _options(kw, ("gpus", "global_batch", "top", "simulate", "threads", "memory_margin", "tie_tolerance",
                         "objective", "steps", "tokens", "failure_rate", "storage_GBps", "init_time", "price",
                         "keep_layout", "fp8_recipes", "json", "framework", "fix", "allow", "exclude",
                         "max_tp_per_nvlink_domain"),
                    "plan")
    d = _job(job, overrides=overrides, **jk)
    with _naming(d):
        return PlanResult(_native.plan(d, opts))


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
                             + (" or a list of switch names" if name == "exclude" else ""), key=name,
                             rule="must be a mapping of key to value(s)"
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
    """``stepsim validate RUNS.csv...``: every published run simulated against its measured step time (the --json
    dict: rows, mape, mean_signed_error, by_source, all_sources, failed). ``runs`` is a path or a list of paths
    (validated as one set). Unlike the CLI, refused rows do not raise: they are in ``failed``.

    Options: only (row ids), jobs, json, markdown, jobs_dir; overrides apply to every row's job, as --set.
    """
    opts = _options(kw, ("only", "jobs", "json", "markdown", "jobs_dir"), "validate")
    if isinstance(opts.get("only"), str):
        opts["only"] = opts["only"].split(",")
    opts["runs"] = [os.fspath(runs)] if isinstance(runs, (str, os.PathLike)) else [os.fspath(p) for p in runs]
    opts["overrides"] = _overrides(overrides)
    with _naming({"runs": opts["runs"]}):
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
    with _naming({"log": opts["log"], "nsys": opts["nsys"]}):
        return _native.profile_nccl(opts)

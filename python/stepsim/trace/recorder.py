"""Records every torch.distributed communication call of one rank: op, group, bytes, dtype, order.

The same wrappers serve two modes: pass-through (a real multi-process run; the recorded call then runs
the real torch function) and fake (fake_dist.py: the call runs a local stand-in). Both bind the call's
arguments against the real torch signature, so a script records the same sequence in either mode.

`bytes` follows the nccl-tests message-size convention that the C++ side uses (Op::bytes): the buffer
for all_reduce/broadcast/reduce/send/recv, the whole gathered buffer for all_gather and gather, the whole
input for reduce_scatter, scatter and all_to_all.
"""
import contextlib
import functools
import inspect
import json
import pickle

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d


def _nbytes(t):
    return t.numel() * t.element_size()


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _objects_nbytes(objs):
    return sum(len(pickle.dumps(o)) for o in objs)


# op name -> f(args, group_size) -> (bytes, dtype, extra fields). `args` are bound by name.
_SPECS = {
    "all_reduce": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {}),
    "all_reduce_coalesced": lambda a, n: (sum(map(_nbytes, a["tensors"])), _dtype(a["tensors"][0]), {}),
    "broadcast": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {"root": a["src"]}),
    "reduce": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {"root": a["dst"]}),
    "all_gather": lambda a, n: (n * _nbytes(a["tensor"]), _dtype(a["tensor"]), {}),
    "all_gather_into_tensor": lambda a, n: (_nbytes(a["output_tensor"]), _dtype(a["input_tensor"]), {}),
    "_all_gather_base": lambda a, n: (_nbytes(a["output_tensor"]), _dtype(a["input_tensor"]), {}),
    "reduce_scatter": lambda a, n: (sum(map(_nbytes, a["input_list"])), _dtype(a["output"]), {}),
    "reduce_scatter_tensor": lambda a, n: (_nbytes(a["input"]), _dtype(a["input"]), {}),
    "_reduce_scatter_base": lambda a, n: (_nbytes(a["input"]), _dtype(a["input"]), {}),
    "all_to_all": lambda a, n: (sum(map(_nbytes, a["input_tensor_list"])), _dtype(a["input_tensor_list"][0]), {}),
    "all_to_all_single": lambda a, n: (_nbytes(a["input"]), _dtype(a["input"]), {}),
    "gather": lambda a, n: (n * _nbytes(a["tensor"]), _dtype(a["tensor"]), {"root": a["dst"]}),
    "scatter": lambda a, n: (n * _nbytes(a["tensor"]), _dtype(a["tensor"]), {"root": a["src"]}),
    "barrier": lambda a, n: (0, None, {}),
    "monitored_barrier": lambda a, n: (0, None, {}),
    "all_gather_object": lambda a, n: (n * _objects_nbytes([a["obj"]]), "object", {}),
    "broadcast_object_list": lambda a, n: (_objects_nbytes(a["object_list"]), "object", {"root": a["src"]}),
    "send": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {"peer": a["dst"]}),
    "isend": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {"peer": a["dst"]}),
    "recv": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {"peer": a["src"]}),
    "irecv": lambda a, n: (_nbytes(a["tensor"]), _dtype(a["tensor"]), {"peer": a["src"]}),
}
_ALWAYS_ASYNC = {"isend", "irecv"}
RECORDED_OPS = tuple(_SPECS) + ("batch_isend_irecv",)


def _is_non_member(group):
    # torch 1.13's marker is an object(), torch 2.x's an int (-100): compare by value too.
    marker = c10d.GroupMember.NON_GROUP_MEMBER
    return group is marker or (isinstance(marker, int) and isinstance(group, int) and group == marker)


class Recorder:
    """The ordered communication calls of one rank, and the ranks of every group it has seen."""

    def __init__(self, rank, world_size):
        self.rank = rank
        self.world_size = world_size
        self.records = []
        self._groups = {}  # id(handle) -> (handle, ranks); the handle is kept so its id stays unique
        self._depth = 0    # >0 while a recorded call runs: calls it makes internally are not recorded
        self._batches = 0

    def add_group(self, handle, ranks):
        self._groups[id(handle)] = (handle, list(ranks))

    def ranks_of(self, group):
        """Global ranks of `group` (None or WORLD: all ranks); None if this rank is not a member."""
        if group is None or group is c10d.GroupMember.WORLD:
            return list(range(self.world_size))
        if _is_non_member(group):
            return None
        known = self._groups.get(id(group))
        if known is not None:
            return known[1]
        return list(c10d.get_process_group_ranks(group))

    def record(self, op, ranks, nbytes, dtype, is_async, extra):
        rec = {"index": len(self.records), "op": op, "group_ranks": ranks, "bytes": int(nbytes),
               "dtype": dtype, "async": bool(is_async)}
        rec.update(extra)
        self.records.append(rec)
        return rec

    @contextlib.contextmanager
    def running(self, rec):
        """Marks the call in the profiler trace (stepsim.comm#INDEX) and mutes nested recording."""
        self._depth += 1
        try:
            with torch.profiler.record_function("stepsim.comm#%d" % rec["index"]):
                yield
        finally:
            self._depth -= 1

    def wrap(self, name, original, call):
        """A function with `original`'s signature that records the call, then returns call(args, kwargs, bound)."""
        sig = inspect.signature(original)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if self._depth:
                return call(args, kwargs, None)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            if name == "batch_isend_irecv":
                return self._batch(a["p2p_op_list"], lambda: call(args, kwargs, a))
            ranks = self.ranks_of(a.get("group"))
            if ranks is None or self.rank not in ranks:
                return call(args, kwargs, None)  # torch does nothing for a non-member
            nbytes, dtype, extra = _SPECS[name](a, len(ranks))
            for key, group_key in (("peer", "group_dst"), ("peer", "group_src"), ("root", "group_dst"),
                                   ("root", "group_src")):
                if key in extra and extra[key] is None and a.get(group_key) is not None:
                    extra[key] = ranks[a[group_key]]  # torch >= 2.6 may name the peer by group rank
            is_async = name in _ALWAYS_ASYNC or bool(a.get("async_op", False))
            rec = self.record(name, ranks, nbytes, dtype, is_async, extra)
            with self.running(rec):
                return call(args, kwargs, a)

        return wrapper

    def _batch(self, ops, run):
        batch = self._batches
        self._batches += 1
        first = None
        for p in ops:
            kind = "isend" if getattr(p.op, "__name__", "") == "isend" else "irecv"
            ranks = self.ranks_of(p.group)
            rec = self.record(kind, ranks, _nbytes(p.tensor), _dtype(p.tensor), True,
                              {"peer": p.peer, "batch": batch})
            first = first or rec
        if first is None:
            return run()
        with self.running(first):
            return run()

    def wrap_new_group(self, original, make):
        """new_group that remembers the sorted global ranks of the handle `make` returns."""
        sig = inspect.signature(original)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            ranks = bound.arguments.get("ranks")
            ranks = sorted(ranks) if ranks else list(range(self.world_size))
            handle = make(args, kwargs, ranks)
            if not _is_non_member(handle):
                self.add_group(handle, ranks)
            return handle

        return wrapper

    def comm_json(self):
        return [dict(r) for r in self.records]

    def write(self, path):
        with open(path, "w") as f:
            json.dump(self.comm_json(), f, indent=1)
            f.write("\n")


class Patcher:
    """Replaces attributes of torch.distributed (and its c10d module) and restores them."""

    def __init__(self):
        self._saved = []

    def set(self, name, value):
        for mod in (c10d, dist):
            if hasattr(mod, name) or mod is c10d:
                self._saved.append((mod, name, getattr(mod, name, None), hasattr(mod, name)))
                setattr(mod, name, value)

    def restore(self):
        for mod, name, old, existed in reversed(self._saved):
            if existed:
                setattr(mod, name, old)
            else:
                delattr(mod, name)
        self._saved = []


def install_passthrough(recorder):
    """Records every communication call of a real run; the real torch function then runs unchanged."""
    patcher = Patcher()
    for name in RECORDED_OPS:
        original = getattr(c10d, name, None)
        if original is None:
            continue
        patcher.set(name, recorder.wrap(name, original, lambda args, kwargs, a, f=original: f(*args, **kwargs)))
    new_group = c10d.new_group
    patcher.set("new_group", recorder.wrap_new_group(new_group, lambda args, kwargs, ranks: new_group(*args, **kwargs)))
    return patcher

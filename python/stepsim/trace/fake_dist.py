"""Patches torch.distributed so that simulated rank `rank` of `world_size` runs alone in this process.

Initialisation records the simulated rank and world size; groups are plain handles holding their global
ranks; every communication call is recorded (recorder.py) and then completes at once on local data:
outputs get the right shape and dtype, and their values are what a one-rank job would compute (all_gather
fills every slot with the local input, reduce_scatter keeps the local shard, recv and irecv fill zeros).
Values therefore differ from a real run's; a traced script must not branch on received data in a way that
changes which calls it makes (control flow of training scripts normally does not).
"""
import torch
import torch.distributed.distributed_c10d as c10d

from .recorder import RECORDED_OPS, Patcher


class FakeGroup:
    """A process group of the simulated job: its sorted global ranks and this rank's place in it."""

    def __init__(self, ranks, my_rank):
        self.ranks = list(ranks)
        self._me = my_rank

    def size(self):
        return len(self.ranks)

    def rank(self):
        return self.ranks.index(self._me) if self._me in self.ranks else -1

    def __repr__(self):
        return "FakeGroup(%s)" % self.ranks


class FakeWork:
    """A work handle that is already complete."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def exception(self):
        return None

    def result(self):
        return []

    def get_future(self):
        fut = torch.futures.Future()
        fut.set_result(None)
        return fut


def _copy_or_zero(dst, src):
    if dst.shape == src.shape:
        dst.copy_(src)
    else:
        dst.zero_()


# Local stand-ins, each given the call's arguments bound by name, the group's size and this rank's index.
def _all_gather(a, n, i):
    for t in a["tensor_list"]:
        t.copy_(a["tensor"])


def _all_gather_into_tensor(a, n, i):
    out = a["output_tensor"]
    out.copy_(a["input_tensor"].reshape(-1).repeat(n).view(out.shape))


def _reduce_scatter(a, n, i):
    a["output"].copy_(a["input_list"][i])


def _reduce_scatter_tensor(a, n, i):
    out = a["output"]
    out.copy_(a["input"].reshape(n, -1)[i].view(out.shape))


def _all_to_all(a, n, i):
    for dst, src in zip(a["output_tensor_list"], a["input_tensor_list"]):
        _copy_or_zero(dst, src)


def _all_to_all_single(a, n, i):
    _copy_or_zero(a["output"], a["input"])


def _gather(a, n, i):
    for t in a.get("gather_list") or []:
        t.copy_(a["tensor"])


def _scatter(a, n, i):
    if a.get("scatter_list"):
        a["tensor"].copy_(a["scatter_list"][i])


def _recv(a, n, i):
    a["tensor"].zero_()


def _all_gather_object(a, n, i):
    a["object_list"][:] = [a["obj"]] * len(a["object_list"])


_FAKES = {
    "all_gather": _all_gather,
    "all_gather_into_tensor": _all_gather_into_tensor,
    "_all_gather_base": _all_gather_into_tensor,
    "reduce_scatter": _reduce_scatter,
    "reduce_scatter_tensor": _reduce_scatter_tensor,
    "_reduce_scatter_base": _reduce_scatter_tensor,
    "all_to_all": _all_to_all,
    "all_to_all_single": _all_to_all_single,
    "gather": _gather,
    "scatter": _scatter,
    "recv": _recv,
    "irecv": _recv,
    "all_gather_object": _all_gather_object,
}  # all_reduce, broadcast, reduce, send, isend, barrier, ...: the local data already is the result
_RETURNS_WORK = {"isend", "irecv"}


class FakeWorld:
    """The simulated job as seen from one rank; install() patches torch.distributed to use it."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.rank = recorder.rank
        self.world_size = recorder.world_size
        self.backend = None
        self.initialized = False

    def _group_ranks(self, group):
        return self.recorder.ranks_of(group) or []

    def _call(self, name):
        fake = _FAKES.get(name)

        def call(args, kwargs, a):
            if a is None:  # not a member of the group: like torch, do nothing
                return None
            ranks = self._group_ranks(a.get("group"))
            if fake is not None:
                fake(a, len(ranks), ranks.index(self.rank))
            if name in _RETURNS_WORK or a.get("async_op"):
                return FakeWork()
            if name == "recv":
                return a["src"] if a["src"] is not None else -1
            return None

        return call

    def _batch_call(self, args, kwargs, a):
        for p in a["p2p_op_list"]:
            if getattr(p.op, "__name__", "") == "irecv":
                p.tensor.zero_()
        return [FakeWork() for _ in a["p2p_op_list"]]

    # torch.distributed's process-group API, answered for the simulated rank.
    def init_process_group(self, backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                           store=None, group_name="", pg_options=None):
        if world_size not in (-1, None) and world_size != self.world_size:
            raise RuntimeError("stepsim.trace: script asks for world size %d, tracer simulates %d"
                               % (world_size, self.world_size))
        self.backend = str(backend or "gloo").lower()
        self.initialized = True

    def destroy_process_group(self, group=None):
        if group is None:
            self.initialized = False

    def is_initialized(self):
        return self.initialized

    def get_backend(self, group=None):
        return self.backend

    def get_rank(self, group=None):
        ranks = self._group_ranks(group)
        return ranks.index(self.rank) if self.rank in ranks else -1

    def get_world_size(self, group=None):
        ranks = self._group_ranks(group)
        return len(ranks) if self.rank in ranks else -1

    def get_process_group_ranks(self, group):
        return list(self._group_ranks(group))

    def get_global_rank(self, group, group_rank):
        return self._group_ranks(group)[group_rank]

    def get_group_rank(self, group, global_rank):
        return self._group_ranks(group).index(global_rank)

    def install(self):
        """Patches torch.distributed; returns the Patcher whose restore() undoes it."""
        p = Patcher()
        rec = self.recorder
        for name in ("init_process_group", "destroy_process_group", "is_initialized", "get_backend",
                     "get_rank", "get_world_size", "get_process_group_ranks", "get_global_rank",
                     "get_group_rank"):
            p.set(name, getattr(self, name))
        p.set("is_available", lambda: True)
        p.set("new_group", rec.wrap_new_group(c10d.new_group,
                                              lambda args, kwargs, ranks: FakeGroup(ranks, self.rank)))
        for name in RECORDED_OPS:
            original = getattr(c10d, name, None)
            if original is None:
                continue
            call = self._batch_call if name == "batch_isend_irecv" else self._call(name)
            p.set(name, rec.wrap(name, original, call))
        return p


def install(recorder):
    """Makes this process simulated rank recorder.rank of recorder.world_size; returns the Patcher."""
    return FakeWorld(recorder).install()


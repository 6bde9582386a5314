"""Profiles one rank's run (one training step) with torch.profiler and turns it into workload JSON.

Ops come from torch.profiler's function events (CPU ops with their kernels and memory); the execution
trace (operator graph with tensor ids) comes from ExecutionTraceObserver (torch >= 2.0) or its 1.13
name ExecutionGraphObserver, when the installed torch has either.
"""
import contextlib
import os
import time

import torch
import torch.profiler as tp

_COMM_MARK = "stepsim.comm#"


def _et_observer_class():
    return getattr(tp, "ExecutionTraceObserver", None) or getattr(tp, "ExecutionGraphObserver", None)


class StepProfile:
    """Profiles what runs inside `with StepProfile(et_path).running():`; then call to_json()."""

    def __init__(self, et_path=None, device="cpu"):
        self.et_path = et_path
        self.device = device
        self.prof = None
        self.wall_s = 0.0
        self.et_written = False

    @contextlib.contextmanager
    def running(self):
        activities = [tp.ProfilerActivity.CPU]
        if self.device.startswith("cuda"):
            activities.append(tp.ProfilerActivity.CUDA)
            torch.cuda.reset_peak_memory_stats()
        et = None
        cls = _et_observer_class()
        if self.et_path and cls is not None:
            et = cls()
            et.register_callback(self.et_path)
        self.prof = tp.profile(activities=activities, record_shapes=True, profile_memory=True)
        t0 = time.perf_counter()
        with self.prof:
            if et is not None:
                et.start()
            try:
                yield
            finally:
                if et is not None:
                    et.stop()
                    et.unregister_callback()
                    self.et_written = os.path.exists(self.et_path)
                if self.device.startswith("cuda"):
                    torch.cuda.synchronize()
        self.wall_s = time.perf_counter() - t0

    def to_json(self):
        events = [e for e in self.prof.events() if e.name != "[memory]"]
        t0 = min((e.time_range.start for e in events), default=0)
        ops = []
        for e in sorted(events, key=lambda e: (e.time_range.start, e.id)):
            parent = e.cpu_parent.id if e.cpu_parent is not None else None
            op = {"id": e.id, "name": e.name, "parent": parent, "thread": e.thread,
                  "start_us": round(e.time_range.start - t0, 3), "dur_us": round(e.time_range.elapsed_us(), 3),
                  "self_cpu_us": round(e.self_cpu_time_total, 3), "sequence_nr": e.sequence_nr,
                  "input_shapes": e.input_shapes or [], "cpu_memory_bytes": e.cpu_memory_usage,
                  "device_memory_bytes": e.cuda_memory_usage,
                  "kernels": [{"name": k.name, "device": k.device, "dur_us": k.duration} for k in e.kernels]}
            if e.name.startswith(_COMM_MARK):
                op["comm_index"] = int(e.name[len(_COMM_MARK):])
            ops.append(op)
        return {"ops": ops, "memory": self._memory(ops), "wall_time_s": round(self.wall_s, 6)}

    def _memory(self, ops):
        # Net bytes allocated by top-level ops, in order: the running sum's peak approximates the step's
        # peak of memory allocated inside the profiled region (excludes what existed before it).
        running = peak = 0
        for op in ops:
            if op["parent"] is None:
                running += op["device_memory_bytes" if self.device.startswith("cuda") else "cpu_memory_bytes"]
                peak = max(peak, running)
        mem = {"device": self.device, "peak_in_step_bytes": peak}
        if self.device.startswith("cuda"):
            mem["max_allocated_bytes"] = torch.cuda.max_memory_allocated()
            mem["max_reserved_bytes"] = torch.cuda.max_memory_reserved()
        return mem

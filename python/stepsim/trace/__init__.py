"""Ex-situ workload tracer: runs an N-rank torch.distributed script as N single-device runs.

`python3 -m stepsim.trace --world-size N --out DIR -- SCRIPT [ARGS...]`; format in docs/TRACER.md.
"""
from .recorder import Recorder

__all__ = ["Recorder"]

"""stepsim's Python side.

- The library as functions (docs/PYTHON.md): stepsim.simulate, memory, comm, plan, whatif, reliability, validate,
  profile_nccl; bad input raises stepsim.InputError. They need the compiled extension, which the CMake build puts
  with this package in BUILD/python (PYTHONPATH=build/python /usr/bin/python3 -c 'import stepsim').
- The ex-situ workload tracer for PyTorch (stepsim.trace, docs/TRACER.md), which needs no build.
"""
import os as _os

from .errors import InputError

# An installed package (pip install .) carries stepsim's data folder; a build's python/ folder uses the source tree's.
_data = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "data")
if not _os.environ.get("STEPSIM_DATA_DIR") and _os.path.isfile(_os.path.join(_data, "gpus.yaml")):
    _os.environ["STEPSIM_DATA_DIR"] = _data

_API = ("simulate", "memory", "comm", "plan", "whatif", "reliability", "validate", "profile_nccl")

try:
    from . import _stepsim_native  # noqa: F401  (the compiled extension: only in BUILD/python)
except ImportError as _e:  # the source tree without the build: the tracer still works
    import os as _os

    available = False
    _here = _os.path.dirname(_os.path.abspath(__file__))
    _why = str(_e) if any(f.startswith("_stepsim_native") for f in _os.listdir(_here)) else "not in " + _here

    def _missing(name):
        def f(*args, **kwargs):
            raise ImportError("stepsim.%s needs the compiled extension stepsim._stepsim_native (%s): build with CMake "
                              "and put BUILD/python first on PYTHONPATH (docs/PYTHON.md)" % (name, _why))
        f.__name__ = name
        return f

    for _name in _API:
        globals()[_name] = _missing(_name)
else:
    from .api import *  # noqa: F401,F403
    from .api import (SimulationResult, Rows, Record, Plan, PlanResult, WhatIfResult,  # noqa: F401
                      ReliabilityResult)
    available = True

"""stepsim's Python side: the ex-situ workload tracer for PyTorch (stepsim.trace, docs/TRACER.md)."""

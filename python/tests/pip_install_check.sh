#!/usr/bin/env bash
# `pip install .` as docs/PYTHON.md gives it, into a fresh venv, offline, with the extension `make build` made
# (STEPSIM_PREBUILT_EXTENSION: the backend's CMake build of it is the one the project's build runs), then a wheel.
# Usage: pip_install_check.sh SOURCE_DIR EXTENSION_SO WORK_DIR
set -euo pipefail
src="$1" ext="$2" work="$3"
export STEPSIM_SOURCE="$src"
rm -rf "$work" && mkdir -p "$work/wheels" "$work/elsewhere"
/usr/bin/python3 -m venv "$work/v"
export STEPSIM_PREBUILT_EXTENSION="$ext"
unset STEPSIM_DATA_DIR PYTHONPATH
"$work/v/bin/pip" install --no-index --no-build-isolation --quiet "$src"
cd "$work/elsewhere"  # not the source tree: the installed package and its own data
"$work/v/bin/python" - <<'PY'
import os
import stepsim
r = stepsim.simulate(os.path.join(os.environ["STEPSIM_SOURCE"], "examples", "llama2-7b-8.yaml"))
assert 0 < r.mfu < 1, r.mfu
assert r.fits
assert os.environ["STEPSIM_DATA_DIR"].endswith(os.path.join("site-packages", "stepsim", "data")), os.environ["STEPSIM_DATA_DIR"]
print("installed: step %.3f s, MFU %.3f" % (r.step_time_s, r.mfu))
PY
"$work/v/bin/pip" wheel --no-index --no-build-isolation --quiet -w "$work/wheels" "$src"
whl=$(ls "$work/wheels"/stepsim-*.whl)
"$work/v/bin/python" - "$whl" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for want in ("stepsim/__init__.py", "stepsim/trace/__init__.py", "stepsim/data/gpus.yaml", "stepsim/data/efficiency.yaml"):
    assert want in names, want
assert any(n.startswith("stepsim/_stepsim_native") and n.endswith(".so") for n in names)
assert any(n.endswith(".dist-info/RECORD") for n in names)
print("wheel:", sys.argv[1].rsplit("/", 1)[-1], len(names), "files")
PY

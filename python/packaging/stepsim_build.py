"""stepsim's PEP 517 build backend (pyproject.toml): `pip install .` and `python3 -m build` without any package
from an index. It needs nothing but the standard library, so pip's isolated build environment needs nothing
installed and `--no-build-isolation` works in any venv (setuptools and wheel are not used).

The wheel holds the Python package (python/stepsim), the compiled extension for the interpreter that runs the build
(the CMake target _stepsim_native, built with STEPSIM_PYTHON_EXECUTABLE = that interpreter) and stepsim's data
folder as stepsim/data, which the package points STEPSIM_DATA_DIR at when the variable is unset.

Environment:
  STEPSIM_PIP_BUILD_DIR      CMake build folder (default: build-pip/<python tag> in the source tree; kept, so that a
                             second install rebuilds only what changed)
  STEPSIM_PREBUILT_EXTENSION an already built _stepsim_native*.so for this interpreter: packaged as is, no CMake
                             (the tests use the one `make build` made)
  STEPSIM_BUILD_JOBS         parallel compile jobs (default: the CPU count)
docs/PYTHON.md, "Installing with pip".
"""
import base64
import glob
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NAME = "stepsim"
# Fixed timestamps: the same sources give the same archive bytes.
_EPOCH = (2020, 1, 1, 0, 0, 0)


def _version():
    with open(os.path.join(_ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(stepsim VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("stepsim_build: no 'project(stepsim VERSION x.y.z' in CMakeLists.txt")
    return m.group(1)


def _python_tag():
    return "cp%d%d" % sys.version_info[:2]


def _wheel_tag():
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (_python_tag(), _python_tag(), platform)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Step time, memory, parallel plans and run time of LLM training jobs, simulated\n"
            "Requires-Python: >=3.9\nProvides-Extra: pandas\nRequires-Dist: pandas; extra == \"pandas\"\n"
            % (_NAME, _version()))


def _extension():
    """The path of the built extension module for this interpreter."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    prebuilt = os.environ.get("STEPSIM_PREBUILT_EXTENSION")
    if prebuilt:
        if not os.path.basename(prebuilt).endswith(suffix):
            raise RuntimeError("stepsim_build: STEPSIM_PREBUILT_EXTENSION %s is not built for this interpreter "
                               "(%s, extension suffix %s)" % (prebuilt, sys.executable, suffix))
        return prebuilt
    build = os.environ.get("STEPSIM_PIP_BUILD_DIR") or os.path.join(_ROOT, "build-pip", _python_tag())
    jobs = os.environ.get("STEPSIM_BUILD_JOBS") or str(os.cpu_count() or 1)
    subprocess.check_call(["cmake", "-S", _ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DSTEPSIM_BENCH=OFF",
                           "-DSTEPSIM_PYTHON_EXECUTABLE=" + sys.executable], stdout=sys.stderr)
    subprocess.check_call(["cmake", "--build", build, "--target", "_stepsim_native", "-j", jobs], stdout=sys.stderr)
    found = glob.glob(os.path.join(build, "python", "stepsim", "_stepsim_native*" + suffix))
    if len(found) != 1:
        raise RuntimeError("stepsim_build: the build left no _stepsim_native%s in %s/python/stepsim (is pybind11-dev "
                           "installed? `make deps`)" % (suffix, build))
    return found[0]


def _package_files(extension):
    """(path in the wheel, file on disk) for every file the package installs."""
    out = []
    pkg = os.path.join(_ROOT, "python", "stepsim")
    for base, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".so")):
                continue
            path = os.path.join(base, f)
            out.append(("stepsim/" + os.path.relpath(path, pkg).replace(os.sep, "/"), path))
    out.append(("stepsim/" + os.path.basename(extension), extension))
    data = os.path.join(_ROOT, "data")
    for base, dirs, files in os.walk(data):
        dirs[:] = sorted(dirs)
        for f in sorted(files):
            path = os.path.join(base, f)
            out.append(("stepsim/data/" + os.path.relpath(path, data).replace(os.sep, "/"), path))
    return out


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write(zf, arcname, data, mode=0o644):
    info = zipfile.ZipInfo(arcname, date_time=_EPOCH)
    info.external_attr = (mode & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The wheel's .dist-info without building it: pip asks for it first."""
    dist_info = "%s-%s.dist-info" % (_NAME, _version())
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for f, text in (("METADATA", _metadata()), ("WHEEL", _wheel_text()), ("top_level.txt", "stepsim\n")):
        with open(os.path.join(metadata_directory, dist_info, f), "w", encoding="utf-8") as out:
            out.write(text)
    return dist_info


def _wheel_text():
    return "Wheel-Version: 1.0\nGenerator: stepsim_build\nRoot-Is-Purelib: false\nTag: %s\n" % _wheel_tag()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    extension = _extension()
    dist_info = "%s-%s.dist-info" % (_NAME, _version())
    name = "%s-%s-%s.whl" % (_NAME, _version(), _wheel_tag())
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for arcname, path in _package_files(extension):
            with open(path, "rb") as f:
                data = f.read()
            _write(zf, arcname, data, 0o755 if path == extension else 0o644)
            record.append(_record_line(arcname, data))
        meta = {
            "METADATA": _metadata(),
            "WHEEL": _wheel_text(),
            "top_level.txt": "stepsim\n",
        }
        for f, text in meta.items():
            data = text.encode()
            _write(zf, dist_info + "/" + f, data)
            record.append(_record_line(dist_info + "/" + f, data))
        record.append(dist_info + "/RECORD,,")
        _write(zf, dist_info + "/RECORD", ("\n".join(record) + "\n").encode())
    return name


def _source_files():
    """The files of the source tree an sdist carries: git's list where there is one, else every file outside the
    build folders."""
    try:
        listed = subprocess.check_output(["git", "-C", _ROOT, "ls-files", "-z"], stderr=subprocess.DEVNULL)
        return sorted(p for p in listed.decode().split("\0") if p and os.path.isfile(os.path.join(_ROOT, p)))
    except (OSError, subprocess.CalledProcessError):
        out = []
        for base, dirs, files in os.walk(_ROOT):
            dirs[:] = sorted(d for d in dirs if not d.startswith(("build", ".")) and d != "node_modules")
            out += [os.path.relpath(os.path.join(base, f), _ROOT) for f in sorted(files)]
        return out


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (_NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for rel in _source_files() + ["PKG-INFO"]:
            if rel == "PKG-INFO":
                data = _metadata().encode()
            else:
                with open(os.path.join(_ROOT, rel), "rb") as f:
                    data = f.read()
            info = tarfile.TarInfo(base + "/" + rel)
            info.size = len(data)
            info.mtime = 1577836800
            info.mode = 0o755 if rel != "PKG-INFO" and os.access(os.path.join(_ROOT, rel), os.X_OK) else 0o644
            tf.addfile(info, io.BytesIO(data))
    return name

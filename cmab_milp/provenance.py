"""What produced a number: the library's and its solvers' versions, and the machine (CPU, BLAS kernel).

Results folders record :func:`provenance` with every run (``runs/<policy>/seed_<k>.json``,
key ``"provenance"``) and in ``manifest.json``; ``cmab-milp verify`` and ``cmab-milp run
--resume`` compare it with this machine's before any work (:func:`software_differences`).

Two parts, read differently:

* ``software``: the versions the library promises its numbers for (``cmab_milp``, Python,
  numpy, scipy, networkx and every solver package installed: highspy, pulp, pyscipopt,
  gurobipy, ortools). The same seed gives the same numbers for the same software, on any
  machine; a difference here is worth a line before a check or a resumed run.
* ``machine``: the CPU, its core count, the BLAS libraries loaded (through threadpoolctl:
  OpenBLAS's kernel, e.g. ``SkylakeX``, and its threads), numpy's CPU features in use, and
  the environment variables that change them. Recorded for the reader of a results folder;
  the numbers do not depend on it.

Nothing here imports a solver: versions are read from the installed packages' metadata.

Example
-------
>>> record = provenance()
>>> sorted(record)
['machine', 'software']
>>> record["software"]["cmab_milp"] == __import__("cmab_milp").__version__
True
>>> old = {"software": {**record["software"], "numpy": "1.26.0"}}
>>> software_differences(old, record) == [f"numpy 1.26.0 -> {record['software']['numpy']}"]
True
>>> software_differences(None, record)
[]
"""

from __future__ import annotations

import copy
import functools
import os
import platform
from importlib import metadata
from typing import Any

__all__ = ["SOFTWARE", "describe", "provenance", "software_differences"]

#: Packages whose versions are recorded (when installed), besides ``cmab_milp`` and Python.
SOFTWARE: tuple[str, ...] = ("numpy", "scipy", "networkx", "highspy", "pulp", "pyscipopt", "gurobipy", "ortools")
#: Environment variables that choose a BLAS kernel, numpy's CPU paths or thread counts.
_ENVIRONMENT = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
)


def provenance() -> dict[str, Any]:
    """``{"software": {...}, "machine": {...}}`` for this process (a fresh copy; computed once per process)."""
    return copy.deepcopy(_provenance())


@functools.cache
def _provenance() -> dict[str, Any]:
    return {"software": _software(), "machine": _machine()}


def _software() -> dict[str, str]:
    import cmab_milp

    out = {"cmab_milp": cmab_milp.__version__, "python": platform.python_version()}
    for package in SOFTWARE:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> list[dict[str, Any]]:
    """The BLAS / OpenMP libraries loaded in this process, as threadpoolctl sees them (empty without it)."""
    import numpy  # noqa: F401  (loads numpy's BLAS, so that threadpoolctl finds it)

    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a declared dependency
        return []
    keep = ("user_api", "internal_api", "version", "architecture", "num_threads", "threading_layer", "prefix")
    found = [{k: entry[k] for k in keep if entry.get(k) is not None} for entry in threadpool_info()]
    return sorted(found, key=lambda e: tuple(str(e.get(k, "")) for k in keep))  # not the order they were loaded


def _numpy_features() -> list[str]:
    """numpy's dispatched CPU features in use here (e.g. ``AVX512_ICL``); empty if numpy does not say."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        except ImportError:
            return []
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def _machine() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "blas": _blas(),
        "numpy_cpu_features": _numpy_features(),
        "environment": {name: os.environ[name] for name in _ENVIRONMENT if name in os.environ},
    }


def software_differences(recorded: Any, current: dict[str, Any]) -> list[str]:
    """``"PACKAGE old -> new"`` for each recorded software version that differs here (``[]`` if not recorded).

    A package recorded but not installed here reads ``"pyscipopt 6.3.0 -> not installed"``; one
    installed here but not recorded (an older folder recorded fewer) is not a difference.
    """
    if not isinstance(recorded, dict) or not isinstance(recorded.get("software"), dict):
        return []
    here = current["software"]
    out = []
    for name, version in recorded["software"].items():
        now = here.get(name, "not installed")
        if str(version) != now:
            out.append(f"{name} {version} -> {now}")
    return out


def describe(record: Any) -> str:
    """One line: the library, numpy, the solvers, the CPU and its BLAS kernel (``"not recorded"`` if absent).

    >>> describe({"software": {"cmab_milp": "0.1.0", "numpy": "2.4.6", "highspy": "1.16.0"},
    ...           "machine": {"cpu": "AMD EPYC", "cores": 2,
    ...                       "blas": [{"internal_api": "openblas", "version": "0.3.31", "architecture": "SkylakeX"}]}})
    'cmab_milp 0.1.0, numpy 2.4.6, highspy 1.16.0; AMD EPYC, 2 cores, openblas 0.3.31 SkylakeX'
    >>> describe(None)
    'not recorded'
    """
    if not isinstance(record, dict) or not isinstance(record.get("software"), dict):
        return "not recorded"
    software = ", ".join(f"{k} {v}" for k, v in record["software"].items() if k != "python")
    if isinstance(record.get("from"), str):  # an older folder: the versions its summary recorded, no machine
        software += f" (as {record['from']} records)"
    machine = record.get("machine")
    if not isinstance(machine, dict):
        return software
    parts = [str(machine.get("cpu", "?"))]
    if machine.get("cores"):
        parts.append(f"{machine['cores']} cores")
    for blas in machine.get("blas") or ():
        if isinstance(blas, dict) and blas.get("user_api", "blas") == "blas":
            parts.append(" ".join(str(blas[k]) for k in ("internal_api", "version", "architecture") if k in blas))
    return f"{software}; {', '.join(parts)}"

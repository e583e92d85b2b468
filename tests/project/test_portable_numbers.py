"""Same seed, same bits under every BLAS kernel, numpy CPU dispatch and thread count (issue 36).

Each configuration runs ``portable_fingerprints.py`` in its own child process with a controlled
environment (any inherited ``OPENBLAS_CORETYPE``, ``NPY_DISABLE_CPU_FEATURES`` or thread setting
removed, then the configuration's own set), and every child's fingerprints must equal the
first's. The default run checks three configurations far apart (the CPU's own kernel, ``Haswell``
with numpy's AVX-512 paths off, ``Prescott`` with 2 BLAS threads); the full matrix (every kernel
the CPU can run x AVX-512 on/off x 1/2 threads, and the longer fingerprint) is marked slow.

The bit-for-bit schedules (``tests/policies/test_schedules.py``) are also run under each kernel
(slow).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPT = HERE / "portable_fingerprints.py"
CONTROLLED = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
#: numpy 2.x's names for its AVX-512 dispatch targets on x86 (``numpy.show_runtime()``).
NO_AVX512 = "X86_V4 AVX512_SKX AVX512_ICL AVX512_SPR"


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def kernels() -> list[str | None]:
    """OpenBLAS kernels this CPU can run (``None``: OpenBLAS's own choice)."""
    flags = cpu_flags()
    found: list[str | None] = [None]
    if "avx512f" in flags:
        found.append("SkylakeX")
    if {"avx2", "fma"} <= flags:
        found += ["Haswell", "Zen"]
    found.append("Prescott")
    return found


def child_env(kernel: str | None, avx512: bool, threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    if kernel is not None:
        env["OPENBLAS_CORETYPE"] = kernel
    if not avx512:
        env["NPY_DISABLE_CPU_FEATURES"] = numpy_avx512_features()
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@functools.cache
def numpy_avx512_features() -> str:
    """The AVX-512 targets numpy found on this CPU (``numpy.show_runtime()`` spells them); '' if none."""
    import numpy as np

    found = np._core._multiarray_umath.__cpu_features__  # name -> bool, every target numpy knows
    return " ".join(n for n in NO_AVX512.split() if found.get(n))


#: How OpenBLAS 0.3.x reports a forced kernel (Zen runs the Haswell kernels; Prescott reports Katmai).
REPORTED_AS = {"Zen": {"Zen", "Haswell"}, "Prescott": {"Prescott", "Katmai"}}
PROBE = (
    "import json, numpy, threadpoolctl; "
    "print(json.dumps([[i.get('architecture') for i in threadpoolctl.threadpool_info()], "
    "numpy._core._multiarray_umath.__cpu_features__]))"
)


def run_child(kernel: str | None, avx512: bool, threads: int, level: str) -> dict[str, str]:
    env = child_env(kernel, avx512, threads)
    seen = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    kernels_seen, features = json.loads(seen.stdout)
    if kernel is not None:  # the variables took effect: OpenBLAS reports the kernel asked for ...
        named = REPORTED_AS.get(kernel, {kernel})
        assert named & set(kernels_seen), f"OPENBLAS_CORETYPE={kernel} not applied: {kernels_seen}"
    if not avx512:  # ... and numpy no longer dispatches to its AVX-512 targets
        assert not any(features.get(n) for n in NO_AVX512.split()), f"AVX-512 paths still on: {features}"
    out = subprocess.run(
        [sys.executable, str(SCRIPT), level], env=env, capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def compare(configs: list[tuple[str | None, bool, int]], level: str) -> None:
    results = {cfg: run_child(*cfg, level) for cfg in configs}
    first_cfg, first = next(iter(results.items()))
    for cfg, got in results.items():
        differ = sorted(k for k in first if got.get(k) != first[k])
        assert not differ, f"{cfg} differs from {first_cfg} on {differ}"


QUICK = [(None, True, 1), ("Haswell", False, 1), ("Prescott", True, 2)]


def test_fingerprints_agree_on_three_far_apart_configurations():
    compare(QUICK, "quick")


@pytest.mark.slow
def test_fingerprints_agree_on_every_kernel_avx512_and_thread_count():
    configs = [(k, avx, th) for k in kernels() for avx in (True, False) for th in (1, 2)]
    compare(configs, "full")


@pytest.mark.slow
@pytest.mark.parametrize("kernel", kernels(), ids=lambda k: k or "autodetected")
def test_the_bit_for_bit_schedules_pass_under_each_kernel(kernel):
    env = child_env(kernel, True, 2)
    test = str(ROOT / "tests" / "policies" / "test_schedules.py")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", test],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1800,
    )
    assert out.returncode == 0, out.stdout[-3000:]


def test_a_child_sees_only_the_configuration_it_is_given(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")  # what CI may inherit
    env = child_env(None, True, 1)
    assert "OPENBLAS_CORETYPE" not in env and env["OPENBLAS_NUM_THREADS"] == "1"
    assert child_env("Zen", False, 2)["OPENBLAS_CORETYPE"] == "Zen"

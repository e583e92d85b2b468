"""One BLAS thread for the oracles' small dense algebra (``threadpoolctl``).

The norm queries run thousands of eigen-decompositions and products of ~100 x 100 matrices.
OpenBLAS splits each over its threads; on a busy machine (or beside HiGHS's own threads) every
call then waits for a core: measured on the 2-core machine under load, ``eigh`` of a 120 x 120
matrix took 223 ms with two BLAS threads and 0.9 ms with one, and one crew norm query 2.7 s
against 0.16 s. One thread is also what makes the rounding, hence the search, the same on every
machine whatever its core count.

>>> import numpy as np
>>> with blas_single_thread():
...     float(np.linalg.eigvalsh(np.eye(2))[0])
1.0
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["blas_single_thread"]

_lock = threading.Lock()
_controller = None


def _get_controller():
    """A ``ThreadpoolController`` of the BLAS libraries loaded now (made once); ``None`` without threadpoolctl."""
    global _controller
    with _lock:
        if _controller is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # pragma: no cover - a dependency; a bare install may lack it
                _controller = False
            else:
                import scipy.linalg  # noqa: F401  (load scipy's BLAS too, so the controller sees it)

                _controller = ThreadpoolController()
        return _controller or None


@contextlib.contextmanager
def blas_single_thread() -> Iterator[None]:
    """Run the block with the BLAS libraries on one thread (restored after; nested calls are cheap)."""
    controller = _get_controller()
    if controller is None:  # pragma: no cover
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield

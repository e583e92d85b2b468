"""One BLAS thread for the oracles' small dense algebra (``threadpoolctl``).

The norm queries run thousands of eigen-decompositions and products of ~100 x 100 matrices.
OpenBLAS splits each over its threads; on a busy machine (or beside HiGHS's own threads) every
call then waits for a core, and a small decomposition costs many times its single-thread time
(the figures: ``docs/performance.md``, "Oracle core and backends"). One thread is also what makes
the rounding, hence the search, the same on every machine whatever its core count (same answer,
and the same number of nodes explored).

OpenBLAS applies the setting only when made from the thread that started it (a limit set in a
worker thread leaves two threads): so :meth:`~cmab_milp.oracles.core.base.Oracle.argmax_batch` opens the
block in the calling thread around its workers, and a block opened inside another is free.

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
_depth = 0  # blocks open now, over all threads
_restore = None  # what the first of them restores when the last one closes


def _get_controller():
    """A ``ThreadpoolController`` of the BLAS libraries loaded now (made once); ``None`` without threadpoolctl."""
    global _controller
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
    """Run the block with the BLAS libraries on one thread, restored when the last open block closes.

    Counted over threads (``argmax_batch`` answers queries in several at once): one thread's block
    ending never gives BLAS its threads back while another's runs, so every query's algebra, hence
    its rounding, is the same whatever the timing.
    """
    global _depth, _restore
    with _lock:
        controller = _get_controller()
        if controller is not None:
            if _depth == 0:
                _restore = controller.limit(limits=1, user_api="blas")
            _depth += 1
    try:
        yield
    finally:
        if controller is not None:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    _restore.restore_original_limits()
                    _restore = None

"""One ``highspy.Highs`` factory for every layer: HiGHS prints a banner when a process makes its first one.

Below every layer (as :mod:`cmab_milp._interrupts`), so that the spaces' own MILP (:mod:`cmab_milp.spaces.solve`)
and the oracles' models (:mod:`cmab_milp.oracles.backends.highs_solve`) share it: whichever makes the first
instance swallows the banner, once per process.

>>> quiet_highs().getNumCol()
0
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["quiet_highs"]

_lock = threading.Lock()
_banner_done = False


def quiet_highs() -> Any:  # -> highspy.Highs
    """A new ``highspy.Highs``; the first one of the process is made with file descriptor 1 on the null device
    (nothing is redirected when there is no file descriptor 1)."""
    global _banner_done
    import highspy

    if not _banner_done:
        with _lock:
            if not _banner_done:
                sys.stdout.flush()
                try:
                    saved = os.dup(1)
                except OSError:
                    saved = -1
                try:
                    if saved >= 0:
                        with open(os.devnull, "w") as null:
                            os.dup2(null.fileno(), 1)
                            h = highspy.Highs()
                    else:
                        h = highspy.Highs()
                finally:
                    if saved >= 0:
                        os.dup2(saved, 1)
                        os.close(saved)
                _banner_done = True
                return h
    return highspy.Highs()

"""Run the (policy, seed) jobs of a sweep on an existing Dask distributed cluster.

``cmab-milp run PROBLEM.toml --out DIR --executor dask://HOST:PORT`` sends each
job to the cluster whose scheduler listens at ``HOST:PORT`` (start one with
``dask scheduler`` and ``dask worker HOST:PORT`` on each machine; every worker
needs ``cmab_milp`` and its solvers installed). Results come back to this
process as each job finishes and are written to ``DIR`` exactly as with the
local executor; a job computes the same numbers wherever it runs, because
everything it draws comes from its seed.

Needs the optional extra ``dask`` (``pip install 'cmab_milp[dask]'``); without
it, :func:`dask_executor` raises an :class:`ImportError` that says so; an
unreachable scheduler or a missing address raises :class:`ValueError` (the
runner refuses both before writing anything).

Example
-------
>>> from distributed import LocalCluster  # doctest: +SKIP
>>> with LocalCluster(n_workers=1, processes=False) as cluster:  # doctest: +SKIP
...     with dask_executor(cluster.scheduler_address, jobs=1) as executor:
...         sorted(executor.run(pow, [(2, 3), (3, 2)]))
[(0, 8), (1, 9)]
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["DaskExecutor", "dask_executor"]

#: Seconds to wait for the scheduler before giving up.
CONNECT_TIMEOUT = 10


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ImportError(
            "the dask executor needs Dask distributed: install the optional extra with pip install 'cmab_milp[dask]'"
        ) from None
    return distributed


class DaskExecutor:
    """Runs calls as tasks on the Dask cluster at ``address``, yielding ``(index, value)`` as each finishes.

    ``workers`` is the number of worker threads the cluster has when connected
    (the cluster, not this object, decides how many jobs run at once).
    """

    name = "dask"

    def __init__(self, address: str, timeout: float = CONNECT_TIMEOUT):
        if not isinstance(address, str) or not address:
            raise ValueError("the dask executor needs the scheduler's address: --executor dask://HOST:PORT")
        distributed = _distributed()
        self.address = address if "://" in address else f"tcp://{address}"
        try:
            self._client = distributed.Client(self.address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"cannot reach a Dask scheduler at {self.address}: {exc}") from None
        self._futures: list[Any] = []
        self.workers = max(1, sum(self._client.nthreads().values()))

    def run(self, function: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Submit every call now; yield ``(index, value)`` in the order they finish.

        A call that raises on a worker re-raises here with its index.
        """
        distributed = _distributed()
        batch = uuid.uuid4().hex[:8]
        futures = [
            self._client.submit(function, *args, key=f"cmab-milp-{batch}-{index}", pure=False)
            for index, args in enumerate(tasks)
        ]
        self._futures.extend(futures)
        position = {future.key: index for index, future in enumerate(futures)}
        for future in distributed.as_completed(futures, loop=self._client.loop):
            index = position[future.key]
            try:
                value = future.result()
            except Exception as exc:
                raise RuntimeError(f"task {index} failed on the Dask cluster: {exc}") from exc
            future.release()
            yield index, value

    def close(self, cancel: bool = False) -> None:
        """Disconnect; with ``cancel``, first cancel the calls still queued or running."""
        if cancel and self._futures:
            self._client.cancel(self._futures)
        self._futures = []
        self._client.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.close(cancel=exc_type is not None)

    def __repr__(self) -> str:
        return f"DaskExecutor({self.address!r}, workers={self.workers})"


def dask_executor(address: str, jobs: int) -> DaskExecutor:
    """The executor factory for ``--executor dask://ADDRESS`` (``jobs`` is left to the cluster).

    Register it with ``register_executor("dask", dask_executor)``.
    """
    return DaskExecutor(address)

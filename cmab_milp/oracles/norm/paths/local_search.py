"""Local search over s-t paths for the norm index: replace a short sub-path by a short detour.

The incumbents of :class:`~.paths.minus.PathBranch` come from LP points (rounded, repaired, shortest
paths on ``1 - x``); on long optimal paths (f = 3 on the 8x8 grid: 50-60 of 112 edges) they stay far
below the optimum for many nodes. :func:`improve_path` climbs from a path: a *move* replaces the
``k <= max_segment`` arms between two nodes ``u = v_i`` and ``w = v_{i+k}`` of the path by another simple
``u``-``w`` path of at most ``max_detour`` arms whose inner nodes are off the rest of the path (so the
result is again a simple s-t path: detours through unvisited nodes, shortcuts, swapped corners). Each
pass values every move at once (below) and takes, best first, the moves that the query's restrictions
admit, that touch no node of a move already taken and that gain when valued exactly; it stops at a local
optimum or after ``max_passes`` passes.

Valuing a move: with ``a`` the path, ``r`` the removed and ``e`` the added arms (indicator vectors),
``a' = a - r + e`` and

    ``a' M a' = a M a - 2 r M a + 2 e M a + r M r - 2 e M r + e M e``,

so with ``M a`` kept, a move costs a few entries of ``M`` (vectorised over all moves of a pass). These
values only rank the moves; the path returned is valued exactly by ``query.value``, and its caller
checks it like any other candidate (an action of the space that the restrictions admit): the search
never affects exactness.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.cycle_graph(4), 0, 2)  # arms (0,1) (0,3) (1,2) (2,3): 0-1-2 or 0-3-2
>>> q = cm.make_oracle(space, "highs").norm_query(np.array([0, 1, 0, 1.0]), np.eye(4), 0.1, -1)
>>> path, value = improve_path(space, q, np.array([1, 0, 1, 0], bool))
>>> path.astype(int).tolist(), round(value, 6)  # 0-3-2 collects the two arms of weight 1
([0, 1, 0, 1], 1.858579)
"""

from __future__ import annotations

import numpy as np

from ....spaces import STPaths
from ...core.queries import NormQuery

__all__ = ["improve_path", "path_sequence"]

#: Arms a move removes at most, and arms its detour adds at most.
MAX_SEGMENT = 3
MAX_DETOUR = 4
#: Passes per call at most; a pass takes the best gaining move, then every other one (best first, at most
#: ``_TRIES`` tried) that keeps off the nodes of the moves taken and still gains when valued exactly.
MAX_PASSES = 40
_TRIES = 200


def path_sequence(space: STPaths, action: np.ndarray) -> tuple[list[int], list[int]]:
    """The node indices ``s .. t`` and the arm indices of a path action, in path order.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.path_graph(3), 0, 2)
    >>> path_sequence(space, np.array([True, True]))
    ([0, 1, 2], [0, 1])
    """
    a = np.asarray(action, bool)
    if a.shape != (space.d,) or not space._contains(a):
        raise ValueError(f"action is not an s-t path of this space (shape {a.shape})")
    step: dict[int, list[tuple[int, int]]] = {}
    for k in np.flatnonzero(a).tolist():
        u, v = int(space.tail[k]), int(space.head[k])
        step.setdefault(u, []).append((v, k))
        if not space.directed:
            step.setdefault(v, []).append((u, k))
    nodes, arms = [space.s], []
    while nodes[-1] != space.t:
        w, k = next((w, k) for w, k in step[nodes[-1]] if not arms or k != arms[-1])
        nodes.append(w)
        arms.append(k)
    return nodes, arms


def _adjacency(space: STPaths, allowed: np.ndarray) -> list[list[tuple[int, int]]]:
    """``out[u]``: the ``(w, arm)`` steps out of ``u`` along allowed arms (both ways when undirected)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(space.n_nodes)]
    for k in np.flatnonzero(allowed).tolist():
        u, v = int(space.tail[k]), int(space.head[k])
        out[u].append((v, k))
        if not space.directed:
            out[v].append((u, k))
    return out


def _detours(out, u: int, w: int, blocked: set[int], depth: int, skip: tuple[int, ...]):
    """``(arms, inner nodes)`` of the simple ``u``-``w`` paths of at most ``depth`` arms avoiding ``blocked``."""
    found: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    stack: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = [(u, (), ())]
    while stack:
        here, arms, inner = stack.pop()
        for nxt, k in out[here]:
            if nxt == w:
                if (*arms, k) != skip:
                    found.append(((*arms, k), inner))
            elif len(arms) + 1 < depth and nxt != u and nxt not in blocked and nxt not in inner:
                stack.append((nxt, (*arms, k), (*inner, nxt)))
    return found


def improve_path(
    space: STPaths,
    query: NormQuery,
    action: np.ndarray,
    *,
    max_segment: int | None = None,
    max_detour: int | None = None,
    max_passes: int | None = None,
) -> tuple[np.ndarray, float]:
    """A path at least as good as ``action`` for ``query`` (the module docstring's moves), and its exact value.

    ``action`` must be an s-t path of ``space`` that ``query``'s restrictions admit; the answer is one too.
    The limits default to :data:`MAX_SEGMENT`, :data:`MAX_DETOUR` and :data:`MAX_PASSES`.
    """
    max_segment = MAX_SEGMENT if max_segment is None else max_segment
    max_detour = MAX_DETOUR if max_detour is None else max_detour
    max_passes = MAX_PASSES if max_passes is None else max_passes
    if max_segment < 1 or max_detour < 1 or max_passes < 0:
        raise ValueError(f"max_segment, max_detour must be >= 1 and max_passes >= 0, got {max_segment, max_detour}")
    res = query.restrictions
    a = np.asarray(action, bool).copy()
    if a.shape != (space.d,) or not space._contains(a) or not res.admits(a):
        raise ValueError("action must be an s-t path of the space that the query's restrictions admit")
    d = space.d
    allowed = np.ones(d, bool)
    allowed[list(res.exclude)] = False
    fixed = np.zeros(d, bool)
    fixed[list(res.include)] = True
    out = _adjacency(space, allowed)
    M = np.zeros((d + 1, d + 1))  # padded with a zero arm d
    M[:d, :d] = query.M
    mu = np.append(np.asarray(query.mu, float), 0.0)
    f = float(query.sign) * float(query.f)
    value = query.value(a)
    for _ in range(max_passes):
        nodes, arms = path_sequence(space, a)
        on = set(nodes)
        removed, added, spans = [], [], []
        for i in range(len(arms)):
            for k in range(1, max_segment + 1):
                if i + k > len(arms):
                    break
                seg = tuple(arms[i : i + k])
                if fixed[list(seg)].any():
                    break  # an included arm stays (longer segments hold it too)
                blocked = on - set(nodes[i + 1 : i + k])
                for detour, inner in _detours(out, nodes[i], nodes[i + k], blocked, max_detour, seg):
                    removed.append(seg + (d,) * (max_segment - k))
                    added.append(detour + (d,) * (max_detour - len(detour)))
                    spans.append({*nodes[i : i + k + 1], *inner})
        if not removed:
            break
        R, E = np.array(removed), np.array(added)
        x = np.append(a.astype(float), 0.0)
        Mx = M @ x
        lin = float(mu @ x) + mu[E].sum(1) - mu[R].sum(1)
        quad = (
            float(x @ Mx)
            - 2.0 * Mx[R].sum(1)
            + 2.0 * Mx[E].sum(1)
            + M[R[:, :, None], R[:, None, :]].sum((1, 2))
            - 2.0 * M[E[:, :, None], R[:, None, :]].sum((1, 2))
            + M[E[:, :, None], E[:, None, :]].sum((1, 2))
        )
        scores = lin + f * np.sqrt(np.maximum(quad, 0.0))
        gaining = np.flatnonzero(scores > value + 1e-12 * (1.0 + abs(value)))
        touched: set[int] = set()  # nodes of the moves taken in this pass: later moves keep off them
        moved = False
        for m in gaining[np.argsort(-scores[gaining], kind="stable")][:_TRIES].tolist():
            if spans[m] & touched:
                continue
            b = a.copy()
            b[[k for k in R[m] if k < d]] = False
            b[[k for k in E[m] if k < d]] = True
            if not space._contains(b) or not res.admits(b):
                continue
            new = query.value(b)
            if new > value:
                a, value, moved = b, new, True
                touched |= spans[m]
        if not moved:
            break
    return a, value

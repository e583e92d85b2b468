"""One tie rule for every exact backend: the optimum of least binary number (:func:`first_optimum`).

Backends break exact ties their own way (a simplex vertex, a branch-and-bound order, the first
enumerated action, Kruskal's order). Bernoulli arms make ties frequent: arms with equal counts and
equal sums get equal indices, and an action can swap one for the other at no change in value. So
every exact backend's answer to a linear query is passed through :func:`first_optimum` (by
:meth:`~cmab_milp.oracles.core.base.Oracle._answer`), which returns

    **the rule**: among the optimal actions, the one of least binary number ``sum_i 2^i x_i``,
    equivalently the optimum of the weights lowered by ``eps 2^i`` on arm ``i`` (``eps`` tiny): it leaves
    out the highest-numbered arm that some optimal action leaves out, then (among those) the next
    highest, ...; arms of weight 0 are left out whenever an optimum can leave them out.

What it uses. The *classes* of a query are its arms grouped by equal weight (the same ``float``). A
backend's answer ``a`` holds some arms of each class; a class it holds partly (some, not all), and
the arms of weight 0, are the *open* arms ``P``. Every action that agrees with ``a`` off ``P`` and
holds as many arms of each nonzero class as ``a`` has the same multiset of nonzero weights, hence
exactly ``a``'s value. On matroids (cardinality, partition, forests, spanning trees; no
``forbid_pairs``) one greedy pass by decreasing weight, lower arm first, arms of weight 0 left out where
actions need not be bases, gives the rule's action (:mod:`.ties_matroids`); exchanges are the fallback when
its weights differ from ``a``'s (a near tie). Elsewhere the search walks these candidates by increasing
binary number (arms of ``P`` by decreasing index, leaving out before holding, class counts pruned; on
matchings infeasible partial actions too) and returns the first one that is feasible (``space._contains``
and the restrictions); on bipartite matchings and DAG paths one exact integer solve comes first
(:mod:`.ties_direct`). Past one check per open arm and ``leaves`` more it settles the open arms one by one
instead, highest first, with restricted solves on the same backend: arm ``i`` is left out when the optimum
under "hold the arms settled in; neither those settled out nor ``i``" still has ``a``'s nonzero weights (one
solve per open arm the current best holds).

Why it is the rule (the proof sketch of ``docs/guide/reproducibility.md``, "One tie rule"). Assume
(A) no near tie: an action within the backend's tolerance of the optimum is exactly optimal, and
(B) ties are class ties: two optimal actions hold the same number of arms of each nonzero weight.
Then ``a`` is optimal (A); the optimal actions are exactly the candidates above (B one way, equal
multisets the other), so the first feasible candidate by increasing binary number is the rule's action,
and so is the settled one (each restricted optimum is optimal for the full query iff it has ``a``'s
weights, by A and B). Nothing depends on which optimum ``a`` the backend returned: every backend
gives the same action. Without (A) or (B) (sums of different weights that coincide, values closer
than the tolerance), the answer is still optimal (only actions of ``a``'s exact value are
returned), but backends may differ as before.

``ties="exact"`` also settles equal sums of different weights (within the tolerance): one solve of the
weights shifted by ``delta`` (a thousand times the tolerance; down on ``a``'s arms, up on the others)
returns ``a`` itself exactly when no other action is within the tolerance of it (:func:`_unique`); only
then is ``a`` kept, otherwise every arm is settled in turn, highest first, by restricted solves.

Backends that know their answer is the rule's action say so (``Oracle._linear_ruled``; the sorts, matroid
greedies, DAG path margins and matchings of :mod:`~cmab_milp.oracles.backends.combinatorial_ruled`, and
``enumerate``'s unique best): with ``"classes"`` the answer is then returned with no check at all; with
``"exact"`` too when their certificate proves no other action within the tolerance (:mod:`.ties_unique`).

The search and the settling are Python loops between solves: each step calls
:func:`~cmab_milp.oracles.core.interrupts.raise_if_halted`, so that a worker of a batch stopped by Ctrl-C or
SIGTERM ends within one candidate or one restricted solve (the solves alone would not stop it: a backend
answering in Python never reaches a stoppable solve).

Not applied: norm queries (``argmax_norm``; their ties need ``M`` to be symmetric under the swap)
and oracles in the certified approximate mode (``gap``).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
>>> oracle = cm.make_oracle(cm.Cardinality(4, 3), "enumerate", ties="classes")
>>> query = LinearQuery(np.array([0.5, 0.9, 0.5, 0.0]), Restrictions())
>>> first_optimum(oracle, query, np.array([False, True, True, True])).nonzero()[0].tolist()
[0, 1]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ...spaces import Matchings, STPaths
from .interrupts import raise_if_halted
from .queries import LinearQuery, Restrictions
from .ties_direct import lexicographic_matching, lexicographic_path
from .ties_matroids import MATROIDS, exchanges, greedy

__all__ = ["TIE_LEAVES", "TIE_MODES", "first_optimum", "open_arms"]

#: Candidates the search checks before settling the open arms by restricted solves.
TIE_LEAVES = 64
#: What ``Oracle.ties`` may say: which ties the rule settles.
TIE_MODES = ("classes", "exact", "off")


def open_arms(weights: list[float], action: list[bool]) -> tuple[list[int], list[int], dict[float, int]]:
    """The open arms of ``action`` (ascending), each one's class (``-1``: weight 0) and each class's count held.

    Open: the arms of a nonzero class ``action`` holds partly, and every arm of weight 0.

    >>> open_arms([0.5, 0.9, 0.5, 0.0, 0.9], [False, True, True, False, True])
    ([0, 2, 3], [0, 0, -1], [1])
    """
    arms: dict[float, list[int]] = {}
    for i, w in enumerate(weights):
        arms.setdefault(w, []).append(i)
    chosen: list[int] = []
    cls: dict[int, int] = {}
    for w, members in arms.items():
        if w == 0.0:
            for i in members:
                cls[i] = -1
            continue
        held = sum(1 for i in members if action[i])
        if 0 < held < len(members):
            for i in members:
                cls[i] = len(chosen)
            chosen.append(held)
    order = sorted(cls)
    return order, [cls[i] for i in order], chosen


def _candidates(
    action: list[bool], order: list[int], classes: list[int], need: list[int], fits: Any = None
) -> Iterator[list[bool]]:
    """Actions agreeing with ``action`` off ``order``, ``need[c]`` arms of each class: least binary number first.

    The open arms ``order`` (ascending) are walked by decreasing index, each left out before it is held.
    ``fits(partial, arm)``: whether a partial action (the open arms not yet decided left out: those below
    ``arm``) that has just taken ``arm`` may still be completed; given for spaces closed under taking subsets
    (then: whether it is feasible itself).

    >>> [[int(x) for x in c] for c in _candidates([False, True, True, True], [0, 1, 2, 3], [0, 0, 0, -1], [2])]
    [[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 1], [1, 0, 1, 1], [0, 1, 1, 1]]
    """
    walk, kinds = order[::-1], classes[::-1]
    left = [0] * len(need)  # arms of each class at positions >= k (not yet decided)
    for c in kinds:
        if c >= 0:
            left[c] += 1
    need = list(need)
    current = list(action)
    for arm in walk:
        current[arm] = False
    n = len(walk)
    phase = [0] * n  # at position k: 0 nothing tried, 1 leaving out tried, 2 holding tried
    held, skipped = [False] * n, [False] * n
    k = 0
    while k >= 0:
        if k == n:
            yield list(current)
            k -= 1
            continue
        c, arm = kinds[k], walk[k]
        if phase[k] == 0:  # leave the arm out first
            phase[k] = 1
            if c < 0 or left[c] - 1 >= need[c]:
                skipped[k] = True
                if c >= 0:
                    left[c] -= 1
                k += 1
                continue
        if phase[k] == 1:  # then hold it
            if skipped[k]:
                skipped[k] = False
                if c >= 0:
                    left[c] += 1
            phase[k] = 2
            if c < 0 or need[c] > 0:
                current[arm] = True
                if fits is None or fits(current, arm):
                    held[k] = True
                    if c >= 0:
                        need[c] -= 1
                        left[c] -= 1
                    k += 1
                    continue
                current[arm] = False
        if held[k]:  # both tried: step back
            held[k], current[arm] = False, False
            if c >= 0:
                need[c] += 1
                left[c] += 1
        phase[k] = 0
        k -= 1


def _nonzero(weights: list[float], action: Any) -> list[float]:
    return sorted(w for w, held in zip(weights, action, strict=True) if held and w != 0.0)


def _holding(oracle: Any, query: LinearQuery, held_in: list[int], held_out: list[int]) -> np.ndarray | None:
    """The backend's optimum of ``query`` also holding ``held_in`` and none of ``held_out`` (``None``: none)."""
    res = query.restrictions
    inc = tuple(sorted({*res.include, *held_in}))
    restricted = Restrictions(inc, tuple(sorted({*res.exclude, *held_out})), res.forbid_pairs)
    if restricted.trivially_infeasible():
        return None
    return getattr(oracle, "uncounted_linear", oracle._linear)(LinearQuery(query.weights, restricted))


def _settle(oracle: Any, query: LinearQuery, best: list[bool], order: list[int], classes: list[int], need: list[int]):
    """The rule's action by restricted solves: each open arm, highest first, left out iff an optimum leaves it out
    with the rest (one solve per open arm the current best holds; a class's count decides the others)."""
    weights = query.weights_list if query.weights_list is not None else query.weights.tolist()
    target = _nonzero(weights, best)
    held_in: list[int] = []
    held_out: list[int] = []
    need = list(need)
    below = [0] * len(need)  # arms of each class not yet settled
    for c in classes:
        if c >= 0:
            below[c] += 1
    for arm, c in zip(order[::-1], classes[::-1], strict=True):
        raise_if_halted()  # a worker of a stopped batch ends here, between two restricted solves
        if c >= 0:
            below[c] -= 1
            if need[c] == 0:  # the class's count is reached: out
                held_out.append(arm)
                continue
            if below[c] < need[c]:  # the arms below cannot make up the count: in
                held_in.append(arm)
                need[c] -= 1
                continue
        if best[arm]:
            answer = _holding(oracle, query, held_in, [*held_out, arm])
            if answer is None or _nonzero(weights, answer.tolist()) != target:
                held_in.append(arm)
                if c >= 0:
                    need[c] -= 1
                continue
            best = answer.tolist()
        held_out.append(arm)
    return best


def _settle_values(oracle: Any, query: LinearQuery, best: list[bool]) -> list[bool]:
    """The rule over every tie (``ties="exact"``): each arm, highest first, left out iff an action within the
    tolerance leaves it out with the rest.

    One restricted solve per arm the current best holds: ties between sums of different weights too.
    """
    res = query.restrictions
    reference = query.value(best)
    fixed = {*res.include, *res.exclude}
    held_in: list[int] = []
    held_out: list[int] = []
    for arm in range(len(best) - 1, -1, -1):
        raise_if_halted()
        if arm in fixed:
            continue
        if best[arm]:
            answer = _holding(oracle, query, held_in, [*held_out, arm])
            value = -np.inf if answer is None else query.value(answer)
            if value < reference - 1e-9 * (1.0 + abs(reference)):  # the contract's tolerance (base.tolerance)
                held_in.append(arm)
                continue
            best, reference = answer.tolist(), max(reference, value)
        held_out.append(arm)
    return best


def _unique(oracle: Any, query: LinearQuery, best: list[bool]) -> bool:
    """Whether no other action is within the tolerance of ``best`` (an optimum): one solve of shifted weights.

    Each arm ``best`` holds loses ``delta``, each other arm gains it (``delta``: a thousand times the
    contract's tolerance). An action ``b`` tied with ``best`` then beats it by at least ``2 delta - tol``
    (``b`` differs from ``best`` in at least one arm), so an exact backend cannot return ``best``; when it does,
    ``best`` is the only optimum. Any other answer (a tie, or an action within ``delta d`` of the optimum) sends
    the query to the full settling.
    """
    weights = query.weights_list if query.weights_list is not None else query.weights.tolist()
    delta = 1e-6 * (1.0 + abs(query.value(best)))
    shifted = [w - delta if held else w + delta for w, held in zip(weights, best, strict=True)]
    listed = shifted if query.weights_list is not None else None
    answer = getattr(oracle, "uncounted_linear", oracle._linear)(
        LinearQuery(np.array(shifted), query.restrictions, listed)
    )
    return answer is not None and answer.tolist() == best


def first_optimum(
    oracle: Any, query: LinearQuery, action: np.ndarray | None, failures: tuple = (), leaves: int = TIE_LEAVES
):
    """The rule's action (module docstring) from ``action``, an optimum of ``query`` on ``oracle``.

    ``oracle.ties`` says which ties are settled: ``"classes"`` (equal weights, see above),
    ``"exact"`` (also sums of different weights within the tolerance: one solve of shifted weights, then,
    on a tie, one restricted solve per arm the current best holds) or ``"off"``. ``failures``: the
    exceptions of a restricted solve that leave the backend's ``action`` as the answer (a declined query,
    a time limit). ``leaves``: checks of candidates (those the restrictions refuse too) and partial actions,
    beyond one per open arm (the search's first descent), before settling by restricted solves on ``oracle``
    (``0``: solves at once).
    Returns ``action`` itself (no copy) when no other candidate exists: one set of the weights on the
    usual path.
    """
    weights = query.weights_list
    if weights is not None and oracle.ties == "classes":
        distinct = set(weights)
        if len(distinct) == len(weights) and 0.0 not in distinct:  # distinct nonzero weights: no tie (the usual path)
            return action
    if action is None:
        return action
    try:
        return _settle_ties(oracle, query, action, leaves)
    except failures:  # a restricted solve failed or was declined: the backend's optimum stands
        return action


def _settle_ties(oracle: Any, query: LinearQuery, action: np.ndarray, leaves: int) -> np.ndarray:
    mode = oracle.ties
    if mode not in TIE_MODES:
        raise ValueError(f"ties must be one of {', '.join(TIE_MODES)}; got {mode!r}")
    if mode == "off" or getattr(oracle, "gap", None) is not None:  # approximate answers: no rule among them
        return action
    if mode == "exact":
        held = action.tolist()
        weights = query.weights_list if query.weights_list is not None else query.weights.tolist()
        distinct = set(weights)
        no_class_tie = (len(distinct) == len(weights) and 0.0 not in distinct) or not open_arms(weights, held)[0]
        if no_class_tie and _unique(oracle, query, held):  # and no other action within the tolerance
            return action
        return np.array(_settle_values(oracle, query, held))
    w = query.weights
    if query.weights_list is None and np.count_nonzero(w) == w.shape[0] and np.unique(w).shape[0] == w.shape[0]:
        return action  # long vectors: numpy finds whether any weight repeats or is 0
    weights = query.weights_list if query.weights_list is not None else w.tolist()
    held = action.tolist()
    order, classes, need = open_arms(weights, held)
    if not order:
        return action
    space, res = oracle.space, query.restrictions
    if type(space) in MATROIDS and not res.forbid_pairs:
        settled = greedy(space, res, weights)
        if settled is not None and _nonzero(weights, settled) == _nonzero(weights, held):
            trial = np.array(settled)
            if res.admits(trial) and space._contains(trial):
                return trial
        return np.array(exchanges(space, res, held, order, classes))  # a near tie: exchanges from the answer
    direct = _direct(space, res, weights)
    if direct is not None and _is_candidate(direct.tolist(), held, order, classes, need):
        return direct  # the exact optimum of least binary number is a candidate: the rule's action (ties_direct.py)
    checks = [0]  # candidates and partial actions checked
    budget = leaves + len(order) if leaves else 0  # the first descent (one check per open arm), then ``leaves``
    closed = type(space) is Matchings and not space.perfect  # closed under subsets: prune partial actions
    free = _free_ends(space) if closed else None
    members: list[list[int]] = [[] for _ in need]
    for arm, c in zip(order, classes, strict=True):
        if c >= 0:
            members[c].append(arm)

    def fits(partial: list[bool], arm: int | None = None) -> bool:
        checks[0] += 1
        if checks[0] > budget:
            raise _OverBudget
        if arm is None or free is None:
            return bool(space._contains(np.array(partial)))
        if not free(partial, arm):  # a matching before ``arm``: only its two ends to check
            return False
        for c, arms in enumerate(members):  # each class can still get its count from the free arms below ``arm``
            held = sum(1 for e in arms if e >= arm and partial[e])
            if held < need[c] and sum(1 for e in arms if e < arm and free(partial, e)) < need[c] - held:
                return False
        return True

    try:
        for candidate in _candidates(held, order, classes, need, fits if closed else None):
            raise_if_halted()  # a worker of a stopped batch ends here
            if candidate == held:
                return action
            trial = np.array(candidate)
            if not res.admits(trial):  # a check too: a path through one link first walks every way of leaving it out
                checks[0] += 1
                if checks[0] > budget:
                    raise _OverBudget
                continue
            if fits(candidate):
                return trial
    except _OverBudget:
        pass
    if getattr(oracle, "time_limit", None) is not None:  # solves would multiply the query's time
        return action
    return np.array(_settle(oracle, query, held, order, classes, need))


def _direct(space: Any, res: Restrictions, weights: list[float]) -> np.ndarray | None:
    """The exact optimum of least binary number in one solve (:mod:`.ties_direct`) where the space has one, else
    ``None``."""
    if res.forbid_pairs:
        return None
    if type(space) is Matchings and space.bipartite:
        return lexicographic_matching(space, weights, res)
    if type(space) is STPaths and space.acyclic:
        return lexicographic_path(space, weights, res)
    return None


def _is_candidate(trial: list[bool], held: list[bool], order: list[int], classes: list[int], need: list[int]) -> bool:
    """Whether ``trial`` agrees with ``held`` off the open arms ``order`` and holds ``need[c]`` arms of each class."""
    is_open = set(order)
    if any(t != h for i, (t, h) in enumerate(zip(trial, held, strict=True)) if i not in is_open):
        return False
    counts = [0] * len(need)
    for arm, c in zip(order, classes, strict=True):
        if c >= 0 and trial[arm]:
            counts[c] += 1
    return counts == list(need)


def _free_ends(space: Any) -> Any:
    """A function ``free(partial, arm)``: whether no other arm ``partial`` holds shares a node with ``arm``.

    >>> import networkx as nx
    >>> free = _free_ends(Matchings(nx.path_graph(4)))  # arms (0, 1), (1, 2), (2, 3)
    >>> free([True, False, False], 1), free([True, False, False], 2)
    (False, True)
    """
    tail, head = space.tail.tolist(), space.head.tolist()
    at: dict[int, list[int]] = {}
    for arm, ends in enumerate(zip(tail, head, strict=True)):
        for node in set(ends):
            at.setdefault(node, []).append(arm)

    def free(partial: list[bool], arm: int) -> bool:
        return not any(partial[e] and e != arm for node in (tail[arm], head[arm]) for e in at[node])

    return free


class _OverBudget(Exception):
    """The search checked ``leaves`` candidates and partial actions: the restricted solves settle the rest."""

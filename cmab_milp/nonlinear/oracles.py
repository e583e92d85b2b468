"""Oracles for distribution indices: maximise ``E[r(a, Y)]`` with ``Y_i ~ pmf[i]`` independent.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

A :class:`DistributionOracle` is an :class:`~cmab_milp.oracles.core.base.Oracle`:
it keeps the same :class:`~cmab_milp.oracles.core.base.Ledger`, honours the same
``include`` / ``exclude`` / ``forbid_pairs`` restrictions, answers batches
concurrently as one adaptivity round (``argmax_batch`` with
``kind="index"``), and forwards linear queries (e.g. the "most unobserved
arms" query of the policies) to an inner linear oracle, counted in its own
ledger. Backends for the index queries (each also registered as
``make_oracle(space, "dist_<backend>", reward=..., grid=...)``, see
:mod:`cmab_milp.nonlinear.backends`):

``"enumerate"``
    exact: every action of ``space.enumerate()``, expectations vectorised.
``"branch_bound"``
    exact, for rewards that depend symmetrically on the selected outcomes and
    never drop when an arm is added (sum-based on a lattice grid, K-MAX), on
    :class:`~cmab_milp.spaces.Cardinality` and
    :class:`~cmab_milp.spaces.PartitionMatroid`: depth-first search over arms
    sorted by mean, pruned by the value of the current set plus as many copies
    as slots remain of the *upper envelope* of the remaining arms (pointwise
    minimum CDF, which stochastically dominates each of them).
``"milp"``
    exact, K-MAX only, on any space with a MILP formulation: HiGHS with tangent
    cuts of the concave ``E[max]`` (see :mod:`~cmab_milp.nonlinear.kmax_milp`).
``"greedy"``
    approximate, for monotone submodular rewards: add the arm of largest
    marginal gain while the set stays feasible. ``alpha = 1 - 1/e`` on
    Cardinality, ``1/2`` on partition and graphic matroids (Algorithm 5's
    setting).
``"auto"``
    ``"enumerate"`` when the space has at most ``max_actions`` actions, else
    ``"milp"`` for K-MAX and ``"branch_bound"`` where it applies.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.nonlinear import OutcomeGrid
>>> grid = OutcomeGrid([0.0, 1.0])
>>> pmf = np.array([[0.9, 0.1], [0.5, 0.5], [0.4, 0.6], [0.0, 1.0]])
>>> oracle = DistributionOracle(cm.Cardinality(4, 2), "max", grid, "branch_bound")
>>> np.flatnonzero(oracle.argmax_index(pmf, exclude=[3])).tolist()
[1, 2]
>>> oracle.ledger.queries
1
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..oracles import Oracle, OracleError, make_oracle
from ..oracles.core.base import tolerance
from ..oracles.core.queries import LinearQuery, NormQuery, Restrictions, make_restrictions
from ..oracles.core.registry import check_backend_name
from ..spaces import Cardinality, GraphicMatroid, PartitionMatroid
from ..spaces.base import ActionSpace
from .grid import OutcomeGrid
from .kmax_milp import KMaxMilp
from .rewards import MaxReward, Reward, check_pmf, make_reward, padded_index

__all__ = ["BACKENDS", "ENUMERATION_CAP", "DistributionOracle", "IndexQuery", "unfit_reason"]

#: The ways to answer the distribution index (registered as ``"dist_<name>"``).
BACKENDS = ("auto", "enumerate", "branch_bound", "milp", "greedy")

#: Default cap on the actions that ``"auto"`` and ``"enumerate"`` list.
ENUMERATION_CAP = 200_000

#: Search nodes after which branch-and-bound gives up with an ``OracleError``.
MAX_NODES = 2_000_000

#: Actions scored per vectorised block by the enumeration method (bounds memory).
_BLOCK = 4096


@dataclass(frozen=True)
class IndexQuery:
    """Maximise ``E[r(a, Y)]``, ``Y_i ~ pmf[i]`` independent, under restrictions.

    ``reward`` and ``grid`` (set by the oracle that validated the query) make it
    self-describing: :meth:`value` scores an action, and a recorded query can be
    asked again of another backend (``cmab-milp compare-oracles``).
    """

    pmf: np.ndarray
    restrictions: Restrictions
    reward: Reward | None = None
    grid: OutcomeGrid | None = None

    def value(self, action: np.ndarray) -> float:
        """``E[r(a, Y)]`` of one bool action."""
        if self.reward is None or self.grid is None:
            raise ValueError("this index query carries no reward and grid to score an action with")
        return float(self.reward.expected(np.asarray(action, dtype=bool)[None, :], self.grid, self.pmf)[0])


def _greedy_alpha(space: ActionSpace) -> float | None:
    if isinstance(space, Cardinality):
        return 1.0 - 1.0 / math.e
    if isinstance(space, (PartitionMatroid, GraphicMatroid)):
        return 0.5
    return None


def unfit_reason(backend: str, space: ActionSpace, reward: Reward, grid: OutcomeGrid) -> str | None:
    """Why ``backend`` cannot answer the index of ``reward`` on ``grid`` over ``space`` (``None``: it can).

    The one check of the distribution backends, run before any work (no enumeration, no model).

    >>> import cmab_milp as cm
    >>> unfit_reason("milp", cm.Cardinality(3, 1), make_reward("sqrt_sum"), OutcomeGrid([0.0, 1.0]))
    "backend 'milp' answers K-MAX ('max') index queries only, not 'sqrt_sum'"
    """
    if backend not in BACKENDS:
        return f"unknown distribution backend {backend!r}; choose from {BACKENDS}"
    if backend == "greedy":
        if _greedy_alpha(space) is None:
            return (
                "the greedy backend needs a Cardinality, PartitionMatroid or GraphicMatroid space, "
                f"got {type(space).__name__}"
            )
        if not getattr(reward, "submodular", False):
            return f"the greedy backend's guarantee needs a submodular reward; {reward.name!r} is not"
    if backend in ("branch_bound", "greedy") and not reward.accumulates(grid):
        return (
            f"backend {backend!r} needs a sum-based reward on a lattice grid or 'max'; got {reward.name!r} on {grid!r}"
        )
    if backend == "branch_bound" and not isinstance(space, (Cardinality, PartitionMatroid)):
        return f"branch_bound supports Cardinality and PartitionMatroid spaces, got {type(space).__name__}"
    if backend == "milp" and not isinstance(reward, MaxReward):
        return f"backend 'milp' answers K-MAX ('max') index queries only, not {reward.name!r}"
    return None


class DistributionOracle(Oracle):
    """Restricted argmax of the expected reward under a product of per-arm distributions.

    Parameters
    ----------
    space : ActionSpace
    reward : str, callable or Reward
        See :func:`~cmab_milp.nonlinear.rewards.make_reward`.
    grid : OutcomeGrid
        The values every ``pmf`` row is over.
    backend : str
        One of :data:`BACKENDS` (how index queries are answered).
    linear : str or Oracle
        Backend answering linear queries (default ``"enumerate"`` when the
        backend enumerates, else ``"highs"``).
    max_actions : int
        Enumeration cap of ``"auto"`` and ``"enumerate"``.
    """

    name = "distribution"

    def __init__(
        self,
        space: ActionSpace,
        reward: Any,
        grid: OutcomeGrid,
        backend: str = "auto",
        linear: str | Oracle | None = None,
        max_actions: int = ENUMERATION_CAP,
    ):
        super().__init__(space)
        if not isinstance(grid, OutcomeGrid):
            raise ValueError(f"grid must be an OutcomeGrid, got {type(grid).__name__}")
        if backend not in BACKENDS:
            raise ValueError(f"unknown distribution backend {backend!r}; choose from {BACKENDS}")
        self.reward: Reward = make_reward(reward)
        self.grid = grid
        self.max_actions = int(max_actions)
        self.backend = self._resolve(backend)
        reason = unfit_reason(self.backend, space, self.reward, grid)
        if reason is not None:
            raise ValueError(reason)
        self.name = f"distribution:{self.backend}"
        #: Proven approximation ratio of every answer (Algorithm 5's alpha; 1 for the exact backends).
        self.alpha = _greedy_alpha(space) if self.backend == "greedy" else 1.0
        #: When a list, every index query answered is appended to it (``compare-oracles`` records runs so).
        self.recorded: list[IndexQuery] | None = None
        if self.backend == "milp":
            self._milp = KMaxMilp(space, grid)
        if self.backend == "enumerate":
            self.actions = space.enumerate(self.max_actions)
            self._blocks = [
                (start, padded_index(self.actions[start : start + _BLOCK]))
                for start in range(0, len(self.actions), _BLOCK)
            ]
        if linear is None:
            linear = "enumerate" if self.backend == "enumerate" else "highs"
        if isinstance(linear, Oracle):
            if linear.space.d != space.d:
                raise ValueError(f"the linear oracle is built on d={linear.space.d} arms, the space has d={space.d}")
        else:
            try:
                check_backend_name(linear)  # the one backend validator, before any work
            except ValueError as exc:
                raise ValueError(f"{exc} (distribution backends: {BACKENDS})") from None
        self._linear_spec = linear
        self._linear_oracle: Oracle | None = linear if isinstance(linear, Oracle) else None

    @property
    def proven_ratio(self) -> float:
        """The smallest ratio value / optimum proven for the answers (``alpha``; 1.0 when exact)."""
        return float(self.alpha)

    @property
    def linear(self) -> Oracle:
        """The inner oracle answering linear (and norm) queries, built on first use."""
        if self._linear_oracle is None:
            self._linear_oracle = make_oracle(self.space, self._linear_spec)
        return self._linear_oracle

    def _resolve(self, backend: str) -> str:
        if backend != "auto":
            return backend
        bound = self.space.count_upper_bound()
        if bound is not None and bound <= self.max_actions:
            return "enumerate"
        if isinstance(self.reward, MaxReward):
            return "milp"
        structured = isinstance(self.space, (Cardinality, PartitionMatroid)) and self.reward.accumulates(self.grid)
        if structured:
            return "branch_bound"
        try:
            self.space.enumerate(self.max_actions)
        except ValueError:
            raise ValueError(
                f"no exact distribution oracle for {self.space!r} with reward {self.reward.name!r}: "
                f"more than {self.max_actions} actions and no structure to search (use backend='greedy' "
                "on a matroid with a submodular reward, or raise max_actions)"
            ) from None
        return "enumerate"

    # ----------------------------------------------------------- public API
    def argmax_index(self, pmf: Any, include: Any = (), exclude: Any = (), forbid_pairs: Any = ()) -> np.ndarray | None:
        """An action maximising ``E[r(a, Y)]`` with ``Y_i ~ pmf[i]`` under the restrictions, or ``None``."""
        query = {"pmf": pmf, "include": include, "exclude": exclude, "forbid_pairs": forbid_pairs}
        return self.argmax_batch([{"kind": "index", **query}])[0]  # one query, one round, timed in the ledger

    def expected(self, actions: Any, pmf: Any) -> np.ndarray:
        """``E[r(a, Y)]`` for the rows of ``actions`` (not an oracle query: not counted)."""
        return self.reward.expected(actions, self.grid, pmf)

    def index_query(self, pmf: Any, include: Any = (), exclude: Any = (), forbid_pairs: Any = ()) -> IndexQuery:
        """The validated query (``ValueError`` naming what is wrong)."""
        p = check_pmf(pmf, self.grid)
        if p.shape[0] != self.d:
            raise ValueError(f"pmf must have {self.d} rows (one per arm), got {p.shape[0]}")
        restrictions = make_restrictions(self.d, include, exclude, forbid_pairs, self.space)
        return IndexQuery(p, restrictions, self.reward, self.grid)

    def _parse_batch_entry(self, k: int, entry: Mapping[str, Any]) -> Any:
        if isinstance(entry, Mapping) and entry.get("kind") == "index":
            args = {key: v for key, v in entry.items() if key != "kind"}
            try:
                return self.index_query(**args)
            except TypeError as exc:
                raise ValueError(f"batch query {k}: {exc}") from None
        return super()._parse_batch_entry(k, entry)

    # ------------------------------------------------------------ dispatch
    def _answer(self, query: Any) -> np.ndarray | None:
        if not isinstance(query, IndexQuery):
            return super()._answer(query)
        if self.recorded is not None:
            self.recorded.append(query)
        if query.restrictions.trivially_infeasible():
            return None
        if self.backend == "enumerate":
            return self._enumerate(query)
        if self.backend == "milp":
            r = query.restrictions
            return self._milp.solve(query.pmf, r.include, r.exclude, r.forbid_pairs)
        start = self._start(query)  # the set searches: included arms, candidates, their state
        if start is None:
            return None
        search = self._branch_bound if self.backend == "branch_bound" else self._greedy
        return search(query, *start)

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        return self.linear._answer(query)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        return self.linear._answer(query)

    # ----------------------------------------------------------- enumerate
    def _enumerate(self, query: IndexQuery) -> np.ndarray | None:
        mask = query.restrictions.mask(self.actions)
        if mask is not None and not mask.any():
            return None
        best_row, best_value = -1, -np.inf
        for start, index in self._blocks:
            block = self.actions[start : start + len(index)]
            values = self.reward._expected(block, self.grid, query.pmf, index)
            if mask is not None:
                values = np.where(mask[start : start + len(index)], values, -np.inf)
            k = int(np.argmax(values))
            if values[k] > best_value:
                best_row, best_value = start + k, float(values[k])
        return None if best_row < 0 else self.actions[best_row].copy()

    # -------------------------------------------------- shared set helpers
    def _capacity(self, chosen: list[int]) -> tuple[Any, int]:
        """Remaining capacity (per block for partition matroids) and the total slots."""
        space = self.space
        if isinstance(space, PartitionMatroid):
            used = np.bincount(space.block_of[chosen], minlength=len(space.blocks)) if chosen else 0
            left = np.asarray(space.capacities) - used
            return left, int(np.maximum(left, 0).sum())
        return None, space.m - len(chosen)

    def _fits(self, chosen: list[int], left: Any, arm: int) -> bool:
        space = self.space
        if isinstance(space, PartitionMatroid):
            return left[space.block_of[arm]] > 0
        if isinstance(space, Cardinality):
            return len(chosen) < space.m
        trial = np.zeros(self.d, bool)
        trial[[*chosen, arm]] = True
        return space.contains(trial)

    def _final_ok(self, chosen: list[int]) -> bool:
        if isinstance(self.space, Cardinality) and self.space.exact:
            return len(chosen) == self.space.m
        return True

    def _start(self, query: IndexQuery) -> tuple[list[int], list[int], np.ndarray] | None:
        """Included arms, the candidate arms compatible with them and their state (None: infeasible)."""
        r = query.restrictions
        chosen = list(r.include)
        trial = np.zeros(self.d, bool)
        trial[chosen] = True
        if chosen and not self.space.contains(trial) and not isinstance(self.space, Cardinality):
            return None
        if isinstance(self.space, Cardinality) and len(chosen) > self.space.m:
            return None
        banned = set(r.include) | set(r.exclude)
        for i, j in r.forbid_pairs:
            if i in r.include:
                banned.add(j)
            if j in r.include:
                banned.add(i)
        candidates = [i for i in range(self.d) if i not in banned]
        return chosen, candidates, self._state_of(chosen, query.pmf)

    def _state_of(self, chosen: list[int], pmf: np.ndarray) -> np.ndarray:
        """The reward's accumulated state of the arms ``chosen`` (one row)."""
        state = self.reward.start(self.grid, 1)
        for arm in chosen:
            state = self.reward.add(state, self.grid, pmf[arm][None, :])
        return state

    def _action(self, chosen: list[int]) -> np.ndarray:
        a = np.zeros(self.d, bool)
        a[chosen] = True
        return a

    # ------------------------------------------------------- branch & bound
    def _branch_bound(self, query: IndexQuery, chosen: list[int], cands: list[int], state: Any) -> np.ndarray | None:
        reward, grid, pmf, submodular = self.reward, self.grid, query.pmf, self.reward.submodular
        if cands:  # strongest single additions first
            singles = reward.value(reward.add(np.repeat(state, len(cands), axis=0), grid, pmf[cands]), grid)
            cands = [cands[k] for k in np.argsort(-singles, kind="stable")]
        n = len(cands)
        cdf = np.cumsum(pmf, axis=1)
        # suffix upper envelopes: envelope[j] (pointwise min CDF) dominates every arm of cands[j:]
        envelope = np.ones((n + 1, len(grid)))
        for j in range(n - 1, -1, -1):
            envelope[j] = np.minimum(envelope[j + 1], cdf[cands[j]])
        envelope_pmf = np.maximum(np.diff(envelope, axis=1, prepend=0.0), 0.0)
        pairs: dict[int, set[int]] = {}
        for i, j in query.restrictions.forbid_pairs:
            pairs.setdefault(i, set()).add(j)
            pairs.setdefault(j, set()).add(i)
        best: list[Any] = [None, -np.inf]
        nodes = [0]

        def envelope_bound(state: np.ndarray, c: int, slots: int) -> float:
            """Value of the set plus ``slots`` copies of the envelope of ``cands[c:]`` (monotone rewards)."""
            s = reward.add_copies(state, grid, envelope_pmf[c][None, :], min(slots, n - c))
            return float(reward.value(s, grid)[0])

        def suffix_bounds(gains: np.ndarray, value: float, slots: int) -> np.ndarray:
            """``value + sum of the slots largest gains among cands[c:]``, per c (valid for submodular rewards)."""
            gains = np.maximum(gains, 0.0)
            suffix = np.triu(np.broadcast_to(gains, (len(gains), len(gains))))  # row c: gains of cands[c:]
            return value + (-np.sort(-suffix, axis=1)[:, :slots]).sum(axis=1)

        def search(chosen: list[int], state: np.ndarray, j: int) -> None:
            nodes[0] += 1
            if nodes[0] > MAX_NODES:
                raise OracleError(f"branch_bound explored more than {MAX_NODES} nodes; use backend='greedy'")
            value = float(reward.value(state, grid)[0])
            if self._final_ok(chosen) and value > best[1]:
                best[0], best[1] = list(chosen), value
            left, slots = self._capacity(chosen)
            if slots <= 0 or j >= n:
                return
            rest = cands[j:]
            extended = reward.value(reward.add(np.repeat(state, len(rest), axis=0), grid, pmf[rest]), grid)
            blocked = set().union(*(pairs.get(i, ()) for i in chosen)) if pairs else set()
            allowed = [k for k, arm in enumerate(rest) if arm not in blocked and self._fits(chosen, left, arm)]
            if slots == 1:  # the last arm: every one-arm completion is already scored
                if allowed and self._final_ok([*chosen, rest[0]]):
                    k = max(allowed, key=lambda k: extended[k])
                    if extended[k] > best[1]:
                        best[0], best[1] = [*chosen, rest[k]], float(extended[k])
                return
            sub = suffix_bounds(extended - value, value, slots) if submodular else None
            allowed_set = set(allowed)
            for c in range(j, n):
                # both bounds cover every completion from cands[c:] and shrink as c grows: stop at the first prune
                # prune within the contract's tolerance 1e-9 (1 + |optimum|): near-ties need not be explored
                cutoff = best[1] + 0.5 * tolerance(best[1]) if best[0] is not None else -np.inf
                if sub is not None and sub[c - j] <= cutoff:
                    return
                if envelope_bound(state, c, slots) <= cutoff:
                    return
                if c - j in allowed_set:
                    search([*chosen, cands[c]], reward.add(state, grid, pmf[cands[c]][None, :]), c + 1)

        search(chosen, state, 0)
        return None if best[0] is None else self._action(best[0])

    # ---------------------------------------------------------------- greedy
    def _greedy(self, query: IndexQuery, chosen: list[int], cands: list[int], state: Any) -> np.ndarray | None:
        reward, grid, pmf, pairs = self.reward, self.grid, query.pmf, query.restrictions.forbid_pairs
        while True:
            left, _ = self._capacity(chosen)
            blocked = {j for i, j in pairs if i in chosen} | {i for i, j in pairs if j in chosen}
            options = [c for c in cands if c not in chosen and c not in blocked and self._fits(chosen, left, c)]
            if not options:
                break
            trial = reward.add(np.repeat(state, len(options), axis=0), grid, pmf[options])
            k = int(np.argmax(reward.value(trial, grid)))
            chosen.append(options[k])
            state = trial[k : k + 1]
        if not self._final_ok(chosen):
            return None
        return self._action(chosen)

    def reset(self) -> None:
        """As :meth:`Oracle.reset`, for the inner linear oracle and the K-MAX MILP's models too."""
        super().reset()
        if self._linear_oracle is not None:
            self._linear_oracle.reset()
        if self.backend == "milp":
            self._milp.reset()

    def close(self) -> None:
        super().close()
        if self._linear_oracle is not None:
            self._linear_oracle.close()

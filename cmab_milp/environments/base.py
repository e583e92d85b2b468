"""The environment protocol: true reward distributions, exact truth, bulk feedback.

An :class:`Environment` holds the true distribution of the outcome vector
``y in R^d`` and answers two kinds of questions:

* **truth** (for regret): :meth:`~Environment.expected_reward`,
  :meth:`~Environment.expected_rewards` and :meth:`~Environment.optimal`, all
  exact, never sampled;
* **feedback** (for policies): :meth:`~Environment.sample` draws one round's
  semi-bandit feedback; :meth:`~Environment.observe` plays a whole *stretch*
  (``rounds`` rounds cycling through the rows of an action matrix) and
  returns only the sufficient statistics a policy asks for, as a
  :class:`FeedbackStats`.

Random draws follow one stream, round after round, and within a round the
chosen arms in increasing index order. :meth:`observe` draws the same stream in
bounded chunks, so a stretch played in bulk gives exactly the outcomes the same
rounds played one by one would give. With ``exact_stats=True`` an environment
may instead draw the statistics from their exact joint law (a binomial for a
Bernoulli sum, a normal for a Gaussian sum): same distribution, a different
stream, and cost independent of the number of rounds.

A subclass implements ``_base_draws`` (the stream: uniforms, standard normals,
...) and ``_outcomes`` (turning one action's block of base draws into
outcomes); a non-linear reward overrides ``expected_reward(s)`` and
``optimal``.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> env = cm.BernoulliArms([0.2, 0.9, 0.5], seed=0)
>>> stats = env.observe(np.array([[0, 1, 1]], bool), 1000, needs=("sum",))
>>> stats.counts.tolist()
[0, 1000, 1000]
>>> bool(abs(stats.sum[1] / 1000 - 0.9) < 0.05)
True
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..described import Described, ParameterError
from ..oracles import Oracle, make_oracle
from ..portable import gram, selected_sum, selected_sums, symmetric_sqrt
from ..spaces.base import ActionSpace, as_action, as_actions

__all__ = ["STATISTICS", "Environment", "FeedbackStats", "add_outcomes"]

#: The statistics a policy may ask :meth:`Environment.observe` for.
#: ``"sum"``: per arm, the sum of its outcomes; ``"outer"``: the sum over rounds of
#: ``y_t y_t^T`` restricted to the chosen arms (zero elsewhere); ``"pairs"``: the
#: sum over rounds of ``a_t a_t^T`` (how often two arms were observed together);
#: ``"hist"``: per arm, the count of each value of ``env.support``;
#: ``"samples"``: the raw outcomes, one row per round, NaN for arms not chosen.
#: The per-arm observation ``counts`` are always returned.
STATISTICS = frozenset({"sum", "outer", "pairs", "hist", "samples"})

_SUM_ONLY = frozenset({"sum"})

#: Base draws per chunk of :meth:`Environment.observe` (bounds its memory).
CHUNK_DRAWS = 1 << 18


@dataclass
class FeedbackStats:
    """Sufficient statistics of the feedback of ``rounds`` consecutive rounds.

    Fields a policy did not ask for are ``None``. ``counts[i]`` is how many of
    the rounds observed arm ``i``.

    >>> a = FeedbackStats.empty(2, ("sum",))
    >>> b = FeedbackStats(1, np.array([1, 0]), sum=np.array([0.5, 0.0]))
    >>> a.add(b).add(b).sum.tolist(), a.rounds
    ([1.0, 0.0], 2)
    """

    rounds: int
    counts: np.ndarray
    sum: np.ndarray | None = None
    outer: np.ndarray | None = None
    pairs: np.ndarray | None = None
    hist: np.ndarray | None = None
    samples: np.ndarray | None = None
    needs: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def empty(cls, d: int, needs: Iterable[str] = ("sum",), support_size: int = 0) -> FeedbackStats:
        """Zero statistics for ``d`` arms (the neutral element of :meth:`add`)."""
        needs = needs if isinstance(needs, frozenset) and needs <= STATISTICS else check_needs(needs)
        return cls(
            rounds=0,
            counts=np.zeros(d, np.int64),
            sum=np.zeros(d) if "sum" in needs else None,
            outer=np.zeros((d, d)) if "outer" in needs else None,
            pairs=np.zeros((d, d), np.int64) if "pairs" in needs else None,
            hist=np.zeros((d, support_size), np.int64) if "hist" in needs else None,
            samples=np.empty((0, d)) if "samples" in needs else None,
            needs=needs,
        )

    @classmethod
    def of_rounds(
        cls, actions: Any, outcomes: Any, needs: Iterable[str] = ("sum",), support: np.ndarray | None = None
    ) -> FeedbackStats:
        """The statistics of rounds given explicitly: row ``k`` of ``actions`` was played and saw ``outcomes[k]``.

        ``outcomes`` entries of arms outside an action are ignored (they may be
        NaN); a ``"hist"`` needs the sorted ``support`` and outcomes on it. The
        same accumulation as :meth:`Environment.observe`, so one round given here
        gives exactly the statistics the environment would give for it.

        >>> stats = FeedbackStats.of_rounds([[1, 1, 0]], [[0.5, 1.0, np.nan]], ("sum", "pairs"))
        >>> stats.sum.tolist(), stats.pairs[0].tolist()
        ([0.5, 1.0, 0.0], [1, 1, 0])
        """
        acts = np.atleast_2d(np.asarray(actions)).astype(bool)
        y = np.atleast_2d(np.asarray(outcomes, dtype=float))
        if acts.shape != y.shape:
            raise ValueError(f"actions and outcomes must have the same shape, got {acts.shape} and {y.shape}")
        needs = check_needs(needs)
        if "hist" in needs and support is None:
            raise ValueError("a 'hist' statistic needs the outcome support")
        n, d = acts.shape
        stats = cls.empty(d, needs, 0 if support is None else len(support))
        stats.rounds = n
        ints = acts.astype(np.int64)
        stats.counts = ints.sum(axis=0)
        if stats.pairs is not None:
            stats.pairs = ints.T @ ints
        rows = [] if stats.samples is not None else None
        for k in range(n):
            arms = np.flatnonzero(acts[k])
            values = y[k, arms][None, :]
            if arms.size and not np.isfinite(values).all():
                raise ValueError(f"outcomes of the played arms must be finite, round {k} has {values[0].tolist()}")
            add_outcomes(stats, arms, values, support)
            if rows is not None:
                row = np.full(d, np.nan)
                row[arms] = values[0]
                rows.append(row)
        if rows is not None:
            stats.samples = np.array(rows).reshape(n, d)
        return stats

    def add(self, other: FeedbackStats) -> FeedbackStats:
        """Add ``other`` (later rounds) into ``self`` in place; return ``self``."""
        self.rounds += other.rounds
        self.counts += other.counts
        for name in ("sum", "outer", "pairs", "hist"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and theirs is not None:
                mine += theirs
        if self.samples is not None and other.samples is not None:
            self.samples = np.concatenate([self.samples, other.samples])
        return self


class SquareRoots:
    """Cached symmetric square roots ``L`` of principal submatrices (``L @ L.T = matrix[arms][:, arms]``).

    PSD-safe (tiny negative eigenvalues are clipped); one factor per distinct arm set,
    so a held action's draws cost one matrix product.

    >>> roots = SquareRoots(np.array([[4.0, 0.0], [0.0, 9.0]]))
    >>> roots(np.array([0, 1])).diagonal().tolist()
    [2.0, 3.0]
    """

    def __init__(self, matrix: np.ndarray):
        self.matrix = matrix
        self._cache: dict[bytes, np.ndarray] = {}

    def __call__(self, arms: np.ndarray) -> np.ndarray:
        key = arms.tobytes()
        factor = self._cache.get(key)
        if factor is None:
            factor = symmetric_sqrt(self.matrix[np.ix_(arms, arms)])  # the same bits on every machine
            self._cache[key] = factor
        return factor


def add_outcomes(stats: FeedbackStats, arms: np.ndarray, y: np.ndarray, support: np.ndarray | None) -> None:
    """Add the ``"sum"``, ``"outer"`` and ``"hist"`` of an ``(n, len(arms))`` block of outcomes of ``arms``."""
    if stats.sum is not None:
        stats.sum[arms] += y.sum(axis=0)
    if stats.outer is not None:
        stats.outer[np.ix_(arms, arms)] += gram(y)
    if stats.hist is not None:
        codes = np.searchsorted(support, y)
        for col, arm in enumerate(arms):
            stats.hist[arm] += np.bincount(codes[:, col], minlength=len(support))


def check_needs(needs: Iterable[str]) -> frozenset[str]:
    """Validate a collection of statistic names against :data:`STATISTICS`."""
    if isinstance(needs, str):
        needs = (needs,)
    out = frozenset(needs)
    unknown = out - STATISTICS
    if unknown:
        raise ValueError(f"unknown statistics {sorted(unknown)}; choose from {sorted(STATISTICS)}")
    return out


def check_means(means: Any, *, unit: bool) -> np.ndarray:
    """Validate a 1-D finite mean vector (in [0, 1] if ``unit``)."""
    mu = np.asarray(means, dtype=float)
    if mu.ndim != 1 or mu.size == 0:
        raise ParameterError("means", f"means must be a non-empty 1-D array, got shape {mu.shape}")
    if not np.isfinite(mu).all():
        raise ParameterError("means", "means must be finite")
    if unit and ((mu < 0).any() or (mu > 1).any()):
        bad = int(np.flatnonzero((mu < 0) | (mu > 1))[0])
        raise ParameterError("means", f"means must lie in [0, 1]; means[{bad}] = {mu[bad]}")
    return mu


class Environment(Described, ABC):
    """A stochastic semi-bandit environment over ``d`` arms.

    Parameters
    ----------
    d : int
        Number of arms.
    seed : int or None
        Seeds the environment's own generator, used when no ``rng`` is passed.

    :meth:`get_params` returns the values the constructor was given (kept as given, since an
    environment stores them transformed: means as arrays, probabilities reordered), so
    ``type(env).from_params(env.get_params())`` draws the same outcomes.

    >>> import cmab_milp as cm
    >>> env = cm.BernoulliArms([0.2, 0.7], seed=3)
    >>> env.get_params()
    {'means': [0.2, 0.7], 'seed': 3}
    >>> cm.BernoulliArms.from_params(env.get_params()).means.tolist()
    [0.2, 0.7]
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Environment:
        env = super().__new__(cls)
        try:  # the constructor's arguments, as given (defaults filled in): get_params reads them back
            bound = inspect.signature(cls).bind(*args, **kwargs)
        except TypeError:  # a call the constructor refuses anyway, or unpickling (which restores them)
            return env
        bound.apply_defaults()
        env.__dict__["_given"] = dict(bound.arguments)
        return env

    def _param_value(self, name: str) -> Any:
        given = self.__dict__.get("_given", {})
        if name not in given:
            raise AttributeError(f"{type(self).__name__} was built without recording its parameter {name!r}")
        return given[name]

    #: Values an outcome can take (sorted), or ``None`` for continuous outcomes.
    support: np.ndarray | None = None
    #: True when arm ``i``'s outcome depends on its own base draw only, so that
    #: ``_sum_outcomes`` may be applied column by column to any block of draws
    #: (arm indices repeated, unsorted); lets a cycle of actions be summed at once.
    columnwise = False
    #: The statistics :meth:`_exact_stats` draws from their exact law (a stretch asking only
    #: for these skips the outcomes); empty: none, every outcome is drawn.
    _exact_needs: frozenset[str] = frozenset()

    def __init__(self, d: int, seed: int | None = None):
        self.d = int(d)
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ truth
    @property
    def means(self) -> np.ndarray:
        """The mean outcome of each arm, shape ``(d,)``."""
        return self._means

    def expected_reward(self, action: Any) -> float:
        """Exact expected reward of one action (linear: the sum of its arms' means)."""
        a = as_action(action, self.d)
        return selected_sum(a, self.means)

    def expected_rewards(self, actions: Any) -> np.ndarray:
        """Exact expected rewards of the rows of an ``(n, d)`` action matrix."""
        acts = self._check_actions(actions)
        return selected_sums(acts, self.means)

    def optimal(self, space: ActionSpace, oracle: str | Oracle = "highs") -> tuple[np.ndarray, float]:
        """An optimal action of ``space`` and its expected reward, through an exact oracle.

        The default assumes a linear expected reward (``means @ a``);
        environments with another reward override this hook.
        """
        if space.d != self.d:
            raise ValueError(f"space has d={space.d} arms but the environment has d={self.d}")
        solver = make_oracle(space, oracle) if isinstance(oracle, str) else oracle
        best = solver.argmax(self.means)
        if best is None:
            raise ValueError("the action space has no feasible action")
        return best, self.expected_reward(best)

    # --------------------------------------------------------------- feedback
    def sample(self, action: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """One round's outcomes: shape ``(d,)``, NaN for arms not in ``action``."""
        a = as_action(action, self.d)
        rng = self.rng if rng is None else rng
        arms = np.flatnonzero(a)
        y = np.full(self.d, np.nan)
        y[arms] = self._outcomes(arms, self._base_draws(rng, arms.size).reshape(1, -1))[0]
        return y

    def observe(
        self,
        actions: Any,
        rounds: int,
        rng: np.random.Generator | None = None,
        needs: Iterable[str] = ("sum",),
        exact_stats: bool = False,
    ) -> FeedbackStats:
        """Play ``rounds`` rounds, round ``j`` playing ``actions[j % p]``; return statistics.

        Parameters
        ----------
        actions : (p, d) bool array
            The cycle of actions (a single action may be passed as shape ``(d,)``).
        rounds : int
            Number of rounds to play (>= 0).
        rng : numpy Generator, optional
            The stream to draw from (default: the environment's own).
        needs : iterable of str
            Statistics to return, from :data:`STATISTICS`.
        exact_stats : bool
            Allow drawing the statistics from their exact law instead of the
            round-by-round stream, where the environment supports it.
        """
        acts = self._check_actions(actions)
        if acts.ndim == 1:
            acts = acts[None, :]
        if len(acts) == 0:
            raise ValueError("actions must hold at least one action")
        rounds = int(rounds)
        if rounds < 0:
            raise ValueError(f"rounds must be >= 0, got {rounds}")
        needs = needs if isinstance(needs, frozenset) and needs <= STATISTICS else check_needs(needs)
        if "hist" in needs and self.support is None:
            raise ValueError(f"{type(self).__name__} has continuous outcomes: ask for 'samples', not 'hist'")
        rng = self.rng if rng is None else rng
        if len(acts) == 1 and needs <= _SUM_ONLY and not exact_stats:
            return self._observe_held(acts[0], rounds, rng, needs)
        stats = FeedbackStats.empty(self.d, needs, 0 if self.support is None else len(self.support))
        stats.rounds = rounds
        if len(acts) == 1:
            per_action = np.array([rounds], np.int64)
            stats.counts = rounds * acts[0].astype(np.int64)
        else:
            per_action = np.full(len(acts), rounds // len(acts), np.int64)
            per_action[: rounds % len(acts)] += 1
            stats.counts = per_action @ acts.astype(np.int64)
        if "pairs" in needs:
            weighted = acts.T.astype(np.int64) * per_action
            stats.pairs = weighted @ acts.astype(np.int64)
        if rounds == 0:
            return stats
        if exact_stats and self._exact_needs and needs <= self._exact_needs:
            self._exact_stats(acts, per_action, rng, stats)
            return stats
        self._draw_stretch(acts, rounds, rng, needs, stats)
        return stats

    def _observe_held(
        self, action: np.ndarray, rounds: int, rng: np.random.Generator, needs: frozenset[str]
    ) -> FeedbackStats:
        """Fast path of :meth:`observe`: one action held, per-arm sums only (same stream)."""
        arms = np.flatnonzero(action)
        counts = np.zeros(self.d, np.int64)
        counts[arms] = rounds
        total = np.zeros(self.d) if "sum" in needs else None
        width = arms.size
        if width and rounds and total is not None:
            step = max(1, CHUNK_DRAWS // width)
            for start in range(0, rounds, step):
                n = min(step, rounds - start)
                total[arms] += self._sum_outcomes(arms, self._base_draws(rng, n * width).reshape(n, width))
        elif width and rounds:
            self._base_draws(rng, rounds * width)  # keep the stream aligned
        return FeedbackStats(rounds, counts, sum=total, needs=needs)

    # ------------------------------------------------------- subclass hooks
    def _sum_outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Column sums of ``_outcomes(arms, draws)`` (override when a shortcut exists)."""
        return self._outcomes(arms, draws).sum(axis=0)

    @abstractmethod
    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` consecutive base draws of the stream (uniforms, standard normals, ...)."""

    @abstractmethod
    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Outcomes of ``arms`` (sorted indices) from an ``(n, len(arms))`` block of base draws."""

    def _exact_stats(
        self, actions: np.ndarray, per_action: np.ndarray, rng: np.random.Generator, stats: FeedbackStats
    ) -> None:
        """Fill ``stats`` from the exact law of the statistics (asked only for those in ``_exact_needs``)."""
        raise NotImplementedError

    # -------------------------------------------------------------- helpers
    def _check_actions(self, actions: Any) -> np.ndarray:
        return as_actions(actions, self.d)

    def _draw_stretch(
        self,
        acts: np.ndarray,
        rounds: int,
        rng: np.random.Generator,
        needs: frozenset[str],
        stats: FeedbackStats,
    ) -> None:
        """Draw the stream cycle by cycle, in chunks of at most :data:`CHUNK_DRAWS` draws."""
        p = len(acts)
        arms = [np.flatnonzero(a) for a in acts]
        offsets = np.zeros(p + 1, np.int64)
        np.cumsum([x.size for x in arms], out=offsets[1:])
        per_cycle = int(offsets[-1])
        if per_cycle == 0:  # only empty actions: nothing observed, nothing drawn
            if stats.samples is not None:
                stats.samples = np.full((rounds, self.d), np.nan)
            return
        samples = [] if stats.samples is not None else None
        if self.columnwise and needs <= _SUM_ONLY and stats.sum is not None:
            self._sum_columns(np.concatenate(arms), rounds, per_cycle, offsets, rng, stats.sum)
            return
        cycles, rest = divmod(rounds, p)
        step = max(1, CHUNK_DRAWS // per_cycle)
        for start in range(0, cycles, step):
            n = min(step, cycles - start)
            block = self._base_draws(rng, n * per_cycle).reshape(n, per_cycle)
            self._accumulate(arms, offsets, block, p, needs, stats, samples)
        if rest:
            block = self._base_draws(rng, int(offsets[rest])).reshape(1, -1)
            self._accumulate(arms[:rest], offsets[: rest + 1], block, rest, needs, stats, samples)
        if samples is not None:
            stats.samples = np.concatenate(samples) if samples else np.empty((0, self.d))

    def _sum_columns(
        self,
        columns: np.ndarray,
        rounds: int,
        per_cycle: int,
        offsets: np.ndarray,
        rng: np.random.Generator,
        total: np.ndarray,
    ) -> None:
        """Per-arm outcome sums of a cycle for column-wise environments: one pass per chunk."""
        p = len(offsets) - 1
        cycles, rest = divmod(rounds, p)
        step = max(1, CHUNK_DRAWS // per_cycle)
        column_sums = np.zeros(per_cycle)
        for start in range(0, cycles, step):
            n = min(step, cycles - start)
            column_sums += self._sum_outcomes(columns, self._base_draws(rng, n * per_cycle).reshape(n, per_cycle))
        if rest:
            width = int(offsets[rest])
            column_sums[:width] += self._sum_outcomes(columns[:width], self._base_draws(rng, width).reshape(1, -1))
        total += np.bincount(columns, weights=column_sums, minlength=self.d)

    def _accumulate(
        self,
        arms: list[np.ndarray],
        offsets: np.ndarray,
        block: np.ndarray,
        p: int,
        needs: frozenset[str],
        stats: FeedbackStats,
        samples: list[np.ndarray] | None,
    ) -> None:
        n = block.shape[0]
        rows = np.full((n, p, self.d), np.nan) if samples is not None else None
        for j in range(p):
            idx = arms[j]
            if idx.size == 0:
                continue
            draws = block[:, offsets[j] : offsets[j + 1]]
            if needs <= _SUM_ONLY:
                if stats.sum is not None:
                    stats.sum[idx] += self._sum_outcomes(idx, draws)
                continue
            y = self._outcomes(idx, draws)
            add_outcomes(stats, idx, y, self.support)
            if rows is not None:
                rows[:, j, idx] = y
        if rows is not None:
            samples.append(rows.reshape(n * p, self.d))

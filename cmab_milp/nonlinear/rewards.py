"""Monotone reward functions ``r(a, y)`` and their exact expectations under independent arms.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

A reward maps an action ``a`` (bool, shape ``(d,)``) and outcomes ``y`` (shape
``(n, d)``, values in ``[0, 1]``) to ``n`` rewards. Expectations are taken
under a *product* of per-arm distributions given as a probability matrix
``pmf`` of shape ``(d, G)`` over an :class:`~cmab_milp.nonlinear.grid.OutcomeGrid`,
and are exact:

- sum-based rewards ``g(sum_{i in a} y_i)`` (``"linear"``, ``"sqrt_sum"``,
  ``"threshold:THETA"``, ``"exp_utility:LAMBDA"``): the distribution of the sum
  by convolution over the achievable sums ``k/q`` of the grid's lattice;
- ``"max"`` (K-MAX): order statistics, ``P(max <= v) = prod_i F_i(v)``;
- any other monotone callable: enumeration of the product of the selected
  arms' supports (only values with positive probability), refused past
  :data:`MAX_PRODUCT` outcome vectors.

Two constants describe a reward, and a user reward declares both:

- the **bound** ``L`` (``0 <= r <= L`` for actions of at most ``m`` arms,
  :meth:`Reward.bound`), the factor of the regret bounds of Theorems 5, 6 and
  8: linear ``m``, sqrt_sum ``sqrt(m)``, max ``1``, threshold ``1``,
  exp_utility ``1 - exp(-LAMBDA m)``; a callable's is what the user declares
  (``nan`` otherwise). No algorithm needs it: it is reported, not used.
- the **Lipschitz constant** of Assumption 2 (Appendix A.10,
  ``|r(a, y) - r(a, y')| <= C sum_{i in a} |y_i - y'_i|``,
  :attr:`Reward.lipschitz`), which sets Algorithm 8's number of intervals
  ``s = ceil(C sqrt(m T))``: linear ``1``, max ``1``, exp_utility ``LAMBDA``;
  sqrt_sum (infinite slope at 0) and threshold (a jump) have none
  (``None``), and the library then uses ``C = 1``. A declared constant is
  checked on random outcome pairs (:func:`check_lipschitz`) and a wrong one
  refused.

Example
-------
>>> import numpy as np
>>> grid = OutcomeGrid([0.0, 1.0])
>>> pmf = np.array([[0.5, 0.5], [0.5, 0.5]])          # two fair coins
>>> a = np.array([[True, True]])
>>> make_reward("max").expected(a, grid, pmf).tolist()   # P(at least one 1)
[0.75]
>>> round(float(make_reward("sqrt_sum").expected(a, grid, pmf)[0]), 6)  # (2*1 + sqrt 2)/4
0.853553
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from ..portable import dot, exp, matvec, selected_sums
from ..spaces.base import as_actions
from .grid import OutcomeGrid
from .reward_checks import check_lipschitz, check_monotone

__all__ = [
    "MAX_PRODUCT",
    "CallableReward",
    "LinearReward",
    "MaxReward",
    "Reward",
    "SumReward",
    "check_lipschitz",
    "check_monotone",
    "check_pmf",
    "make_reward",
    "padded_index",
]

#: Grids with more values than this convolve sums by FFT (round-off ~1e-15) instead of a loop.
_FFT_FROM = 24

#: Largest product support (outcome vectors per action) that callable rewards enumerate.
MAX_PRODUCT = 2_000_000


def _declared(name: str, value: Any) -> float | None:
    """A declared constant: ``None`` or a finite number > 0 (else ``ValueError`` naming it)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a finite number > 0 or None, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number > 0 or None, got {value!r}") from None
    if not (np.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0 or None, got {value!r}")
    return x


def padded_index(actions: np.ndarray) -> np.ndarray:
    """``(n, width)`` table of each action's arms; unused slots hold ``-1``.

    >>> padded_index(np.array([[True, False, True], [False, True, False]])).tolist()
    [[0, 2], [1, -1]]
    """
    sizes = actions.sum(axis=1)
    width = max(1, int(sizes.max()) if len(sizes) else 1)
    index = np.full((len(actions), width), -1, dtype=np.intp)
    rows, cols = np.nonzero(actions)
    slot = np.arange(len(rows)) - np.repeat(np.r_[0, np.cumsum(sizes)[:-1]], sizes).astype(np.intp)
    index[rows, slot] = cols
    return index


def _as_actions(actions: Any, d: int) -> np.ndarray:
    a = as_actions(actions, d)
    return a[None, :] if a.ndim == 1 else a


def check_pmf(pmf: Any, grid: OutcomeGrid) -> np.ndarray:
    """``pmf`` as a float matrix of shape ``(d, len(grid))`` whose rows are probability vectors, else ``ValueError``.

    >>> check_pmf([[0.25, 0.75]], OutcomeGrid([0.0, 1.0])).tolist()
    [[0.25, 0.75]]
    """
    p = np.asarray(pmf, dtype=float)
    if p.ndim != 2 or p.shape[1] != len(grid):
        raise ValueError(f"pmf must have shape (d, {len(grid)}) to match the grid, got {p.shape}")
    if not np.isfinite(p).all() or (p < -1e-12).any():
        raise ValueError("pmf must hold finite, non-negative probabilities")
    if np.abs(p.sum(axis=1) - 1.0).max() > 1e-9:
        raise ValueError("every row of pmf must sum to 1")
    return p


_padded_index, _check_pmf = padded_index, check_pmf  # the names other modules used before they were public


class Reward(ABC):
    """A reward ``r(a, y)`` that is monotone in ``y`` (Assumption 1 of the paper)."""

    name: str = "reward"
    #: Whether ``a -> E[r(a, Y)]`` is submodular (greedy oracles rely on it).
    submodular: bool = False
    #: The Lipschitz constant of Assumption 2 (``None``: none known; Algorithm 8 then uses 1).
    lipschitz: float | None = None

    @abstractmethod
    def realised(self, action: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Rewards of one bool action for each outcome row of ``y`` (shape ``(n, d)`` -> ``(n,)``)."""

    @abstractmethod
    def bound(self, m: int) -> float:
        """``L``: the largest reward of an action with at most ``m`` arms."""

    def accumulates(self, grid: OutcomeGrid) -> bool:
        """Whether :meth:`start` / :meth:`add` / :meth:`value` work on ``grid``.

        True means the reward depends only on the outcomes of the selected arms,
        symmetrically, and adding an arm never lowers it (outcomes are >= 0): the
        structure that the branch-and-bound and greedy oracles exploit.
        """
        return False

    def expected(self, actions: Any, grid: OutcomeGrid, pmf: Any) -> np.ndarray:
        """Exact ``E[r(a, Y)]`` for each row ``a`` of ``actions``, ``Y_i ~ pmf[i]`` independent."""
        p = _check_pmf(pmf, grid)
        acts = _as_actions(actions, p.shape[0])
        return self._expected(acts, grid, p)

    def _expected(
        self, actions: np.ndarray, grid: OutcomeGrid, pmf: np.ndarray, index: np.ndarray | None = None
    ) -> np.ndarray:
        """:meth:`expected` without validation; ``index`` is ``_padded_index(actions)`` if known."""
        if self.accumulates(grid):
            index = _padded_index(actions) if index is None else index
            state = self.start(grid, len(actions))
            for slot in range(index.shape[1]):
                arms = index[:, slot]
                active = arms >= 0
                state = self.add(state, grid, pmf[np.where(active, arms, 0)], active)
            return self.value(state, grid)
        return np.array([_enumerate_expectation(self, a, grid, pmf) for a in actions])

    # Accumulator protocol (only when ``accumulates(grid)``): a batch of n partial
    # actions, each extended one arm at a time.
    def start(self, grid: OutcomeGrid, n: int) -> np.ndarray:
        raise NotImplementedError

    def add(self, state: np.ndarray, grid: OutcomeGrid, rows: np.ndarray, active: Any = None) -> np.ndarray:
        raise NotImplementedError

    def value(self, state: np.ndarray, grid: OutcomeGrid) -> np.ndarray:
        raise NotImplementedError

    def add_copies(self, state: np.ndarray, grid: OutcomeGrid, row: np.ndarray, copies: int) -> np.ndarray:
        """``copies`` independent arms with the same pmf ``row`` (shape ``(1, G)``) added to ``state``."""
        for _ in range(copies):
            state = self.add(state, grid, row)
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _enumerate_expectation(reward: Reward, action: np.ndarray, grid: OutcomeGrid, pmf: np.ndarray) -> float:
    """``E[r(a, Y)]`` by listing the product of the selected arms' positive-probability values."""
    arms = np.flatnonzero(action)
    if arms.size == 0:
        return float(reward.realised(action, np.zeros((1, pmf.shape[0])))[0])
    supports = [np.flatnonzero(pmf[i] > 0) for i in arms]
    size = int(np.prod([len(s) for s in supports], dtype=float))
    if size > MAX_PRODUCT:
        raise ValueError(
            f"the expected reward of {reward.name!r} needs {size} outcome vectors for this action "
            f"(more than MAX_PRODUCT={MAX_PRODUCT}); use a sum- or max-based reward or fewer values"
        )
    combos = np.array(list(itertools.product(*supports)), dtype=np.intp).reshape(size, len(arms))
    y = np.zeros((size, pmf.shape[0]))
    y[:, arms] = grid.values[combos]
    prob = np.prod(pmf[arms[None, :], combos], axis=1)
    return dot(prob, np.asarray(reward.realised(action, y), dtype=float))


class SumReward(Reward):
    """``r(a, y) = g(sum_{i in a} y_i)`` for a non-decreasing ``g`` on ``[0, inf)``.

    Parameters
    ----------
    g : callable
        Vectorised, non-decreasing (checked on ``[0, 64]``).
    name : str
    bound : callable ``m -> L``, optional
        Default ``g(m)`` (``g >= 0`` is checked, and ``g`` is non-decreasing).
    concave : bool
        Declare ``g`` concave: the expected reward is then submodular in the
        action (``E[g(sum)]`` with non-negative outcomes), as greedy oracles need.
    lipschitz : float, optional
        The Lipschitz constant of ``g`` (Assumption 2's constant for the sum);
        a finite number > 0, or ``None`` when ``g`` has none.

    >>> r = SumReward(np.sqrt, "sqrt_sum")
    >>> r.realised(np.array([True, False, True]), np.array([[0.25, 1.0, 0.0]])).tolist()
    [0.5]
    >>> SumReward(lambda s: 2 * np.asarray(s), "double", lipschitz=2.0).lipschitz
    2.0
    """

    def __init__(
        self,
        g: Callable[[np.ndarray], np.ndarray],
        name: str = "sum",
        bound: Callable | None = None,
        concave: bool = False,
        lipschitz: float | None = None,
    ):
        if not callable(g):
            raise ValueError(f"g must be callable, got {type(g).__name__}")
        probe = np.linspace(0.0, 64.0, 6401)
        gv = np.asarray(g(probe), dtype=float)
        if gv.shape != probe.shape or not np.isfinite(gv).all():
            raise ValueError(f"g of reward {name!r} must map an array of sums to finite values of the same shape")
        if (np.diff(gv) < -1e-12).any():
            raise ValueError(f"g of reward {name!r} must be non-decreasing (the reward must be monotone)")
        if gv[0] < -1e-12:
            raise ValueError(f"g of reward {name!r} must be >= 0 (rewards lie in [0, L])")
        self.g = g
        self.name = name
        self._g_values: dict[tuple[int, Any], np.ndarray] = {}
        self._bound = bound
        self.submodular = bool(concave)
        self.lipschitz = _declared(f"the Lipschitz constant of reward {name!r}", lipschitz)

    def realised(self, action: np.ndarray, y: np.ndarray) -> np.ndarray:
        y = np.atleast_2d(np.asarray(y, dtype=float))
        return np.asarray(self.g(y[:, np.asarray(action, bool)].sum(axis=1)), dtype=float)

    def bound(self, m: int) -> float:
        return float(self._bound(m)) if self._bound is not None else float(self.g(np.array([float(m)]))[0])

    def accumulates(self, grid: OutcomeGrid) -> bool:
        return grid.denominator is not None

    def start(self, grid: OutcomeGrid, n: int) -> np.ndarray:
        state = np.zeros((n, 1))
        state[:, 0] = 1.0  # the empty sum is 0 with probability 1
        return state

    def add(self, state: np.ndarray, grid: OutcomeGrid, rows: np.ndarray, active: Any = None) -> np.ndarray:
        units = grid.units
        width = state.shape[1]
        size = width + int(units[-1])
        if len(units) > _FFT_FROM:
            # many values: one batched FFT convolution instead of a loop over them
            dense = np.zeros((len(rows), int(units[-1]) + 1))
            dense[:, units] = rows
            n_fft = 1 << (size - 1).bit_length()  # the power of two >= size, in integers
            new = np.fft.irfft(np.fft.rfft(state, n_fft) * np.fft.rfft(dense, n_fft), n_fft)[:, :size]
            np.maximum(new, 0.0, out=new)
        else:
            new = np.zeros((state.shape[0], size))
            for k, u in enumerate(units):
                new[:, u : u + width] += state * rows[:, k : k + 1]
        if active is not None:
            keep = ~np.asarray(active, bool)
            if keep.any():
                new[keep] = 0.0
                new[keep, :width] = state[keep]
        return new

    def value(self, state: np.ndarray, grid: OutcomeGrid) -> np.ndarray:
        key = (state.shape[1], grid.denominator)
        g_values = self._g_values.get(key)
        if g_values is None:  # g on the grid of sums, once per width (a user's g may be costly)
            g_values = self._g_values[key] = np.asarray(self.g(np.arange(state.shape[1]) / grid.denominator), float)
        return matvec(state, g_values)


class LinearReward(SumReward):
    """``r(a, y) = sum_{i in a} y_i``; its expectation is the sum of means (any grid)."""

    def __init__(self):
        super().__init__(lambda s: np.asarray(s, dtype=float), "linear", bound=float, concave=True, lipschitz=1.0)

    def _expected(
        self, actions: np.ndarray, grid: OutcomeGrid, pmf: np.ndarray, index: np.ndarray | None = None
    ) -> np.ndarray:
        return selected_sums(actions, matvec(pmf, grid.values))


class MaxReward(Reward):
    """K-MAX: ``r(a, y) = max_{i in a} y_i`` (0 for the empty action); ``L = 1``."""

    name = "max"
    submodular = True
    lipschitz = 1.0

    def realised(self, action: np.ndarray, y: np.ndarray) -> np.ndarray:
        y = np.atleast_2d(np.asarray(y, dtype=float))
        sel = y[:, np.asarray(action, bool)]
        return sel.max(axis=1) if sel.shape[1] else np.zeros(len(y))

    def bound(self, m: int) -> float:
        return 1.0

    def accumulates(self, grid: OutcomeGrid) -> bool:
        return True

    def start(self, grid: OutcomeGrid, n: int) -> np.ndarray:
        # column 0: P(max < smallest grid value), columns 1..G: P(max <= v_k)
        return np.ones((n, len(grid) + 1))

    def add(self, state: np.ndarray, grid: OutcomeGrid, rows: np.ndarray, active: Any = None) -> np.ndarray:
        factor = np.concatenate([np.zeros((len(rows), 1)), np.minimum(np.cumsum(rows, axis=1), 1.0)], axis=1)
        if active is not None:
            factor[~np.asarray(active, bool)] = 1.0
        return state * factor

    def value(self, state: np.ndarray, grid: OutcomeGrid) -> np.ndarray:
        return matvec(np.diff(state, axis=1), grid.values)

    def add_copies(self, state: np.ndarray, grid: OutcomeGrid, row: np.ndarray, copies: int) -> np.ndarray:
        if copies <= 0:
            return state
        factor = _integer_power(np.concatenate([[0.0], np.minimum(np.cumsum(row[0]), 1.0)]), int(copies))
        return state * factor


def _integer_power(base: np.ndarray, n: int) -> np.ndarray:
    """``base ** n`` (``n >= 1``) by repeated squaring with correctly rounded products (``np.power`` differs by CPU).

    >>> _integer_power(np.array([0.5, 3.0]), 5).tolist()
    [0.03125, 243.0]
    """
    result, square = None, np.asarray(base, float)
    while n:
        if n & 1:
            result = square.copy() if result is None else result * square
        n >>= 1
        if n:
            square = square * square
    return result


class CallableReward(Reward):
    """A user reward ``f(a, y)``: ``a`` bool ``(d,)``, ``y`` ``(n, d)`` -> ``(n,)``, monotone in ``y``.

    Its expectation enumerates the product support, so keep actions small.

    Parameters
    ----------
    f : callable
    name : str, optional
        Default: ``f.__name__``.
    bound : float, optional
        ``L`` with ``0 <= f <= L`` (reported by :meth:`bound`; not used by the algorithms).
    lipschitz : float, optional
        Assumption 2's constant ``C`` (``|f(a, y) - f(a, y')| <= C sum_{i in a} |y_i - y'_i|``):
        Algorithm 8 then uses ``s = ceil(C sqrt(m T))`` intervals instead of the guess ``C = 1``.
        The policies check it on random outcome pairs (:func:`check_lipschitz`).
        Both constants must be finite numbers > 0 (or ``None``).

    >>> r = CallableReward(lambda a, y: y[:, a].min(axis=1), name="min", bound=1.0, lipschitz=1.0)
    >>> r.realised(np.array([True, True]), np.array([[0.2, 0.7]])).tolist()
    [0.2]
    >>> CallableReward(lambda a, y: y[:, a].sum(axis=1), lipschitz=0)
    Traceback (most recent call last):
    ...
    ValueError: the Lipschitz constant of reward '<lambda>' must be a finite number > 0 or None, got 0
    """

    def __init__(
        self,
        f: Callable[[np.ndarray, np.ndarray], Any],
        name: str | None = None,
        bound: float | None = None,
        lipschitz: float | None = None,
    ):
        if not callable(f):
            raise ValueError(f"reward must be a name or a callable, got {type(f).__name__}")
        self.f = f
        self.name = name or getattr(f, "__name__", "callable")
        self._bound = _declared(f"the bound of reward {self.name!r}", bound)
        self.lipschitz = _declared(f"the Lipschitz constant of reward {self.name!r}", lipschitz)

    def realised(self, action: np.ndarray, y: np.ndarray) -> np.ndarray:
        y = np.atleast_2d(np.asarray(y, dtype=float))
        out = np.asarray(self.f(np.asarray(action, bool), y), dtype=float)
        if out.shape != (len(y),):
            raise ValueError(
                f"reward callable {self.name!r} must map (action (d,), y (n, d)) to shape (n,), "
                f"got shape {out.shape} for n={len(y)}"
            )
        return out

    def bound(self, m: int) -> float:
        """The declared ``L`` (``nan`` when none was declared)."""
        return float("nan") if self._bound is None else self._bound


_NAMED: dict[str, Callable[[], Reward]] = {
    "linear": LinearReward,
    "sqrt_sum": lambda: SumReward(np.sqrt, "sqrt_sum", bound=lambda m: float(np.sqrt(m)), concave=True),
    "max": MaxReward,
}


def _parametrised(name: str, arg: str) -> Reward:
    try:
        x = float(arg)
    except ValueError:
        raise ValueError(f"reward {name!r} needs a number after ':', got {arg!r}") from None
    if not np.isfinite(x):
        raise ValueError(f"reward {name!r} needs a finite number after ':', got {arg!r}")
    if name == "threshold":
        if not x > 0:
            raise ValueError(f"threshold must be > 0, got {x}")
        return SumReward(lambda s: (np.asarray(s) >= x - 1e-9).astype(float), f"threshold:{arg}", bound=lambda m: 1.0)
    if name == "exp_utility":
        if not x > 0:
            raise ValueError(f"exp_utility needs LAMBDA > 0, got {x}")
        return SumReward(lambda s: 1.0 - exp(-x * np.asarray(s)), f"exp_utility:{arg}", concave=True, lipschitz=x)
    raise ValueError(f"unknown reward {name!r}")


def make_reward(spec: Any) -> Reward:
    """A :class:`Reward` from a name, ``"threshold:THETA"``, ``"exp_utility:LAMBDA"``, a callable or a Reward.

    ``"threshold:THETA"`` is ``1{sum >= THETA}`` (a K-SUM-style success
    probability); ``"exp_utility:LAMBDA"`` is the expected utility ``1 - exp(-LAMBDA sum)``.

    >>> make_reward("threshold:1.5").name
    'threshold:1.5'
    """
    if isinstance(spec, Reward):
        return spec
    if isinstance(spec, str):
        if spec in _NAMED:
            return _NAMED[spec]()
        name, sep, arg = spec.partition(":")
        if sep and name in ("threshold", "exp_utility"):
            return _parametrised(name, arg)
        raise ValueError(
            f"unknown reward {spec!r}; use one of {sorted(_NAMED)}, 'threshold:THETA', "
            "'exp_utility:LAMBDA', a callable f(a, y) or a Reward"
        )
    if callable(spec):
        return CallableReward(spec)
    raise ValueError(f"reward must be a name, a callable or a Reward, got {type(spec).__name__}")

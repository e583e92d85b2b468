"""Combinatorial Thompson sampling (CTS; Wang and Chen, ICML 2018): one linear query per round with sampled means.

Each round draws ``theta_i`` from arm ``i``'s posterior and plays
``oracle.argmax(theta)``. Two posteriors (constant ``prior``):

* ``"beta"`` (outcomes in [0, 1]): ``theta_i ~ Beta(1 + S_i, 1 + n_i - S_i)``
  with the Bernoulli trick of Agrawal and Goyal (COLT 2012): an outcome ``y``
  counts as a success with probability ``y``. The coin of arm ``i`` for the
  outcome of round ``t`` is a fixed function of the learner's stream and
  ``(t, i)``, so a batch of late outcomes observed in any order gives the same
  posterior. An outcome outside [0, 1] raises ``ValueError``.
* ``"gaussian"`` (unbounded outcomes): ``theta_i ~ N(mu_hat_i, sigma^2 / n_i)``,
  the posterior of a flat prior with known noise scale ``sigma`` (constant,
  default 1; Agrawal and Goyal's Gaussian sampling for [0, 1] outcomes uses
  ``1 / (n_i + 1)``, i.e. ``sigma = 1``).

Unobserved arms. Under the Beta(1, 1) prior a sample is finite, so the
library's rule for infinite indices (contract section 4) does not apply: an
unobserved arm competes with its prior sample, as in Wang and Chen's
algorithm. Under the flat Gaussian prior its posterior variance is infinite:
the rule applies (actions holding the most unobserved arms first, as CUCB).

Randomness. ``seed`` (an int) fixes the stream; with ``seed=None``,
:func:`~cmab_milp.simulate` gives the learner a stream derived from its own
``seed`` (a different one from the environment's), so a problem file's seeds
are independent runs, reproducible on every executor. Outside ``simulate`` an
unseeded learner draws fresh entropy. The generator's state is part of the
saved learner, so a loaded learner draws the same samples.

Rare-oracle versions: none. Batched Thompson sampling is analysed for
multi-armed bandits (Kalkanli and Ozgur, 2021; Karbasi, Mirrokni and Shadravan,
NeurIPS 2021: O(log T) batches keep the regret order) and for linear bandits
with rarely switching posteriors, but no analysis covers combinatorial
semi-bandits with an exact oracle, so no such variant is shipped. CTS with late
and batched feedback (``select`` / ``observe``) samples from the posterior of
what has been observed.

Example
-------
>>> import cmab_milp as cm
>>> policy = cm.CTS(cm.Cardinality(6, 2), 2000, oracle="enumerate")
>>> result = cm.simulate(policy, cm.BernoulliArms([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0), 2000, seed=1)
>>> int(result.queries[-1]), bool(result.regret[-1] < 0.05 * 2000)
(2000, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..described import ParameterError
from ..environments.base import FeedbackStats
from ..oracles import Oracle
from ..spaces.base import ActionSpace, as_action
from .base import Index, check_positive
from .outcome_bounds import Bounds, bounds_param, check_outcome_bounds, clip_to_bounds
from .schedules import EveryRound

__all__ = ["CTS", "PRIORS", "PosteriorIndex", "coin_rows", "outcome_coins"]

#: The posteriors CTS samples from.
PRIORS = ("beta", "gaussian")
#: Spawn key separating a learner's stream from an environment seeded with the same number.
_STREAM_KEY = (0x435453,)
_MASK64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """SplitMix64's finaliser on a 64-bit int."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _coins(stream: np.ndarray, t: int, arms: Sequence[int]) -> list[float]:
    base = _mix(_mix(int(stream[0]) ^ (int(t) & _MASK64)) ^ int(stream[1]))
    return [(_mix((base + (i + 1) * 0x9E3779B97F4A7C15) & _MASK64) >> 11) * 2.0**-53 for i in arms]


_U64 = np.uint64
_MIX1, _MIX2, _GOLDEN = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB), _U64(0x9E3779B97F4A7C15)


def _mix_array(x: np.ndarray) -> np.ndarray:
    """:func:`_mix` on every entry of a uint64 array (numpy's uint64 products wrap mod 2^64, as the masks do)."""
    x = x ^ (x >> _U64(30))
    x *= _MIX1
    x ^= x >> _U64(27)
    x *= _MIX2
    return x ^ (x >> _U64(31))


def coin_rows(stream: np.ndarray, rounds: np.ndarray, d: int) -> np.ndarray:
    """``outcome_coins(stream, t, range(d))`` for each round ``t`` of ``rounds``, as a ``(len(rounds), d)`` array.

    The same numbers as :func:`outcome_coins`, computed for many rounds at once (uint64 arithmetic in numpy).

    >>> stream = np.array([1, 2], np.uint64)
    >>> bool((coin_rows(stream, np.array([5, 9]), 4)[1] == outcome_coins(stream, 9, range(4))).all())
    True
    """
    t = np.asarray(rounds, np.int64).astype(_U64)
    base = _mix_array(_mix_array(_U64(stream[0]) ^ t) ^ _U64(stream[1]))
    arms = np.arange(1, d + 1, dtype=_U64) * _GOLDEN  # (i + 1) * golden mod 2^64
    return (_mix_array(base[:, None] + arms[None, :]) >> _U64(11)).astype(np.float64) * 2.0**-53


def outcome_coins(stream: np.ndarray, t: int, arms: Sequence[int]) -> np.ndarray:
    """Uniforms in [0, 1) for the outcomes of ``arms`` at round ``t``: a fixed function of ``stream``, ``t``, arm.

    >>> stream = np.array([1, 2], np.uint64)
    >>> u = outcome_coins(stream, 5, [0, 3])
    >>> bool((u == outcome_coins(stream, 5, [0, 3])).all()), bool(u[1] == outcome_coins(stream, 5, [3])[0])
    (True, True)
    """
    return np.array(_coins(stream, t, arms))


def _stream(entropy: Any) -> np.ndarray:
    """Two 64-bit words naming a learner's stream, from a seed or entropy (``None``: fresh)."""
    return np.random.SeedSequence(entropy, spawn_key=_STREAM_KEY).generate_state(2, np.uint64)


class PosteriorIndex(Index):
    """Per-arm posteriors and the sampled-means query of CTS.

    ``successes`` holds the Bernoulli-trick successes (``prior="beta"``),
    ``sums`` the outcome sums (``"gaussian"``). The generator (``rng_words``,
    its PCG64 state as six uint64 words) and the coin ``stream`` are part of the
    state.

    >>> index = PosteriorIndex(2, prior="beta", stream=np.array([1, 2], np.uint64))
    >>> index.add_successes(np.array([3.0, 0.0]))
    >>> index.update(FeedbackStats(4, np.array([4, 1]), sum=np.array([3.0, 0.0])))
    >>> index.posterior()
    (array([4., 1.]), array([2., 2.]))
    """

    needs: ClassVar[frozenset[str]] = frozenset({"sum"})
    _state_fields: ClassVar[tuple[str, ...]] = ("sums", "successes", "stream", "rng_words")

    def __init__(
        self,
        d: int,
        prior: str = "beta",
        sigma: float = 1.0,
        stream: np.ndarray | None = None,
        outcome_bounds: Bounds = None,
    ):
        self.prior = check_prior(prior)
        #: The known range of every outcome: samples are clipped to it (:mod:`.outcome_bounds`).
        self.outcome_bounds = check_outcome_bounds(outcome_bounds)
        self.sigma = check_positive("sigma", sigma)
        self.stream = _stream(None) if stream is None else np.asarray(stream, np.uint64).copy()
        self._everyone = np.ones(d, bool)
        self._shape, self._gamma = np.empty(2 * d), np.empty(2 * d)  # buffers of the Beta draws
        self._alpha, self._beta = self._shape[:d], self._shape[d:]
        self._gamma_a, self._gamma_b = self._gamma[:d], self._gamma[d:]
        #: Coins of the rounds ``_coin_start`` to ``_coin_start + len(_coin_block) - 1`` (a cache of
        #: :func:`coin_rows`: a pure function of the stream, not state).
        self._coin_block: np.ndarray | None = None
        self._coin_start = 0
        super().__init__(d)

    def reset(self) -> None:
        super().reset()
        self.sums = np.zeros(self.d)
        self.successes = np.zeros(self.d)
        self.rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(w) for w in self.stream])))

    def set_state(self, state: Mapping[str, Any]) -> None:
        super().set_state(state)
        self._coin_block = None  # the stream may have changed: its coins too

    def coin_row(self, t: int) -> np.ndarray:
        """The coins of every arm for the outcomes of round ``t`` (``outcome_coins(stream, t, range(d))``).

        Computed for a block of rounds at once (about 4,096 coins) and cached: CTS asks round after round.
        """
        block, start = self._coin_block, self._coin_start
        if block is not None and start <= t < start + len(block):
            return block[t - start]
        if block is not None and t < start:  # a late outcome of an earlier round: that row alone
            return coin_rows(self.stream, np.array([t]), self.d)[0]
        rounds = max(1, 4096 // self.d)
        self._coin_block, self._coin_start = coin_rows(self.stream, np.arange(t, t + rounds), self.d), t
        return self._coin_block[0]

    @property
    def observed(self) -> np.ndarray:
        """Arms whose sample is infinite-variance no more: all under the Beta prior, else those observed."""
        if self.prior == "beta":
            return self._everyone
        return self.counts > 0

    @property
    def rng_words(self) -> np.ndarray:
        """The generator's PCG64 state as six uint64 words (saved with the learner)."""
        state = self.rng.bit_generator.state
        s, inc = state["state"]["state"], state["state"]["inc"]
        return np.array(
            [s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, state["has_uint32"], state["uinteger"]], np.uint64
        )

    @rng_words.setter
    def rng_words(self, words: np.ndarray) -> None:
        words = np.asarray(words)
        if words.shape != (6,) or words.dtype.kind != "u" or int(words[4]) > 1 or int(words[5]) >= 2**32:
            raise ValueError(f"PosteriorIndex state field 'rng_words' is not a PCG64 state: {words!r:.80}")
        w = [int(x) for x in words]
        self.rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
            "has_uint32": w[4],
            "uinteger": w[5],
        }

    def update(self, stats: FeedbackStats) -> None:
        super().update(stats)
        self.sums += stats.sum

    def add_successes(self, successes: np.ndarray) -> None:
        """Add Bernoulli-trick successes (``prior="beta"``; :meth:`update` adds the counts)."""
        self.successes += successes

    def check_outcomes(self, stats: FeedbackStats) -> None:
        """Refuse outcomes outside [0, 1] under the Beta prior (``ValueError``)."""
        if self.prior != "beta":
            return
        bad = (stats.sum < 0) | (stats.sum > stats.counts)  # arms not observed have sum 0 and count 0
        if bad.any():
            arm = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"prior='beta' needs outcomes in [0, 1] (the Bernoulli trick); arm {arm} observed "
                f"{stats.sum[arm] / stats.counts[arm]:g}: use prior='gaussian' for unbounded outcomes"
            )

    def round_stats(self, action: np.ndarray, y: np.ndarray) -> FeedbackStats:
        stats = super().round_stats(action, y)
        self.check_outcomes(stats)
        return stats

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, beta)`` of the Beta posteriors, or ``(mean, std)`` of the Gaussian ones (std inf if unobserved)."""
        if self.prior == "beta":
            return 1.0 + self.successes, 1.0 + self.counts - self.successes
        seen = self.counts > 0
        mean = np.divide(self.sums, self.counts, out=np.zeros(self.d), where=seen)
        std = np.divide(self.sigma, np.sqrt(self.counts), out=np.full(self.d, np.inf), where=seen)
        return mean, std

    def sample(self) -> np.ndarray:
        """One draw of every arm's mean from its posterior (unobserved Gaussian arms: their mean 0, unused).

        Beta: ``2 d`` standard gammas in one call, arms' ``alpha`` then their ``beta`` (the draw order
        every version of CTS used); Gaussian: ``d`` standard normals. Clipped to ``outcome_bounds`` when
        given (the same draws: clipping only moves samples outside the known range to its ends).
        """
        theta = self._draw()
        return theta if self.outcome_bounds is None else clip_to_bounds(theta, self.outcome_bounds)

    def _draw(self) -> np.ndarray:
        if self.prior == "beta":  # Beta(a, b) = G_a / (G_a + G_b), two standard gammas (what rng.beta does, faster)
            np.add(self.successes, 1.0, out=self._alpha)
            np.subtract(self.counts, self.successes, out=self._beta)
            self._beta += 1.0
            self.rng.standard_gamma(self._shape, out=self._gamma)
            g = self._gamma_a
            return g / (g + self._gamma_b)
        seen = self.counts > 0
        mean = np.divide(self.sums, self.counts, out=np.zeros(self.d), where=seen)
        scale = np.divide(self.sigma, np.sqrt(self.counts), out=np.zeros(self.d), where=seen)  # 0: unobserved
        z = self.rng.standard_normal(self.d)
        return mean + scale * z

    def query(self, t: int, sign: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        if sign < 0:
            raise ValueError("CTS samples optimistic queries only (sign=+1)")
        return {"kind": "linear", "weights": self.sample(), "include": include, "exclude": exclude}


def check_prior(prior: Any) -> str:
    """``prior`` if it names a posterior of :data:`PRIORS`, else a :class:`~cmab_milp.described.ParameterError`."""
    if not isinstance(prior, str) or prior not in PRIORS:
        raise ParameterError("prior", f"prior must be one of {', '.join(map(repr, PRIORS))}, got {prior!r}")
    return prior


def check_seed(seed: Any) -> int | None:
    """``seed`` as an int >= 0, or None."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError("seed", f"seed must be an integer >= 0 or None, got {seed!r}")
    return int(seed)


class CTS(EveryRound):
    """Combinatorial Thompson sampling: ``argmax`` of one posterior sample per round (module docstring).

    Parameters
    ----------
    space, T, oracle
        As every policy (default oracle ``"auto"``).
    prior : ``"beta"`` or ``"gaussian"``
        The posterior (module docstring); default ``"beta"``.
    seed : int >= 0 or None
        The sampling stream (``None``: derived from :func:`~cmab_milp.simulate`'s seed).
    sigma : float > 0
        Noise scale of the Gaussian posterior ``N(mu_hat_i, sigma^2 / n_i)`` (default 1).
    outcome_bounds : (low, high) or None
        The known range of every arm's outcome; samples are clipped to it
        (:mod:`~cmab_milp.policies.outcome_bounds`). Default ``None``: not clipped.

    >>> import cmab_milp as cm
    >>> CTS(cm.Cardinality(3, 1), 10, oracle="enumerate", seed=4).params
    {'prior': 'beta', 'seed': 4, 'sigma': 1.0}
    """

    name = "CTS"

    def __init__(
        self,
        space: ActionSpace,
        T: int | None,
        *,
        prior: str = "beta",
        oracle: str | Oracle = "auto",
        seed: int | None = None,
        sigma: float = 1.0,
        outcome_bounds: Bounds = None,
    ):
        prior, seed, sigma = check_prior(prior), check_seed(seed), check_positive("sigma", sigma)
        self._entropy: Any = seed
        self._coin_round: int | None = None
        super().__init__(space, T, oracle=oracle, prior=prior, seed=seed, sigma=sigma, **bounds_param(outcome_bounds))

    def start_run(self, seed: int | None) -> None:
        """Called by :func:`~cmab_milp.simulate` before it resets the policy: an unseeded CTS takes the run's seed."""
        if self.params["seed"] is None:
            self._entropy = seed

    def _unseen(self, exclude: Iterable[int]) -> np.ndarray:
        """No arm waits for a first play under the Beta prior (every sample is finite); else as every policy."""
        if self.params["prior"] == "beta":
            return self._nobody
        return super()._unseen(exclude)

    def reset(self) -> None:
        super().reset()
        self._nobody = np.zeros(self.d, bool)  # read only: the unobserved arms under the Beta prior

    def make_index(self) -> PosteriorIndex:
        stream = _stream(self._entropy)
        return PosteriorIndex(
            self.d,
            prior=self.params["prior"],
            sigma=self.params["sigma"],
            stream=stream,
            outcome_bounds=self.params.get("outcome_bounds"),
        )

    def observe(self, action: Any, rewards: Any) -> None:
        waiting = self.outstanding.get(as_action(action, self.d).tobytes())
        self._coin_round = waiting[0] if waiting else None  # the round the outcome belongs to (its coins)
        try:
            super().observe(action, rewards)
        finally:
            self._coin_round = None

    def _learn(self, stats: FeedbackStats) -> None:
        index = self.index
        if index.prior == "beta":
            if stats.rounds == 1:  # (the hot path: whole-vector operations, the coins of a cached block)
                y = stats.sum  # the outcome of each played arm, 0 elsewhere (where no coin, in [0, 1), is below)
                if self.d <= 64:  # a short list's min and max cost less than numpy's reductions
                    ys = y.tolist()
                    low, high = min(ys), max(ys)
                else:
                    low, high = y.min(), y.max()
                if low < 0.0 or high > 1.0:
                    index.check_outcomes(stats)  # raises, naming the arm
                t = self.t if self._coin_round is None else self._coin_round
                index.successes += index.coin_row(t) < y
                index.update(stats)
                return
            index.check_outcomes(stats)
            if np.array_equal(stats.sum, np.round(stats.sum)):  # 0/1 outcomes: the successes themselves
                successes = stats.sum.copy()
            else:
                raise ValueError("CTS(prior='beta') takes fractional outcomes one round at a time")
            index.add_successes(successes)
        index.update(stats)

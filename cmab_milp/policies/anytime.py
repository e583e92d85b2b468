"""Unknown horizons (``T=None``): an anytime epoch threshold and a squaring schedule of horizon guesses.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Every policy accepts ``T=None``. The every-round baselines (CUCB, OLS-UCB-C,
SDCB) and AROQ-C's pair epochs never needed ``T`` (their radii use ``log t``,
AROQ-C's epochs double); the rest is handled in two ways.

**AROQ and AROQ-GR: an anytime threshold.** Algorithm 1 ends arm ``i``'s epoch
when its count in the epoch reaches ``1 + sqrt(T m n_prev / d)``. With
``T=None`` the threshold uses, at round ``t``, ``g(t) = t max(1, ln t)^p``
(:func:`anytime_scale`) in place of ``T``, with ``p`` AROQ's ``anytime_log_power`` (default 1/2;
AROQ-GR: ``p = 1``, ``g(t) = t ln t``). Statistics and epochs are never
restarted, and no extra query is made when the guess grows: a held action is
re-planned (not re-asked) when its hold, computed with ``g`` of the round it
started, runs out before the threshold of the current round is reached.

*Regret.* The proof of Theorem 1 uses the threshold only as an upper bound on
an epoch's length: an epoch of arm ``i`` with ``n_prev`` rounds before it has
``n_cur <= 1 + sqrt(g m n_prev / d)`` rounds, all played with a radius at most
``sqrt(C log T / n_prev)``, so it costs at most about
``sqrt(C g m log T / d)``. Since ``g(t) <= T ln T`` for every ``t <= T``, the
known-``T`` bound holds with ``T`` replaced by ``T ln T`` inside the square
root of the per-epoch cost: ``O(sqrt(d m T log T) sqrt(log T) E)`` with ``E``
the epochs per arm -- one extra ``sqrt(log T)`` factor in the bound. In the
Figure 2 setting the measured regret is 1.06-1.23x the known-``T`` policy's
for ``T = 10^4 .. 10^7`` (holds are shorter early on, which offsets the
factor); see ``bench/unknown_horizon.py``.

*A smaller scale* (AROQ's option ``anytime_log_power = p``: ``g(t) = t max(1, ln t)^p``). The late
holds of ``g = t ln t`` are up to ``sqrt(ln T)`` times the known-``T`` ones, and cost regret where the
gaps are small: ``bench/unknown_horizon.py`` (5 seeds, regret unknown / known, queries unknown / known)
measured ``p = 1`` at 1.21 / 1.09 / 1.23 for ``T = 10^4 / 10^5 / 10^6`` on the Figure 2 setting
(``m = 3``), 0.95 / 1.35 / 2.13 with ``m = 8``, and 1.08 / 1.24 / 1.18 on a random instance
(``Cardinality(30, 5)``, means ``Unif[0.2, 0.8]`` from seed 7), queries 1.2-2.8x the known-``T``
count. ``p = 1/2`` measured 0.94 / 0.80 / 0.98, 0.96 / 0.87 / 1.11 and 0.81 / 0.89 / 0.69, queries
1.8-4.8x (still ``O(d log T)``: see below); ``g(t) = 2t`` 0.86 / 0.74 / 1.14, 0.88 / 0.84 / 0.92 and
0.72 / 0.84 / 0.51 with 2-6x the queries. The bound's extra factor is ``(log T)^(p/2)``. The default is
``p = 1/2`` (since December 2026; it was ``p = 1``): within 1.3x of the known-``T`` regret on every
instance measured, with fewer queries than ``g(t) = 2t``. Learners saved with the old default continue
with ``p = 1`` (``AROQ.saved_defaults``); a problem file sets ``anytime_log_power = 1``
to keep the fewer queries of ``t ln t``.

*Queries.* An arm played at most ``N`` times has epochs growing at least
geometrically once ``n_prev`` is large: with ``t >= N``, the next epoch ends
no earlier than ``sqrt(t ln t m n_prev / d)``, a ratio of about ``(m/d) ln t``
over the previous one when the arm is played in every round (the worst case).
So each arm has ``O(log T / log((m/d) log T))`` epochs -- fewer than the
doubling trick's ``O(log T)`` but more than the known-``T`` policy's
``O(log log T)`` (with ``p``: a ratio of about ``(m/d) (ln t)^p``, and for any ``p >= 0`` at least the
root ``r > 1`` of ``r (r - 1) = m / d``, so ``O(log T)`` epochs an arm); the query count ``d`` times
that is measured at 1.2-1.8x the known-``T`` count for ``T = 10^4 .. 10^7`` (Figure 2 setting). A squaring
schedule of guesses would give ``O(d (log log T)^2)`` queries but holds tuned
for a horizon up to ``T^2``: measured regret 2.3x (``T = 10^4``) to 31x
(``T = 10^6``) the known-``T`` policy's, so it was rejected for AROQ.

**SROQ, SROQ-C, SROQ-GR: growing guesses with restarts.** The grid of
Algorithm 2 needs the horizon. With ``T=None`` the policy plays phases:
phase ``k`` covers rounds ``(H_{k-1}, H_k]`` with ``H_0 = 2**8`` (the first
phase starts at round 1) and ``H_{k+1} = ceil(H_k^(3/2))`` (:func:`next_horizon`).
Each phase is a fresh run of the scheduled elimination for horizon ``H_k``
on its own rounds -- grid ``sroq_grid(H_k - H_{k-1}, M_k)`` shifted to the
phase, radius ``log H_k``, every arm (and pair) active again -- *keeping all
statistics*. SROQ-C's warm-up is played once, before the first phase.

*Adaptivity.* Phase ``k`` uses ``M_k = max(2, ceil(log2 log2 H_k))`` epochs
(one adaptivity round each), and ``log2 log2 H_k ~ 3 + 0.585 k``; a run of
``T`` rounds ends in phase ``K <= 1 + log_{3/2}(log2(T) / 8)``, so the
adaptivity is ``sum_{k <= K} M_k = O((log log T)^2)`` and the queries at most
``d + 1`` times that (the known-``T`` policy: ``O(log log T)`` and
``O(d log log T)``).

*Regret.* Phase ``k`` is a known-horizon run over its ``H_k - H_{k-1}`` rounds
that starts with at least as much data as a fresh one, so its regret is at
most the known-horizon bound ``R(H_k)``; ``sum_k R(H_k)`` is dominated by the
last phase, whose guess is at most ``T^(3/2)``: the worst-case bound is
``R(T^(3/2))``, i.e. ``O(T^(3/4))`` up to logs instead of ``O(sqrt(T))``: the
price of an unknown horizon with ``O((log log T)^2)`` adaptivity (an anytime
``O(sqrt T)`` would need ``O(log T)`` batches, the doubling trick). Why it
is not seen in practice: the kept statistics eliminate most arms at the first
epoch of a new phase, and the radius at level ``H_k`` is at most ``sqrt(3/2)``
times the previous phase's. Squaring (``H_{k+1} = H_k^2``) was measured too:
regret 2.4x the known-``T`` policy's at ``T = 10^7`` (a guess of ``4.3e9``),
against at most 0.92x with ``3/2`` (``bench/unknown_horizon.py``).

>>> [first_horizon(), next_horizon(first_horizon()), next_horizon(2**30), next_horizon(2**52)]
[256, 4096, 35184372088832, 9007199254740992]
>>> round(anytime_scale(1000))
6908
"""

from __future__ import annotations

import math

from ..untrusted_limits import MAX_HORIZON  # the largest horizon accepted (one value for every reader)

__all__ = ["FIRST_HORIZON", "MAX_HORIZON", "anytime_scale", "first_horizon", "next_horizon"]

#: The first horizon guess of an unknown-horizon policy.
FIRST_HORIZON = 2**8


def first_horizon() -> int:
    """The first horizon guess ``H_0``."""
    return FIRST_HORIZON


def next_horizon(horizon: int) -> int:
    """The guess after ``horizon``: ``ceil(horizon^(3/2))`` (exact), capped at :data:`MAX_HORIZON`."""
    if horizon >= MAX_HORIZON:
        raise ValueError(f"more than 2**53 = {MAX_HORIZON} rounds played: beyond the supported horizon")
    cube = horizon**3
    root = math.isqrt(cube)
    return min(root + (root * root != cube), MAX_HORIZON)


def anytime_scale(t: int, log_power: float = 1.0) -> float:
    """``g(t) = t max(1, ln t)^log_power``: what AROQ's threshold uses in place of ``T`` when the horizon is
    unknown (``log_power``: AROQ's ``anytime_log_power``).

    >>> anytime_scale(1000, 0.5) == 1000 * math.log(1000) ** 0.5
    True
    """
    return t * max(1.0, math.log(t)) ** log_power

"""Off-policy value of a frozen target from a log: IPS, self-normalised IPS, pseudo-inverse, direct, doubly robust.

Each estimator writes the estimate as an average over the log's ``n`` rounds
(or a smooth function of averages) and its interval at ``level`` from the
central limit theorem: ``value +- z * se`` with ``z`` the normal quantile and
``se`` the standard deviation over rounds of the per-round terms (for the ratio
and regression estimators, of their linearisation: the delta method / the
sandwich form) divided by ``sqrt(n)``. Rounds are taken as independent draws
from a logging policy that does not look at the outcomes of the same round.

A target that needs an arm the log never includes is refused: no estimator
can value it without assuming that arm's mean.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> rng = np.random.default_rng(0)
>>> space = cm.Cardinality(4, 2, exact=True)
>>> acts = space.enumerate()                                   # 6 actions, played uniformly
>>> means = np.array([0.1, 0.4, 0.6, 0.9])
>>> played = acts[rng.integers(0, len(acts), 4000)]
>>> rounds, arms = np.nonzero(played)
>>> rewards = rng.binomial(1, means[arms]).astype(float)
>>> log = cm.LoggedFeedback(space, rounds, arms, rewards, inclusion=np.full(rounds.size, 0.5))
>>> est = cm.offline_value(np.array([0, 0, 1, 1], bool), log, estimator="ips")
>>> est.low < 1.5 < est.high, est.n
(True, 4000)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import portable
from .._threads import blas_single_thread
from .table import LoggedFeedback
from .targets import Target, as_target

__all__ = ["ESTIMATORS", "OfflineValue", "offline_value"]


@dataclass(frozen=True)
class OfflineValue:
    """An off-policy estimate: ``value`` with its ``level`` interval ``[low, high]`` from ``n`` rounds.

    Examples
    --------
    >>> import cmab_milp as cm
    >>> space = cm.Cardinality(2, 1, exact=True)
    >>> log = cm.LoggedFeedback(space, [0, 1, 2, 3], [0, 1, 0, 1], [1.0, 0.0, 0.0, 1.0], inclusion=[0.5] * 4)
    >>> estimate = cm.offline_value([True, False], log)
    >>> estimate.value, estimate.n, estimate.estimator, estimate.level
    (0.5, 4, 'ips', 0.95)
    """

    value: float
    low: float
    high: float
    n: int
    estimator: str
    level: float
    se: float
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain values, ready for ``json.dump``."""
        return {**self.__dict__, "notes": list(self.notes)}

    def __repr__(self) -> str:
        return (
            f"OfflineValue({self.estimator}: {self.value:.6g}, {self.level:.0%} interval "
            f"[{self.low:.6g}, {self.high:.6g}], n={self.n:,})"
        )


def _mean_terms(terms: np.ndarray) -> tuple[float, np.ndarray]:
    value = float(terms.mean())
    return value, terms - value


def ips(target: Target, log: LoggedFeedback, notes: list[str]) -> tuple[float, np.ndarray]:
    """Inverse propensity scoring: ``mean_t sum_{i in A_t} pi_i y_ti / p_ti`` (per arm), or whole actions.

    Assumptions: a linear reward (the value of an action is the sum of its arms' means); known
    inclusion probabilities ``p_ti > 0`` for every arm the target may play (when the log has none, each
    arm's inclusion frequency stands for them, which assumes a logging policy that ignores time and
    context). Unbiased under these; its variance grows with ``pi_i / p_ti``. When the log holds only
    whole-action propensities, the whole-action form ``mean_t r_t pi(A_t) / mu(A_t)`` is used instead:
    it assumes nothing about the reward's form but needs the target's actions and the logged ones to
    coincide often.

    References
    ----------
    Horvitz and Thompson (1952), J. Am. Stat. Assoc. 47: 663-685.
    Li, Chu, Langford and Wang (2011), WSDM: unbiased offline evaluation of bandit algorithms.
    """
    if log.inclusion is None and log.action_propensity is not None and target.actions is not None:
        notes.append("whole-action IPS: the log has action propensities, not per-arm inclusion")
        probs = _target_probs_of_logged(target, log)
        return _mean_terms(probs[log.action_ids] * log.round_rewards() / log.action_propensity)
    p, logged = log.inclusion_or_frequency()
    if not logged:
        notes.append("inclusion not logged: each arm's inclusion frequency in the log stands for it")
    pi = target.inclusion
    return _mean_terms(np.bincount(log.round_of_row, weights=pi[log.arm] * log.reward / p, minlength=log.n))


def _ratio(target: Target, log: LoggedFeedback, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """``sum_i pi_i mu_i`` with ``mu_i`` the ``weights``-weighted mean of arm ``i``; linearised per round."""
    total = np.bincount(log.arm, weights=weights * log.reward, minlength=log.d)
    mass = np.bincount(log.arm, weights=weights, minlength=log.d)
    seen = mass > 0
    mu = np.where(seen, total / np.where(seen, mass, 1.0), 0.0)
    pi = target.inclusion
    value = portable.dot(pi[seen], mu[seen])
    scale = np.where(seen, log.n / np.where(seen, mass, 1.0), 0.0)
    row = pi[log.arm] * weights * (log.reward - mu[log.arm]) * scale[log.arm]
    return value, np.bincount(log.round_of_row, weights=row, minlength=log.n)


def snips(target: Target, log: LoggedFeedback, notes: list[str]) -> tuple[float, np.ndarray]:
    """Self-normalised IPS, per arm: ``mu_i = sum_t w_ti y_ti / sum_t w_ti`` with ``w = 1 / p``; ``sum_i pi_i mu_i``.

    Assumptions: linear reward; known inclusion probabilities (as for IPS). Slightly biased (a ratio),
    consistent, and bounded by the observed outcomes, so far less variable than IPS when some
    ``p_ti`` are small. The interval linearises the ratio (delta method).

    References
    ----------
    Swaminathan and Joachims (2015), NeurIPS: the self-normalized estimator for counterfactual learning.
    """
    p, logged = log.inclusion_or_frequency()
    if not logged:
        notes.append("inclusion not logged: each arm's inclusion frequency in the log stands for it")
    return _ratio(target, log, 1.0 / p)


def dm(target: Target, log: LoggedFeedback, notes: list[str]) -> tuple[float, np.ndarray]:
    """Direct method: ``sum_i pi_i mu_i`` with ``mu_i`` the plain mean of arm ``i``'s logged outcomes.

    Assumptions: linear reward; each arm's outcomes have the same law whether or not (and with whichever
    other arms) the logging policy played it, i.e. a stationary, non-contextual problem. Needs no
    propensities; biased when the logging policy's choices correlate with the outcomes (contexts, drift).
    The interval linearises the per-arm means (delta method).

    References
    ----------
    Dudik, Langford and Li (2011), ICML: doubly robust policy evaluation and learning (the direct method).
    """
    return _ratio(target, log, np.ones(log.n_rows))


def dr(target: Target, log: LoggedFeedback, notes: list[str]) -> tuple[float, np.ndarray]:
    """Doubly robust: the direct method's per-arm means plus the IPS-weighted residuals of the logged outcomes.

    ``mean_t [sum_i pi_i m_i + sum_{i in A_t} pi_i (y_ti - m_i) / p_ti]`` with ``m_i`` the direct method's
    mean. Assumptions: linear reward; unbiased when either the propensities are right or the per-arm means
    are (hence "doubly"); variance at most that of IPS when the means are good.

    References
    ----------
    Dudik, Langford and Li (2011), ICML: doubly robust policy evaluation and learning.
    """
    p, logged = log.inclusion_or_frequency()
    if not logged:
        notes.append("inclusion not logged: each arm's inclusion frequency in the log stands for it")
    counts = log.arm_counts()
    total = np.bincount(log.arm, weights=log.reward, minlength=log.d)
    m = np.where(counts > 0, total / np.maximum(counts, 1), 0.0)
    pi = target.inclusion
    correction = np.bincount(log.round_of_row, weights=pi[log.arm] * (log.reward - m[log.arm]) / p, minlength=log.n)
    return _mean_terms(portable.dot(pi, m) + correction)


def pseudoinverse(target: Target, log: LoggedFeedback, notes: list[str]) -> tuple[float, np.ndarray]:
    """Pseudo-inverse estimator for a whole-action reward: ``q^T Gamma^+ (1/n) sum_t a_t r_t``.

    ``r_t`` is round ``t``'s whole-action reward (the sum of its rows), ``q`` the target's per-arm
    inclusion and ``Gamma = (1/n) sum_t a_t a_t^T`` the second moment of the logged actions (estimated from
    the log; Swaminathan et al. use the logging policy's, which coincides as the log grows: the estimate is
    then the least-squares fit of ``r_t`` on the arms played). Assumptions: the expected whole-action
    reward is linear in the arms (per-arm feedback is not used, so it also serves logs that record one
    reward per round); ``q`` lies in the span of the logged actions (refused otherwise: e.g. two arms the
    log always plays together cannot be valued apart). The interval is the sandwich (robust) form.

    References
    ----------
    Swaminathan, Krishnamurthy, Agarwal, Dudik, Langford, Jose and Zitouni (2017), NeurIPS: off-policy
    evaluation for slate recommendation.
    """
    played = sp.csr_matrix((np.ones(log.n_rows), (log.round_of_row, log.arm)), shape=(log.n, log.d))
    gamma = (played.T @ played).toarray() / log.n
    r = log.round_rewards()
    b = np.bincount(log.arm, weights=r[log.round_of_row], minlength=log.d) / log.n
    with blas_single_thread():  # a small matrix: one thread is faster on a busy machine, and the same everywhere
        pinv = np.linalg.pinv(gamma, hermitian=True)
    q = target.inclusion
    g = pinv @ q
    if np.abs(gamma @ g - q).max() > 1e-8 * (1.0 + np.abs(q).max()):
        raise ValueError(
            "pseudoinverse: the target's arms are not identified by the logged actions (its inclusion vector "
            "is outside the span of the logged actions, e.g. arms always played together); use a per-arm "
            "estimator ('ips', 'snips', 'dm', 'dr') on semi-bandit feedback"
        )
    beta = pinv @ b
    value = float(g @ b)
    ga = np.bincount(log.round_of_row, weights=g[log.arm], minlength=log.n)
    fitted = np.bincount(log.round_of_row, weights=beta[log.arm], minlength=log.n)
    return value, ga * (r - fitted)


#: Estimator name -> function(target, log, notes) -> (value, per-round influence terms with mean 0).
ESTIMATORS: dict[str, Callable[[Target, LoggedFeedback, list[str]], tuple[float, np.ndarray]]] = {
    "ips": ips,
    "snips": snips,
    "pseudoinverse": pseudoinverse,
    "dm": dm,
    "dr": dr,
}


def _target_probs_of_logged(target: Target, log: LoggedFeedback) -> np.ndarray:
    """The target's probability of each distinct logged action; refuses target actions the log never plays."""
    keys = {row.tobytes(): j for j, row in enumerate(log.actions)}
    probs = np.zeros(len(log.actions))
    for action, p in zip(target.actions, target.probs, strict=True):
        j = keys.get(action.tobytes())
        if j is None:
            if p > 0:
                raise ValueError(
                    f"the target plays {log.space.labels_of(action)}, an action the log never plays: "
                    "whole-action IPS cannot value it (log per-arm inclusion to use per-arm IPS)"
                )
            continue
        probs[j] += p
    return probs


def offline_value(target: Any, log: LoggedFeedback, *, estimator: str = "ips", level: float = 0.95) -> OfflineValue:
    """The estimated value (expected reward per round) of a frozen ``target`` on ``log``'s problem.

    Parameters
    ----------
    target : bool action, list of (action, probability) pairs, or float per-arm inclusion vector
    log : LoggedFeedback
    estimator : ``"ips"``, ``"snips"``, ``"pseudoinverse"``, ``"dm"`` or ``"dr"``
        See each function of this module for its assumptions.
    level : float in (0, 1)
        Coverage of the interval ``[low, high]`` (normal approximation over rounds).

    Raises ``ValueError`` for a target needing an arm the log never includes.

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> space = cm.Cardinality(3, 2, exact=True)
    >>> rng = np.random.default_rng(0)
    >>> actions = space.enumerate()[rng.integers(3, size=3000)]  # uniform logging: each arm w.p. 2/3
    >>> rounds, arms = np.nonzero(actions)
    >>> rewards = (rng.random(rounds.size) < np.array([0.2, 0.5, 0.8])[arms]).astype(float)
    >>> log = cm.LoggedFeedback(space, rounds, arms, rewards, inclusion=np.full(rounds.size, 2 / 3))
    >>> estimate = cm.offline_value(np.array([False, True, True]), log)  # true value 1.3
    >>> estimate.estimator, estimate.n, bool(estimate.low < 1.3 < estimate.high)
    ('ips', 3000, True)
    """
    if not isinstance(log, LoggedFeedback):
        raise ValueError(f"log must be a LoggedFeedback, got {type(log).__name__}")
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; choose from {', '.join(map(repr, ESTIMATORS))}")
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    tgt = as_target(target, log.space)
    never = np.flatnonzero((tgt.inclusion > 0) & (log.arm_counts() == 0))
    if never.size:
        shown = [log.space.label_of(int(i)) for i in never[:10]]
        more = f" and {never.size - 10} more" if never.size > 10 else ""
        raise ValueError(
            f"the target needs arms the log never includes: {shown}{more}; no estimator can value them "
            "from this log (their means are unknown): log them, or value a target without them"
        )
    notes: list[str] = []
    value, influence = ESTIMATORS[estimator](tgt, log, notes)
    n = log.n
    se = float(np.sqrt(np.sum(influence**2) / (n - 1)) / np.sqrt(n)) if n > 1 else float("inf")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return OfflineValue(value, value - z * se, value + z * se, n, estimator, float(level), se, tuple(notes))

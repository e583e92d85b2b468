"""The policy protocol, and the seam between *when* to ask the oracle and *what* to ask.

A policy is split in two parts that meet at :class:`Index`:

* a **schedule** decides when the oracle is asked and what is played in between.
  The three schedules of the paper live once, in
  :mod:`cmab_milp.policies.schedules`: :class:`~.schedules.EveryRound` (the
  baselines CUCB, OLS-UCB-C, SDCB), :class:`~.schedules.AdaptiveEpochs`
  (Algorithms 1, 3, 5, 6: per-arm epochs, an update when an arm's count in its
  epoch reaches ``1 + sqrt(T m |T_i(tau_i - 1)| / d)``) and
  :class:`~.schedules.ScheduledElimination` (Algorithms 2, 4, 7: a fixed grid of
  epochs, one representative per surviving arm, elimination, round robin);
* an **index** (estimator + confidence index) absorbs feedback statistics and
  turns them into oracle queries: the linear family asks
  ``argmax(weights, ...)``; the covariance family asks
  ``argmax_norm(mu, M, f, sign, ...)``; the general-reward family asks its own
  distribution oracle. The index never decides when to ask.

How a new family plugs in
-------------------------
Write a subclass of :class:`Index` (``needs``, ``update``, ``query`` and
``evaluate`` for both signs, or ``upper_query``, ``lower_query``,
``upper_values``, ``lower_values``; override ``ask`` only if its queries go to
something other than ``oracle.argmax_batch``), then one short class per
schedule::

    class AROQCov(AdaptiveEpochs):
        name = "AROQ-C"
        unit = "pair"          # epochs per pair (i, j) instead of per arm

        def __init__(self, space, T, *, oracle="highs", C=1.5, warmup_cycles=None):
            super().__init__(space, T, oracle=oracle, C=check_positive("C", C), warmup_cycles=warmup_cycles)

        def make_index(self):
            return CovarianceIndex(self.space.d, C=self.params["C"])

Everything else (epochs per arm or pair, thresholds, holds, the optional
warm-up, representatives, elimination, round robin, infinite indices of
unobserved arms, bulk play) is shared; see
:class:`~cmab_milp.policies.schedules.EpochSchedule`.

The protocol (:class:`Policy`, :class:`Stretch`, bulk play, online use) is in
:mod:`.protocol`, indices and :class:`IndexPolicy` in :mod:`.index`, argument
checks in :mod:`cmab_milp.policies.checks`; this module re-exports them.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> policy = cm.AROQ(cm.Cardinality(4, 2), T=100, oracle="enumerate")
>>> stretch = policy.plan()
>>> stretch.actions.shape, stretch.length
((1, 4), 1)
"""

from .anytime import MAX_HORIZON
from .checks import check_horizon, check_nonnegative, check_positive, check_unit_interval
from .index import Index, IndexPolicy, unobserved_query
from .protocol import Policy, Stretch

__all__ = [
    "MAX_HORIZON",
    "Index",
    "IndexPolicy",
    "Policy",
    "Stretch",
    "check_horizon",
    "check_nonnegative",
    "check_positive",
    "check_unit_interval",
    "unobserved_query",
]

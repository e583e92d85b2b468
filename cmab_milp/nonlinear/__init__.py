"""General (non-linear) monotone rewards learned through per-arm outcome distributions.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Section 5 and Appendix A.7-A.10 of the paper: rewards and their exact
expectations (:mod:`.rewards`), the outcome grid and Algorithm 8's
discretisation (:mod:`.grid`), optimistic / pessimistic distributions
(:mod:`.distributions`) and the oracles that maximise an expected reward under a
product of per-arm distributions (:mod:`.oracles`), registered as the backends
``dist_<backend>`` (:mod:`.backends`).

>>> import cmab_milp.nonlinear as gr
>>> gr.make_reward("sqrt_sum").bound(4), gr.make_reward("max").lipschitz
(2.0, 1.0)
"""

from .distributions import confidence_radius, empirical_pmf, optimistic_pmf, pessimistic_pmf
from .grid import OutcomeGrid, discretisation_grid, discretise, n_intervals
from .oracles import BACKENDS, DistributionOracle, IndexQuery
from .rewards import (
    CallableReward,
    LinearReward,
    MaxReward,
    Reward,
    SumReward,
    check_lipschitz,
    check_monotone,
    make_reward,
)

__all__ = [
    "BACKENDS",
    "CallableReward",
    "DistributionOracle",
    "IndexQuery",
    "LinearReward",
    "MaxReward",
    "OutcomeGrid",
    "Reward",
    "SumReward",
    "check_lipschitz",
    "check_monotone",
    "confidence_radius",
    "discretisation_grid",
    "discretise",
    "empirical_pmf",
    "make_reward",
    "n_intervals",
    "optimistic_pmf",
    "pessimistic_pmf",
]

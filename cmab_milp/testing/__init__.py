"""Conformance checks for oracle backends, action spaces and policies.

In the manner of MathOptInterface's ``Test.runtests`` and scikit-learn's
``check_estimator``: each check runs a fixed list of named cases against an
independent truth (brute force over ``space.enumerate()``, ``scipy.optimize.milp``
on the formulation) and raises ``AssertionError`` naming each failing case,
the space, the query and what was expected. A case a backend declares it does
not answer (see :class:`~cmab_milp.oracles.core.registry.Capabilities`) is skipped,
not failed. Each check returns ``{case: "passed" | "skipped: why"}``.

* :func:`check_oracle` judges a registered backend through its public methods;
* :func:`check_space` checks that ``contains``, ``enumerate``, ``m`` and the
  formulation describe the same set;
* :func:`check_policy` plays a policy class and checks feasibility, counting,
  reproducibility, reuse and bulk play;
* :func:`registered_kinds` lists what to run them on: every registered backend, space kind and
  policy kind, each that cannot run here with the reason (so a suite skips it saying why).

Every check runs all its cases and reports every failure. The same cases come one at a time from
:func:`oracle_checks`, :func:`space_checks` and :func:`policy_checks` (``Check`` s: a name and a
callable), and :func:`parametrize_with_checks` makes one pytest item of each (scikit-learn's
convention), so one failing case does not hide the others::

    @parametrize_with_checks({"my_backend": oracle_checks("my_backend")})
    def test_my_backend(check):
        check()

Example
-------
>>> import cmab_milp as cm
>>> from cmab_milp.testing import check_oracle, check_space
>>> report = check_oracle("enumerate", spaces={"card": cm.Cardinality(5, 2)})
>>> report["near_ties"], report["norm"]
('passed', 'passed')
>>> check_space(cm.Cardinality(4, 2))["formulation"]
'passed'
"""

from .common import Check, check_params, parametrize_with_checks, run_checks, small_spaces
from .oracle_kit import ORACLE_CASES, check_oracle, oracle_checks
from .policy_kit import POLICY_CASES, check_policy, policy_checks, policy_setup
from .registered import Registered, registered_kinds
from .space_kit import SPACE_CASES, check_space, space_checks

__all__ = [
    "ORACLE_CASES",
    "POLICY_CASES",
    "SPACE_CASES",
    "Check",
    "Registered",
    "check_oracle",
    "check_params",
    "check_policy",
    "check_space",
    "oracle_checks",
    "parametrize_with_checks",
    "policy_checks",
    "policy_setup",
    "registered_kinds",
    "run_checks",
    "small_spaces",
    "space_checks",
]

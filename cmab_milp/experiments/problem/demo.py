"""A small problem for examples: four Bernoulli arms, choose two, one CUCB policy.

The doctests of running, summarising and verifying start from it, so that each
shows its own step rather than the same problem written out again.

>>> problem = demo_problem(horizon=30, seeds=2)
>>> problem.steps, problem.seeds, problem.policies[0].oracle
(30, [0, 1], 'highs')
>>> demo_problem(oracle="enumerate").policies[0].oracle
'enumerate'
"""

from __future__ import annotations

from .problem_file import Problem, parse_problem

__all__ = ["demo_problem"]


def demo_problem(*, horizon: int = 30, seeds: int = 2, oracle: str | None = None) -> Problem:
    """``Cardinality(d=4, m=2)`` with Bernoulli means 0.1 .. 0.4 and one ``CUCB`` policy (``oracle``: its backend)."""
    policy = {"name": "CUCB", "kind": "CUCB"} | ({"oracle": oracle} if oracle is not None else {})
    data = {
        "space": {"kind": "Cardinality", "d": 4, "m": 2},
        "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3, 0.4]},
        "policies": [policy],
        "run": {"horizon": horizon, "seeds": seeds},
    }
    return parse_problem(data, "demo.toml")

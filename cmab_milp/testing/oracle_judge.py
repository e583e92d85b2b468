"""The oracle kit's judge: one backend's answers on one space against brute force over its actions.

>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.testing.common import Cases
>>> cases = Cases("demo", ["linear"], None, ("linear",))
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "enumerate")
>>> judge = OracleJudge(cases, oracle, "card", cm.oracles.capabilities("enumerate"))
>>> judge.judge("linear", "linear", {"weights": np.array([0.1, 0.5, 0.2, 0.9])}).nonzero()[0].tolist()
[1, 3]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..oracles.core.base import Oracle, UnsupportedQuery
from ..oracles.core.capabilities import Capabilities
from .common import Cases, action_str, describe

__all__ = ["OracleJudge", "ask", "feasible_mask", "query_values"]


def feasible_mask(actions: np.ndarray, q: Mapping[str, Any]) -> np.ndarray:
    ok = np.ones(len(actions), bool)
    for i in q.get("include", ()):
        ok &= actions[:, i]
    for i in q.get("exclude", ()):
        ok &= ~actions[:, i]
    for i, j in q.get("forbid_pairs", ()):
        ok &= ~(actions[:, i] & actions[:, j])
    return ok


def query_values(actions: np.ndarray, q: Mapping[str, Any], kind: str) -> np.ndarray:
    dense = actions.astype(float)
    if kind == "linear":
        return dense @ np.asarray(q["weights"], float)
    quad = np.einsum("ni,ij,nj->n", dense, np.asarray(q["M"], float), dense)
    return dense @ q["mu"] + q.get("sign", 1) * q["f"] * np.sqrt(np.maximum(quad, 0.0))


def ask(oracle: Oracle, kind: str, q: Mapping[str, Any]) -> np.ndarray | None:
    return oracle.argmax(**q) if kind == "linear" else oracle.argmax_norm(**q)


class OracleJudge:
    """Asks one backend's oracle on one space and compares with brute force."""

    def __init__(self, cases: Cases, oracle: Oracle, label: str, caps: Capabilities):
        self.cases, self.oracle, self.label, self.caps = cases, oracle, label, caps
        self.space = oracle.space
        self.actions = self.space.enumerate()
        self.may_decline = caps.declines_some(self.space)

    def where(self) -> str:
        return f"space {self.label!r} ({self.space!r})"

    def ask(self, case: str, kind: str, q: Mapping[str, Any]) -> tuple[bool, np.ndarray | None]:
        """(answered, answer); a decline is a skip only where the backend declares it may decline."""
        try:
            return True, ask(self.oracle, kind, q)
        except UnsupportedQuery as exc:
            if self.may_decline:
                self.cases.skip(case, f"declined on {self.label} (declared)")
                return False, None
            self.cases.fail(
                case,
                self.where(),
                f"query {describe(q)} raised UnsupportedQuery ({exc}), "
                "but the backend's capabilities declare it answers such queries",
            )
        except (ValueError, AssertionError):
            raise
        except Exception as exc:
            self.cases.fail(case, self.where(), f"query {describe(q)} raised {type(exc).__name__}: {exc}")
        raise AssertionError("unreachable")  # pragma: no cover

    def judge(self, case: str, kind: str, q: Mapping[str, Any]) -> np.ndarray | None:
        """Ask ``q`` and check the answer against brute force; return the answer."""
        answered, answer = self.ask(case, kind, q)
        if not answered:
            return None
        ok = feasible_mask(self.actions, q)
        where = self.where()
        if not ok.any():
            if answer is not None:
                self.cases.fail(
                    case, where, f"query {describe(q)}: expected None (no action qualifies), got {action_str(answer)}"
                )
            self.cases.passed(case)
            return None
        values = query_values(self.actions, q, kind)
        best = float(values[ok].max())
        best_action = self.actions[np.flatnonzero(ok)[int(np.argmax(values[ok]))]]
        expected = f"value {best!r} ({action_str(best_action)})"
        if answer is None:
            self.cases.fail(case, where, f"query {describe(q)}: expected {expected}, got None")
        if not isinstance(answer, np.ndarray) or answer.dtype != bool or answer.shape != (self.space.d,):
            self.cases.fail(
                case,
                where,
                f"query {describe(q)}: expected a bool array of shape ({self.space.d},), "
                f"got {type(answer).__name__} {getattr(answer, 'dtype', '')} {getattr(answer, 'shape', '')}",
            )
        if not self.space.contains(answer):
            self.cases.fail(case, where, f"query {describe(q)}: {action_str(answer)} is not an action of the space")
        if not feasible_mask(answer[None, :], q)[0]:
            self.cases.fail(case, where, f"query {describe(q)}: {action_str(answer)} breaks the restrictions")
        got = float(query_values(answer[None, :], q, kind)[0])
        tol = self.caps.tolerance_for(kind) * (1.0 + abs(best))
        if kind == "linear":  # the values are float sums: cancelling weights carry their rounding
            weights = np.abs(np.asarray(q["weights"], float))  # (as the pipeline: at most one more 1e-9)
            tol += min(2.0 * self.space.d * float(np.finfo(float).eps) * float(weights.sum()), 1e-9)
        if got < best - tol:
            self.cases.fail(
                case,
                where,
                f"query {describe(q)}: expected {expected}, got value {got!r} "
                f"({action_str(answer)}), short by {best - got:.3g} > tolerance {tol:.3g}",
            )
        self.cases.passed(case)
        return answer

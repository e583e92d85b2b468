"""The compiled HiGHS model's solve path: statuses, retries and errors."""

from __future__ import annotations

import highspy
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.base import OracleError
from cmab_milp.oracles.highs_model import CompiledModel


class FlakyHighs:
    """Wraps a real Highs instance; its first ``failures`` runs end with status 'Unknown'."""

    def __init__(self, h, failures: int, status=highspy.HighsModelStatus.kUnknown):
        self._h, self.failures, self.status, self.cleared = h, failures, status, 0

    def run(self):
        if self.failures > 0:
            self.failures -= 1
            self._forced = True
            return highspy.HighsStatus.kWarning
        self._forced = False
        return self._h.run()

    def getModelStatus(self):
        return self.status if self._forced else self._h.getModelStatus()

    def clearSolver(self):
        self.cleared += 1
        return self._h.clearSolver()

    def __getattr__(self, name):
        return getattr(self._h, name)


def flaky_model(failures: int, status=highspy.HighsModelStatus.kUnknown) -> CompiledModel:
    model = CompiledModel(cm.Cardinality(5, 2).formulation(), integer=False)
    model.h = FlakyHighs(model.h, failures, status)
    model.set_costs(np.array([0.1, 0.5, 0.3, 0.9, -1.0]))
    return model


def test_an_unknown_status_is_retried_once_from_a_cold_start() -> None:
    model = flaky_model(failures=1)
    result = model.solve()
    assert result.status == "optimal" and model.cold_restarts == 1 and model.h.cleared == 1
    assert np.flatnonzero(result.x[:5] > 0.5).tolist() == [1, 3]


def test_a_second_unknown_status_raises_instead_of_answering() -> None:
    model = flaky_model(failures=2)
    with pytest.raises(OracleError, match="Unknown"):
        model.solve()


def test_a_time_limit_raises_without_retrying() -> None:
    model = flaky_model(failures=1, status=highspy.HighsModelStatus.kTimeLimit)
    with pytest.raises(OracleError, match=r"[Tt]ime limit"):
        model.solve()
    assert model.cold_restarts == 0


def test_integrality_is_judged_to_one_millionth_and_out_of_range_values_are_refused() -> None:
    from cmab_milp.oracles.highs import _FractionalAnswer

    oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
    assert oracle._chosen_arms([1.0 - 5e-7, 4e-7, -3e-7, 1.0 + 2e-7, 7.5], False) == [True, False, False, True]
    for bad in ([0.5, 0.0, 1.0, 0.0], [1.1, 0.0, 1.0, 0.0], [-0.2, 0.0, 1.0, 1.0], [2e-6, 0.0, 1.0, 1.0]):
        with pytest.raises(_FractionalAnswer, match="fractional"):
            oracle._chosen_arms(bad, True)


def test_a_fractional_lp_answer_falls_back_to_the_milp() -> None:
    """Should an LP solve ever return a non-vertex point, the query is re-solved as a MILP."""
    space = cm.Cardinality(5, 2)
    oracle = cm.make_oracle(space, "highs")
    lp = oracle.model(integer=False)
    real_solve = lp.solve

    def fractional_solve(**kwargs):
        result = real_solve(**kwargs)
        result.values = [0.5] * space.d + list(result.values[space.d :])
        return result

    lp.solve = fractional_solve
    w = np.array([0.1, 0.5, 0.3, 0.9, -1.0])
    answer = oracle.argmax(w, exclude=[3])
    best = max(space.enumerate()[~space.enumerate()[:, 3]], key=lambda a: w @ a)
    assert np.array_equal(answer, best)
    assert True in oracle._local.models  # the MILP model was built and used

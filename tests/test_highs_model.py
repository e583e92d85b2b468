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

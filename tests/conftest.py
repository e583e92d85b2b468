"""Test isolation for process-wide registries: a test that loads a ``--plugin`` from its temporary folder
(or registers a kind) must not leave it to the next test, whose worker processes could not import it."""

from __future__ import annotations

import copy

import pytest

from cmab_milp.experiments.problem import registry


@pytest.fixture(autouse=True)
def _restore_plugin_registry():
    plugins, kinds = list(registry._PLUGINS), copy.copy(registry._KINDS)
    kinds = {family: dict(table) for family, table in kinds.items()}
    yield
    registry._PLUGINS[:] = plugins
    registry._KINDS.clear()
    registry._KINDS.update(kinds)

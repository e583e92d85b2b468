"""Every policy's constructor names the constant it refuses (``ParameterError.param``), for every kind listed."""

from __future__ import annotations

import inspect
import warnings

import pytest

import cmab_milp as cm
from cmab_milp import catalogue
from cmab_milp.described import ParameterError

#: Values no constant of any listed policy takes all of: each is either accepted or refused by name.
ODD_VALUES = ["x", -1, 0, 1.5, True, None, [1], float("nan"), 10**30]

KINDS = catalogue.names("policy")


def _constants(cls: type) -> list[str]:
    params = list(inspect.signature(cls).parameters.values())[2:]
    return [p.name for p in params if p.name != "oracle" and p.kind is not p.VAR_KEYWORD]


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_constant_is_named_by_its_error(kind: str) -> None:
    cls = catalogue.lookup("policy", kind)
    space = cm.Cardinality(4, 2)
    for name in _constants(cls):
        for value in ODD_VALUES:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cls(space, 100, oracle="enumerate", **{name: value})
            except ParameterError as exc:
                assert exc.param == name, (kind, name, value, exc.param, str(exc))
            except ValueError as exc:  # pragma: no cover - the failure this test exists for
                pytest.fail(f"{kind}({name}={value!r}) raised a ValueError that does not name it: {exc}")


@pytest.mark.parametrize(
    ("build", "param"),
    [
        (lambda s: cm.CTS(s, 10, oracle="enumerate", prior="uniform"), "prior"),
        (lambda s: cm.CTS(s, 10, oracle="enumerate", seed=-1), "seed"),
        (lambda s: cm.ESCB(s, 10, oracle="enumerate", route="fast"), "route"),
        (lambda s: cm.ESCB(s, 10, oracle="enumerate", route=None), "route"),  # None was a family-internal sentinel
        (lambda s: cm.ESCB(s, 10, oracle="enumerate", max_nodes=-1), "max_nodes"),
        (lambda s: cm.EpochESCB(s, 10, oracle="enumerate", growth=1.0), "growth"),
        (lambda s: cm.EpochESCB(s, 10, oracle="enumerate", epochs="rounds"), "epochs"),
        (lambda s: cm.AESCB(s, 10, oracle="enumerate", budget_oracle="cplex"), "budget_oracle"),
        (lambda s: cm.OLSUCBC(s, 10, oracle="enumerate", reuse=1.0), "reuse"),
    ],
)
def test_the_family_checks_raise_parameter_errors(build, param: str) -> None:
    with pytest.raises(ParameterError) as caught:
        build(cm.Cardinality(3, 1))
    assert caught.value.param == param


@pytest.mark.parametrize("cls", [cm.ESCB, cm.AROQESCB, cm.EpochESCB, cm.AESCB, cm.OLSUCBC, cm.AROQCov, cm.SROQCov])
def test_a_family_member_refuses_a_keyword_it_does_not_take(cls: type) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'speed'"):
        cls(cm.Cardinality(3, 1), 10, oracle="enumerate", speed=1)


def test_family_signatures_list_each_member_s_own_keywords() -> None:
    names = {cls: list(inspect.signature(cls).parameters) for cls in (cm.ESCB, cm.EpochESCB, cm.AESCB)}
    assert names[cm.ESCB] == ["space", "T", "oracle", "C", "loglog", "route", "max_nodes"]
    assert names[cm.EpochESCB] == names[cm.ESCB] + ["growth", "epochs"]
    assert names[cm.AESCB] == ["space", "T", "oracle", "C", "loglog", "eps", "budget_oracle"]
    policy = cm.EpochESCB(cm.Cardinality(3, 1), 10, oracle="enumerate", growth=3.0, max_nodes=7)
    assert type(policy).from_params(policy.get_params()).params == policy.params

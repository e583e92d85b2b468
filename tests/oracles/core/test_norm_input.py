"""The norm query's fast checks accept only what the full checks accept, and return the same bits.

``norm_input`` tries ``_usual_norm_input`` (a few whole-array numpy calls) and falls back on
``_checked_norm_input`` (every check one at a time); the full checks are the reference here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from cmab_milp.oracles.core.queries import _checked_norm_input, _usual_norm_input, norm_input

D = 5


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array, dtype=np.float64).tobytes()


def _cases() -> list[tuple[str, object, object, object, object]]:
    rng = np.random.default_rng(11)
    B = rng.normal(size=(D, D))
    sym = B @ B.T
    near = sym + np.triu(np.full((D, D), 1e-14), 1)  # within the full checks' tolerance: symmetrised
    signed_zeros = np.zeros((D, D))
    signed_zeros[0, 1], signed_zeros[1, 0] = 0.0, -0.0  # equal, not the same bits
    subnormal = np.full((D, D), 5e-324)
    huge = np.full((D, D), 1.5e308)  # M + M.T overflows: the full checks accept it and return inf
    inf = np.eye(D)
    inf[2, 2] = np.inf
    nan_mu = np.ones(D)
    nan_mu[3] = np.nan
    big_mu = np.full(D, 1e308)  # finite, but its sum overflows
    asym = sym.copy()
    asym[0, 1] += 1.0
    return [
        ("symmetric", rng.uniform(size=D), sym, 1.0, 1),
        ("lower", rng.uniform(size=D), sym, 0.25, -1),
        ("diagonal", rng.uniform(size=D), np.diag(rng.uniform(size=D)), 2.0, 1),
        ("nearly-symmetric", rng.uniform(size=D), near, 1.0, 1),
        ("signed-zeros", rng.uniform(size=D), signed_zeros, 1.0, 1),
        ("subnormal", rng.uniform(size=D), subnormal, 1.0, 1),
        ("overflowing", rng.uniform(size=D), huge, 1.0, 1),
        ("f-zero", rng.uniform(size=D), sym, -0.0, 1),
        ("f-numpy", rng.uniform(size=D), sym, np.float64(0.5), 1),
        ("f-int", rng.uniform(size=D), sym, 3, 1),
        ("sign-numpy", rng.uniform(size=D), sym, 1.0, np.int64(-1)),
        ("float32", rng.uniform(size=D).astype(np.float32), sym.astype(np.float32), 1.0, 1),
        ("lists", rng.uniform(size=D).tolist(), sym.tolist(), 1.0, 1),
        ("transposed-view", rng.uniform(size=D), np.asfortranarray(sym), 1.0, 1),
        ("big-mu", big_mu, sym, 1.0, 1),
        ("nan-mu", nan_mu, sym, 1.0, 1),
        ("inf-M", rng.uniform(size=D), inf, 1.0, 1),
        ("asymmetric", rng.uniform(size=D), asym, 1.0, 1),
        ("f-negative", rng.uniform(size=D), sym, -1.0, 1),
        ("f-nan", rng.uniform(size=D), sym, np.nan, 1),
        ("sign-bool", rng.uniform(size=D), sym, 1.0, True),
        ("sign-two", rng.uniform(size=D), sym, 1.0, 2),
        ("mu-shape", rng.uniform(size=D + 1), sym, 1.0, 1),
    ]


CASES = _cases()


def _outcome(check, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the overflowing case warns in both
        try:
            return check(*args)
        except ValueError as exc:
            return str(exc)


@pytest.mark.parametrize(("mu", "M", "f", "sign"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fast_checks_give_the_full_checks_answer_bit_for_bit(mu, M, f, sign) -> None:
    expected = _outcome(_checked_norm_input, D, mu, M, f, sign)
    got = _outcome(norm_input, D, mu, M, f, sign)
    if isinstance(expected, str):
        assert got == expected  # the same error, word for word
        return
    (mu_e, M_e, f_e, sign_e), (mu_g, M_g, f_g, sign_g) = expected, got
    assert _bits(mu_g) == _bits(mu_e) and _bits(M_g) == _bits(M_e)
    assert (type(f_g), type(sign_g)) == (float, int) == (type(f_e), type(sign_e))
    assert np.copysign(1.0, f_g) == np.copysign(1.0, f_e) and f_g == f_e and sign_g == sign_e


@pytest.mark.parametrize(("mu", "M", "f", "sign"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fast_checks_accept_only_what_the_full_checks_accept(mu, M, f, sign) -> None:
    fast = _outcome(_usual_norm_input, D, mu, M, f, sign)
    if fast is not None:
        assert not isinstance(_outcome(_checked_norm_input, D, mu, M, f, sign), str)


def test_the_usual_input_takes_the_fast_path() -> None:
    """A policy's query (float64 arrays, exactly symmetric M, float f, int sign) is checked the cheap way."""
    rng = np.random.default_rng(3)
    B = rng.normal(size=(D, D))
    assert _usual_norm_input(D, rng.uniform(size=D), B @ B.T, 1.0, 1) is not None
    assert _usual_norm_input(D, rng.uniform(size=D), np.diag(rng.uniform(size=D)), np.float64(0.3), -1) is not None


def test_fast_checks_raise_no_warning_on_non_finite_input() -> None:
    M = np.full((D, D), np.inf)
    M[0, 1] = -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _usual_norm_input(D, np.ones(D), M, 1.0, 1) is None
        with pytest.raises(ValueError, match="mu and M must be finite"):
            norm_input(D, np.ones(D), M, 1.0, 1)

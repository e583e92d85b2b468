"""The runner: play a policy against an environment and record exact regret curves.

:func:`simulate` asks the policy for *stretches* (a cycle of actions held for a
number of time steps, see :class:`~cmab_milp.policies.base.Stretch`), has the
environment draw their feedback in bulk, and records at about 100 log-spaced
steps (and at ``T``) the cumulative pseudo-regret ``sum_t r(a*) - r(a_t)``
from the environment's exact expected rewards, the oracle's ledger and the
time spent. Its cost grows with the number of stretches (oracle consultations),
not with ``T``; a regret value recorded inside a stretch is computed exactly
from the stretch's per-action gaps.

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(4, 2)
>>> env = cm.BernoulliArms([0.1, 0.3, 0.6, 0.8], seed=0)
>>> result = cm.simulate(cm.SROQ(space, 1000, oracle="enumerate"), env, 1000, seed=0)
>>> int(result.t[-1]), bool(result.rounds[-1] == len(cm.SROQ(space, 1000, oracle="enumerate").grid))
(1000, True)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .environments.base import Environment
from .policies.base import Policy

__all__ = ["SimulationResult", "record_points", "run_alpha", "simulate"]


@dataclass
class SimulationResult:
    """Curves of one run, recorded at time steps ``t`` (ending at ``T``), and totals.

    ``regret``, ``queries``, ``rounds``, ``runtime`` and ``oracle_runtime`` are
    cumulative values at the steps ``t`` (``rounds``: adaptivity rounds, see
    ``docs/glossary.md``). ``runtime`` at a step is the wall time when the
    stretch holding that step had been played. ``alpha_regret``
    (``sum_t alpha r(a*) - r(a_t)``) is present when the run was approximate:
    the policy declares ``alpha < 1`` or its oracle is approximate (a
    ``proven_ratio`` below 1, or a ``gap`` / ``norm_gap``); ``alpha`` is then the policy's
    declared factor, else the oracle's proven ratio at the end of the run (see
    :func:`run_alpha`).

    Examples
    --------
    >>> import cmab_milp as cm
    >>> env = cm.BernoulliArms([0.2, 0.5, 0.9], seed=0)
    >>> result = cm.simulate(cm.CUCB(cm.Cardinality(3, 1), 500, oracle="enumerate"), env, 500, seed=0)
    >>> int(result.t[-1]), int(result.queries[-1]), int(result.rounds[-1]), bool(result.regret[-1] < 50)
    (500, 500, 500, True)
    """

    policy: str
    T: int
    seed: int | None
    t: np.ndarray
    regret: np.ndarray
    queries: np.ndarray
    rounds: np.ndarray
    runtime: np.ndarray
    oracle_runtime: np.ndarray
    wall_seconds: float
    oracle_seconds: float
    optimum: float
    stretches: int
    alpha: float = 1.0
    alpha_regret: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def plot(
        self, panels: Sequence[str] = ("regret", "queries", "rounds", "runtime"), title: str = "", path: Any = None
    ):
        """This run's curves in the CLI's figure style: a matplotlib ``Figure`` (saved to ``path`` if given).

        Several runs (seeds, policies) in one figure: :func:`cmab_milp.plot_results`. ``panels`` are
        names of :data:`cmab_milp.figures.PANELS`.

        >>> import cmab_milp as cm
        >>> env = cm.BernoulliArms([0.1, 0.3, 0.6, 0.8], seed=0)
        >>> result = cm.simulate(cm.CUCB(cm.Cardinality(4, 2), 200, oracle="enumerate"), env, 200)
        >>> [ax.get_title() for ax in result.plot(["regret"]).axes]
        ['(a) regret']
        """
        from .figures import plot_results

        return plot_results([self], panels, title, path)

    def __repr__(self) -> str:
        """A one-line summary (the curves are in the fields: ``result.regret`` ...).

        >>> import cmab_milp as cm
        >>> env = cm.BernoulliArms([0.1, 0.3, 0.6, 0.8], seed=0)
        >>> result = cm.simulate(cm.SROQ(cm.Cardinality(4, 2), 1000, oracle="enumerate"), env, 1000, seed=0)
        >>> print(repr(result).split(" in ")[0])  # the wall time varies
        SimulationResult(SROQ, T=1,000, seed=0: regret 224.1, 20 queries, 4 rounds
        """
        extra = sum(note["queries"] for note in self.info.get("extra_queries", ()))
        more = f" ({extra:,} extra: info['extra_queries'])" if extra else ""
        alpha = (
            "" if self.alpha_regret is None else f", alpha-regret {self.alpha_regret[-1]:,.4g} (alpha {self.alpha:.3g})"
        )
        return (
            f"SimulationResult({self.policy}, T={self.T:,}, seed={self.seed}: regret {self.regret[-1]:,.4g}{alpha}, "
            f"{int(self.queries[-1]):,} queries{more}, {int(self.rounds[-1]):,} rounds in {self.wall_seconds:.3g} s "
            f"({self.oracle_seconds:.3g} s oracle); curves at {len(self.t)} steps)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (lists, numbers), ready for ``json.dump``."""
        out: dict[str, Any] = {}
        for name, value in self.__dict__.items():
            out[name] = value.tolist() if isinstance(value, np.ndarray) else value
        out["info"] = {k: v for k, v in self.info.items() if k != "trace"}
        return out


def record_points(T: int, points: int = 100) -> np.ndarray:
    """About ``points`` log-spaced time steps in ``[1, T]``, always ending at ``T``.

    >>> record_points(1000, 5).tolist()
    [1, 6, 32, 178, 1000]
    """
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points}")
    if points == 1:
        return np.array([T], dtype=np.int64)
    grid = np.unique(np.geomspace(1, T, points).round().astype(np.int64))
    return np.union1d(grid[(grid >= 1) & (grid <= T)], [T])


def run_alpha(policy: Policy) -> tuple[float, bool]:
    """The ``alpha`` of Algorithm 5's alpha-regret for a run of ``policy``, and whether the run was approximate.

    ``alpha`` is the factor the policy declares when below 1 (``AROQ(alpha=0.5)``;
    ``alpha="proven"`` declares the oracle's), else the oracle's ``proven_ratio``
    (the smallest ratio value / optimum proven so far; 1.0 for exact oracles
    and for oracles that do not report one). Read after the run, so a measured
    ratio covers every answer of the run.

    >>> import cmab_milp as cm
    >>> run_alpha(cm.AROQ(cm.Cardinality(3, 1), 10, oracle="enumerate", alpha=0.5))
    (0.5, True)
    >>> run_alpha(cm.CUCB(cm.Cardinality(3, 1), 10, oracle="enumerate"))
    (1.0, False)
    """
    declared = float(getattr(policy, "alpha", 1.0))
    oracle = getattr(policy, "oracle", None)
    proven = float(getattr(oracle, "proven_ratio", 1.0))
    has_gap = any(getattr(oracle, name, None) is not None for name in ("gap", "norm_gap"))
    approximate = declared < 1.0 or proven < 1.0 or has_gap
    return (declared if declared < 1.0 else proven), approximate


def check_policy_and_source(policy: Any, source: Any, source_type: type, *, name: str, noun: str) -> None:
    """Refuse a run unless ``policy`` is a Policy and ``source`` a ``source_type`` with the policy's ``d`` arms.

    ``name`` is the argument holding the source (``"env"``, ``"log"``) and ``noun`` what the
    messages call it (``"the environment"``); each refusal is a ``ValueError`` saying which.

    >>> import cmab_milp as cm
    >>> policy = cm.CUCB(cm.Cardinality(3, 1), 10, oracle="enumerate")
    >>> check_policy_and_source(policy, cm.BernoulliArms([0.5, 0.5]), Environment, name="env", noun="the environment")
    Traceback (most recent call last):
    ...
    ValueError: the environment has d=2 arms but the policy's space has d=3
    """
    if not isinstance(policy, Policy):
        raise ValueError(f"policy must be a Policy, got {type(policy).__name__}")
    if not isinstance(source, source_type):
        article = "an" if source_type.__name__[0] in "AEIOU" else "a"
        raise ValueError(f"{name} must be {article} {source_type.__name__}, got {type(source).__name__}")
    if source.d != policy.d:
        raise ValueError(f"{noun} has d={source.d} arms but the policy's space has d={policy.d}")


def shared_result_fields(
    policy: Policy,
    *,
    seed: int | None,
    t: np.ndarray,
    regret: np.ndarray,
    optimum: float,
    info: dict[str, Any],
    played: list | None,
) -> dict[str, Any]:
    """The fields of a :class:`SimulationResult` that a simulated and a replayed run fill alike.

    The policy's name, the seed, the steps ``t`` and ``regret`` as given; ``alpha`` and, for an
    approximate run (:func:`run_alpha`), the alpha-regret at ``t``; ``info`` with the stretches
    ``played`` as ``info["trace"]`` when they were kept.

    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> policy = cm.AROQ(cm.Cardinality(3, 1), 10, oracle="enumerate", alpha=0.5)
    >>> fields = shared_result_fields(policy, seed=0, t=np.array([10]), regret=np.array([1.0]), optimum=0.9,
    ...                               info={}, played=None)
    >>> fields["alpha"], fields["alpha_regret"].tolist()  # regret - (1 - alpha) * optimum * t
    (0.5, [-3.5])
    """
    alpha, approximate = run_alpha(policy)
    # sum_t (alpha r(a*) - r(a_t)) = regret(t) - (1 - alpha) r(a*) t
    alpha_regret = regret - (1.0 - alpha) * optimum * t if approximate else None
    return {
        "policy": policy.name,
        "seed": seed,
        "t": t,
        "regret": regret,
        "optimum": optimum,
        "alpha": alpha,
        "alpha_regret": alpha_regret,
        "info": info if played is None else {**info, "trace": played},
    }


#: Seconds a run lasts on a terminal before ``simulate``'s default progress bar appears.
PROGRESS_DELAY = 2.0


def _is_delay(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value) and value >= 0


def default_progress(stream: Any) -> float | None:
    """What ``simulate(progress=None)`` shows on ``stream``: a bar after :data:`PROGRESS_DELAY` s on a terminal.

    >>> import io
    >>> default_progress(io.StringIO()) is None
    True
    """
    return PROGRESS_DELAY if bool(getattr(stream, "isatty", lambda: False)()) else None


def simulate(
    policy: Policy,
    env: Environment,
    T: int | None = None,
    seed: int | None = 0,
    *,
    record: int | Sequence[int] = 100,
    bulk: bool = True,
    exact_stats: bool = False,
    optimum: tuple[np.ndarray, float] | None = None,
    progress: Callable[[int, int], None] | bool | float | None = None,
    trace: bool = False,
) -> SimulationResult:
    """Play ``T`` time steps of ``policy`` against ``env``; return a :class:`SimulationResult`.

    Parameters
    ----------
    policy : Policy
        Reset before the run, so a policy can be simulated several times.
    env : Environment
    T : int, optional
        Time steps to play, at most the horizon the policy was built for (default: that horizon);
        required for a policy built with ``T=None`` (unknown horizon).
    seed : int or None
        Seeds the feedback stream; same seed, policy and environment give the same run.
    record : int or sequence of int
        Number of log-spaced recording steps, or the steps themselves (``T`` is always added).
    bulk : bool
        Play each stretch in one piece (default). ``False`` plays step by
        step; with ``exact_stats=False`` both give the same actions and numbers.
    exact_stats : bool
        Let the environment draw stretch statistics from their exact law where
        it can (faster on long holds; a different random stream).
    optimum : (action, value), optional
        The optimal action and its expected reward, if already known
        (default: ``env.optimal(policy.space)``).
    progress : callable, bool or float, optional
        ``None`` (default): on a terminal, a ``tqdm`` bar of the time steps played on stderr once the
        run has lasted :data:`PROGRESS_DELAY` seconds (2 s; a short run prints nothing; a notebook or a
        log file gets no bar: pass ``True``). ``True``: the bar from the start; a number ``s``: the bar
        once the run has lasted ``s`` seconds; ``False``: none; a callable is called as
        ``progress(t, T)`` after each stretch.
    trace : bool
        Keep every stretch played as ``result.info["trace"]``: a list of
        ``(first_step, steps, actions)`` (for tests and inspection; memory
        grows with the number of stretches).

    Returns
    -------
    SimulationResult
        The curves (``t``, ``regret``, ``queries``, ``rounds``, ...) and totals; the regret is
        the pseudo-regret ``sum_t r(a*) - r(a_t)`` from the environment's exact expected rewards.

    Raises
    ------
    ValueError
        Not a policy or an environment, ``d`` differing, ``T`` missing (unknown horizon), not a
        positive integer or past the policy's horizon, a bad ``progress``.

    Examples
    --------
    >>> import cmab_milp as cm
    >>> space, env = cm.Cardinality(4, 2), cm.UniformNoise([0.1, 0.4, 0.6, 0.9], seed=0)
    >>> runs = [simulate(cm.AROQ(space, 3000, oracle="enumerate"), env, 3000, seed=2) for _ in range(2)]
    >>> bool((runs[0].regret == runs[1].regret).all()), int(runs[0].queries[-1]) < 50  # same seed, same run
    (True, True)
    """
    check_policy_and_source(policy, env, Environment, name="env", noun="the environment")
    if T is None and policy.T is None:
        raise ValueError(
            f"{policy.name} has an unknown horizon (T=None): pass the number of rounds (time steps) to play as T"
        )
    T = policy.T if T is None else T
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    T = int(T)
    if policy.T is not None and T > policy.T:
        raise ValueError(f"T={T} exceeds the horizon the policy was built for ({policy.T})")
    if not (progress is None or isinstance(progress, bool) or callable(progress) or _is_delay(progress)):
        raise ValueError(
            f"progress must be True, False, None, seconds >= 0 or a callable progress(t, T), got {progress!r}"
        )
    if progress is None:
        progress = default_progress(sys.stderr)
    if isinstance(record, (int, np.integer)):
        points = record_points(T, int(record))
    else:
        points = np.asarray(record, dtype=np.int64)
        if points.ndim != 1 or (points < 1).any() or (points > T).any():
            raise ValueError(f"record steps must be a 1-D sequence of time steps in [1, {T}]")
        points = np.union1d(points, [T])

    best_value = float(optimum[1]) if optimum is not None else env.optimal(policy.space)[1]
    if progress is True or _is_delay(progress):
        from tqdm import tqdm

        delay = 0.0 if progress is True else float(progress)
        bar_options = {"unit": "step", "desc": policy.name, "dynamic_ncols": True, "unit_scale": True}
        with tqdm(total=T, file=sys.stderr, delay=delay, **bar_options) as bar:
            return simulate(
                policy,
                env,
                T,
                seed,
                record=record,
                bulk=bulk,
                exact_stats=exact_stats,
                optimum=(np.empty(0), best_value),
                progress=lambda t, _T: bar.update(t - bar.n),
                trace=trace,
            )
    if progress is False or progress is None:
        progress = None
    rng = np.random.default_rng(seed)
    policy.start_run(seed)
    policy.reset()
    ledger = policy.oracle.ledger
    q0, r0, s0 = ledger.snapshot()

    n = len(points)
    regret = np.empty(n)
    queries = np.empty(n, np.int64)
    rounds = np.empty(n, np.int64)
    runtime = np.empty(n)
    oracle_runtime = np.empty(n)

    needs = policy.needs
    played: list[tuple[int, int, np.ndarray]] | None = [] if trace else None
    cum_regret = 0.0
    t, k_next, stretches = 1, 0, 0
    start = time.perf_counter()
    while t <= T:
        stretch = policy.plan()
        length = min(stretch.length, T - t + 1) if bulk else 1
        stats = env.observe(stretch.actions, length, rng, needs, exact_stats)
        rewards = env.expected_rewards(stretch.actions)
        gaps = best_value - rewards
        end = t + length - 1
        k_stop = k_next + int(np.searchsorted(points[k_next:], end, side="right"))
        if k_stop > k_next:
            offsets = points[k_next:k_stop] - t + 1  # steps of the stretch played by each point
            regret[k_next:k_stop] = cum_regret + _prefix_sums(gaps, offsets)
        cum_regret += _prefix_sums(gaps, np.array([length]))[0]
        policy.update(length, stats)
        stretches += 1
        if played is not None:
            played.append((t, length, stretch.actions.copy()))
        if k_stop > k_next:
            q, r, s = ledger.snapshot()
            queries[k_next:k_stop] = q - q0
            rounds[k_next:k_stop] = r - r0
            oracle_runtime[k_next:k_stop] = s - s0
            runtime[k_next:k_stop] = time.perf_counter() - start
            k_next = k_stop
        t = end + 1
        if progress is not None:
            progress(end, T)
    wall = time.perf_counter() - start
    q, r, s = ledger.snapshot()
    info: dict[str, Any] = {"env": repr(env), "policy": repr(policy), "bulk": bulk, "exact_stats": exact_stats}
    extra = getattr(policy, "extra_queries", None)
    if extra:  # why the ledger holds more queries than the schedule asks for (cmab_milp.policies.index)
        info["extra_queries"] = [dict(note) for note in extra]
    return SimulationResult(
        T=T,
        queries=queries,
        rounds=rounds,
        runtime=runtime,
        oracle_runtime=oracle_runtime,
        wall_seconds=wall,
        oracle_seconds=s - s0,
        stretches=stretches,
        **shared_result_fields(
            policy, seed=seed, t=points, regret=regret, optimum=best_value, info=info, played=played
        ),
    )


def _prefix_sums(gaps: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sum of the first ``L`` gaps of the cycle ``gaps`` repeated, for each ``L`` in ``lengths``."""
    p = len(gaps)
    if p == 1:
        return lengths * gaps[0]
    cycles, rest = np.divmod(lengths, p)
    partial = np.r_[0.0, np.cumsum(gaps)]
    return cycles * partial[-1] + partial[rest]

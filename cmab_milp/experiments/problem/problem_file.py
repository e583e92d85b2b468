"""Problem files: the TOML schema, its validation, and the validated :class:`Problem`.

A problem file states one experiment: an action space, an environment, the
policies to compare (each with its oracle backend and constants), the horizon
and the seeds. :func:`load_problem` checks everything before anything runs,
building the space, the environment and every policy once, so that any mistake
is reported as a :class:`~cmab_milp.experiments.problem.schema.ProblemError` naming the
file, the key (``space.m``, ``policies[1].oracle``) and what is wrong.

A problem file is data, never code: every name in it is looked up in a table
(the library's own kinds, :data:`~cmab_milp.experiments.problem.builders.GENERATORS`,
:data:`~cmab_milp.experiments.problem.builders.DRAWS`, the oracle backends, the reward
names); nothing it says is imported. Names are plain identifiers (``__class__``,
``_private``, ``os.path.join``, ``lambda: 0`` are refused). Your own kinds come
from code you name outside the file: ``cmab-milp ... --plugin MODULE`` imports
``MODULE``, which calls :func:`~cmab_milp.experiments.register_kind`; a public
class of such a module may also be written ``"MODULE:Class"``.

Sizes are checked before anything is built (:class:`~cmab_milp.experiments.problem.limits.Limits`,
raised in ``[run] limits``), and nesting depth before the text is parsed
(:mod:`~cmab_milp.experiments.problem.file_limits`); the ceilings no file can lift are those of
:mod:`cmab_milp.untrusted_limits`.

The schema (every table, key, type, default and allowed value; every key not
listed is refused) is data: :data:`~cmab_milp.experiments.problem.schema_data.SCHEMA`.
The validator reads the keys through it, and the reference in
``docs/problem-files.md`` is generated from it (``python docs/generate_problem_schema.py``).

Unknown horizons: the curves of a policy built with ``T=None`` are recorded
up to the rounds played, like the others; ``summary.json`` says per policy the
horizon it was told (``policy_info.NAME.horizon``: T or ``"unknown"``).
The file is read once into a :class:`Problem`; downstream code reads its
fields, never the file's tables. ``Problem.steps`` is the one number of time
steps every job plays; ``Problem.horizon`` is the ``T`` told to the policies
(``None`` when unknown). ``--steps N`` (or ``--horizon N``) on the command line
sets the steps, and with them a known ``T``; with ``[run] horizon = "unknown"``
the policies still do not know it. ``--resume`` refuses a folder run with
other steps.

Warnings (printed by ``validate`` and ``run``, one line each as
``warning: FILE: KEY: ...``, never errors): a policy whose reward differs from
the environment's (a linear policy on a non-linear reward, or ``reward =
"sqrt_sum"`` against an environment's ``"max"``), and a ``support`` that misses
some of the environment's outcome values (the job then stops at the first such
outcome) or is given for continuous outcomes.

``summary.json``'s ``problem`` section also lists ``arm_labels`` (when arms
have labels or edges), ``optimal_action`` (by label; a path's edges in travel
order) and ``optimal_reward``.

Example
-------
>>> problem = parse_problem(
...     {
...         "space": {"kind": "Cardinality", "d": 4, "m": 2},
...         "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3, 0.4]},
...         "policies": [{"name": "CUCB", "kind": "CUCB"}],
...         "run": {"horizon": 50, "seeds": 2},
...     },
...     "demo.toml",
... )
>>> problem.steps, problem.horizon, problem.seeds, problem.policies[0].oracle
(50, 50, [0, 1], 'highs')
>>> parse_problem({"space": {}}, "demo.toml")  # every error at once, one line each
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemErrors: demo.toml: environment: missing required key
demo.toml: policies: missing required key
demo.toml: run: missing required key
demo.toml: space.kind: missing required key
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..report.plots import DEFAULT_PANELS
from .builders import build_environment, build_policy, build_space, policy_warnings
from .file_limits import check_data_depth, check_nesting
from .limits import Limits, check_counts
from .policy_specs import PolicySpec, parse_policies
from .registry import plugins
from .schema import ProblemError, ProblemErrors, Table, check_integer, copy_data, describe, join_key, plain
from .schema_data import RUN, TOP, finish, read

__all__ = ["PolicySpec", "Problem", "load_problem", "parse_problem"]


@dataclass(frozen=True)
class Problem:
    """A validated problem: plain data (picklable, JSON-able) that rebuilds its objects on demand.

    ``environment`` holds drawn parameters as values, so every rebuild gives the
    same environment without drawing again.
    """

    file: str
    space: dict[str, Any]
    environment: dict[str, Any]
    policies: list[PolicySpec]
    #: Time steps every job plays: ``[run] horizon`` (T), or ``[run] steps`` when the horizon is unknown.
    steps: int
    seeds: list[int]
    panels: list[str] = field(default_factory=lambda: list(DEFAULT_PANELS))
    curve_points: int = 200
    title: str = ""
    limits: dict[str, int] = field(default_factory=dict)
    #: Trusted modules (``--plugin``) loaded when the problem was read; each job loads them again.
    plugins: tuple[str, ...] = ()
    #: ``[run] horizon = "unknown"``: every policy is built with ``T=None`` and plays ``steps`` steps.
    unknown_horizon: bool = False
    #: Warnings found while validating (``FILE: KEY: message``), e.g. a policy's reward that differs
    #: from the environment's; not errors, and not part of the problem's identity.
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def horizon(self) -> int | None:
        """``T``, the horizon ``[run] horizon`` tells the policies (in steps); None when it is ``"unknown"``."""
        return None if self.unknown_horizon else self.steps

    def policy_horizon(self, name: str) -> int | None:
        """The ``T`` the policy labelled ``name`` is built with: None when its horizon is unknown."""
        spec = self.policy(name)
        return None if spec.horizon == "unknown" else self.horizon

    @property
    def horizon_text(self) -> str:
        """The horizon as shown to people: ``T=1000``, ``T unknown, 1000 steps`` or a mix."""
        unknown = [p.name for p in self.policies if self.policy_horizon(p.name) is None]
        if not unknown:
            return f"T={self.steps}"
        if len(unknown) == len(self.policies):
            return f"T unknown to the policies, {self.steps} steps"
        return f"T={self.steps} (unknown to {', '.join(unknown)})"

    @property
    def size_limits(self) -> Limits:
        """The :class:`~cmab_milp.experiments.problem.limits.Limits` this problem was checked against."""
        return Limits(**self.limits)

    # ------------------------------------------------------------ builders
    def build_space(self) -> Any:
        """The action space (a fresh object)."""
        return build_space(Table(copy_data(self.space), "space", self.file), self.size_limits)

    def build_environment(self, space: Any | None = None) -> Any:
        """The environment (a fresh object) for ``space`` (built if not given)."""
        space = self.build_space() if space is None else space
        table = Table(copy_data(self.environment), "environment", self.file)
        return build_environment(table, space, self.size_limits)[0]

    def policy(self, name: str) -> PolicySpec:
        """The policy entry labelled ``name``."""
        for spec in self.policies:
            if spec.name == name:
                return spec
        raise KeyError(f"no policy named {name!r} in {self.file}")

    def build_policy(self, name: str, space: Any | None = None) -> Any:
        """A fresh policy object for the entry labelled ``name``."""
        spec = self.policy(name)
        space = self.build_space() if space is None else space
        k = self.policies.index(spec)
        table = Table(spec.to_dict(), join_key("policies", k), self.file)
        oracle = spec.oracle_for(space)
        return build_policy(table, spec.kind, space, self.policy_horizon(name), oracle, dict(spec.constants))

    # --------------------------------------------------------------- identity
    def to_dict(self) -> dict[str, Any]:
        """The resolved problem as JSON-able data (draws as their recipes, overrides applied)."""
        run: dict[str, Any] = {"horizon": self.steps}
        if self.unknown_horizon:
            run = {"horizon": "unknown", "steps": self.steps}
        run |= {
            "seeds": self.seeds,
            "panels": self.panels,
            "curve_points": self.curve_points,
        }
        if self.limits:
            run["limits"] = dict(self.limits)
        return {
            "title": self.title,
            "space": self.space,
            "environment": self.environment,
            "policies": [p.to_dict() for p in self.policies],
            "run": run,
        }

    def digest(self) -> str:
        """A hash of everything that changes a job's numbers (not the seed list, title or panels)."""
        return self._digest

    @cached_property
    def _digest(self) -> str:  # the fields are frozen: computed once, read by every job check of a run
        data = self.to_dict()
        key = {
            "space": data["space"],
            "environment": data["environment"],
            "policies": data["policies"],
            "horizon": self.steps,  # the key's name of earlier results: their digests, and --resume, stay
            "curve_points": self.curve_points,
        }
        if self.unknown_horizon:  # only then, so that the digests of earlier results stay the same
            key["unknown_horizon"] = True
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    def with_run(self, steps: int | None = None, seeds: int | list[int] | None = None) -> Problem:
        """A copy with other steps (and with them a known ``T``) and/or seeds, validated like the file."""
        return parse_problem(self.to_dict(), self.file, steps=steps, seeds=seeds)


# ------------------------------------------------------------------ parsing
def load_problem(path: str | Path, *, steps: int | None = None, seeds: int | list[int] | None = None) -> Problem:
    """Read, validate and resolve a problem file; ``steps`` / ``seeds`` override its ``[run]``.

    ``steps`` is the time steps each job plays: it replaces a known ``[run] horizon``
    (T), and with ``horizon = "unknown"`` it replaces ``[run] steps`` (the policies are
    still not told it). ``seeds`` is a count (seeds ``0..seeds-1``) or a list. Raises
    :class:`~cmab_milp.experiments.problem.schema.ProblemError` for any mistake.
    """
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ProblemError(file, "", f"cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ProblemError(file, "", f"not a UTF-8 text file (byte {exc.start}: {exc.reason})") from None
    check_nesting(text, file)  # before tomllib, whose parser recurses once per level
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(file, "", f"not valid TOML: {exc}") from None
    return parse_problem(data, file, steps=steps, seeds=seeds)


def parse_problem(
    data: dict[str, Any],
    file: str = "<problem>",
    *,
    build: bool = True,
    steps: int | None = None,
    seeds: int | list[int] | None = None,
) -> Problem:
    """Validate a parsed problem (a dict as ``tomllib`` returns it); ``steps`` / ``seeds`` as in :func:`load_problem`.

    The space, the environment and every policy are constructed once, so that
    their own checks run now rather than in the middle of a run. With
    ``build=False`` only the structure is read (what ``cmab-milp plot`` needs to
    redraw a results folder): no kind is looked up and nothing is constructed.
    ``data`` is only read, never changed.
    """
    if not isinstance(data, dict):
        raise ProblemError(file, "", f"expected a table, got {describe(data)}")
    check_data_depth(data, file)
    errors: list[ProblemError] = []

    def attempt(step: Any, *args: Any, **kwargs: Any) -> Any:
        """``step(...)``, or None with its error kept: every part of the file is checked, all errors reported."""
        try:
            return step(*args, **kwargs)
        except ProblemErrors as exc:
            errors.extend(exc.errors)
        except ProblemError as exc:
            errors.append(exc)
        return None

    top = Table(data, "", file)
    title = attempt(read, top, TOP, "title")
    attempt(read, top, TOP, "description")
    space_table = attempt(read, top, TOP, "space")
    env_table = attempt(read, top, TOP, "environment")
    policy_tables = attempt(read, top, TOP, "policies")
    run = attempt(read, top, TOP, "run")
    attempt(finish, top, TOP)

    parsed_run = attempt(_parse_run, run, steps, seeds) if run is not None else None
    limits = parsed_run.limits if parsed_run is not None else Limits()
    if (
        policy_tables is not None
        and attempt(check_counts, limits, top, policy_tables, parsed_run and parsed_run.seeds) is None
    ):
        policy_tables = None  # too many to check one by one
    policies = attempt(parse_policies, policy_tables, file, check_kinds=build) if policy_tables is not None else None
    space_data = attempt(plain, space_table.data, "space", file) if space_table is not None else None
    warnings: list[str] = []
    if build and space_table is not None:
        space = attempt(build_space, space_table, limits)
        env = None
        if space is not None and env_table is not None:
            built = attempt(build_environment, env_table, space, limits)
            env = None if built is None else built[0]
        if space is not None and policies is not None and parsed_run is not None:
            for k, spec in enumerate(policies):
                table = Table(spec.to_dict(), join_key("policies", k), file)
                T = None if parsed_run.unknown_horizon or spec.horizon == "unknown" else parsed_run.steps
                oracle = attempt(_oracle_of, spec, space, table)
                if oracle is None:
                    continue
                policy = attempt(build_policy, table, spec.kind, space, T, oracle, dict(spec.constants))
                if policy is not None and env is not None:
                    warnings += policy_warnings(table, spec.kind, dict(spec.constants), env)
    # read after the build, which adds each data file's SHA-256 to its recipe (experiments/problem/matrices.py)
    env_data = attempt(plain, env_table.data, "environment", file) if env_table is not None else None
    if errors:
        raise errors[0] if len(errors) == 1 else ProblemErrors(errors)
    return Problem(
        file=file,
        space=space_data,
        environment=env_data,
        policies=policies,
        title=title,
        steps=parsed_run.steps,
        unknown_horizon=parsed_run.unknown_horizon,
        seeds=parsed_run.seeds,
        panels=parsed_run.panels,
        curve_points=parsed_run.curve_points,
        limits=limits.changed(),
        plugins=tuple(plugins()),
        warnings=tuple(warnings),
    )


def _oracle_of(spec: PolicySpec, space: Any, table: Table) -> Any:
    """The policy's oracle argument; a backend that refuses its options is an error at ``oracle``."""
    try:
        return spec.oracle_for(space)
    except ValueError as exc:
        raise table.error("oracle", str(exc)) from None


@dataclass(frozen=True)
class _Run:
    """The ``[run]`` table, validated (overrides applied)."""

    limits: Limits
    steps: int
    unknown_horizon: bool
    seeds: list[int]
    panels: list[str]
    curve_points: int


def _parse_run(run: Table, steps: int | None = None, seeds: int | list[int] | None = None) -> _Run:
    """Read ``[run]``; ``steps`` / ``seeds`` (the command line's) stand in for the file's values, checked alike."""
    limits = Limits.from_table(read(run, RUN, "limits"))
    told = run.raw("horizon", None)
    unknown = told == "unknown"
    if "steps" in run and "rounds" in run:
        raise run.error("rounds", "the former name of steps: give steps = N only")
    key = "rounds" if "rounds" in run else "steps"  # time steps per job; "rounds" is the key's former name
    if not unknown:
        if key in run:
            raise run.error(key, 'only with horizon = "unknown"; with a known horizon each job plays T steps')
        key = "horizon"
        if steps is None and told is None:
            raise run.error(key, "missing required key")
        if steps is None and isinstance(told, str):
            raise run.error(key, f'expected a number of steps or "unknown", got {told!r}')
    elif steps is None and key not in run:  # the policies are built with T=None; the jobs play [run] steps
        raise run.error(key, 'horizon = "unknown" needs steps = N: how many time steps each job plays')
    value = run.raw(key, None) if steps is None else steps  # an override stands in for the file's value
    run.used.add(key)
    played = limits.check("horizon", check_integer(value, run.path(key), run.file, minimum=1), run.path(key), run.file)
    run.used.add("seeds")
    raw_seeds = run.raw("seeds") if seeds is None else seeds
    if isinstance(raw_seeds, list):
        limits.check("seeds", len(raw_seeds), run.path("seeds"), run.file)
        seed_list = [
            check_integer(s, join_key(run.path("seeds"), k), run.file, minimum=0) for k, s in enumerate(raw_seeds)
        ]
        if not seed_list:
            raise run.error("seeds", "needs at least one seed")
        if len(set(seed_list)) != len(seed_list):
            raise run.error("seeds", f"seeds must be distinct, got {seed_list}")
    elif isinstance(raw_seeds, int) and not isinstance(raw_seeds, bool):
        count = check_integer(raw_seeds, run.path("seeds"), run.file, minimum=1)
        seed_list = list(range(limits.check("seeds", count, run.path("seeds"), run.file)))
    else:
        raise run.error("seeds", f"expected a count or an array of seeds, got {describe(raw_seeds)}")
    panels = read(run, RUN, "panels")
    curve_points = read(run, RUN, "curve_points")
    limits.check("curve_points", curve_points, run.path("curve_points"), run.file)
    finish(run, RUN)
    return _Run(limits, played, unknown, seed_list, list(panels), curve_points)

"""Size limits checked before any work: a problem too large to run is refused by ``validate`` at once.

Each limit names what it bounds; a problem file raises (or lowers) any of them
in its ``[run.limits]`` table, e.g. ``limits = { arms = 20000 }``. A few values
have a ceiling no table can lift, because beyond it the run cannot be exact
(``horizon``, the steps of a job, above 2**50 overflows integer and float64 counters).

Example
-------
>>> limits = Limits.from_table(Table({"arms": 20_000}, "run.limits", "demo.toml"))
>>> limits.arms, limits.horizon
(20000, 100000000)
>>> limits.check("arms", 30_000, "space.d", "demo.toml")
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: demo.toml: space.d: 30000 is above the limit arms = 20000 \
(raise it in the problem file: [run] limits = { arms = N })
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from ...untrusted_limits import MAX_CURVE_POINTS, MAX_RUN_STEPS, MAX_SEEDS
from .schema import ProblemError, Table

__all__ = ["CEILINGS", "Limits", "check_counts"]

#: Values no ``[run.limits]`` can lift (the run would not be exact or would overflow).
CEILINGS: dict[str, int] = {"horizon": MAX_RUN_STEPS, "seeds": MAX_SEEDS, "curve_points": MAX_CURVE_POINTS}


@dataclass(frozen=True)
class Limits:
    """Upper bounds on a problem's sizes (the defaults keep ``validate`` well under a second)."""

    #: Arms d of the action space (also the edges of a graph the space is built on).
    arms: int = 5_000
    #: Nodes of a generated or listed graph.
    graph_nodes: int = 20_000
    #: Values drawn by one ``{ draw = ... }`` table.
    draw_size: int = 1_000_000
    #: Rows of an explicit action list (``ExplicitActions``).
    actions: int = 100_000
    #: Rounds T.
    horizon: int = 100_000_000
    #: Seeds (jobs per policy).
    seeds: int = 1_000
    #: Points recorded per curve (rows of each job's CSV).
    curve_points: int = 10_000
    #: Compared policies (``[[policies]]`` tables), counted before any is built.
    policies: int = 100
    #: Jobs of a run: policies times seeds.
    jobs: int = 10_000

    @classmethod
    def from_table(cls, table: Table | None) -> Limits:
        """Defaults, replaced by the integers of a ``[run.limits]`` table."""
        limits = cls()
        if table is None:
            return limits
        values: dict[str, int] = {}
        for f in fields(cls):
            if f.name in table:
                value = table.integer(f.name, minimum=1)
                ceiling = CEILINGS.get(f.name)
                if ceiling is not None and value > ceiling:
                    raise table.error(f.name, f"cannot exceed {ceiling} (the run would not be exact), got {value}")
                values[f.name] = value
        table.finish(offered=[f.name for f in fields(cls)])
        return replace(limits, **values)

    def changed(self) -> dict[str, int]:
        """The limits that differ from the defaults (what a problem file stated)."""
        default = asdict(Limits())
        return {k: v for k, v in asdict(self).items() if v != default[k]}

    def check(self, name: str, value: int, key: str, file: str, what: str = "") -> int:
        """``value`` if within the limit ``name``; else a :class:`ProblemError` at ``key`` saying how to raise it.

        ``what`` describes the value in the message (default: the value alone).
        """
        limit = getattr(self, name)
        if value > limit:
            ceiling = CEILINGS.get(name)
            how = (
                f"raise it in the problem file: [run] limits = {{ {name} = N }}"
                if ceiling is None or limit < ceiling
                else "this is the most a run can take"
            )
            raise ProblemError(file, key, f"{what or value} is above the limit {name} = {limit} ({how})")
        return value


def check_counts(limits: Limits, top: Table, policy_tables: list[Table], seeds: list[int] | None) -> bool:
    """Refuse more ``[[policies]]`` than ``limits.policies``, or more jobs (policies x seeds) than ``limits.jobs``.

    Counted before any policy is read, so a file of 20,000 policies is refused at once. Returns True.
    """
    count = len(policy_tables)
    limits.check("policies", count, top.path("policies"), top.file, f"{count} policies")
    if seeds is not None:
        jobs, what = count * len(seeds), f"{count} policies x {len(seeds)} seeds"
        limits.check("jobs", jobs, top.path("policies"), top.file, what)
    return True

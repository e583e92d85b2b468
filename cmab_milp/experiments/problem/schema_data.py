"""The problem-file schema as data: every table, its keys, their types, defaults, allowed values and meaning.

:data:`SCHEMA` lists the tables of a problem file in reading order, each a
:class:`TableSchema` of :class:`Key` entries. The validator reads its keys
through it (:func:`read` checks a key's type, required-ness, minimum and allowed
values; :func:`finish` refuses the keys a table does not take, naming those it
does), and the reference in ``docs/problem-files.md`` is generated from it
(:mod:`~cmab_milp.experiments.problem.schema_doc`), so the two cannot drift apart.

Example
-------
>>> from cmab_milp.experiments.problem.schema import Table
>>> run = Table({"curve_points": 1}, "run", "demo.toml")
>>> read(run, RUN, "curve_points")
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: demo.toml: run.curve_points: must be >= 2, got 1
>>> read(Table({}, "run", "demo.toml"), RUN, "curve_points"), RUN.key("panels").choices[:2]
(200, ('rounds', 'queries'))
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ...figures import DEFAULT_PANELS, PANELS
from ...oracles.core.ties import TIE_MODES
from .limits import CEILINGS, Limits
from .schema import MISSING, Table, describe

__all__ = ["RUN", "SCHEMA", "TOP", "Key", "TableSchema", "finish", "read", "table_schema"]

#: The types a key may have: how a value is read (``value``: any, checked by the reader that takes it).
TYPES = ("string", "integer", "number", "boolean", "table", "array of tables", "array", "value")


@dataclass(frozen=True)
class Key:
    """One key of a table: its name, type, default (``MISSING``: required), allowed values and meaning."""

    name: str
    type: str
    meaning: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    #: The default as shown to people when it is not a plain value (``"d"``, ``"the kind's default"``).
    shown_default: str = ""
    #: A former name, still read but not offered (left out of "this table takes" and marked in the docs).
    former: bool = False
    #: What one entry of an array with ``choices`` is called in messages (``unknown panel 'x'``).
    item: str = "value"
    #: How a value of the wrong type is described in its message (default: the type, ``an array``).
    expected: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.meaning, str):
            raise ValueError(f"key {self.name!r}: its meaning is one string, got {type(self.meaning).__name__}")
        if self.type not in TYPES:
            raise ValueError(f"key {self.name!r}: unknown type {self.type!r}; known: {', '.join(TYPES)}")

    @property
    def required(self) -> bool:
        return self.default is MISSING


@dataclass(frozen=True)
class TableSchema:
    """One table of a problem file: its path (``policies[]``: each entry of an array), keys and meaning."""

    path: str
    meaning: str
    keys: tuple[Key, ...]
    #: What the keys not listed are, for a table that takes more (a constructor's parameters); "" if none.
    more: str = ""
    #: A short TOML example of the table.
    example: str = ""

    def key(self, name: str) -> Key:
        for key in self.keys:
            if key.name == name:
                return key
        raise KeyError(f"{self.path or 'the top level'} has no key {name!r} in the schema")

    @property
    def offered(self) -> list[str]:
        """The keys this table takes, as listed in messages (former names left out)."""
        return [k.name for k in self.keys if not k.former]


def read(table: Table, schema: TableSchema, name: str) -> Any:
    """The value at ``name`` read as the schema says (type, default, minimum, allowed values)."""
    key = schema.key(name)
    if key.type == "string":
        return table.string(name, key.default, choices=key.choices or None)
    if key.type == "integer":
        return table.integer(name, key.default, minimum=key.minimum)
    if key.type == "number":
        return table.number(name, key.default)
    if key.type == "boolean":
        return table.boolean(name, key.default)
    if key.type == "table":
        return table.table(name, key.default)
    if key.type == "array of tables":
        return table.tables(name, key.default)
    if key.type == "array":
        if key.expected and name in table and not isinstance(table.data[name], list):
            raise table.error(name, f"expected {key.expected}, got {describe(table.data[name])}")
        values = table.array(name, list(key.default) if isinstance(key.default, (list, tuple)) else key.default)
        for k, value in enumerate(values if name in table and key.choices else ()):
            if not isinstance(value, str) or value not in key.choices:
                raise table.error(f"{name}[{k}]", f"unknown {key.item} {value!r}; known: {', '.join(key.choices)}")
        return values
    return table.raw(name, key.default)


def finish(table: Table, schema: TableSchema) -> None:
    """Refuse the keys of ``table`` that were not read, naming the keys the schema says this table takes."""
    table.finish(offered=schema.offered if not schema.more else None)


# ------------------------------------------------------------------ the tables
#: The meanings too long for one line of their table.
_SPACE_KIND = (
    "any space class of cmab_milp (Cardinality, PartitionMatroid, GraphicMatroid, SpanningTrees, STPaths, "
    "Matchings, ExplicitActions, Intersection) or a registered kind"
)
_ENVIRONMENT_KIND = (
    'any class of cmab_milp.environments, a registered kind (`"MODULE:Class"` only for a module given with '
    '`--plugin`), or `"logged"`: arms drawn from a log file beside this one (CSV or Parquet, columns '
    "`round` / `arm` / `reward`, see `experiments/problem/logged_env.py`)"
)
_RUN_HORIZON = (
    'T: told to the policies, and the time steps every job plays; or `"unknown"`: every policy built with '
    "`T=None`, each job plays `steps`"
)

TOP = TableSchema(
    "",
    "The file itself: what the experiment is called, and its four tables.",
    (
        Key("title", "string", "the figure's title", ""),
        Key("description", "string", "free text (say a long policy's expected time here)", ""),
        Key("space", "table", "the action space (below)", MISSING),
        Key("environment", "table", "the reward distribution (below)", MISSING),
        Key("policies", "array of tables", "the compared policies, one `[[policies]]` table each", MISSING),
        Key("run", "table", "horizon, seeds and what is recorded", MISSING),
    ),
    example='title = "Cardinality, d = 20"\ndescription = "..."',
)

SPACE = TableSchema(
    "space",
    'The action space. Wherever an arm is asked for it may be an index (`0`), a label (`"red"`) or, on graphs, '
    'an edge (`["u", "v"]`).',
    (
        Key("kind", "string", _SPACE_KIND, MISSING),
        Key(
            "labels",
            "array",
            "one label per arm: strings; an integer only at its own position; an array is a tuple label. "
            'Graph arms also answer to their edge `["u", "v"]`',
        ),
        Key("graph", "table", "the graph of a graph space: `[space.graph]` (below)"),
        Key("conflicts", "array of tables", "never both arms of a pair: `[[space.conflicts]]` (below)"),
        Key("constraints", "array of tables", "`coeffs @ a  sense  rhs`: `[[space.constraints]]` (below)"),
        Key("budgets", "array of tables", "`costs @ a <= budget`: `[[space.budgets]]` (below)"),
        Key("groups", "array of tables", "at least / at most so many arms of a group: `[[space.groups]]` (below)"),
        Key("parts", "array of tables", '`kind = "Intersection"` only: one space table per part'),
    ),
    more="the constructor's parameters: `d`, `m`, `exact` / `blocks`, `capacities` / `graph` / `source`, `target` / "
    "`perfect` / `actions` (an array of 0/1 rows); graph spaces also take their formulation options: `flow` "
    "(GraphicMatroid, SpanningTrees, STPaths), `sparse_cuts` (SpanningTrees), `oriented`, `cuts_min_edges`, "
    "`cuts_min_arcs` (STPaths)",
    example='kind = "Cardinality"\nd = 4\nm = 2\nlabels = ["red", "green", "blue", "black"]',
)

GRAPH = TableSchema(
    "space.graph",
    "A graph space's graph: exactly one of `generator`, `edges` or `topohub`. Arm k is `list(graph.edges())[k]`: "
    "networkx lists edges node by node (first-appearance order), not as written, and labels an undirected edge "
    '(u, v) with u the node seen first (`["B", "A"]` after `["A", "C"]` is arm `("A", "B")`); name arms by edge to '
    "not care.",
    (
        Key(
            "generator",
            "string",
            "a networkx generator of `graphs.GENERATORS` (complete_graph, grid_2d_graph, complete_bipartite_graph, "
            "gnm_random_graph, petersen_graph, ...); its size is bounded from its arguments before it runs",
        ),
        Key("args", "array", "the generator's positional arguments (counts, probabilities, booleans)", ()),
        Key("kwargs", "table", "the generator's keyword arguments (e.g. `seed = 1`)"),
        Key(
            "edges",
            "array",
            'an explicit edge list `[[u, v], ...]`; an edge may carry attributes: `["A", "B", { km = 10 }]`',
        ),
        Key(
            "topohub",
            "string",
            "a topology of topohub's catalogue (extra `routing`; its data ships with the package, nothing is "
            "downloaded): nodes keep their names, edges their attributes; see `cmab-milp topologies`",
        ),
        Key(
            "relabel",
            "boolean",
            "true: nodes renamed 0..n-1 in networkx's node order (grid cells stay `[i, j]`)",
            False,
        ),
        Key("directed", "boolean", "true: a DiGraph, each edge oriented as listed", False),
    ),
    example='generator = "grid_2d_graph"\nargs = [3, 3]',
)

_ARMS = "the arms, as an array"
CONFLICTS = TableSchema(
    "space.conflicts[]",
    "Never both arms of a pair (`with_conflicts`). Side rules apply in this order: conflicts, constraints, budgets, "
    "groups; a rule that leaves no action is refused at its key, naming the rules that together empty the space.",
    (
        Key(
            "pairs",
            "array",
            'the pairs of arms, `[["red", "green"], [2, 5]]`',
            MISSING,
            expected="a non-empty array of pairs [a, b]",
        ),
    ),
    example='pairs = [["red", "green"], [2, 5]]',
)
CONSTRAINTS = TableSchema(
    "space.constraints[]",
    "`coeffs @ a  sense  rhs` (`with_constraint`).",
    (
        Key(
            "coeffs",
            "value",
            "one number per arm: an array of d, a table by label or edge name (missing arms 0), `[u, v, value]` "
            'rows or an edge attribute `{ attribute = "km", scale = 0.1 }`',
        ),
        Key("arms", "array", f"instead of `coeffs`: {_ARMS}, with `weights`"),
        Key("weights", "array", "with `arms`: one number each"),
        Key("sense", "string", "the comparison", MISSING, choices=("<=", ">=", "==")),
        Key("rhs", "number", "the right-hand side", MISSING),
    ),
    example='coeffs = { red = 1.0, blue = 2.0 }\nsense = "<="\nrhs = 2',
)
BUDGETS = TableSchema(
    "space.budgets[]",
    "`costs @ a <= budget` with `costs >= 0` (`with_budget`).",
    (
        Key(
            "costs",
            "value",
            "d numbers, a table by label, `[u, v, value]` rows, an edge attribute, or numbers with `arms`",
        ),
        Key("arms", "array", f"{_ARMS}, with `costs` one number each"),
        Key("budget", "number", "the budget, >= 0", MISSING),
    ),
    example="costs = { red = 3, green = 1 }\nbudget = 3",
)
GROUPS = TableSchema(
    "space.groups[]",
    "At least and/or at most so many arms of a group (`with_group`).",
    (
        Key("arms", "array", "the group's arms", MISSING),
        Key("at_least", "integer", "at least this many of them", minimum=0),
        Key("at_most", "integer", "at most this many of them", minimum=0),
    ),
    example='arms = ["red", "green"]\nat_least = 1',
)

ENVIRONMENT = TableSchema(
    "environment",
    "The reward distribution. Any value may be a `{ draw = ... }` table (below), stored as this recipe and drawn "
    "again from its seed on every rebuild. Per-arm numbers may be an array of d, a table by label or edge name "
    '(`{ "A-B" = 2 }`, `"3-7"` for integer nodes), `[u, v, value]` rows or an edge attribute '
    '`{ attribute = "dist", scale = -0.00025, offset = -0.05 }` (topohub edges carry `dist` (km) and the '
    'utilisations `ecmp_fwd` / `ecmp_bwd`; a nested attribute as `"ecmp_fwd.uni"`).',
    (
        Key("kind", "string", _ENVIRONMENT_KIND, MISSING),
        Key("means", "value", "the arms' means: per-arm numbers or a draw"),
        Key(
            "cov",
            "value",
            '`GaussianNoise`\'s covariance: `{ diagonal = v }` (a number or per-arm numbers), `{ file = "cov.npy" }` '
            "(a data file beside this one: `.npy` without pickle, or `.csv`), `factors = ...`, "
            "`shared = [{ arms = [...], variance = v }]`; the parts add up (`experiments/problem/matrices.py`)",
        ),
    ),
    more="the constructor's parameters (`width`, `values`, `probs`, `reward`, ...)",
    example='kind = "UniformNoise"\nmeans = { draw = "uniform", low = 0.0, high = 1.0, seed = 7 }\nwidth = 0.5',
)

LOGGED = TableSchema(
    'environment (kind = "logged")',
    "Arms drawn from a log file beside the problem file: a `LoggedEnvironment` (`experiments/problem/logged_env.py`). "
    "A bad log is refused with the problem file's key and the log's own row and column.",
    (
        Key("kind", "string", 'the word `"logged"`', MISSING, choices=("logged",)),
        Key(
            "file",
            "string",
            "the log: `.csv`, `.parquet` or `.pq`, relative to the problem file and inside its folder",
            MISSING,
        ),
        Key("round", "string", "the round column", "round"),
        Key("arm", "value", 'the arm column, or two (`["u", "v"]`: an edge per row on graph spaces)', "arm"),
        Key("reward", "string", "the reward column", "reward"),
        Key("inclusion", "string", "the logging policy's inclusion-probability column"),
        Key("action_propensity", "string", "the logging policy's action-propensity column"),
        Key("full_information", "boolean", "the log holds every arm's outcome each round", False),
        Key("prior", "number", "the outcome of arms the log never includes"),
        Key("seed", "integer", "the environment's seed", minimum=0),
        Key("sha256", "string", "written by the reader into the stored problem: a changed log is refused on rebuild"),
    ),
    example='kind = "logged"\nfile = "clicks.csv"\ninclusion = "p"',
)

DRAW = TableSchema(
    "{ draw = ... }",
    "A drawn value, anywhere in `[environment]` (its `size`, default d, counts against the limit `draw_size`).",
    (
        Key("draw", "string", "the draw", MISSING, choices=("uniform", "integers", "normal", "dirichlet", "choice")),
        Key("seed", "integer", "the draw's seed", MISSING, minimum=0),
        Key("size", "integer", "how many values", minimum=1, shown_default="d"),
        Key("low", "number", "uniform: lowest value (finite); integers: lowest integer", shown_default="0"),
        Key(
            "high",
            "number",
            "uniform: highest value (finite); integers: highest integer (included, required)",
            shown_default="1 (uniform)",
        ),
        Key("mean", "number", "normal: the mean", 0.0),
        Key("std", "number", "normal: the standard deviation", 1.0),
        Key("alpha", "array", "dirichlet: the concentration (one probability row per arm)"),
        Key("values", "array", "choice: the values to choose from"),
        Key("p", "array", "choice: their probabilities"),
        Key("replace", "boolean", "choice: with replacement", True),
    ),
    example='means = { draw = "uniform", low = 0.0, high = 1.0, seed = 7 }',
)

POLICY = TableSchema(
    "policies[]",
    "One compared policy.",
    (
        Key("name", "string", "label in plots and results (letters, digits, `_ . + -`)", MISSING),
        Key("kind", "string", "any class of cmab_milp.policies, or a registered kind", MISSING),
        Key("oracle", "string", "the oracle backend", shown_default='the kind\'s default, "highs" or "auto"'),
        Key(
            "gap",
            "number",
            "the certified approximate mode, `make_oracle(..., gap=0.01)`, in [0, 1): the run reports alpha-regret "
            "with the ratio the oracle proved",
        ),
        Key("norm_gap", "number", "the same for norm queries (highs)"),
        Key("time_limit", "number", "seconds per solve (> 0)"),
        Key("workers", "integer", "threads of the oracle's batches; answers do not depend on it", minimum=1),
        Key(
            "ties",
            "string",
            "the one tie rule, `make_oracle(..., ties=...)`: with `classes` or `exact` every exact backend returns "
            "the same action among exact ties (the same curve on any solver)",
            choices=TIE_MODES,
            shown_default='"off"',
        ),
        Key("tuning", "table", "the backend's tuning options (highs: `HighsTuning`), e.g. `{ side_starts = false }`"),
        Key("constants", "table", "keyword constants of the policy, e.g. `{ C = 1.5 }`"),
        Key(
            "horizon",
            "string",
            "build this policy with `T=None`: it plays the run's steps without being told them",
            choices=("unknown",),
        ),
        Key("on_request", "boolean", "run only when named (`cmab-milp run --policies NAME`)", False),
    ),
    example='name = "AROQ"\nkind = "AROQ"\noracle = "highs"\nconstants = { C = 1.5 }',
)

RUN = TableSchema(
    "run",
    "How long, how often and what is recorded. `--steps N` (or `--horizon N`) on the command line sets the steps "
    "and with them a known T; `--resume` refuses a folder run with other steps.",
    (
        Key("horizon", "value", _RUN_HORIZON, MISSING),
        Key("steps", "integer", 'with `horizon = "unknown"` (required then): the time steps each job plays', minimum=1),
        Key("rounds", "integer", "the former name of `steps`, still read", minimum=1, former=True),
        Key("seeds", "value", "a count (seeds 0..n-1) or an explicit array of distinct seeds `[3, 5, 8]`", MISSING),
        Key("panels", "array", "the figure's panels", DEFAULT_PANELS, choices=tuple(PANELS), item="panel"),
        Key("curve_points", "integer", "points recorded per curve (log-spaced in t)", 200, minimum=2),
        Key("limits", "table", "raise (or lower) a size limit: `[run.limits]` (below)"),
    ),
    example="horizon = 100000\nseeds = 10\ncurve_points = 200",
)

_LIMIT_MEANINGS = {
    "arms": "arms d of the action space (also the edges of a graph the space is built on)",
    "graph_nodes": "nodes of a generated or listed graph",
    "draw_size": "values drawn by one `{ draw = ... }` table",
    "actions": "rows of an explicit action list (`ExplicitActions`)",
    "horizon": "time steps of a job",
    "seeds": "seeds (jobs per policy)",
    "curve_points": "points recorded per curve (rows of each job's CSV)",
    "policies": "compared policies (`[[policies]]` tables), counted before any is built",
    "jobs": "jobs of a run: policies times seeds",
}


def _limit_key(name: str, default: int) -> Key:
    ceiling = CEILINGS.get(name)
    meaning = _LIMIT_MEANINGS[name] + (f"; at most {ceiling:_}" if ceiling is not None else "")
    return Key(name, "integer", meaning, default, minimum=1)


RUN_LIMITS = TableSchema(
    "run.limits",
    "Size limits, checked before any work (`validate` stays well under a second); a file that means it raises "
    "them. Arrays and tables nested more than 64 deep are refused at their key.",
    tuple(_limit_key(f.name, f.default) for f in fields(Limits)),
    example="limits = { arms = 20000 }",
)

#: Every table of a problem file, in the order the reference lists them.
SCHEMA: tuple[TableSchema, ...] = (
    TOP,
    SPACE,
    GRAPH,
    CONFLICTS,
    CONSTRAINTS,
    BUDGETS,
    GROUPS,
    ENVIRONMENT,
    LOGGED,
    DRAW,
    POLICY,
    RUN,
    RUN_LIMITS,
)


def table_schema(path: str) -> TableSchema:
    """The schema of the table at ``path`` (``"run"``, ``"policies[]"``, ``""`` for the top level)."""
    for schema in SCHEMA:
        if schema.path == path:
            return schema
    raise KeyError(f"no table {path!r} in the schema; known: {', '.join(s.path for s in SCHEMA)}")

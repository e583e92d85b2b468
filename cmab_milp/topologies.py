"""Real backbone topologies (from ``topohub``) and the routing problems built on them.

Online shortest-path routing: the arms are the links of a backbone network, an
action is a simple source-to-target path, and a link's outcome is minus its
delay in units of :data:`DELAY_SCALE_MS`, so that maximising the summed reward
is minimising the end-to-end delay. A link's mean delay follows from its
length (``dist`` in km, as ``topohub`` ships it)::

    delay_ms(link) = dist_km / SPEED_KM_PER_MS + HOP_MS     (propagation + per-hop switching)
    mean(link)     = -delay_ms(link) / DELAY_SCALE_MS        (in [-1, 0) for links under ~3800 km)

Rewards are negative because a path of more links must not earn more: with
rewards in [0, 1] the best "route" would be the longest simple path. The noise
is Gaussian jitter, independent across links (unbounded, as in the paper's
Figure 3; the library allows it).

The problem files ``problems/routing_abilene.toml`` and
``problems/routing_geant.toml`` hold the data written out by
:func:`routing_problem_toml`, so running them needs no ``topohub``; the test
suite checks that the files still agree with ``topohub``. ``topohub`` itself
is the optional extra ``routing``.

Example
-------
>>> round(link_mean(1000.0), 6)  # 1000 km: 5 ms in fibre + 1 ms per hop = 6 ms
-0.3
>>> graph = load_topology("topozoo/Abilene")  # doctest: +SKIP
>>> graph.number_of_nodes(), graph.number_of_edges(), graph.edges["New York", "Chicago"]["dist"]  # doctest: +SKIP
(11, 14, 1146.16)
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import json
import re
from collections.abc import Sequence
from typing import Any

import networkx as nx

from ._names import close_names

__all__ = [
    "DELAY_SCALE_MS",
    "HOP_MS",
    "SPEED_KM_PER_MS",
    "link_delay_ms",
    "link_mean",
    "load_topology",
    "routing_problem",
    "routing_problem_toml",
    "topology_names",
]

#: Speed of light in optical fibre (about 2/3 of c), km per millisecond.
SPEED_KM_PER_MS = 200.0
#: Switching and queueing delay added per traversed link, milliseconds.
HOP_MS = 1.0
#: Delay that counts as a reward of -1, milliseconds.
DELAY_SCALE_MS = 20.0


def link_delay_ms(dist_km: float) -> float:
    """Mean one-way delay of a link of ``dist_km`` kilometres, in milliseconds.

    >>> link_delay_ms(200.0)
    2.0
    """
    if not dist_km >= 0:
        raise ValueError(f"dist_km must be a length >= 0, got {dist_km}")
    return float(dist_km) / SPEED_KM_PER_MS + HOP_MS


def link_mean(dist_km: float) -> float:
    """Mean reward of a link of ``dist_km`` kilometres: ``-link_delay_ms(dist_km) / DELAY_SCALE_MS``.

    >>> link_mean(0.0)
    -0.05
    """
    return -link_delay_ms(dist_km) / DELAY_SCALE_MS


#: A topohub key: path segments of letters, digits, ``_ . -`` (no ``..``: topohub opens ``data/<key>.json``).
_TOPOLOGY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$")


@functools.cache
def _catalogue() -> tuple[str, ...]:
    if importlib.util.find_spec("topohub") is None:
        raise ImportError("real topologies need topohub: pip install 'cmab_milp[routing]'")
    root = importlib.resources.files("topohub") / "data"
    names: list[str] = []
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                stack.append((entry, f"{prefix}{entry.name}/"))
            elif entry.name.endswith(".json"):
                names.append(prefix + entry.name[: -len(".json")])
    return tuple(sorted(names))


def topology_names(group: str | None = None) -> list[str]:
    """The topologies ``topohub`` ships (read from its package data; no network), optionally of one group.

    >>> "topozoo/Abilene" in topology_names("topozoo")  # doctest: +SKIP
    True
    """
    names = _catalogue()
    return [n for n in names if group is None or n.startswith(f"{group}/")]


def load_topology(name: str) -> nx.Graph:
    """The ``topohub`` topology ``name`` (e.g. ``"topozoo/Abilene"``) with nodes labelled by their names.

    ``name`` must be one of :func:`topology_names` (checked before anything is
    opened, so no name reaches a file path unchecked). Edges keep topohub's attributes; ``dist``
    is the link length in km. Needs the optional extra ``routing`` (``pip install 'cmab_milp[routing]'``).
    """
    if not isinstance(name, str) or not _TOPOLOGY.match(name) or ".." in name.split("/"):
        raise ValueError(f"a topohub name is GROUP/NAME such as 'topozoo/Abilene', got {name!r}")
    catalogue = topology_names()
    if name not in catalogue:
        close = close_names(name, catalogue, n=5)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"topohub has no topology {name!r}{hint} (`cmab-milp topologies` or "
            "cmab_milp.topologies.topology_names() lists them)"
        )
    import topohub

    try:
        data = topohub.get(name)
    except Exception as exc:  # topohub raises its own errors for unknown names
        raise ValueError(f"topohub has no topology {name!r} ({exc})") from None
    graph = nx.node_link_graph(data, edges="edges")
    names = [graph.nodes[v].get("name", v) for v in graph]
    if len(set(names)) == len(names):
        graph = nx.relabel_nodes(graph, {v: graph.nodes[v].get("name", v) for v in graph})
    missing = [(u, v) for u, v, dist in graph.edges(data="dist") if dist is None]
    if missing:
        raise ValueError(f"topology {name!r}: links without a 'dist' length, e.g. {missing[0]}")
    return graph


def routing_problem(
    name: str,
    source: str,
    target: str,
    *,
    jitter: float = 0.05,
    horizon: int = 2000,
    seeds: int = 3,
    policies: Sequence[tuple[str, str]] = (("CUCB", "CUCB"), ("AROQ-CMAB", "AROQ"), ("SROQ-CMAB", "SROQ")),
    oracle: str = "auto",
) -> dict[str, Any]:
    """A routing problem on topology ``name`` as problem-file data (a dict ``tomllib`` would return).

    Arms are the links in the order the built space lists them, so
    ``means[k]`` belongs to ``space.arms[k]``; ``jitter`` is the standard
    deviation of each link's reward (independent across links).
    """
    from .spaces import STPaths

    graph = load_topology(name)
    for role, node in (("source", source), ("target", target)):
        if node not in graph:
            raise ValueError(f"{role} {node!r} is not a node of {name}; nodes: {sorted(map(str, graph))}")
    if not jitter > 0:
        raise ValueError(f"jitter must be > 0, got {jitter}")
    edges = [[u, v] for u, v in graph.edges()]
    # The space a problem file builds from this edge list (same node and edge order as the builder's).
    built = nx.Graph()
    built.add_nodes_from(dict.fromkeys(v for e in edges for v in e))
    built.add_edges_from(edges)
    arms = STPaths(built, source, target).arms
    means = [round(link_mean(graph.edges[u, v]["dist"]), 6) for u, v in arms]
    variance = round(jitter**2, 12)
    cov = [[variance if i == j else 0 for j in range(len(arms))] for i in range(len(arms))]
    return {
        "title": f"Shortest-path routing on {name.split('/')[-1]}: {source} -> {target}",
        "space": {"kind": "STPaths", "source": source, "target": target, "graph": {"edges": edges}},
        "environment": {"kind": "GaussianNoise", "means": means, "cov": cov},
        "policies": [{"name": label, "kind": kind, "oracle": oracle} for label, kind in policies],
        "run": {"horizon": horizon, "seeds": seeds, "panels": ["regret", "queries", "rounds", "runtime"]},
    }


def _value(value: Any) -> str:
    """A TOML value for the plain data of :func:`routing_problem` (JSON and TOML agree on these)."""
    return json.dumps(value, ensure_ascii=False)


def routing_problem_toml(name: str, source: str, target: str, *, header: str = "", **options: Any) -> str:
    """:func:`routing_problem` written as a problem file, ``header`` (comment lines) first.

    >>> import tomllib
    >>> text = routing_problem_toml("topozoo/Abilene", "New York", "Los Angeles")  # doctest: +SKIP
    >>> tomllib.loads(text)["space"]["source"]  # doctest: +SKIP
    'New York'
    """
    data = routing_problem(name, source, target, **options)
    lines = [f"# {line}".rstrip() for line in header.strip("\n").splitlines()] if header else []
    lines += ["", f"title = {_value(data['title'])}", "", "[space]"]
    for key in ("kind", "source", "target"):
        lines.append(f"{key} = {_value(data['space'][key])}")
    lines += ["", "[space.graph]", "edges = ["]
    lines += [f"    {_value(edge)}," for edge in data["space"]["graph"]["edges"]]
    lines += ["]", "", "[environment]", f"kind = {_value(data['environment']['kind'])}"]
    lines.append("# means[k] = -(dist_km / 200 + 1) / 20: link k's mean delay in units of 20 ms, negated")
    lines.append(f"means = {_value(data['environment']['means'])}")
    lines.append("# independent Gaussian jitter per link: cov = jitter^2 * I")
    lines.append("cov = [")
    lines += [f"    {_value(row)}," for row in data["environment"]["cov"]]
    lines.append("]")
    for policy in data["policies"]:
        lines += ["", "[[policies]]"] + [f"{k} = {_value(v)}" for k, v in policy.items()]
    lines += ["", "[run]"] + [f"{k} = {_value(v)}" for k, v in data["run"].items()]
    return "\n".join(lines) + "\n"

"""Write the published baseline experiments as problem files (problems/perrault_*.toml, problems/combes_*.toml).

    python bench/published_problems.py            # rewrites the files and their data (deterministic)
    python bench/published_problems.py --out DIR  # the same into another folder

Sources, with the constants each file takes from them:

* Perrault, Boursier, Valko and Perchet, "Statistical efficiency of Thompson
  sampling for combinatorial semi-bandits", NeurIPS 2020, setups as in the
  authors' code (github.com/eboursier/CTS, ``simu.ipynb``, ``strategies.py``):
  m-sets n = 20, m = 4, T = 10^4, 50 runs, Gaussian feedback with covariance
  (1 - c) I + c 11^T, c = 0.1; shortest paths on road-chesapeake from node 1 to
  node 33 (0-based, as ``networkx.from_scipy_sparse_matrix`` numbers the .mtx
  file's nodes 1..39) with Bernoulli edge costs; perfect matchings of K(4, 4)
  with correlation c in {-1/n, 0.2, 0.5, 1} (n = 16 arms), covariance as
  above. Their CUCB radius is ``sigma sqrt(2 delta(t) / N)`` with ``delta(t) =
  max(1, log t)``: ``C = 2 sigma^2`` here (sigma = 1 for the Gaussian setups,
  1/2 for the paths); their ESCB (matchings) uses ``f(t) = log t``: ``C = 1,
  loglog = 0``; their Gaussian CTS prior covariance ``(1 + (m - 1) c) I``:
  ``sigma = sqrt(1 + (m - 1) max(c, 0))``. Means: Unif[0, 1] per arm as in
  their notebook, drawn here once from a fixed seed (theirs are not published).
* Combes, Talebi, Proutiere and Lelarge, "Combinatorial bandits revisited",
  NeurIPS 2015, Section 6: perfect matchings of K(5, 5) (d = 25, m = 5) with
  mean a on the edges of one perfect matching and b elsewhere, (a, b) = (0.7,
  0.5) and (0.95, 0.3); spanning trees of K5 (d = 10, m = 4) with Delta_min =
  0.54 (their means are not in the text available here: a = 0.9 on one
  spanning tree, b = 0.36 elsewhere gives that Delta_min). Bernoulli rewards,
  ESCB-1's ``f(t) = log t + 4 m log log t`` (the library's default), CUCB's
  ``C = 1.5`` (the library's default; the paper's CUCB is Chen et al.'s).
"""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
DATA = PROBLEMS / "data"
MIRROR = Path("/work/.mirror/eboursier+CTS/repo")  # where the .mtx was read from (git show HEAD:dataset/...)

QUICK = "cmab-milp run problems/{name}.toml --horizon 2000 --seeds 1 --out results/{name}-quick"


def policies(
    *, C_cucb: float, escb: dict, cts: dict, heavy: bool, bounds: tuple | None = None, ties: str | None = None
) -> str:
    """The eight compared policies; ``heavy``: the ESCB family only on request (their index on large spaces).

    ``bounds``: the known outcome range, set as ``outcome_bounds`` on the per-arm indices (CUCB, CTS, AROQ, SROQ).
    ``ties``: a tie rule mode other than the default, on every policy (with the reason in the file's header).
    """
    on_request = (
        "\non_request = true     # ESCB's index over every path: many minutes per 2,000 steps at this size"
        if heavy
        else ""
    )

    def table(name: str, kind: str, constants: dict, extra: str = "") -> str:
        consts = ", ".join(f"{k} = {_toml(v)}" for k, v in constants.items())
        line = f"\nconstants = {{ {consts} }}" if consts else ""
        if "outcome_bounds" in constants:
            line += "  # the authors' choice: indices clipped at 0"
        rule = "" if ties is None else f'\nties = "{ties}"     # the tie rule off: see the header'
        return f'[[policies]]\nname = "{name}"\nkind = "{kind}"\noracle = "auto"{rule}{line}{extra}\n'

    clip = {} if bounds is None else {"outcome_bounds": list(bounds)}
    escb_c = {"C": escb["C"], "loglog": escb["loglog"]}
    return "\n".join(
        [
            table("CUCB", "CUCB", {"C": C_cucb, **clip}),
            table("CTS", "CTS", {**cts, **clip}),
            table("ESCB", "ESCB", escb_c, on_request),
            table("AESCB", "AESCB", {**escb_c, "eps": 0.1}, on_request),
            table("Epoch-ESCB", "Epoch-ESCB", escb_c, on_request),
            table("AROQ", "AROQ", {"C": C_cucb, **clip}),
            table("AROQ-ESCB", "AROQ-ESCB", escb_c, on_request),
            table("SROQ", "SROQ", {"C": C_cucb, **clip}),
        ]
    )


def describe(who: str, setup: str, paper: str) -> str:
    """The ``description`` line of a file."""
    return f'description = "{who} on the {setup} of {paper}."\n\n'


def _toml(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return repr(round(value, 12))
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def equicorrelated(d: int, c: float) -> np.ndarray:
    """``(1 - c) I + c 11^T``."""
    return (1.0 - c) * np.eye(d) + c * np.ones((d, d))


def write_csv(path: Path, matrix: np.ndarray, comment: str) -> None:
    lines = [f"# {comment}"] + [",".join(repr(float(x)) for x in row) for row in matrix]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def header(name: str, lines: list[str], full: str) -> str:
    body = "\n".join(f"# {line}" if line else "#" for line in lines)
    return f"{body}\n#\n#   {full}\n#   {QUICK.format(name=name)}     # the quick check\n\n"


def msets() -> None:
    name, d, m, c = "perrault_msets", 20, 4, 0.1
    write_csv(
        DATA / f"{name}_cov.csv", equicorrelated(d, c), "Perrault et al. 2020: (1 - c) I + c 11^T, c = 0.1, d = 20"
    )
    text = header(
        name,
        [
            "Perrault, Boursier, Valko and Perchet (NeurIPS 2020), m-sets: d = 20 arms, actions of exactly m = 4,",
            "T = 10^4, Gaussian feedback with covariance (1 - c) I + c 11^T, c = 0.1 (data/perrault_msets_cov.csv),",
            "means Unif[0, 1] (seed 20). Constants as in the authors' code (github.com/eboursier/CTS): CUCB",
            "sigma = 1, delta(t) = log t -> C = 2; Gaussian CTS prior covariance (1 + (m - 1) c) I -> sigma =",
            "sqrt(1.3); ESCB's f(t) = log t (C = 1, loglog = 0). They ran 50 runs; 10 seeds here.",
            "Written by bench/published_problems.py.",
        ],
        f"cmab-milp run problems/{name}.toml --out results/{name}",
    )
    text += 'title = "Perrault et al. 2020: m-sets, d = 20, m = 4, correlated Gaussian (c = 0.1)"\n'
    text += describe(
        "CUCB, CTS, ESCB, AESCB, Epoch-ESCB, AROQ, AROQ-ESCB, SROQ", "m-sets setup", "Perrault et al. (2020)"
    )
    text += f'[space]\nkind = "Cardinality"\nd = {d}\nm = {m}\nexact = true\n\n'
    text += '[environment]\nkind = "GaussianNoise"\nmeans = { draw = "uniform", low = 0.0, high = 1.0, seed = 20 }\n'
    text += f'cov = {{ file = "data/{name}_cov.csv" }}\n\n'
    text += policies(
        C_cucb=2.0,
        escb={"C": 1.0, "loglog": 0.0},
        cts={"prior": "gaussian", "sigma": math.sqrt(1 + (m - 1) * c)},
        heavy=False,
    )
    text += '\n[run]\nhorizon = 10_000\nseeds = 10\npanels = ["regret", "queries", "runtime"]\n'
    (PROBLEMS / f"{name}.toml").write_text(text, encoding="utf-8")


def chesapeake() -> nx.Graph:
    """The road-chesapeake graph with the authors' 0-based nodes (the .mtx numbers them 1..39)."""
    lines = [ln for ln in (DATA / "road-chesapeake.mtx").read_text().splitlines() if not ln.startswith("%")]
    n, _, e = (int(x) for x in lines[0].split())
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    for ln in lines[1 : 1 + e]:
        i, j = (int(x) - 1 for x in ln.split()[:2])
        graph.add_edge(min(i, j), max(i, j))
    return graph


def shortest_path() -> None:
    name = "perrault_shortest_path"
    graph = chesapeake()
    assert graph.number_of_nodes() == 39 and graph.number_of_edges() == 170
    edges = sorted(graph.edges())
    p = np.random.default_rng(33).uniform(0.0, 1.0, len(edges))
    text = header(
        name,
        [
            "Perrault, Boursier, Valko and Perchet (NeurIPS 2020), shortest paths: the road-chesapeake graph",
            "(39 nodes, 170 edges; data/road-chesapeake.mtx, source and licence in data/README.md), paths from",
            "node 1 to node 33 (0-based, as the authors' code numbers the .mtx file's nodes 1..39), T = 10^4.",
            "Each edge's cost is Bernoulli(p_e), p_e ~ Unif[0, 1] (seed 33); the reward is minus the path's",
            "cost (BernoulliCosts: outcomes -1 or 0). The authors' runs fix the sum of the costs (a dependent",
            "Bernoulli model, BinaryExpSumMAB, sums 70 to 130); independent edges here.",
            "Constants from their code: CUCB sigma = 1/2, delta(t) = log t -> C = 0.5; CTS with a Gaussian",
            "prior (the library's Beta prior needs outcomes in [0, 1]), sigma = 1/2. ESCB's family asks its",
            "index over paths (a model per query at 170 arms): only on request (--policies ESCB,...).",
            "Indices clipped at 0 (outcome_bounds = [-1, 0] on CUCB, CTS, AROQ, SROQ): the authors' choice. Their",
            "shortest-path oracle (settings.py, ShortestPathOracle) weighs each edge max(-theta_i, 0) for every",
            "algorithm, valid since costs are known >= 0. Unclipped, an edge index above 0 makes the path query a",
            "longest-path model (a MILP, about 1 s a query by round 400; the quick check took over 10 minutes);",
            "clipped, every index query is a shortest path. The quick check: 32-36 CPU s, most of it in the",
            "queries with weights above 0: SROQ's first epoch (169 longest paths through an edge), the",
            "unobserved-arm queries of CUCB and AROQ (weight 1 on the arms not yet seen) and AROQ's mixed signs:",
            "MILPs on a graph with cycles. The tie rule is off here (ties = \"off\"): ties among those longest",
            "paths (many paths hold as many unseen arms) settle by restricted MILP solves, 2.4-5.6 s each (CUCB:",
            "435 s a job with the rule, 20 queries taking 50 s of its first 300 steps), while shortest-path ties",
            "settle exactly in under 1 ms (oracles/core/paths_ruled.py). With it off, another backend may pick",
            "another path among equal ones (a different curve, the same expected regret).",
            "Written by bench/published_problems.py.",
        ],
        f"cmab-milp run problems/{name}.toml --out results/{name}",
    )
    text += 'title = "Perrault et al. 2020: shortest paths on road-chesapeake, node 1 to 33, Bernoulli costs"\n'
    text += describe(
        "CUCB, CTS, AROQ, SROQ (the ESCB family on request)", "shortest-path setup", "Perrault et al. (2020)"
    )
    text += '[space]\nkind = "STPaths"\nsource = 1\ntarget = 33\n[space.graph]\nedges = [\n'
    text += "".join(f"  [{u}, {v}],\n" for u, v in edges) + "]\n\n"
    text += '[environment]\nkind = "BernoulliCosts"\ncosts = [\n'
    text += "".join(f"  {x:.6f},\n" for x in p) + "]\n\n"
    text += policies(
        C_cucb=0.5,
        escb={"C": 1.0, "loglog": 0.0},
        cts={"prior": "gaussian", "sigma": 0.5},
        heavy=True,
        bounds=(-1.0, 0.0),
        ties="off",
    )
    text += '\n[run]\nhorizon = 10_000\nseeds = 10\npanels = ["regret", "queries", "runtime"]\n'
    (PROBLEMS / f"{name}.toml").write_text(text, encoding="utf-8")


def matchings_perrault() -> None:
    d, m = 16, 4
    for label, c in (("neg", -1.0 / d), ("02", 0.2), ("05", 0.5), ("1", 1.0)):
        name = f"perrault_matchings_c{label}"
        write_csv(
            DATA / f"{name}_cov.csv", equicorrelated(d, c), f"Perrault et al. 2020: (1 - c) I + c 11^T, c = {c:g}"
        )
        text = header(
            name,
            [
                "Perrault, Boursier, Valko and Perchet (NeurIPS 2020), matchings: perfect matchings of K(4, 4)",
                f"(d = 16 arms, m = 4), T = 10^4, Gaussian feedback with covariance (1 - c) I + c 11^T, c = {c:g}",
                f"(data/{name}_cov.csv; the paper's c in {{-1/n, 0.2, 0.5, 1}}, one file each), means Unif[0, 1]",
                "(seed 44). Constants from the authors' code: CUCB sigma = 1, delta(t) = log t -> C = 2; ESCB",
                "f(t) = log t (C = 1, loglog = 0); Gaussian CTS prior (1 + (m - 1) max(c, 0)) I.",
                "Written by bench/published_problems.py.",
            ],
            f"cmab-milp run problems/{name}.toml --out results/{name}",
        )
        text += f'title = "Perrault et al. 2020: matchings of K(4, 4), correlated Gaussian (c = {c:g})"\n'
        text += describe(
            "CUCB, CTS, ESCB, AESCB, Epoch-ESCB, AROQ, AROQ-ESCB, SROQ", "matching setup", "Perrault et al. (2020)"
        )
        text += '[space]\nkind = "Matchings"\nperfect = true\n[space.graph]\n'
        text += 'generator = "complete_bipartite_graph"\nargs = [4, 4]\n\n'
        text += (
            '[environment]\nkind = "GaussianNoise"\nmeans = { draw = "uniform", low = 0.0, high = 1.0, seed = 44 }\n'
        )
        text += f'cov = {{ file = "data/{name}_cov.csv" }}\n\n'
        sigma = math.sqrt(1 + (m - 1) * max(c, 0.0))
        text += policies(
            C_cucb=2.0, escb={"C": 1.0, "loglog": 0.0}, cts={"prior": "gaussian", "sigma": sigma}, heavy=False
        )
        text += '\n[run]\nhorizon = 10_000\nseeds = 10\npanels = ["regret", "queries", "runtime"]\n'
        (PROBLEMS / f"{name}.toml").write_text(text, encoding="utf-8")


def matchings_combes() -> None:
    graph = nx.complete_bipartite_graph(5, 5)
    best = {(i, 5 + i) for i in range(5)}
    for label, (a, b) in (("07_05", (0.7, 0.5)), ("095_03", (0.95, 0.3))):
        name = f"combes_matchings_{label}"
        means = [a if (u, v) in best or (v, u) in best else b for u, v in graph.edges()]
        text = header(
            name,
            [
                "Combes, Talebi, Proutiere and Lelarge (NeurIPS 2015), Section 6: perfect matchings of K(5, 5)",
                f"(d = 25, m = 5, 120 actions), Bernoulli rewards, mean a = {a} on the edges of the perfect matching",
                f"{{(i, 5 + i)}} and b = {b} elsewhere. ESCB-1's f(t) = log t + 4 m log log t (C = 1, loglog = 4,",
                "the library's defaults), CUCB C = 1.5, CTS with Beta priors. T = 10^4 as in their figure.",
                "Written by bench/published_problems.py.",
            ],
            f"cmab-milp run problems/{name}.toml --out results/{name}",
        )
        text += f'title = "Combes et al. 2015: matchings of K(5, 5), a = {a}, b = {b}"\n'
        text += describe(
            "CUCB, CTS, ESCB, AESCB, Epoch-ESCB, AROQ, AROQ-ESCB, SROQ", "matching setup", "Combes et al. (2015)"
        )
        text += '[space]\nkind = "Matchings"\nperfect = true\n[space.graph]\n'
        text += 'generator = "complete_bipartite_graph"\nargs = [5, 5]\n\n'
        text += f'[environment]\nkind = "BernoulliArms"\nmeans = {means}\n\n'
        text += policies(C_cucb=1.5, escb={"C": 1.0, "loglog": 4.0}, cts={"prior": "beta"}, heavy=False)
        text += '\n[run]\nhorizon = 10_000\nseeds = 10\npanels = ["regret", "queries", "runtime"]\n'
        (PROBLEMS / f"{name}.toml").write_text(text, encoding="utf-8")


def spanning_trees() -> None:
    name = "combes_spanning_trees"
    graph = nx.complete_graph(5)
    tree = {(0, 1), (1, 2), (2, 3), (3, 4)}
    a, b = 0.9, 0.36
    means = [a if (u, v) in tree else b for u, v in graph.edges()]
    text = header(
        name,
        [
            "Combes, Talebi, Proutiere and Lelarge (NeurIPS 2015), Section 6: spanning trees of K5 (d = 10,",
            "m = 4, 125 trees), Bernoulli rewards, Delta_min = 0.54 as the paper states; its means are not in",
            f"the text available here: a = {a} on the path 0-1-2-3-4 and b = {b} elsewhere give that Delta_min.",
            "ESCB-1's f(t) = log t + 4 m log log t (the defaults), CUCB C = 1.5, CTS with Beta priors; T = 3 10^4",
            "as in their log-scale figure.",
            "Written by bench/published_problems.py.",
        ],
        f"cmab-milp run problems/{name}.toml --out results/{name}",
    )
    text += 'title = "Combes et al. 2015: spanning trees of K5, Delta_min = 0.54"\n'
    text += describe(
        "CUCB, CTS, ESCB, AESCB, Epoch-ESCB, AROQ, AROQ-ESCB, SROQ", "spanning-tree setup", "Combes et al. (2015)"
    )
    text += '[space]\nkind = "SpanningTrees"\n[space.graph]\ngenerator = "complete_graph"\nargs = [5]\n\n'
    text += f'[environment]\nkind = "BernoulliArms"\nmeans = {means}\n\n'
    text += policies(C_cucb=1.5, escb={"C": 1.0, "loglog": 4.0}, cts={"prior": "beta"}, heavy=False)
    text += '\n[run]\nhorizon = 30_000\nseeds = 10\npanels = ["regret", "queries", "runtime"]\n'
    (PROBLEMS / f"{name}.toml").write_text(text, encoding="utf-8")


def main() -> None:
    global PROBLEMS, DATA
    import argparse

    parser = argparse.ArgumentParser(description="Write the published experiments as problem files.")
    parser.add_argument("--out", default=None, help="folder to write into (default: the repository's problems/)")
    args = parser.parse_args()
    if args.out is not None:  # a copy elsewhere (the test compares it with the shipped files)
        shipped = DATA / "road-chesapeake.mtx"
        PROBLEMS, DATA = Path(args.out), Path(args.out) / "data"
        DATA.mkdir(parents=True, exist_ok=True)
        (DATA / "road-chesapeake.mtx").write_bytes(shipped.read_bytes())
    DATA.mkdir(exist_ok=True)
    mtx = DATA / "road-chesapeake.mtx"
    if not mtx.exists() and (MIRROR / "HEAD").exists():  # first run only: the file is committed beside its README
        import subprocess

        blob = subprocess.run(
            ["git", "--git-dir", str(MIRROR), "show", "HEAD:dataset/road-chesapeake.mtx"],
            check=True,
            capture_output=True,
        ).stdout
        mtx.write_bytes(blob)
    msets()
    shortest_path()
    matchings_perrault()
    matchings_combes()
    spanning_trees()
    print(
        "written:",
        ", ".join(
            sorted(p.name for p in PROBLEMS.glob("perrault_*.toml"))
            + sorted(p.name for p in PROBLEMS.glob("combes_*.toml"))
        ),
    )


if __name__ == "__main__":
    main()

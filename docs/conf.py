"""Sphinx configuration of the cmab_milp site.

Build (warnings are errors): ``.venv/bin/python -m sphinx -W -b html docs docs/_build/html``
with the ``docs`` extra installed (``pip install -e ".[docs]"``). Nothing is fetched over the
network and no notebook is executed: the notebooks render from their stored outputs.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's cmab_milp, also without an editable install

import cmab_milp  # noqa: E402

project = "cmab_milp"
author = "the cmab_milp authors"
copyright = "the cmab_milp authors, MIT licence"
release = version = cmab_milp.__version__

extensions = [
    "myst_nb",  # MyST Markdown for the prose, and the notebooks (brings myst_parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "screenshots.py"]
templates_path = ["_templates"]

# --- MyST and the notebooks: rendered from their stored outputs, never executed at build time
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_merge_streams = True

# --- the API reference: autosummary pages from the docstrings (numpydoc sections)
autosummary_generate = True
autosummary_imported_members = True
# Module pages document what each module defines (not what it re-exports: ``ignore-module-all``).
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "groupwise"
autodoc_typehints = "none"  # the signature line shows the hints; numpydoc's Parameters say the types
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- every cross-reference must resolve (a broken one is a warning, hence an error with -W)
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(np|numpy|nx|networkx|scipy|pd|pandas|matplotlib|highspy|pulp|dask|tqdm)\..*"),
]

# --- the look
html_theme = "pydata_sphinx_theme"
html_title = "cmab_milp"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
}
# Pages without sub-pages get the full width (no empty "Section Navigation" column).
html_sidebars = {
    page: []
    for page in (
        "index",
        "getting-started",
        "extending",
        "problem-files",
        "gallery",
        "performance",
        "benchmarks",
        "references",
        "glossary",
        "changelog",
    )
}
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# --- references the build cannot link but the code holds --------------------------------------------
# The docstrings' roles (:class:, :meth:, :mod:, ...) name the package's own objects, often unqualified
# or private. ``resolve_in_code`` links a name that is documented under a unique longer path, and lets
# a name that exists in the code but is not rendered (private helpers, undocumented module constants,
# the standard library) stand as text. A name that exists nowhere stays a warning, so -W fails on it.
import importlib  # noqa: E402
import re  # noqa: E402

from docutils import nodes  # noqa: E402
from sphinx.addnodes import pending_xref  # noqa: E402

_KINDS = {
    "class": {"class", "exception"},
    "exc": {"class", "exception"},
    "meth": {"method", "function", "property", "classmethod", "staticmethod"},
    "func": {"function", "method", "classmethod", "staticmethod"},
    "attr": {"attribute", "property", "data"},
    "data": {"data", "attribute"},
    "mod": {"module"},
    "obj": None,
}


_MISSING = object()


def _lookup(dotted: str) -> object:
    """The module or attribute chain ``dotted`` names (reachable by import), else ``_MISSING``."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # any failure: try a shorter module path
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return _MISSING
        return obj
    return _MISSING


def _home_name(obj: object) -> str | None:
    """Where ``obj`` is defined (``module.qualname``), for a name re-exported elsewhere."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and isinstance(qualname, str) else None


def _home_module(module: str | None, klass: str | None) -> str | None:
    """The module that defines ``module.klass`` (a public name's page documents it under ``cmab_milp``)."""
    if not (module and klass):
        return None
    try:
        obj = importlib.import_module(module)
        for name in klass.split("."):
            obj = getattr(obj, name)
    except (ImportError, AttributeError):
        return None
    return getattr(obj, "__module__", None)


def _candidates(target: str, module: str | None, klass: str | None) -> list[str]:
    names = [target]
    home = _home_module(module, klass)
    if home and home != module:
        names.extend(_candidates(target, home, klass))
    if module:
        names.append(f"{module}.{target}")
        if klass:
            names.append(f"{module}.{klass}.{target}")
        package = module
        while "." in package:  # names relative to an enclosing package
            package = package.rsplit(".", 1)[0]
            names.append(f"{package}.{target}")
    return names


def resolve_in_code(app, env, node: pending_xref, contnode: nodes.Element):
    if node.get("refdomain") != "py":
        return None
    role, target = node["reftype"], node["reftarget"].lstrip("~.")
    domain = env.get_domain("py")
    kinds = _KINDS.get(role)
    suffix = "." + target
    found = [
        (name, obj)
        for name, obj in domain.objects.items()
        if (name == target or name.endswith(suffix)) and (kinds is None or obj.objtype in kinds)
    ]
    module = node.get("py:module")
    if len(found) > 1 and module:  # prefer the one beside the reference
        near = [item for item in found if item[0].startswith(module.rsplit(".", 1)[0] + ".")]
        found = near or found
    if len(found) == 1 or (found and len({obj.docname for _, obj in found}) == 1):
        name = found[0][0]
        return domain.resolve_xref(env, node["refdoc"], app.builder, role, name, node, contnode)
    for name in _candidates(target, module, node.get("py:class")):
        obj = _lookup(name)
        if obj is _MISSING:
            continue
        home = _home_name(obj)
        if home in domain.objects:  # a re-exported name: link to where it is documented
            return domain.resolve_xref(env, node["refdoc"], app.builder, role, home, node, contnode)
        return contnode  # a real object the site does not render: plain text, no warning
    return None


# --- each public name is rendered once, on its own page; the module pages leave it out ----------------
def public_names() -> list[str]:
    """The dotted names the API reference lists (``docs/api/index.md``'s autosummary entries)."""
    text = (Path(__file__).parent / "api" / "index.md").read_text(encoding="utf-8")
    return ["cmab_milp." + name for name in re.findall(r"^ {3}([A-Za-z_][\w.]*)$", text, re.M)]


def _public_objects() -> set[int]:
    found = set()
    for dotted in public_names():
        module, _, name = dotted.rpartition(".")
        found.add(id(getattr(importlib.import_module(module), name)))
    return found


PUBLIC_IDS: set[int] = set()


def skip_public_on_module_pages(app, what, name, obj, skip, options):
    if what == "module" and id(obj) in PUBLIC_IDS:
        return True
    if what == "module" and isinstance(obj, types.GenericAlias):
        return True  # a type alias (``Answer = tuple[...]``): autodoc would take it for a class
    return None


# --- the capability table of the oracle backends, from their declarations ------------------------------
from typing import ClassVar  # noqa: E402

from docutils.parsers.rst import Directive, directives  # noqa: E402
from docutils.statemachine import StringList  # noqa: E402


def _mark(flag: bool) -> str:
    return "yes" if flag else "no"


def capability_rows(distribution: bool) -> list[list[str]]:
    """One row per registered backend of the kind asked, from its declared ``Capabilities`` (not what is installed)."""
    from cmab_milp.oracles.core.registry import BACKENDS

    rows = []
    for name, backend in BACKENDS.items():
        caps = backend.capabilities
        if caps.distribution != distribution:
            continue
        first = [f"``{name}``" + (" (``:SOLVER``)" if caps.takes_solver else "")]
        answers = [] if distribution else [_mark(caps.linear), _mark(caps.norm)]
        rest = [
            _mark(caps.forbid_pairs),
            _mark(caps.approximate),
            _mark(caps.time_limit),
            _mark(caps.exact),
            _mark(caps.cost is not None),
            ", ".join(f"``{module}``" for module in caps.requires) or "(core)",
            caps.spaces or "every space",
        ]
        rows.append(first + answers + rest)
    return rows


class BackendCapabilities(Directive):
    """``.. backend-capabilities::`` (option ``:distribution:``): a table of the registered backends' declarations."""

    option_spec: ClassVar[dict] = {"distribution": directives.flag}

    def run(self):
        distribution = "distribution" in self.options
        answers = [] if distribution else ["argmax", "argmax_norm"]
        tail = ["forbid_pairs", "gap=", "time_limit=", "exact", "picked by auto", "needs", "spaces"]
        header = ["backend", *answers, *tail]
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for row in [header, *capability_rows(distribution)]:
            lines.append("   * - " + row[0])
            lines.extend("     - " + cell for cell in row[1:])
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source="backend-capabilities"), self.content_offset, node)
        return node.children


def setup(app):
    app.add_directive("backend-capabilities", BackendCapabilities)
    PUBLIC_IDS.update(_public_objects())
    app.connect("missing-reference", resolve_in_code)
    app.connect("autodoc-skip-member", skip_public_on_module_pages)

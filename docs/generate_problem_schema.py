"""Regenerate the schema reference of ``docs/problem-files.md`` from the schema's data.

Run from the repository root: ``python docs/generate_problem_schema.py`` (``--check``: exit 1 if the
page is out of date, without writing). The region between the page's markers is replaced by
:func:`cmab_milp.experiments.problem.schema_doc.render_reference`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cmab_milp.experiments.problem.schema_doc import with_reference

PAGE = Path(__file__).resolve().parent / "problem-files.md"


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    fresh = with_reference(page)
    if "--check" in argv:
        if fresh != page:
            print(f"{PAGE}: the schema reference is out of date; run python docs/generate_problem_schema.py")
            return 1
        return 0
    if fresh != page:
        PAGE.write_text(fresh, encoding="utf-8")
        print(f"{PAGE}: schema reference regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The description of a ``cmab-milp`` subcommand, written once in its ``add_command``'s docstring.

A subcommand's ``add_command`` says what the command does in a paragraph that
starts ``Its description (...):``; :func:`described` gives that paragraph as the
``argparse`` description, so the text is not repeated as concatenated strings.

>>> def add_command(sub):
...     '''Add ``demo``.
...
...     Its description (``cmab-milp demo --help``): show a demo,
...     then stop. Exit 0.
...     '''
>>> described(add_command)
'Show a demo, then stop. Exit 0.'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["described"]

_MARK = "Its description ("


def described(add_command: Callable[..., Any]) -> str:
    """The paragraph of ``add_command``'s docstring after ``Its description (...):``, on one line, capitalised."""
    doc = inspect.getdoc(add_command) or ""
    paragraph = next((p for p in doc.split("\n\n") if p.startswith(_MARK)), None)
    if paragraph is None:
        raise ValueError(f"{add_command.__qualname__}: its docstring has no paragraph 'Its description (...): ...'")
    text = " ".join(paragraph.split("): ", 1)[1].split())
    return text[:1].upper() + text[1:]

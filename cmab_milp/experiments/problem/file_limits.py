"""Limits on a problem file's shape, checked before (and right after) it is parsed.

* **Nesting**: arrays and tables nested deeper than :data:`MAX_DEPTH` are refused
  at the key where the nesting passes it, before ``tomllib`` reads the text (its
  parser recurses once per level) and again on the parsed data (dotted keys and
  table headers nest without brackets). No valid file needs more than a few levels.
* **Control characters**: keys and values of a file are echoed in messages with
  control characters escaped (:func:`printable`), so a key cannot split a
  message line or send terminal escapes.

>>> check_nesting("a = [[[1]]]", "demo.toml", max_depth=2)
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: demo.toml: a[0][0]: arrays and tables nested more than 2 deep \
(no valid problem file needs that)
>>> printable("bad\\nkey\\x1b[31m")
'bad\\\\nkey\\\\x1b[31m'
"""

from __future__ import annotations

from typing import Any

from ...untrusted_limits import MAX_NESTING
from .schema import ProblemError, join_key, printable

__all__ = ["MAX_DEPTH", "check_data_depth", "check_nesting", "printable"]

#: Arrays and tables nested deeper than this are refused (a valid file needs a handful of levels): the one
#: nesting limit of every untrusted file, :data:`cmab_milp.untrusted_limits.MAX_NESTING`.
MAX_DEPTH = MAX_NESTING


def _refuse(file: str, key: str, max_depth: int) -> ProblemError:
    return ProblemError(
        file, key, f"arrays and tables nested more than {max_depth} deep (no valid problem file needs that)"
    )


def _skip_string(text: str, i: int) -> tuple[int, str]:
    """The index after the TOML string starting at ``text[i]`` and its raw content (unterminated: end of text)."""
    quote = text[i]
    triple = text.startswith(quote * 3, i)
    delimiter = quote * 3 if triple else quote
    j = i + len(delimiter)
    start = j
    while j < len(text):
        c = text[j]
        if c == "\\" and quote == '"':
            j += 2
            continue
        if text.startswith(delimiter, j):
            end = j
            j += len(delimiter)
            while triple and j < len(text) and text[j] == quote:  # """a"""" ends with a quote inside
                j += 1
                end += 1
            return j, text[start:end]
        if c == "\n" and not triple:
            return j, text[start:j]
        j += 1
    return j, text[start:]


def check_nesting(text: str, file: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Refuse TOML ``text`` whose inline arrays and tables nest deeper than ``max_depth``, naming the key.

    A light scan (strings and comments skipped), linear in the text; run it before ``tomllib.loads``.
    """
    header = ""
    array_tables: dict[str, int] = {}
    # one entry per open bracket: [opener, path of the value it opens, items seen (arrays)]
    stack: list[list[Any]] = []
    key = ""  # the key being written (at top level or in the innermost inline table)
    in_value = False
    line_start = True
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i, content = _skip_string(text, i)
            if not in_value:
                key += content
            line_start = False
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "\n":
            if not stack:
                key, in_value = "", False
            line_start = True
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if line_start and not stack and c == "[":  # a table header [a.b] or [[a]]
            end = text.find("\n", i)
            end = n if end < 0 else end
            line = text[i:end].split("#", 1)[0].strip()
            is_array = line.startswith("[[")
            name = line.strip("[]").strip().replace(" ", "").replace('"', "").replace("'", "")
            if is_array:
                array_tables[name] = array_tables.get(name, -1) + 1
                header = f"{name}[{array_tables[name]}]"
            else:
                header = name
            i = end
            continue
        line_start = False
        if c == "=" and not in_value:
            in_value = True
            i += 1
            continue
        if c in "[{":
            if stack and stack[-1][0] == "[":
                path = join_key(stack[-1][1], stack[-1][2])
            else:
                base = stack[-1][1] if stack else header
                path = join_key(base, key.strip().replace(" ", ""))
            stack.append([c, path, 0])
            if len(stack) > max_depth:
                raise _refuse(file, printable(path), max_depth)
            key, in_value = "", c == "["
            i += 1
            continue
        if c in "]}":
            if stack:
                stack.pop()
            in_value = bool(stack) and stack[-1][0] == "["
            i += 1
            continue
        if c == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][2] += 1
            elif stack:
                key, in_value = "", False
            i += 1
            continue
        if not in_value:
            key += c
        i += 1


def check_data_depth(data: Any, file: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Refuse parsed data (dicts and lists) nested deeper than ``max_depth``, naming the key (no recursion)."""
    todo: list[tuple[Any, str, int]] = [(data, "", 0)]
    while todo:
        value, path, depth = todo.pop()
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if depth > max_depth:
            raise _refuse(file, printable(path), max_depth)
        for k, v in items:
            if isinstance(v, (dict, list)):
                todo.append((v, join_key(path, k if isinstance(k, int) else str(k)), depth + 1))

"""Reading TOML tables with key paths, so every refusal names the file and the key.

A :class:`Table` wraps one TOML table and the dotted path that leads to it
(``space``, ``policies[1].constants``). Reading a key checks its type; reading
a table marks its keys as used, and :meth:`Table.finish` refuses whatever was
not read (a misspelt key is an error, not silently ignored). Every problem is
raised as a :class:`ProblemError` carrying the file, the key and what is wrong.

Example
-------
>>> t = Table({"d": 20, "m": "3"}, "space", "demo.toml")
>>> t.integer("d", minimum=1)
20
>>> t.integer("m")
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: demo.toml: space.m: expected an integer, got a string ('3')
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "MISSING",
    "ProblemError",
    "ProblemErrors",
    "Table",
    "copy_data",
    "describe",
    "join_key",
    "plain",
    "printable",
]


def printable(text: str) -> str:
    """``text`` with control and format characters escaped (``\\n``, ``\\x1b``), for echoing a file's keys.

    >>> printable("a\\nb\\x1b[31m")
    'a\\\\nb\\\\x1b[31m'
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in text)


class ProblemError(ValueError):
    """A problem file refused: ``file``, ``key`` (dotted path) and ``message``."""

    def __init__(self, file: str, key: str, message: str):
        self.file = file
        self.key = key
        self.message = message
        where = f"{file}: {key}" if key else file
        super().__init__(printable(f"{where}: {message}"))  # keys and values of a file: control characters escaped


class ProblemErrors(ProblemError):
    """Several :class:`ProblemError` of one file, reported at once; ``errors`` lists them in the order checked.

    Its message has one line per error; ``file``, ``key`` and ``message`` are the first error's.
    """

    def __init__(self, errors: Sequence[ProblemError]):
        if not errors:
            raise ValueError("ProblemErrors needs at least one error")
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.file, first.key, first.message)
        self.args = ("\n".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return self.args[0]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: Sentinel default meaning "this key is required".
MISSING: Any = _Missing()


def join_key(prefix: str, key: str | int) -> str:
    """``join_key("space", "m") == "space.m"``; integers index: ``policies[0]``."""
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else key


def describe(value: Any) -> str:
    """A short phrase naming the TOML type of ``value`` (for error messages)."""
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    for kind, name in names.items():
        if type(value) is kind:
            shown = repr(value)
            return f"{name} ({shown[:40] + '...' if len(shown) > 40 else shown})"
    return type(value).__name__


class Table:
    """One TOML table plus its key path; typed getters that raise :class:`ProblemError`."""

    def __init__(self, data: Any, key: str, file: str):
        if not isinstance(data, dict):
            raise ProblemError(file, key, f"expected a table, got {describe(data)}")
        self.data = data
        self.key = key
        self.file = file
        self.used: set[str] = set()

    # ------------------------------------------------------------ basics
    def error(self, key: str | int | None, message: str) -> ProblemError:
        """A :class:`ProblemError` for ``key`` inside this table (``None``: the table itself)."""
        return ProblemError(self.file, self.key if key is None else join_key(self.key, key), message)

    def path(self, key: str | int) -> str:
        return join_key(self.key, key)

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = MISSING) -> Any:
        """The value at ``key`` unchecked (marks it used); ``default`` if absent."""
        self.used.add(key)
        if key in self.data:
            return self.data[key]
        if default is MISSING:
            raise self.error(key, "missing required key")
        return default

    def finish(self, offered: Sequence[str] | None = None) -> None:
        """Refuse keys that no getter read (typos, keys of another kind).

        ``offered``: every key this table takes (from the schema), listed in the message instead of those read.
        """
        unknown = [k for k in self.data if k not in self.used]
        if not unknown:
            return
        if offered is not None and unknown[0] not in offered:
            raise self.error(unknown[0], f"unknown key (this table takes: {', '.join(sorted(offered)) or 'nothing'})")
        known = sorted(self.used)
        what = "unknown key" if offered is None else "not taken with the other keys given"
        raise self.error(unknown[0], f"{what} (this table takes: {', '.join(known) or 'nothing'})")

    def _typed(self, key: str, default: Any, convert: Callable[[Any], Any]) -> Any:
        """``convert(value at key)``; ``default`` as given when the key is absent (required if MISSING)."""
        if key not in self.data:
            return self.raw(key, default)
        return convert(self.raw(key))

    def _expect(self, key: str, kind: type | tuple[type, ...], what: str) -> Callable[[Any], Any]:
        """A converter that refuses a value not of ``kind`` (``expected WHAT, got ...``)."""

        def check(value: Any) -> Any:
            if not isinstance(value, kind):
                raise self.error(key, f"expected {what}, got {describe(value)}")
            return value

        return check

    # ------------------------------------------------------------ scalars
    def integer(self, key: str, default: Any = MISSING, *, minimum: int | None = None) -> Any:
        return self._typed(key, default, lambda v: check_integer(v, self.path(key), self.file, minimum=minimum))

    def number(self, key: str, default: Any = MISSING) -> Any:
        return self._typed(key, default, lambda v: check_number(v, self.path(key), self.file))

    def boolean(self, key: str, default: Any = MISSING) -> Any:
        return self._typed(key, default, self._expect(key, bool, "true or false"))

    def string(self, key: str, default: Any = MISSING, *, choices: Sequence[str] | None = None) -> Any:
        value = self._typed(key, default, self._expect(key, str, "a string"))
        if key in self.data and choices is not None and value not in choices:
            raise self.error(key, f"unknown value {value!r}; expected one of: {', '.join(choices)}")
        return value

    # ------------------------------------------------------------ containers
    def table(self, key: str, default: Any = MISSING) -> Any:
        return self._typed(key, default, lambda v: Table(v, self.path(key), self.file))

    def tables(self, key: str, default: Any = MISSING) -> Any:
        """An array of tables (``[[key]]``) as a list of :class:`Table`."""
        values = self._typed(key, default, self._expect(key, list, "an array of tables"))
        if key not in self.data:
            return values
        return [Table(item, join_key(self.path(key), k), self.file) for k, item in enumerate(values)]

    def array(self, key: str, default: Any = MISSING, *, item: Callable[[Any, str], Any] | None = None) -> Any:
        """An array; ``item(value, key_path)`` checks and converts each entry."""
        values = self._typed(key, default, self._expect(key, list, "an array"))
        if key not in self.data or item is None:
            return values
        return [item(v, join_key(self.path(key), k)) for k, v in enumerate(values)]


def check_integer(value: Any, key: str, file: str, *, minimum: int | None = None) -> int:
    """``value`` as an int, or a :class:`ProblemError` naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProblemError(file, key, f"expected an integer, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise ProblemError(file, key, f"must be >= {minimum}, got {value}")
    return value


def check_number(value: Any, key: str, file: str) -> float:
    """``value`` as a finite float, or a :class:`ProblemError` naming ``key`` (``inf`` and ``nan`` refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProblemError(file, key, f"expected a number, got {describe(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ProblemError(file, key, f"expected a finite number, got {value}")
    return number


def _int_list(value: Any, key: str, file: str, minimum: int | None = None) -> list[int]:
    if not isinstance(value, list):
        raise ProblemError(file, key, f"expected an array of integers, got {describe(value)}")
    return [check_integer(v, join_key(key, k), file, minimum=minimum) for k, v in enumerate(value)]


def _int_matrix(value: Any, key: str, file: str) -> list[list[int]]:
    if not isinstance(value, list):
        raise ProblemError(file, key, f"expected an array of arrays, got {describe(value)}")
    return [_int_list(v, join_key(key, k), file) for k, v in enumerate(value)]


def copy_data(data: Any) -> Any:
    """A deep copy of JSON-able data."""
    return json.loads(json.dumps(data))


def plain(data: Any, key: str, file: str) -> Any:
    """A JSON-able deep copy of ``data`` (results store the problem as JSON); TOML dates are refused."""
    try:
        return copy_data(data)
    except (TypeError, ValueError):
        raise ProblemError(
            file, key, "values must be numbers, strings, booleans, arrays or tables (no dates)"
        ) from None

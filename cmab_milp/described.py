"""Objects that describe themselves: ``get_params()`` / ``from_params()`` read from the constructor's signature.

scikit-learn's convention: an object's description is its constructor's
parameters, each read back from the attribute of the same name, so that
``type(obj).from_params(obj.get_params())`` builds an equal object. Spaces,
environments and policies share it (:class:`Described`); saved learners,
problem files and results store and rebuild kinds through it
(:mod:`cmab_milp.kind_data`) instead of each keeping its own table.

A constructor's check that refuses a value raises :class:`ParameterError`, a
``ValueError`` that carries the parameter's name, so a problem file's message
names its key without reading the text.

Example
-------
>>> class Box(Described):
...     def __init__(self, width, height=1.0):
...         if width <= 0:
...             raise ParameterError("width", f"width must be > 0, got {width}")
...         self.width, self.height = width, height
>>> Box(2.0).get_params()
{'width': 2.0, 'height': 1.0}
>>> Box.from_params({"width": 3.0}).width
3.0
>>> Box.from_params({"depth": 1})
Traceback (most recent call last):
...
cmab_milp.described.ParameterError: unknown parameter 'depth' of Box (it takes: width, height)
>>> try:
...     Box(-1)
... except ParameterError as exc:
...     print(exc.param)
width
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["Described", "ParameterError", "check_integer", "constructor_parameters", "parameter"]


class ParameterError(ValueError):
    """A constructor refused the value of parameter ``param`` (the message says why).

    >>> str(ParameterError("m", "m must be <= d")), ParameterError("m", "m must be <= d").param
    ('m must be <= d', 'm')
    """

    def __init__(self, param: str, message: str):
        super().__init__(message)
        #: The constructor parameter the message is about (a problem file's key of the same name).
        self.param = param


def check_integer(name: str, value: Any, minimum: int, message: str | None = None) -> int:
    """``value`` as an int ``>= minimum`` (not a bool), else :class:`ParameterError` naming ``name``.

    >>> check_integer("d", 3, 1)
    3
    >>> check_integer("d", True, 1)
    Traceback (most recent call last):
    ...
    cmab_milp.described.ParameterError: d must be an integer >= 1, got True
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(name, message or f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@contextmanager
def parameter(name: str) -> Iterator[None]:
    """Inside it, a ``ValueError`` from a check of someone else's (``make_reward``) is about parameter ``name``.

    >>> try:
    ...     with parameter("reward"):
    ...         raise ValueError("unknown reward 'x'")
    ... except ParameterError as exc:
    ...     print(exc.param, "-", exc)
    reward - unknown reward 'x'
    """
    try:
        yield
    except ParameterError:
        raise
    except ValueError as exc:
        raise ParameterError(name, str(exc)) from exc


def constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """The parameters of ``cls``'s constructor, in order (``self`` left out).

    >>> [p.name for p in constructor_parameters(ParameterError)]
    ['param', 'message']
    """
    return list(inspect.signature(cls).parameters.values())


class Described:
    """Mixin: :meth:`get_params` and :meth:`from_params` from the constructor's signature.

    A parameter is read back from the attribute of its name; a class that keeps
    one under another name overrides :meth:`_param_value`. A ``*args``
    parameter (``Intersection(*spaces)``) is a sequence; ``**kwargs`` holds
    nothing of its own.
    """

    def _param_value(self, name: str) -> Any:
        """The value of constructor parameter ``name`` (default: the attribute of that name)."""
        return getattr(self, name)

    def get_params(self) -> dict[str, Any]:
        """The constructor's parameters and their values: ``type(self).from_params(...)`` rebuilds ``self``."""
        out = {}
        for p in constructor_parameters(type(self)):
            if p.kind is not p.VAR_KEYWORD:
                out[p.name] = self._param_value(p.name)
        return out

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Any:
        """``cls(**params)``; an unknown name raises :class:`ParameterError` naming it.

        A parameter the constructor refuses raises its own error (a :class:`ParameterError` where
        the check names the parameter).
        """
        parameters = constructor_parameters(cls)
        names = [p.name for p in parameters if p.kind is not p.VAR_KEYWORD]
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters)
        for name in params:
            if name not in names and not takes_any:
                raise ParameterError(
                    name, f"unknown parameter {name!r} of {cls.__name__} (it takes: {', '.join(names)})"
                )
        positional = any(p.kind is p.VAR_POSITIONAL for p in parameters)  # then those before it go by position
        args: list[Any] = []
        kwargs = dict(params)
        for p in parameters:
            if p.kind is p.VAR_POSITIONAL:
                args += list(kwargs.pop(p.name, ()))
            elif p.name in kwargs and (
                p.kind is p.POSITIONAL_ONLY or (positional and p.kind is p.POSITIONAL_OR_KEYWORD)
            ):
                args.append(kwargs.pop(p.name))
        return cls(*args, **kwargs)

"""One constructor for a family of policies whose members add keyword parameters of their own.

The ESCB variants and the covariance-adaptive policies each share one
constructor (the family's parameters and their checks); a member only lists
its own keywords and their defaults in ``_own_defaults`` and checks them in
``_check_own``. :class:`KeywordFamily` gives every member the full explicit
signature for :func:`inspect.signature`, so ``get_params`` / ``from_params``,
saved learners and problem files see each parameter by name, and refuses a
keyword the member does not take as Python would.

Example
-------
>>> class Base:
...     def __init__(self, **params):
...         self.params = params
>>> class Family(KeywordFamily, Base):
...     def __init__(self, x, *, scale=1.0, **own):
...         super().__init__(x=x, scale=scale, **self._own_keywords(own))
>>> class Member(Family):
...     _own_defaults = {"rate": 0.5}
>>> inspect.signature(Member)
<Signature (x, *, scale=1.0, rate=0.5)>
>>> Member(1, rate=2).params
{'x': 1, 'scale': 1.0, 'rate': 2}
>>> Member(1, speed=2)
Traceback (most recent call last):
...
TypeError: Member.__init__() got an unexpected keyword argument 'speed'
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = ["KeywordFamily"]


class KeywordFamily:
    """Mixin: a member without a constructor of its own shows the family's signature plus its own keywords."""

    #: The member's own keyword parameters and their defaults, in signature order (any other keyword is refused).
    _own_defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in vars(cls):  # the family itself, or a member with its own constructor: inspect reads that
            cls.__signature__ = None  # type: ignore[attr-defined]
            return
        shared = inspect.signature(cls.__init__)
        params = [p for p in shared.parameters.values() if p.kind is not p.VAR_KEYWORD][1:]  # without self
        own = cls._own_defaults.items()
        params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value) for name, value in own]
        cls.__signature__ = shared.replace(parameters=params)  # type: ignore[attr-defined]

    def _own_keywords(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The member's own keywords: its defaults, overridden by ``given``; an unknown one is a ``TypeError``."""
        for key in given:
            if key not in self._own_defaults:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument {key!r}")
        return {**self._own_defaults, **given}

    def _check_own(self, own: dict[str, Any]) -> dict[str, Any]:
        """The member's own keywords checked (and converted); the family's constructor says when it calls this."""
        return own

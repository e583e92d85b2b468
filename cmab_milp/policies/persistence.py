"""Saved learners: :meth:`Policy.save <cmab_milp.policies.base.Policy.save>` and :func:`load_policy`.

A saved policy is one ``.npz`` file (a zip archive, read with
``allow_pickle=False``) holding

* ``header``: UTF-8 JSON (as a ``uint8`` array) with ``format`` =
  ``"cmab_milp.policy"``, ``version`` = :data:`FORMAT_VERSION`, the policy's
  class name, ``T``, its constants (``params``), the action space *as data*
  (``kind`` + constructor arguments; graphs as node and edge lists), the oracle
  (``backend`` name; ``instance: true`` when the user had passed an Oracle
  object; ``ties``, the oracle's tie rule mode, so that a learner rebuilt by
  name, on any exact backend, continues with the same decisions; a file
  without it, written before the mode was always recorded, loads with
  ``"off"``), the oracle ledger's counts, and the learner's ``state``: round,
  horizon guess, outstanding selections, schedule (epochs, grid, survivors,
  held action, planned stretch) and index statistics (counts, sums, pair
  sums, histograms); and ``provenance`` (the versions of the library, numpy,
  the solvers and the machine that saved it: :func:`cmab_milp.provenance.provenance`);
* ``a0``, ``a1``, ...: the arrays the JSON refers to as ``{"__array__": "aK"}``.

JSON values that are not plain JSON are tagged: ``{"__tuple__": [...]}``,
``{"__bytes__": "hex"}``, ``{"__float__": "inf"}``, ``{"__map__": [[key, value], ...]}``
and ``{"__stretch__": [actions, length]}``.

Loading never imports or calls anything the file names: the policy class and
the space kinds are looked up in the :mod:`~cmab_milp.catalogue` (the space
stored as :mod:`~cmab_milp.kind_data`: its kind and ``get_params()``), a
reward must be a name of :func:`~cmab_milp.nonlinear.rewards.make_reward`, and
the oracle is rebuilt with :func:`~cmab_milp.make_oracle` from a registered
backend name (or given as ``oracle=``). A file of another format version, or
a damaged one, is refused with ``ValueError``. A file saved with other versions
of the library or its solvers (or before versions were recorded) is still read;
when the recorded versions differ from this process's, :func:`load_policy` says
which with a :class:`SavedVersionsWarning` before the learner is rebuilt. Saving writes a temporary file
in the target's folder, fsyncs it and renames it over the target
(``os.replace``), so a crash leaves either the old file or the new one.

What cannot be stored is refused at save time, naming it: a space kind outside
the catalogue (e.g. a user subclass), graph node labels that are not ints, strings
or tuples of them, a reward given as a callable, a policy subclass.

Example
-------
>>> import os, tempfile
>>> import numpy as np
>>> import cmab_milp as cm
>>> policy = cm.AROQ(cm.Cardinality(4, 2), T=1000, oracle="enumerate")
>>> a = policy.select()
>>> policy.observe(a, np.where(a, 0.7, np.nan))
>>> path = os.path.join(tempfile.mkdtemp(), "aroq.npz")
>>> policy.save(path)
>>> restored = cm.load_policy(path)
>>> bool((restored.select() == policy.select()).all()), restored.t
(True, 3)
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from typing import Any

import numpy as np

from .. import catalogue
from ..kind_data import from_data, to_data
from ..oracles import Oracle, available_backends
from ..provenance import provenance
from ..spaces.base import ActionSpace
from .base import Policy, Stretch
from .header_checks import check_header, check_ledger, check_params
from .saved_files import MAX_BYTES, SavedVersionsWarning, read_saved, warn_if_versions_differ
from .state_checks import check_state

__all__ = ["FORMAT", "FORMAT_VERSION", "SavedVersionsWarning", "load_policy", "policy_classes", "save_policy"]

FORMAT = "cmab_milp.policy"
FORMAT_VERSION = 1


def policy_classes() -> dict[str, type[Policy]]:
    """The classes a file may name: the library's own policies of the :mod:`~cmab_milp.catalogue`, nothing else.

    >>> sorted(policy_classes())[:3]
    ['AESCB', 'AROQ', 'AROQCov']
    """
    return {name: catalogue.lookup("policy", name) for name in catalogue.table("policy")}


# ------------------------------------------------------------------ values
class _Encoder:
    """JSON-ready values, with arrays set aside under keys ``a0``, ``a1``, ..."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def __call__(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)):
            x = float(value)
            return x if np.isfinite(x) else {"__float__": repr(x)}
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf":
                raise ValueError(f"cannot save {where}: an array of dtype {value.dtype}")
            key = f"a{len(self.arrays)}"
            self.arrays[key] = value
            return {"__array__": key}
        if isinstance(value, bytes):
            return {"__bytes__": value.hex()}
        if isinstance(value, tuple):
            return {"__tuple__": [self(v, where) for v in value]}
        if isinstance(value, list):
            return [self(v, where) for v in value]
        if isinstance(value, dict):
            return {"__map__": [[self(k, where), self(v, where)] for k, v in value.items()]}
        if isinstance(value, Stretch):
            return {"__stretch__": [self(value.actions, where), int(value.length)]}
        raise ValueError(f"cannot save {where}: a value of type {type(value).__name__}")


def _decode(value: Any, arrays: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError(f"unexpected object {sorted(value)}")
    ((tag, body),) = value.items()
    if tag == "__array__":
        return np.array(arrays[body])
    if tag == "__float__":
        if body not in ("inf", "-inf", "nan"):
            raise ValueError(f"unexpected float {body!r}")
        return float(body)
    if tag == "__bytes__":
        return bytes.fromhex(body)
    if tag == "__tuple__":
        return tuple(_decode(v, arrays) for v in body)
    if tag == "__map__":
        return {_decode(k, arrays): _decode(v, arrays) for k, v in body}
    if tag == "__stretch__":
        return Stretch(_decode(body[0], arrays), int(body[1]))
    raise ValueError(f"unexpected tag {tag!r}")


# ------------------------------------------------------------------ spaces
def _space(data: dict, arrays: Any) -> ActionSpace:
    """The space ``data`` describes: catalogue kinds only, each built with ``from_params``."""
    return from_data(data, lambda value: _decode(value, arrays))


# ------------------------------------------------------------------ params
#: Constructor parameters the header keeps in sections of their own.
_APART = ("space", "T", "oracle")


def _params_data(policy: Policy, encode: _Encoder) -> dict:
    """The policy's constants: its ``get_params()`` less what the header keeps apart (space, T, oracle)."""
    params = {k: v for k, v in policy.get_params().items() if k not in _APART}
    if "reward" in params and not isinstance(params["reward"], str):
        reward = params["reward"]
        name = getattr(reward, "name", None)
        from ..nonlinear.rewards import make_reward

        try:
            same = isinstance(name, str) and type(make_reward(name)) is type(reward)
        except ValueError:
            same = False
        if not same:
            raise ValueError(
                f"cannot save {policy.name}: its reward {reward!r} is not a named reward of make_reward "
                "(a callable cannot be stored as data); build the policy with reward='<name>'"
            )
        params["reward"] = name
    return {k: encode(v, f"parameter {k}") for k, v in params.items()}


def _oracle_data(policy: Policy) -> dict:
    """The backend's name, whether an oracle object was given, and its tie rule (files without it: ``"off"``)."""
    spec = policy._oracle_spec
    if isinstance(spec, str):
        data = {"backend": spec, "instance": False}
    else:
        data = {"backend": getattr(spec, "name", type(spec).__name__), "instance": True}
    # Always recorded (the same decisions on any exact backend it is rebuilt on); a file without it was
    # written before the mode was always recorded, when it was recorded only if not "off": it loads with "off".
    data["ties"] = getattr(policy.oracle, "ties", "off")
    return data


# ------------------------------------------------------------------ save / load
def save_policy(policy: Policy, path: str | os.PathLike) -> None:
    """Write ``policy`` to ``path`` atomically (module docstring: the format)."""
    classes = policy_classes()
    if classes.get(type(policy).__name__) is not type(policy):
        raise ValueError(
            f"cannot save a {type(policy).__name__}: only the library's policies ({', '.join(classes)}) can be saved"
        )
    encode = _Encoder()
    space = to_data(policy.space, encode)  # its catalogue kind and get_params()
    _check_rebuilds(policy.space, space, encode.arrays)
    ledger = policy.oracle.ledger
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "policy": type(policy).__name__,
        "T": policy.T,
        "params": _params_data(policy, encode),
        "space": space,
        "oracle": _oracle_data(policy),
        "ledger": {"queries": ledger.queries, "rounds": ledger.rounds, "seconds": ledger.seconds},
        "state": {k: encode(v, f"state {k}") for k, v in policy.get_state().items()},
        "provenance": provenance(),
    }
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    target = os.path.abspath(os.fspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, header=blob, **encode.arrays)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)  # the usual permissions (0o666 less the umask), as results get; not mkstemp's 0o600
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check_rebuilds(space: ActionSpace, data: dict, arrays: dict) -> None:
    rebuilt = _space(json.loads(json.dumps(data)), arrays)
    if rebuilt.d != space.d or list(rebuilt.arms) != list(space.arms) or rebuilt.labels != space.labels:
        raise ValueError(
            f"cannot save a policy over {space!r}: rebuilding it from data changes its arms or their labels"
        )


def load_policy(path: str | os.PathLike, *, oracle: str | Oracle | None = None, max_bytes: int = MAX_BYTES) -> Policy:
    """The policy saved at ``path``, continuing exactly where it was saved.

    Parameters
    ----------
    path : str or path-like
    oracle : str or Oracle, optional
        The oracle to use instead of the saved backend name (needed when the
        policy was saved with an Oracle object whose backend is not a registered
        name). The oracle ledger continues from the saved counts unless an
        oracle object is given.
    max_bytes : int
        The most bytes the file's arrays (and the learner rebuilt from them) may
        take; checked from the archive's directory and the arrays' headers before
        anything is decompressed (default :data:`~.saved_files.MAX_BYTES`, 2 GiB).

    Returns
    -------
    Policy
        The saved learner, continuing exactly as the original would.

    Raises
    ------
    ValueError
        One line naming the field, for a file of another format or version, or a damaged one.

    Notes
    -----
    The file is checked before it is read (a regular file; known members only;
    sizes as declared; :mod:`.saved_files`), and the state after it is decoded,
    with the rules the constructor, ``select`` and ``observe`` keep
    (:mod:`.state_checks`): a file that loads holds a learner the library could
    have written.

    Examples
    --------
    >>> import os, tempfile
    >>> import cmab_milp as cm
    >>> path = os.path.join(tempfile.mkdtemp(), "cucb.npz")
    >>> cm.CUCB(cm.Cardinality(3, 1), T=None, oracle="enumerate").save(path)
    >>> cm.load_policy(path, oracle="enumerate")
    CUCB(Cardinality(d=3, m=1), T=None, oracle='enumerate', C=1.5)
    """
    where = os.fspath(path)
    try:
        header, arrays, unused = read_saved(where, max_bytes=max_bytes)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ValueError(f"{where} is damaged or not a saved cmab_milp policy: {exc}") from None
    if header.get("format") != FORMAT:
        raise ValueError(f"{where} is not a saved cmab_milp policy (format {FORMAT!r} expected)")
    version = header.get("version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise ValueError(
            f"{where} has policy format version {version!r:.40}; this cmab_milp reads version {FORMAT_VERSION}"
        )
    warn_if_versions_differ(header, where)
    try:
        policy = _restore(header, arrays, oracle, max_bytes)
        if unused:
            raise ValueError(f"the archive holds member {unused[0]}.npy, which the header never refers to")
        return policy
    except ValueError as exc:
        raise ValueError(f"{where} is damaged: {exc}") from None
    except (KeyError, TypeError, IndexError, AttributeError, MemoryError, OverflowError, RecursionError) as exc:
        raise ValueError(f"{where} is damaged: {type(exc).__name__}: {exc!s:.200}") from None


def _decoded(section: dict, arrays: dict, name: str) -> dict:
    """Each field of a header section decoded; a field that does not decode is named."""
    out = {}
    for key, value in section.items():
        where = f"{name}.{key}"
        pairs = value.get("__map__") if isinstance(value, dict) and len(value) == 1 else None
        if isinstance(pairs, list) and all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in pairs
        ):
            named = dict(pairs)
            if len(named) != len(pairs):
                raise ValueError(f"{where}: a field is given twice")
            out[key] = _decoded(named, arrays, where)  # a map of named fields (an index's state)
            continue
        try:
            out[key] = _decode(value, arrays)
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:
            raise ValueError(f"{where}: cannot be decoded ({type(exc).__name__}: {exc!s:.80})") from None
    return out


def _restore(header: dict, arrays: dict, oracle: str | Oracle | None, max_bytes: int = MAX_BYTES) -> Policy:
    cls = policy_classes().get(header["policy"]) if isinstance(header.get("policy"), str) else None
    if cls is None:
        raise ValueError(f"policy: unknown policy class {header.get('policy')!r:.60}")
    check_header(header, arrays, max_bytes, cls)
    space = _space(header["space"], arrays)
    params = _decoded(header["params"], arrays, "params")
    check_params(cls, space, header, params, arrays)
    saved = header["oracle"]
    rebuilt_oracle = oracle is None
    if oracle is None:
        backend = saved["backend"]
        if saved["instance"] and backend.partition(":")[0] not in available_backends():
            raise ValueError(
                f"the policy was saved with an oracle object (backend {backend!r}) that cannot be rebuilt "
                "by name: pass oracle= to load_policy"
            )
        oracle = backend
    try:
        # Constants the file's version did not record take the value that version used (saved_defaults).
        policy = cls.from_params({"space": space, "T": header["T"], "oracle": oracle, **cls.saved_defaults, **params})
    except ValueError as exc:
        raise ValueError(f"params or T: {exc}") from None
    if isinstance(oracle, str):  # rebuilt by name: with the saved tie rule ("off" in files written without it)
        policy.oracle.ties = saved.get("ties", "off")
    state = _decoded(header["state"], arrays, "state")
    check_state(policy, state)
    policy.set_state(state)
    if rebuilt_oracle:
        ledger = policy.oracle.ledger
        check_ledger(header["ledger"])
        ledger.queries = int(header["ledger"]["queries"])
        ledger.rounds = int(header["ledger"]["rounds"])
        ledger.seconds = float(header["ledger"]["seconds"])
    return policy

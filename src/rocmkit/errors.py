"""Errors a person can act on, and the warning category rocmkit emits."""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType


class UserError(Exception):
    """A mistake the user can fix (bad flag, missing file, invalid config).

    The CLI prints its message on one line and exits with code 2.
    """

    exit_code = 2


class MissingExtraError(UserError):
    """An optional dependency is not installed; the message names the extra to install."""


class RocmkitWarning(UserWarning):
    """Warnings raised by rocmkit itself (e.g. an option that has no effect)."""


_warned: set[str] = set()


def warn_once(message: str, *, key: str | None = None) -> None:
    """Emit a RocmkitWarning the first time `key` (default: the message) is seen."""
    key = key or message
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, RocmkitWarning, stacklevel=2)


def require_extra(module: str, extra: str) -> ModuleType:
    """Import an optional dependency or raise a one-line install hint."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{module} is not installed: pip install 'rocmkit[{extra}]'"
        ) from exc

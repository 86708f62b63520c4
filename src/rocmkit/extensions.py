"""What other installed packages add to rocmkit, found through Python entry points.

A package declares, in its pyproject.toml, `[project.entry-points."rocmkit.bench_suites"]`
(`rocmkit.infer_workloads`, `rocmkit.doctor_checks`) with `name = "module"` or
`name = "module:object"`. rocmkit reads these only when a command needs its registry (running or
listing suites, workloads or checks), never at import time, so `rocmkit --help` stays fast.
Stdlib only: the command line reads this module before anything heavy loads.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from rocmkit.errors import UserError

BENCH_SUITES = "rocmkit.bench_suites"
INFER_WORKLOADS = "rocmkit.infer_workloads"
DOCTOR_CHECKS = "rocmkit.doctor_checks"


def load_group(group: str) -> list[tuple[str, Any]]:
    """(entry point name, loaded object) of every entry point in `group`, sorted by name.

    A package whose entry point fails to import is a UserError naming it: rocmkit cannot know
    what it would have added, and running without it would hide that."""
    loaded = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        try:
            loaded.append((point.name, point.load()))
        except Exception as exc:  # any import error of someone else's package
            raise UserError(
                f"{_origin(point)} adds {group} entry {point.name!r} = {point.value!r}, which "
                f"failed to load ({type(exc).__name__}: {exc}); fix or uninstall that package"
            ) from exc
    return loaded


def _origin(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return f"package {dist.name!r}" if dist is not None else "an installed package"


class LazyText(str):
    """Help text made when argparse first shows it, so building the parser of every command does
    not load what only one command's help needs (argparse reads help through `%` and `strip`)."""

    _make: Callable[[], str]

    def __new__(cls, make: Callable[[], str]) -> LazyText:
        text = super().__new__(cls, "(computed when shown)")
        text._make = make
        return text

    def __str__(self) -> str:
        return self._make()

    def __mod__(self, params: Any) -> str:
        text: str = self._make() % params
        return text

    def strip(self, chars: str | None = None) -> str:
        return self._make().strip(chars)

    def __contains__(self, part: object) -> bool:
        return isinstance(part, str) and part in self._make()

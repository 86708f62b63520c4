"""The registry of doctor checks: each registers itself by id, in the order it should run.

A check is a function decorated with `register(...)` in a module that loads with the registry:
every `rocmkit/doctor/checks_*.py` module, and the modules other packages name in the
`rocmkit.doctor_checks` entry point group (read the first time the checks are listed).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocmkit.doctor.findings import DoctorReport, Finding
from rocmkit.doctor.reconcile import reconcile
from rocmkit.errors import UserError
from rocmkit.extensions import DOCTOR_CHECKS, load_group

if TYPE_CHECKING:
    from rocmkit.doctor.context import DoctorContext

CheckFn = Callable[["DoctorContext"], Finding]


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    fn: CheckFn
    order: int  # position in the report: build first, device probes last
    uses_probe: bool = False  # runs torch ops on the devices (seconds, in a subprocess)


CHECKS: dict[str, Check] = {}
_ENTRY_POINTS_LOADED: list[bool] = []


def register(
    check_id: str, title: str, *, order: int, uses_probe: bool = False
) -> Callable[[CheckFn], CheckFn]:
    """Decorator: add a check function to the registry under `check_id`."""

    def decorate(fn: CheckFn) -> CheckFn:
        if check_id in CHECKS:  # e.g. a package's check named like a built-in one
            where = f"{fn.__module__} and {CHECKS[check_id].fn.__module__}"
            raise UserError(f"two doctor checks are called {check_id!r} ({where}); rename one")
        CHECKS[check_id] = Check(check_id, title, fn, order, uses_probe)
        return fn

    return decorate


def all_checks() -> dict[str, Check]:
    """Every registered check, by id, in report order (loading the check modules registers them)."""
    _load_check_modules()
    return dict(sorted(CHECKS.items(), key=lambda item: item[1].order))


def _load_check_modules() -> None:
    """Import the built-in `checks_*` modules of this package, then other packages' entry points
    (a module whose import registers its checks); imports after the first are no-ops."""
    package = __name__.rpartition(".")[0]
    here = importlib.import_module(package).__path__
    for module in sorted(m.name for m in pkgutil.iter_modules(here)):
        if module.startswith("checks_"):
            importlib.import_module(f"{package}.{module}")
    if not _ENTRY_POINTS_LOADED:
        load_group(DOCTOR_CHECKS)
        _ENTRY_POINTS_LOADED.append(True)


def select_checks(ids: Sequence[str] | None) -> list[Check]:
    """The checks to run: all of them, or those named (unknown ids are a UserError)."""
    checks = all_checks()
    if not ids:
        return list(checks.values())
    unknown = [i for i in ids if i not in checks]
    if unknown:
        raise UserError(f"unknown doctor check {', '.join(unknown)}; known: {', '.join(checks)}")
    return [checks[i] for i in checks if i in ids]


def run_checks(ctx: DoctorContext, ids: Sequence[str] | None = None) -> DoctorReport:
    """Run the selected checks, then reconcile them (stronger evidence overrules a lower-level
    fail); a check that crashes becomes a `fail` finding, not a crash."""
    findings = []
    for check in select_checks(ids):
        try:
            findings.append(check.fn(ctx))
        except Exception as exc:  # a doctor must survive its own bugs and odd systems
            findings.append(
                Finding(
                    id=check.id,
                    status="fail",
                    summary=f"the check itself crashed: {type(exc).__name__}: {exc}",
                    fix="please report this at the rocmkit issue tracker with `rocmkit doctor --json`",
                )
            )
    return DoctorReport(findings=reconcile(findings), environment=ctx.platform.record())

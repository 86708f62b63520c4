"""The registry of doctor checks: each registers itself by id, in the order it should run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocmkit.doctor.findings import DoctorReport, Finding
from rocmkit.doctor.reconcile import reconcile
from rocmkit.errors import UserError

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


def register(
    check_id: str, title: str, *, order: int, uses_probe: bool = False
) -> Callable[[CheckFn], CheckFn]:
    """Decorator: add a check function to the registry under `check_id`."""

    def decorate(fn: CheckFn) -> CheckFn:
        assert check_id not in CHECKS, f"duplicate doctor check {check_id}"
        CHECKS[check_id] = Check(check_id, title, fn, order, uses_probe)
        return fn

    return decorate


def all_checks() -> dict[str, Check]:
    """Every registered check, by id (importing the check modules registers them)."""
    from rocmkit.doctor import (  # noqa: F401
        checks_build,
        checks_compute,
        checks_env,
        checks_jax,
        checks_system,
    )

    return dict(sorted(CHECKS.items(), key=lambda item: item[1].order))


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

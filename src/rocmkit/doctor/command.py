"""`rocmkit doctor` as a command of the one driver: `build` turns the flags into a `DoctorConfig`
(or the check list), `run(config, ctx)` returns the `RunResult` whose `data` is the doctor's
document (schema `rocmkit.doctor` v2, or `rocmkit.doctor.explain` v2 for `--explain`).
From Python: `rocmkit.doctor.command.run(DoctorConfig(explain="job.log"))`.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from rocmkit.doctor.diagnose import DoctorConfig, run_doctor
from rocmkit.doctor.findings import to_run_result
from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.options import from_args, typed_values
from rocmkit.results import RunResult


@dataclass(frozen=True, kw_only=True)
class ListChecks:
    """`rocmkit doctor --list`: the checks, as a document."""


def build(args: argparse.Namespace) -> DoctorConfig | ListChecks:
    """The config the flags ask for (generated from `DoctorConfig`), or the check list."""
    if args.list:
        given = typed_values(DoctorConfig, args)
        if given.get("explain") is not None or given.get("from_files"):
            raise UserError("--explain and --from run alone: drop --check/--list/the other")
        return ListChecks()
    return from_args(DoctorConfig, args)


def run(config: DoctorConfig | ListChecks, ctx: Context | None = None) -> RunResult:
    """Check this machine, diagnose pasted outputs, or explain a log; a failed check makes the
    outcome "failed" (exit 1)."""
    if isinstance(config, ListChecks):
        from rocmkit.doctor.registry import all_checks

        checks = [{"id": c.id, "title": c.title} for c in all_checks().values()]
        return RunResult(kind="doctor-checks", environment={}, config={}, data={"checks": checks})
    report = run_doctor(config)
    result = to_run_result(report, config=dataclasses.asdict(config))
    if report.exit_code:
        result.outcome = "failed"
    return result


COMMAND = Command(name="doctor", build=build, run=run, saves="with-out")

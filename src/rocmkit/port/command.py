"""`rocmkit port` as a command of the one driver: `build` turns the parsed flags into a
`PortConfig`, `run(config, ctx)` scans and returns the `RunResult` whose `data` is the port report
(schema `rocmkit.port` v1). From Python: `rocmkit.port.command.run(PortConfig(path=Path(".")))`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.options import from_args, typed_values
from rocmkit.port.findings import to_run_result
from rocmkit.port.project import PortConfig, scan_project
from rocmkit.port.rules import load_rules
from rocmkit.results import RunResult


@dataclass(frozen=True, kw_only=True)
class ListRules:
    """`rocmkit port --list-rules`: the rules themselves, as a document."""


def build(args: argparse.Namespace) -> PortConfig | ListRules:
    """The config the flags ask for (generated from `PortConfig`), or the rule list."""
    if args.list_rules:
        return ListRules()
    if "path" not in typed_values(PortConfig, args):
        raise UserError("give the project directory (or one file) to scan: rocmkit port PATH")
    return from_args(PortConfig, args)


def run(config: PortConfig | ListRules, ctx: Context | None = None) -> RunResult:
    """Scan the project (or list the rules); findings at or above `fail_on` make the outcome
    "failed" (exit 1)."""
    if isinstance(config, ListRules):
        rules = [
            {"id": r.id, "severity": r.severity, "title": r.title, "source": r.source}
            for r in load_rules().rules
        ]
        return RunResult(kind="port-rules", environment={}, config={}, data={"rules": rules})
    report = scan_project(config)
    result = to_run_result(report, config)
    if report.exit_code(config.fail_on):
        result.outcome = "failed"
    return result


COMMAND = Command(name="port", build=build, run=run, saves="with-out")

"""The answer of one `rocmkit hipify` run: the translation report, the optional hipcc check, the
exit-code rule (`--strict`), the JSON document `--json` prints and the RunResult `--out` saves."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rocmkit.errors import UserError
from rocmkit.hipify.check import CompileResult
from rocmkit.hipify.project import HipifyConfig, HipifyReport, report_to_dict
from rocmkit.results import RunResult, jsonable


@dataclass(frozen=True, kw_only=True)
class HipifyOutcome:
    """A finished hipify run; `strict`: anything CUDA left behind counts as a failure."""

    report: HipifyReport
    checks: tuple[CompileResult, ...] = ()
    strict: bool = False

    def __post_init__(self) -> None:
        if not self.report.files:
            raise UserError("no file matched (check the paths, --ext, --include and --exclude)")

    @property
    def exit_code(self) -> int:
        """1 when a file failed, a compile check failed, or (strict) CUDA was left behind."""
        report = self.report
        if report.count("error") or any(not c.ok for c in self.checks):
            return 1
        # strict: a file passed through untranslated is CUDA left behind too.
        if self.strict and (report.num_unconverted or report.count("passthrough")):
            return 1
        return 0

    def to_dict(self) -> dict[str, Any]:
        """The report document (schema_version 1), with a "check" list when hipcc ran."""
        document: dict[str, Any] = dict(report_to_dict(self.report))
        if self.checks:
            document["check"] = [c.to_dict() for c in self.checks]
        return document


def to_run_result(
    outcome: HipifyOutcome, config: HipifyConfig, *, check_arch: str | None = None
) -> RunResult:
    """The run record of a hipify run: its report document as `data` (what `--json` prints).

    hipify runs on no device, so the environment records only the HIP release names were
    emitted for and the hipcc that checked them (when one did)."""
    settings = dataclasses.asdict(config)
    settings.update(strict=outcome.strict, check=bool(outcome.checks), check_arch=check_arch)
    return RunResult(
        kind="hipify",
        label="hipify " + " ".join(p.name or str(p) for p in config.paths),
        environment={
            "hip_names_version": config.options.hip_version,
            "hipcc": outcome.checks[0].command[0] if outcome.checks else None,
        },
        config=jsonable(settings),
        data=jsonable(outcome.to_dict()),
    )

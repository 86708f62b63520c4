"""What `rocmkit doctor` does, as one library call: `run_doctor(DoctorConfig)` runs the checks on
this machine, diagnoses another machine from pasted outputs (`from_files`), or explains a log
(`explain`), and returns the report; `findings.to_run_result` turns it into the run record."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmkit.doctor.findings import DoctorReport, ExplainReport
from rocmkit.errors import UserError
from rocmkit.options import option

MAX_LOG_BYTES = 64 * 2**20


@dataclass(frozen=True, kw_only=True)
class DoctorConfig:
    """One doctor run; `explain` and `from_files` each replace the checks of this machine."""

    # The CLI's flags are generated from these fields (rocmkit.options).
    checks: tuple[str, ...] = option(
        (),
        "run only this check (repeatable; see --list)",
        flag="--check",
        repeat=True,
        metavar="ID",
    )  # check ids; empty: all of them
    explain: str | None = option(
        None, "explain the errors in a log file ('-' reads stdin)", metavar="FILE"
    )
    here: bool = option(
        False,
        "with --explain: the log came from this machine; add what detection sees "
        "(the GPU's gfx target) where the log does not say",
    )
    from_files: tuple[str, ...] = option(
        (),
        "diagnose another machine from pasted outputs (rocminfo, rocm-smi, amd-smi, "
        "nvidia-smi in any format) and logs",
        flag="--from",
        nargs="+",
        metavar="FILE",
    )
    timeout_s: float = option(
        60.0,
        "seconds the device probe (smoke/sdpa/dtypes) may take before it counts as hung",
        flag="--timeout",
        metavar="S",
    )

    def __post_init__(self) -> None:
        if self.here and self.explain is None:
            raise UserError("--here goes with --explain FILE (the log of this machine)")
        alone = self.explain is not None or bool(self.from_files)
        if alone and (self.checks or (self.explain is not None and self.from_files)):
            raise UserError("--explain and --from run alone: drop --check/--list/the other")
        if not self.timeout_s > 0:
            raise UserError(f"--timeout must be positive seconds, not {self.timeout_s}")


def run_doctor(config: DoctorConfig) -> DoctorReport | ExplainReport:
    """The doctor's answer for `config` (its `exit_code` is what the command returns)."""
    if config.explain is not None:
        return explain_log(config.explain, here=config.here)
    if config.from_files:
        return diagnose_from(config.from_files)
    return diagnose_here(config.checks, config.timeout_s)


def diagnose_here(check_ids: tuple[str, ...], timeout_s: float) -> DoctorReport:
    """Run the selected checks (all when none) on this machine."""
    from rocmkit.doctor.context import DoctorContext
    from rocmkit.doctor.probe import start_probe
    from rocmkit.doctor.registry import run_checks, select_checks
    from rocmkit.platform import detect

    checks = select_checks(check_ids)
    overrides: dict[str, Any] = {"probe_timeout_s": timeout_s}
    if any(c.uses_probe for c in checks):
        # Start the probe first: the child imports torch while this process runs detect().
        future = start_probe(os.environ, timeout_s)
        overrides["probe_runner"] = lambda env, timeout_s: future.result()
    ctx = DoctorContext.real(detect(), **overrides)
    return run_checks(ctx, [c.id for c in checks])


def diagnose_from(sources: tuple[str, ...]) -> DoctorReport:
    """Diagnose another machine from pasted tool outputs and logs (files, or '-' for stdin)."""
    from rocmkit.doctor.pasted import diagnose_pasted

    texts: dict[str, str] = {}
    for source in sources:
        name = "stdin" if source == "-" else Path(source).name
        texts[name if name not in texts else source] = read_log(source, option="--from")
    return diagnose_pasted(texts)


def explain_log(source: str, *, here: bool = False) -> ExplainReport:
    """The known failure signatures in the log at `source`; `here`: add this machine's facts."""
    from rocmkit.doctor.explain import explain

    text = read_log(source)
    environment: dict[str, Any] = {}
    platform = None
    if here:
        from rocmkit.platform import detect

        platform = detect()
        environment = platform.record()
    return ExplainReport(
        source=source,
        matches=tuple(explain(text, platform)),
        num_lines=len(text.splitlines()),
        environment=environment,
    )


def read_log(source: str, *, option: str = "--explain") -> str:
    """The text of a log file or stdin ('-'); UserError for unreadable, huge or binary input,
    naming the `option` that gave it."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_LOG_BYTES + 1)
        else:
            with Path(source).open("rb") as f:
                data = f.read(MAX_LOG_BYTES + 1)
    except IsADirectoryError:
        raise UserError(f"{option} {source}: is a directory, give a log file") from None
    except OSError as exc:
        raise UserError(f"{option} {source}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_LOG_BYTES:
        raise UserError(
            f"{option} {source}: larger than {MAX_LOG_BYTES // 2**20} MiB; pass the relevant part"
        )
    if b"\x00" in data[:65536]:
        raise UserError(f"{option} {source}: looks like a binary file, not a text log")
    return data.decode("utf-8", errors="replace")

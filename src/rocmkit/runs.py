"""Where every command's results go: one output rule, one save, one rank-0 rule.

`--out DIR` names a run directory; without it a command writes to `runs/<command>-<UTC stamp>`,
made unique with `-2`, `-3`... so two runs never share one. `save` writes `result.json` atomically
and, for measuring commands, `report.md` and `report.html` beside it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.atomic import check_writable_dir
from rocmkit.errors import UserError
from rocmkit.results import RESULT_FILENAME, RunResult

if TYPE_CHECKING:
    from rocmkit.measure.memory import MemoryMonitor

RUNS_ROOT = Path("runs")


def utc_stamp(now: _dt.datetime | None = None) -> str:
    moment = now or _dt.datetime.now(_dt.timezone.utc)
    return moment.strftime("%Y%m%d-%H%M%S")


def default_out(command: str, *, root: Path = RUNS_ROOT, now: _dt.datetime | None = None) -> Path:
    """`runs/<command>-<UTC stamp>`, with a `-N` suffix when that directory already exists."""
    base = f"{command}-{utc_stamp(now)}"
    out, n = root / base, 2
    while out.exists():
        out, n = root / f"{base}-{n}", n + 1
    return out


def resolve_out(out: str | os.PathLike[str] | None, command: str) -> Path:
    """The run directory a command writes: `--out` when given, else the default rule."""
    return Path(out) if out is not None else default_out(command)


def latest_run(command: str, *, root: Path = RUNS_ROOT) -> Path | None:
    """The newest directory `default_out(command)` made (by the stamp and `-N` in its name), or
    None; a directory the user named `runs/<command>-something` is not one of them."""
    found = runs_newest_first(command, root=root)
    return found[0] if found else None


def runs_newest_first(command: str, *, root: Path = RUNS_ROOT) -> list[Path]:
    """Every directory `default_out(command)` made, newest first (by stamp, then `-N`)."""
    if not root.is_dir():
        return []
    named = re.compile(rf"{re.escape(command)}-(\d{{8}}-\d{{6}})(?:-(\d+))?")
    order: dict[Path, tuple[str, int]] = {}
    for path in root.iterdir():
        match = named.fullmatch(path.name)
        if match and path.is_dir():
            order[path] = (match[1], int(match[2] or 1))  # -10 after -9, not after -1
    return sorted(order, key=order.__getitem__, reverse=True)


def is_main_process(env: Mapping[str, str] | None = None) -> bool:
    """True on the process that reports: rank 0 under torchrun, and any process run alone."""
    environ = os.environ if env is None else env
    return environ.get("RANK", "0") in ("", "0")


def prepare_out(out: Path) -> Path:
    """Refuse an unwritable run directory before any work starts (one-line UserError)."""
    return check_writable_dir(out, what="--out directory")


@contextlib.contextmanager
def run_directory(out: Path) -> Iterator[Path]:
    """`prepare_out(out)` for the block; a run that fails before writing anything leaves no empty
    directory behind (one it did not create is never removed)."""
    created = not out.exists()
    prepare_out(out)
    try:
        yield out
    except BaseException:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise


def save(result: RunResult, out: str | os.PathLike[str], *, reports: bool = False) -> Path:
    """Write `out/result.json` (atomic); with `reports`, also `report.md` and `report.html`.

    A full disk or a lost permission is a one-line UserError for every command, not a traceback.
    """
    directory = Path(out)
    target = directory / RESULT_FILENAME
    try:
        path = result.save(target)
        if reports:
            from rocmkit.report.files import write_reports  # plots only when reports are asked

            target = directory
            write_reports([result], directory)
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror or exc}") from None
    return path


@contextlib.contextmanager
def memory_monitoring(enabled: bool, out: Path, *, device: str) -> Iterator[MemoryMonitor | None]:
    """Sample memory (GPU allocator on a GPU, process RSS on CPU) while the block runs, when
    `enabled`; `memory.json` goes to `out`, and `add_memory` puts the peak into a result."""
    if not enabled:
        yield None
        return
    from rocmkit.measure.memory import monitor_run

    with monitor_run(out, device=device) as monitor:
        yield monitor


def add_memory(result: RunResult, monitor: MemoryMonitor | None, *, name: str) -> None:
    """Append a finished monitor's peak (and where it was read) to `result`'s measurements."""
    if monitor is None:
        return
    from rocmkit.measure.memory import timeline_measurements

    result.measurements.extend(timeline_measurements(monitor.timeline, name=name))

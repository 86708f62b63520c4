"""One driver for every command: config in, one `RunResult` out, one save, one print, one exit code.

A command is a `Command`: its name (the default run directory `runs/<name>-<UTC stamp>`), a
`build(args) -> config` that refuses bad input before any work, and `run(config, ctx) -> RunResult`,
which is also the library call (`rocmkit.port.run(PortConfig(path="."))` gives the same result
with a quiet default `Context`). `execute` does the rest the same way for every command:

1. build and validate the config (a `UserError` here costs no run directory);
2. choose the run directory and refuse an unwritable one before any work (rank 0 only);
3. run, under the memory monitor when asked;
4. save through `runs.save` (nothing else writes result.json);
5. print: `--json` prints exactly the saved document; otherwise the console view registered for
   the result's kind, the same view `rocmkit report RUN` prints;
6. map the outcome to the exit-code table `EXIT_CODES`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rocmkit import runs
from rocmkit.results import RunResult

if TYPE_CHECKING:
    import argparse

    from rocmkit.console import ProgressHandle
    from rocmkit.measure.memory import MemoryMonitor

# What each exit code means, for every command (docs/architecture.md repeats this table).
EXIT_OK = 0
EXIT_FAILED = 1  # the run failed, a figure is wrong, or findings at/above --fail-on / --strict
EXIT_USER_ERROR = 2  # a mistake in the command line, a config or an input file (UserError)
EXIT_NONFINITE = 3  # training stopped on a non-finite loss
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), after saving what finished
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM), after saving what finished

# RunResult.outcome -> exit code.
EXIT_CODES: dict[str, int] = {
    "ok": EXIT_OK,
    "failed": EXIT_FAILED,
    "nonfinite": EXIT_NONFINITE,
    "interrupted": EXIT_INTERRUPTED,
    "terminated": EXIT_TERMINATED,
}

Saves = Literal["always", "with-out", "never"]


def exit_code(result: RunResult) -> int:
    """The process exit code of a finished run, from its outcome (see `EXIT_CODES`)."""
    return EXIT_CODES.get(result.outcome, EXIT_FAILED)


@dataclass(kw_only=True)
class Context:
    """What every command shares while it runs. The default is a quiet library call: no run
    directory, no progress output, no memory monitor."""

    command: str = ""
    out: Path | None = None  # the chosen, pre-checked run directory (None: nothing is saved)
    is_main: bool = True  # rank 0 under torchrun, or a process run alone: it prints and writes
    quiet: bool = True  # no progress output (library calls, --json, other ranks)
    monitor_memory: bool = False
    notes: bool = False  # print `note`s (files written...) on stderr, even under --json
    monitors: list[tuple[str, MemoryMonitor]] = field(default_factory=list)

    def say(self, text: str) -> None:
        """A progress note on stderr (rich markup allowed); silent when quiet. Never broken
        into lines: a path or command in it must survive copy and paste."""
        if self.quiet or not self.is_main:
            return
        from rocmkit.console import make_console

        make_console(stderr=True).print(text, soft_wrap=True)

    def step(self, text: str) -> None:
        """A plain progress line of a long run (train's steps): stdout, or stderr when stdout
        carries the --json document; nothing for a library call or another rank."""
        if self.notes and self.is_main:
            print(text, file=sys.stdout if not self.quiet else sys.stderr, flush=True)

    def note(self, text: str) -> None:
        """A line the user needs whatever the output format (a file written): stderr."""
        if self.notes and self.is_main:
            print(text, file=sys.stderr, flush=True)

    def write_product(self, text: str) -> None:
        """The command's product on stdout (hipify's translated code or diff), as the bytes it
        came from (8-bit sources carry lone surrogates); nothing for a library call."""
        if not self.notes or not self.is_main:
            return
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
        sys.stdout.buffer.flush()

    @contextlib.contextmanager
    def progress(self, description: str, total: float | None) -> Iterator[ProgressHandle]:
        """The one progress bar (a terminal only; silent when quiet, see `console.progress`)."""
        from rocmkit.console import progress

        with progress(description, total, enabled=not self.quiet and self.is_main) as bar:
            yield bar

    @contextlib.contextmanager
    def memory(self, *, device: str, name: str) -> Iterator[MemoryMonitor | None]:
        """Monitor memory around the block when asked (rank 0, with a run directory); the
        driver adds the peak to the result as measurements named `name`."""
        enabled = self.monitor_memory and self.is_main and self.out is not None
        with runs.memory_monitoring(enabled, self.out or Path("."), device=device) as monitor:
            if monitor is not None:
                self.monitors.append((name, monitor))
            yield monitor


@dataclass(frozen=True, kw_only=True)
class Command:
    """A command as the driver sees it."""

    name: str  # default run directory runs/<name>-<stamp>; also the result's kind by default
    build: Callable[[argparse.Namespace], Any]
    run: Callable[[Any, Context], RunResult]
    # "with-out": a document command, saved only with --out DIR; "never": --out means something
    # else to the command (report's report directory), result.json is never written.
    saves: Saves = "always"
    reports: bool = False  # write report.md and report.html beside result.json
    # The run directory when --out is not given (train continues the newest run on --resume
    # auto): (config, --out) -> (directory or None to save nothing, note for the user or None).
    choose_out: Callable[[Any, str | None], tuple[Path | None, str | None]] | None = None
    # Where the console view goes: stderr when stdout carries the command's product (hipify).
    view_stream: Literal["stdout", "stderr"] = "stdout"


def execute(command: Command, args: argparse.Namespace) -> int:
    """Run `command` from parsed arguments: validate, run, save, print; return the exit code."""
    config = command.build(args)
    as_json = bool(getattr(args, "json", False))
    is_main = runs.is_main_process()
    out = _out_dir(command, config, getattr(args, "out", None), is_main)
    ctx = Context(
        command=command.name,
        out=out,
        is_main=is_main,
        quiet=as_json or not is_main,
        monitor_memory=bool(getattr(args, "monitor_memory", False)),
        notes=True,
    )
    keep = runs.run_directory(out) if out is not None and is_main else contextlib.nullcontext()
    with keep, _interruptible():
        result = command.run(config, ctx)
    for name, monitor in ctx.monitors:
        runs.add_memory(result, monitor, name=name)
    if result.label is None and out is not None:
        # named as `rocmkit report` names a saved run without a label: by its directory
        result.label = out.resolve().name
    if not is_main:
        return exit_code(result)
    written = runs.save(result, out, reports=command.reports) if out is not None else None
    emit(
        result,
        as_json=as_json,
        verbose=bool(getattr(args, "verbose", False)),
        stderr=command.view_stream == "stderr",
    )
    if written is not None:
        _note_written(written, command.reports)
    _note_outcome(result, out)
    return exit_code(result)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C (SIGINT) stops every command, also when it was started in the background of a
    non-interactive shell, which starts it with SIGINT ignored (Python then never raises
    KeyboardInterrupt, and a `kill -INT` would be silently lost)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous)


def _out_dir(command: Command, config: Any, out: str | None, is_main: bool) -> Path | None:
    if command.choose_out is not None:
        path, note = command.choose_out(config, out)
        if note and is_main:
            print(note, file=sys.stderr, flush=True)
        return path
    if command.saves == "never" or (out is None and command.saves == "with-out"):
        return None
    return runs.resolve_out(out, command.name)


def emit(result: RunResult, *, as_json: bool, verbose: bool = False, stderr: bool = False) -> None:
    """Print a finished run: its document with `--json`, else its registered console view."""
    if as_json:
        print_json(result.to_dict())
        return
    from rocmkit.console import make_console
    from rocmkit.report.views import ViewOptions, render_view

    console = (
        make_console(stderr=True, highlight=False, soft_wrap=True) if stderr else make_console()
    )
    render_view(result, console, ViewOptions(verbose=verbose))


def print_json(document: Any) -> None:
    """The one JSON printer: indented, NaN as null, a trailing newline."""
    import json

    from rocmkit.results import jsonable

    sys.stdout.write(json.dumps(jsonable(document), indent=2) + "\n")


def _note_written(path: Path, reports: bool) -> None:
    names = [path] + ([path.parent / "report.html", path.parent / "report.md"] if reports else [])
    print(f"wrote {', '.join(map(str, names))}", file=sys.stderr, flush=True)


def _note_outcome(result: RunResult, out: Path | None) -> None:
    """A run that stopped early says so last, on stderr, with where its finished part is."""
    if result.partial is None:
        return
    where = f"; what finished is saved in {out}" if out is not None else ""
    print(f"partial: {result.partial}{where}", file=sys.stderr, flush=True)

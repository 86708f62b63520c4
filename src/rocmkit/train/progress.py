"""What `rocmkit train` says while it runs, written only through what the driver's `Context`
provides: the start line and the first-step estimate as notes (`ctx.say`), then a step line per
`log_every` steps through `ctx.step` (stdout, or stderr when stdout carries the --json
document), or a progress bar (`ctx.progress`) on a terminal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rocmkit.console import ProgressHandle
    from rocmkit.driver import Context
    from rocmkit.platform import Platform
    from rocmkit.train.config import TrainConfig
    from rocmkit.train.metrics import StepMetrics


def shows_steps(ctx: Context) -> bool:
    """Step lines are shown by a run from the command line (rank 0; on stderr under --json, see
    docs/train.md), never by a library call with the default quiet `Context()`."""
    return ctx.is_main and (not ctx.quiet or bool(ctx.command))


def start_line(config: TrainConfig, platform: Platform) -> str:
    """Say at once what is starting: a first step can take minutes (compilation, a big model)."""
    device = platform.torch_device if config.train.device == "auto" else config.train.device
    name = config.preset or config.model.kind
    first = "; the first step compiles the model" if config.train.compile else ""
    return (
        f"rocmkit train: {name} {config.precision.dtype} on {device}, {config.train.steps} steps, "
        f"loss read every {config.logging.log_every} steps{first}"
    )


class StepPrinter:
    """A training callback: the progress bar on a terminal, plain step lines otherwise (logs, CI,
    torchrun), and after the first step an estimate of how long the rest takes."""

    def __init__(self, ctx: Context, total: int, *, log_every: int = 1) -> None:
        self.ctx = ctx
        self.total = total
        self.log_every = log_every
        self.enabled = shows_steps(ctx)
        self.first_step: int | None = None
        self.bar: ProgressHandle | None = None

    @contextlib.contextmanager
    def running(self) -> Iterator[StepPrinter]:
        """Show the bar (a terminal only) while the block trains."""
        with self.ctx.progress("train", total=self.total) as bar:
            self.bar = bar if bar.live else None
            try:
                yield self
            finally:
                self.bar = None

    def __call__(self, m: StepMetrics) -> None:
        if not self.enabled:
            return
        text = step_line(m)
        if self.first_step is None:
            self.first_step = m.step
            if self.bar is not None:
                self.bar.print(estimate_line(m, self.total))  # above the bar, not through it
            else:
                self.ctx.say(escape(estimate_line(m, self.total)))
        if self.bar is not None:
            self.bar.update(completed=m.step, info=text)
        elif m.step % self.log_every == 0 or m.step == self.total:
            # Steps reach the host in groups at each sync point (logging.log_every): one line each.
            self.ctx.step(f"step {m.step}/{self.total} {text}")

    def stopping(self, text: str) -> None:
        """Said at once on the first Ctrl-C/SIGTERM (from the signal handler): what happens next."""
        try:
            if self.bar is not None:
                self.bar.print(escape(text))
            else:
                self.ctx.note(text)
        except RuntimeError:  # the handler interrupted a write to the same stream
            pass


def estimate_line(m: StepMetrics, total: int) -> str:
    """After the first step: how long the rest will take at that pace (an upper bound, since the
    first step also compiles and warms up)."""
    remaining_s = m.step_time_s * max(0, total - m.step)
    return (
        f"first step {duration(m.step_time_s)}; {total - m.step} more steps at that pace: "
        f"at most {duration(remaining_s)} (later steps are faster once warmed up)"
    )


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def step_line(m: StepMetrics) -> str:
    parts = [f"loss {m.loss:.4f}", f"lr {m.lr:.2e}"]
    if m.grad_norm is not None:
        parts.append(f"gnorm {m.grad_norm:.3f}")
    parts.append(f"{m.step_time_s * 1000:.1f} ms")
    parts.append(f"{m.units_per_s:,.0f} {m.unit_name}/s")
    if m.mfu is not None:
        parts.append(f"mfu {m.mfu:.1%}")
    if m.skipped:
        parts.append("skipped (fp16 overflow)")
    return "  ".join(parts)

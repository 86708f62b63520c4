"""What the loop does when training goes wrong: non-finite loss, GPU out of memory, SIGTERM/SIGINT.

Each turns into something a person can act on: a one-line message naming the change to make, or
(SIGTERM) a checkpoint and a clean exit that `--resume auto` continues from.
"""

from __future__ import annotations

import contextlib
import signal
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from rocmkit.errors import UserError
from rocmkit.train.config import TrainSection


class NonFiniteLossError(UserError):
    """The loss became NaN or infinite; the last good checkpoint is left as it was."""

    exit_code = 3


def non_finite_loss_error(
    loss: float, *, step: int, last_saved_step: int, consecutive_fp16_skips: int = 0
) -> NonFiniteLossError:
    """The message for a NaN/inf loss at `step` (1-based), naming the checkpoint that is kept."""
    kept = (
        f"; the last good checkpoint (step {last_saved_step}) is kept"
        if last_saved_step >= 0
        else ""
    )
    if consecutive_fp16_skips:
        return NonFiniteLossError(
            f"loss stayed {loss} for {consecutive_fp16_skips} fp16 steps up to step {step}: "
            f"stopping{kept}; try precision.dtype bf16 or a lower train.lr"
        )
    return NonFiniteLossError(
        f"loss is {loss} at step {step}: stopping{kept}; lower train.lr, raise "
        "train.warmup or set train.grad_clip, then resume"
    )


def count_bad_step(
    bad: bool,
    loss: float,
    *,
    step: int,
    consecutive_skips: int,
    uses_loss_scaling: bool,
    max_consecutive_skips: int,
    last_saved_step: int,
) -> int:
    """The new count of consecutive bad steps, or raise NonFiniteLossError (torch and JAX loops).

    Without loss scaling one bad step stops the run; under fp16 the scaler skips such steps and
    the run stops only after `max_consecutive_skips` of them in a row.
    """
    if not bad:
        return 0
    if not uses_loss_scaling:
        raise non_finite_loss_error(loss, step=step, last_saved_step=last_saved_step)
    consecutive_skips += 1
    if consecutive_skips >= max_consecutive_skips:
        raise non_finite_loss_error(
            loss,
            step=step,
            last_saved_step=last_saved_step,
            consecutive_fp16_skips=consecutive_skips,
        )
    return consecutive_skips


@contextlib.contextmanager
def oom_advice(train: TrainSection) -> Iterator[None]:
    """Turn a GPU out-of-memory error into the batch-shape change that keeps the global batch."""
    try:
        yield
    except torch.OutOfMemoryError:
        peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0
        saver = (
            "" if train.activation_checkpointing else " or --train.activation_checkpointing true"
        )
        raise UserError(
            f"out of GPU memory (peak {peak:.1f} GiB) with micro_batch {train.micro_batch} x "
            f"grad_accum {train.grad_accum}: try --micro-batch {max(1, train.micro_batch // 2)} "
            f"--grad-accum {train.grad_accum * 2} (same global batch){saver}"
        ) from None


STOP_SIGNALS = ("SIGTERM", "SIGINT")


def stop_notice(
    signal_name: str, *, stop_step: int, total_steps: int, remaining_s: float | None
) -> str:
    """What the first SIGINT/SIGTERM says at once: a stop with a checkpoint can take a while."""
    from rocmkit.train.progress import duration

    estimate = "" if remaining_s is None else f", est. {duration(remaining_s)}"
    again = "; Ctrl-C again to stop now without a new checkpoint" if signal_name == "SIGINT" else ""
    return (
        f"{signal_name}: stopping after step {stop_step} of {total_steps} and saving a "
        f"checkpoint{estimate}{again}"
    )


@contextlib.contextmanager
def on_stop_signals(request_stop: Callable[[str], None]) -> Iterator[None]:
    """SIGTERM (preemption, a job's time limit) and Ctrl-C ask for a clean stop instead of dying.

    The loop then finishes the step in flight, saves a checkpoint and returns. A second Ctrl-C
    abandons the step at once (KeyboardInterrupt), keeping the last checkpoint as it was.
    """
    received: list[int] = []

    def handler(signum: int, frame: types.FrameType | None) -> None:
        if signum == signal.SIGINT and received:
            raise KeyboardInterrupt
        received.append(signum)
        request_stop(signal.Signals(signum).name)

    previous: dict[int, Any] = {}
    try:
        for name in STOP_SIGNALS:
            number = getattr(signal, name)
            previous[number] = signal.signal(number, handler)
    except ValueError:  # not the main thread: signals stay with the caller
        for number, old in previous.items():
            signal.signal(number, old)
        yield
        return
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)

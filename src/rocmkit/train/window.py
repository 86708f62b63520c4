"""The steps since the last sync point, kept on the device until the host reads them all at once.

A training step leaves its loss, gradient norm, fp16 skip flag and loss scale as device scalars and
marks its end on a clock (a CUDA/HIP event on a GPU, `perf_counter` on the CPU, where work is
synchronous). At a sync point (`read`) the window stacks everything into one tensor, averages the
losses over ranks in one collective, and copies it to the host in one transfer: one host read per
sync point instead of five per step. Step times are the intervals between consecutive end marks,
so they are exact per step even though the host waited only once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from rocmkit.train.parallel import DistEnv

__all__ = ["StepRecord", "StepWindow", "WindowValues"]


@dataclass(frozen=True, kw_only=True)
class StepRecord:
    """One step as the host sees it after a sync point."""

    step: int
    lr: float
    loss: float  # mean over ranks of the summed micro-batch losses
    grad_norm: float
    skipped: bool
    loss_scale: float | None
    step_time_s: float


@dataclass(frozen=True, kw_only=True)
class WindowValues:
    steps: list[StepRecord]
    extra: list[float]  # the caller's extra values, averaged over ranks


@dataclass(kw_only=True)
class _Pending:
    step: int
    lr: float
    loss: torch.Tensor
    grad_norm: torch.Tensor
    skipped: torch.Tensor | None
    loss_scale: torch.Tensor | None
    end: object  # a timing event or a perf_counter value


class StepWindow:
    """Collects pending steps; `read` returns them with their step times."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.uses_events = device.type == "cuda"
        self._pending: list[_Pending] = []
        self._last_end: object = self._mark()

    def _mark(self) -> object:
        if self.uses_events:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def _seconds(self, start: object, end: object) -> float:
        if self.uses_events:
            return float(start.elapsed_time(end)) / 1000.0  # type: ignore[attr-defined]
        return float(end) - float(start)  # type: ignore[arg-type]

    def restart_clock(self) -> None:
        """Start timing the next step now (after the host did other work, e.g. a checkpoint)."""
        self._last_end = self._mark()

    def add(
        self,
        *,
        step: int,
        lr: float,
        loss: torch.Tensor,
        grad_norm: torch.Tensor,
        skipped: torch.Tensor | None,
        loss_scale: torch.Tensor | None,
    ) -> None:
        self._pending.append(
            _Pending(
                step=step,
                lr=lr,
                loss=loss,
                grad_norm=grad_norm,
                skipped=skipped,
                loss_scale=loss_scale,
                end=self._mark(),
            )
        )

    def __len__(self) -> int:
        return len(self._pending)

    def read(self, env: DistEnv, extra: torch.Tensor) -> WindowValues:
        """Average losses and `extra` over ranks, copy to the host once, empty the window."""
        pending, self._pending = self._pending, []
        count = len(pending)
        zero = torch.zeros((), device=self.device)
        columns = [
            torch.stack([p.loss.float() for p in pending]) if pending else zero[None][:0],
            extra.to(self.device, torch.float32),
        ]
        reduced = _mean_over_ranks(torch.cat(columns), env)
        rows = (
            [
                torch.stack([p.grad_norm.float().reshape(()) for p in pending]),
                torch.stack([_or_zero(p.skipped, zero) for p in pending]),
                torch.stack([_or_zero(p.loss_scale, zero) for p in pending]),
            ]
            if pending
            else []
        )
        host = torch.cat([reduced, *rows]).tolist()  # the one device-to-host read
        losses, extra_values = host[:count], host[count : count + extra.numel()]
        norms = host[count + extra.numel() :][:count]
        skips = host[count + extra.numel() + count :][:count]
        scales = host[count + extra.numel() + 2 * count :][:count]
        starts = [self._last_end, *(p.end for p in pending[:-1])]
        records = [
            StepRecord(
                step=p.step,
                lr=p.lr,
                loss=losses[i],
                grad_norm=norms[i],
                skipped=bool(skips[i]) if p.skipped is not None else False,
                loss_scale=scales[i] if p.loss_scale is not None else None,
                step_time_s=self._seconds(starts[i], p.end),
            )
            for i, p in enumerate(pending)
        ]
        if pending:
            self._last_end = pending[-1].end
        return WindowValues(steps=records, extra=extra_values)


def _or_zero(value: torch.Tensor | None, zero: torch.Tensor) -> torch.Tensor:
    return zero if value is None else value.float().reshape(())


def _mean_over_ranks(values: torch.Tensor, env: DistEnv) -> torch.Tensor:
    """All-reduce mean in one collective; identity on a single process."""
    if not env.distributed or dist.get_world_size() == 1:
        return values
    on_device = values
    if dist.get_backend() != "nccl" and values.device.type != "cpu":
        on_device = values.cpu()  # gloo reduces host tensors
    dist.all_reduce(on_device)
    return (on_device / dist.get_world_size()).to(values.device)

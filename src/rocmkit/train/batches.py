"""Micro-batches on the training device, without making the device wait for the host.

Synthetic sources make their batches on the device itself. Host sources (a token file, an image
folder) are read one batch ahead in a background thread into pinned memory, and copied with
`non_blocking=True`, which is only asynchronous from pinned memory. Batches stay a pure function of
the position (step, micro_step), so prefetching changes nothing a resumed run sees.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import Future, ThreadPoolExecutor

import torch

from rocmkit.train.data import DataSource

__all__ = ["DATA_RANGE", "BatchFeeder"]

DATA_RANGE = "rocmkit.data.get_batch"  # what rocmkit.profile counts as data-loading time

Position = tuple[int, int]  # (step, micro_step)
Batch = dict[str, torch.Tensor]


class BatchFeeder:
    """`get(step, micro_step)` -> the micro-batch on `device`, the next one already on its way."""

    def __init__(
        self,
        data: DataSource,
        *,
        device: torch.device,
        micro_batch_size: int,
        grad_accum: int,
        rank: int,
        world_size: int,
        channels_last: bool = False,
    ) -> None:
        self.data = data
        self.device = device
        self.micro_batch_size = micro_batch_size
        self.grad_accum = grad_accum
        self.rank = rank
        self.world_size = world_size
        self.channels_last = channels_last
        # Prefetch only where it can overlap: host data feeding an accelerator.
        self.prefetch = device.type != "cpu" and not data.makes_on_device
        if data.makes_on_device:
            data.prepare(device)  # here, not in the first step: that copy waits for the device
        self._pool: ThreadPoolExecutor | None = None
        self._pending: tuple[Position, Future[Batch]] | None = None

    def get(self, step: int, micro_step: int) -> Batch:
        with _data_range():
            if not self.prefetch:
                return self._finish(self._read((step, micro_step)))
            position = (step, micro_step)
            host = self._take(position)
            self._submit(self._next(position))
            batch = {k: v.to(self.device, non_blocking=True) for k, v in host.items()}
            return self._finish(batch)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending = None

    def _read(self, position: Position) -> Batch:
        step, micro_step = position
        return self.data.get_batch(
            step=step,
            micro_step=micro_step,
            micro_batch_size=self.micro_batch_size,
            grad_accum=self.grad_accum,
            rank=self.rank,
            world_size=self.world_size,
            device=self.device,
        )

    def _read_pinned(self, position: Position) -> Batch:
        batch = self._read(position)
        if self.device.type == "cuda":  # page-locked, so that the copy is truly asynchronous
            batch = {k: v.pin_memory() for k, v in batch.items()}
        return batch

    def _take(self, position: Position) -> Batch:
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] == position:
            return pending[1].result()
        if pending is not None:
            pending[1].cancel()  # a jump (first call, resume): read this one now
        return self._read_pinned(position)

    def _submit(self, position: Position) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rocmkit-data")
        self._pending = (position, self._pool.submit(self._read_pinned, position))

    def _next(self, position: Position) -> Position:
        step, micro_step = position
        return (step, micro_step + 1) if micro_step + 1 < self.grad_accum else (step + 1, 0)

    def _finish(self, batch: Batch) -> Batch:
        images = batch.get("images")
        if self.channels_last and images is not None:
            batch["images"] = images.contiguous(memory_format=torch.channels_last)
        return batch


def _data_range() -> contextlib.AbstractContextManager[object]:
    """Name the batch fetch in a profiler trace; nothing (about 0.1 us) when none records."""
    if torch.autograd._profiler_enabled():
        return torch.profiler.record_function(DATA_RANGE)
    return contextlib.nullcontext()

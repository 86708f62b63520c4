"""Work counting for progress bars: a suite says how many figures it will measure, and each
finished figure ticks whoever listens (the CLI's progress bar), without the suites knowing of it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_listener: ContextVar[Callable[[], None] | None] = ContextVar("rocmkit_bench_tick", default=None)


def tick() -> None:
    """One figure (or one training run) is done."""
    listener = _listener.get()
    if listener is not None:
        listener()


@contextlib.contextmanager
def listening(on_tick: Callable[[], None] | None) -> Iterator[None]:
    """Call `on_tick` for every tick inside the block."""
    token = _listener.set(on_tick)
    try:
        yield
    finally:
        _listener.reset(token)

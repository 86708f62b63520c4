"""Work counting for progress bars: a measurement says it finished one figure, and whoever listens
(a command's progress bar) counts it, without the measuring code knowing of it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_listener: ContextVar[Callable[[], None] | None] = ContextVar("rocmkit_tick", default=None)


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

"""The short training flags (`--precision bf16`, `--micro-batch 4`, ...) and the dotted settings
they stand for, written once for every command that trains: `train`, `profile train` and the
train-precision suite of `bench`.

Each command picks the flags that mean something to it (a profile runs a fixed number of steps,
so it takes no `--steps`); `cli.train_options` adds them to a parser.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Shortcut:
    """One short flag: its name (`micro_batch` is `--micro-batch`), the setting it sets, its help."""

    name: str
    key: str
    help: str
    type: type = str
    choices: tuple[str, ...] | None = None
    # A flag that sets more than one setting (`--data` also decides data.kind) expands its value.
    expand: Callable[[str], dict[str, str]] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def overrides(self, value: object) -> dict[str, str]:
        text = str(value)
        return self.expand(text) if self.expand is not None else {self.key: text}


def _data_overrides(path: str) -> dict[str, str]:
    return {"data.path": path, "data.kind": "images" if os.path.isdir(path) else "text"}


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut(
        name="precision",
        key="precision.dtype",
        # No argparse choices: the config checks the precision registry, which a model module
        # named in the config may extend (a typo still gets the list of known precisions).
        help="compute dtype: fp32, fp16, bf16 or a registered precision",
    ),
    Shortcut(
        name="micro_batch", key="train.micro_batch", type=int, help="samples per device per forward"
    ),
    Shortcut(
        name="grad_accum", key="train.grad_accum", type=int, help="micro-batches per optimizer step"
    ),
    Shortcut(name="steps", key="train.steps", type=int, help="optimizer steps"),
    Shortcut(
        name="data",
        key="data.path",
        expand=_data_overrides,
        help="text file (byte-level tokens) or image folder",
    ),
    Shortcut(
        name="parallel",
        key="parallel.mode",
        choices=("none", "ddp", "fsdp"),
        help="data parallel mode",
    ),
    Shortcut(name="seed", key="train.seed", type=int, help="seed of the initial weights"),
)
BY_NAME: dict[str, Shortcut] = {s.name: s for s in SHORTCUTS}
ALL: tuple[str, ...] = tuple(BY_NAME)


def select(names: Iterable[str] = ALL) -> list[Shortcut]:
    """The shortcuts called `names`, in the table's order."""
    wanted = set(names)
    unknown = wanted - set(BY_NAME)
    if unknown:
        raise KeyError(f"no train shortcut called {sorted(unknown)[0]!r}")
    return [s for s in SHORTCUTS if s.name in wanted]


def shortcut_overrides(values: Mapping[str, object], names: Iterable[str] = ALL) -> dict[str, str]:
    """The dotted overrides that the given short flags stand for (flags left unset are skipped)."""
    overrides: dict[str, str] = {}
    for shortcut in select(names):
        value = values.get(shortcut.name)
        if value is not None:
            overrides.update(shortcut.overrides(value))
    return overrides

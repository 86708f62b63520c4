"""The short training flags on a parser, and back from parsed arguments to dotted overrides.

The table itself (flag, setting, type, help) is `rocmkit.train.shortcuts`; every command that
trains adds the flags that mean something to it from there.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from rocmkit.train.shortcuts import ALL, select, shortcut_overrides


def add_train_shortcuts(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, names: Iterable[str] = ALL
) -> None:
    """Add `--precision`, `--micro-batch`, ... (those in `names`) to `parser` (or a group)."""
    for shortcut in select(names):
        parser.add_argument(
            shortcut.flag,
            dest=shortcut.name,
            type=shortcut.type,
            choices=shortcut.choices,
            help=f"{shortcut.help} (sets {shortcut.key})",
        )


def train_overrides(args: argparse.Namespace, names: Iterable[str] = ALL) -> dict[str, str]:
    """The dotted overrides the short flags in `names` given on the command line stand for."""
    return shortcut_overrides(vars(args), names)

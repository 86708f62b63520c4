"""The options every command shares (`--out`, `--json`, `--monitor-memory`) and the one handler:
a parsed command line goes to `rocmkit.driver.execute` with the command's `COMMAND`.

A command module of this package declares its arguments and nothing else; its library module
(`rocmkit.<command>.command`) builds the config, runs, and the driver saves and prints.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable


def add_output_options(
    parser: argparse.ArgumentParser,
    command: str,
    *,
    monitor_memory: bool = False,
    out_help: str | None = None,
) -> None:
    """`--out DIR` (default `runs/<command>-<UTC stamp>`), `--json` and optionally `--monitor-memory`."""
    parser.add_argument(
        "--out",
        metavar="DIR",
        help=out_help or f"run directory for result.json (default: runs/{command}-<UTC stamp>)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result document (JSON) instead of tables"
    )
    if monitor_memory:
        parser.add_argument(
            "--monitor-memory",
            action="store_true",
            help="sample memory during the run (GPU allocator, or process RSS on CPU); write "
            "memory.json to the run directory and the peak to result.json",
        )


def add_config_flags(
    parser: argparse.ArgumentParser,
    module: str,
    attribute: str,
    *,
    show_defaults: bool = False,
    skip: tuple[str, ...] = (),
) -> None:
    """The flags generated from the config class `module.attribute` (`rocmkit.options.add_flags`),
    declared when this command's parser is used, so `rocmkit --help` imports no config module."""

    def declare(target: argparse.ArgumentParser) -> None:
        from rocmkit.options import add_flags

        config_class = getattr(importlib.import_module(module), attribute)
        add_flags(target, config_class, show_defaults=show_defaults, skip=skip)

    defer = getattr(parser, "defer", None)
    if defer is not None:
        defer(declare)
    else:  # a plain ArgumentParser (a test's): declare now
        declare(parser)


def handler(module: str, attribute: str = "COMMAND") -> Callable[[argparse.Namespace], int]:
    """The handler of a command: import its library module only when it runs (so `--help`
    imports nothing heavy) and hand the arguments to the driver."""

    def run(args: argparse.Namespace) -> int:
        from rocmkit.driver import execute

        return execute(getattr(importlib.import_module(module), attribute), args)

    return run

"""Root parser of the `rocmkit` command; each command lives in its own module of this package.

A command module defines `add_parser(subparsers)`, which creates its parser and sets
`handler=<function(args) -> int>` as a default. Modules are imported only when the parser is built,
and import their library code inside the handler, so `rocmkit --help` never imports torch.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rocmkit import __version__
from rocmkit.errors import UserError

COMMANDS: dict[str, str] = {
    "doctor": "rocmkit.cli.doctor",
    "hipify": "rocmkit.cli.hipify",
    "train": "rocmkit.cli.train",
    "bench": "rocmkit.cli.bench",
    "report": "rocmkit.cli.report",
    "infer": "rocmkit.cli.infer",
    "profile": "rocmkit.cli.profile",
    "port": "rocmkit.cli.port",
}


class _Parser(argparse.ArgumentParser):
    """argparse that raises UserError instead of printing usage and exiting, and declares the
    flags it was given as `defer`red callables only when it is used (parsed or its help shown):
    a command's flags come from its config class, which `rocmkit --help` need not import."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, declare: Callable[[argparse.ArgumentParser], None]) -> None:
        self._deferred.append(declare)

    def declare_deferred(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.declare_deferred()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.declare_deferred()
        return super().format_help()

    def error(self, message: str) -> None:  # type: ignore[override]
        # main() adds the one "rocmkit: error:" prefix; the command shows in the --help hint.
        choice = _INVALID_CHOICE.search(message)
        if choice:
            options = [c.strip().strip("'") for c in choice.group(2).split(",")]
            message += did_you_mean(choice.group(1), options)
        raise UserError(f"{message} (see {self.prog} --help)")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """ "; did you mean --steps?" for the closest of `known`, or "" when none is close."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """The long flags a parser knows (--steps, --fail-on ...)."""
    if isinstance(parser, _Parser):
        parser.declare_deferred()
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--")]


def command_parser(
    parser: argparse.ArgumentParser, words: Sequence[str]
) -> argparse.ArgumentParser:
    """The innermost parser the command line reached (`rocmkit profile memory` -> the parser of
    `profile memory`; the root parser when no command was named)."""
    for word in words:
        subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subcommands and word in subcommands[0].choices:
            parser = subcommands[0].choices[word]
    return parser


def _unknown_flags(extra: list[str]) -> list[str]:
    """The `--name` tokens among overrides that are not dotted SECTION.KEY overrides (their
    values, the token after a `--section.key`, are skipped)."""
    unknown, index = [], 0
    while index < len(extra):
        token = extra[index]
        key = token.removeprefix("--").split("=", 1)[0]
        if token.startswith("--") and "." not in key:
            unknown.append(token.split("=", 1)[0])
        elif token.startswith("--") and "=" not in token:
            index += 1
        index += 1
    return unknown


def _refuse_unknown(parser: argparse.ArgumentParser, words: list[str], flags: list[str]) -> None:
    sub = command_parser(parser, [w for w in words if not w.startswith("-")])
    hint = did_you_mean(flags[0], option_strings(sub)) if flags[0].startswith("-") else ""
    what = "argument" if len(flags) == 1 else "arguments"
    raise UserError(f"unrecognized {what}: {' '.join(flags)}{hint} (see {sub.prog} --help)")


# Sub-actions that a command parses itself from its extra arguments (`rocmkit train export`):
# their --help belongs to them, not to the command.
SUB_ACTIONS = {("train", "export")}
HELP_FLAGS = ("-h", "--help")
# Third-party chatter that reads like an error to a newcomer; --debug keeps all of it.
QUIET_ENV = {
    "KINETO_LOG_LEVEL": "6",  # kineto logs profiler_start/stop and gpuGetDeviceCount at level <= 5
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' and huggingface_hub's tqdm bars
    "TQDM_DISABLE": "1",
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rocmkit",
        description="Doctor, hipify, train, bench, infer and profile AI work on ROCm, CUDA and CPU.",
    )
    parser.add_argument("--version", action="version", version=f"rocmkit {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show full tracebacks instead of one-line errors"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def quiet_third_party() -> None:
    """Silence torch, kineto and transformers chatter (warnings, C++ logs, progress bars).

    Environment variables are only defaulted (a value the user set wins) and must be set before
    those libraries load; rocmkit's own warnings (RocmkitWarning) still show.
    """
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
    for module in ("torch", "transformers", "huggingface_hub", "accelerate"):
        warnings.filterwarnings("ignore", module=rf"{module}(\.|$)")


def _parse(parser: argparse.ArgumentParser, args_list: list[str]) -> argparse.Namespace:
    """Parse; a sub-action's --help and the unknown rest go to the handler as overrides."""
    sub_action = tuple(args_list[:2]) in SUB_ACTIONS
    known = [a for a in args_list if not (sub_action and a in HELP_FLAGS)]
    args, extra = parser.parse_known_args(known)
    extra += [a for a in args_list if sub_action and a in HELP_FLAGS]
    if extra:
        if not getattr(args, "accepts_overrides", False):
            _refuse_unknown(parser, args_list, extra)
        unknown = [] if sub_action else _unknown_flags(extra)
        if unknown:
            _refuse_unknown(parser, args_list, unknown)
        args.overrides = list(getattr(args, "overrides", []) or []) + extra
    config = getattr(args, "config", None)
    if config is not None and not Path(config).is_file():  # before any command imports torch
        if Path(config).is_dir():
            raise UserError(f"--config {config} is a directory: give a TOML file")
        raise UserError(f"config file not found: {config}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rocmkit` console script; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # --debug is accepted anywhere on the line (`rocmkit train ... --debug`), not only first.
    debug = "--debug" in args_list
    args_list = [a for a in args_list if a != "--debug"]
    if not debug:
        quiet_third_party()
    try:
        parser = build_parser()
        args = _parse(parser, args_list)
        if args.command is None:
            parser.print_help()
            return 2
        return int(args.handler(args) or 0)
    except UserError as exc:
        if debug:
            raise
        print(f"rocmkit: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("rocmkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if debug:
            raise
        print(
            f"rocmkit: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())

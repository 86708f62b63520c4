"""Root parser of the `rocmkit` command; each command lives in its own module of this package.

A command module defines `add_parser(subparsers)`, which creates its parser and sets
`handler=<function(args) -> int>` as a default. Modules are imported only when the parser is built,
and import their library code inside the handler, so `rocmkit --help` never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
    """argparse that raises UserError instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{self.prog}: {message} (see {self.prog} --help)")


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rocmkit` console script; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # --debug is accepted anywhere on the line (`rocmkit train ... --debug`), not only first.
    debug = "--debug" in args_list
    args_list = [a for a in args_list if a != "--debug"]
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(args_list)
        if args.command is None:
            parser.print_help()
            return 2
        if extra:
            if not getattr(args, "accepts_overrides", False):
                raise UserError(f"unrecognized arguments: {' '.join(extra)} (see rocmkit --help)")
            args.overrides = list(getattr(args, "overrides", []) or []) + extra
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

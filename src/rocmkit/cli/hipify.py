"""`rocmkit hipify PATH...`: translate CUDA sources to HIP (files or trees), report what is left.

Argument declarations only: the flags are generated from `rocmkit.hipify.command.HipifySettings`.
"""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_config_flags, add_output_options, handler

# Non-measuring commands print their answer and save a run only when asked (they run often, in CI).
OUT_HELP = (
    "save the report as DIR/result.json (the run record; nothing is saved without --out). "
    "Translated code goes to -o/--output-dir/--inplace, never here"
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "hipify",
        help="translate CUDA source to HIP (files or directory trees)",
        description="Translate CUDA C++ to HIP. Comments and string literals are never changed; "
        "every CUDA name left unconverted and every warp-size-32 hazard is reported.",
    )
    add_config_flags(parser, "rocmkit.hipify.command", "HipifySettings")
    add_output_options(parser, "hipify", out_help=OUT_HELP)
    parser.set_defaults(handler=handler("rocmkit.hipify.command"))

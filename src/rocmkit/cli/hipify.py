"""`rocmkit hipify PATH...`: translate CUDA sources to HIP (files or trees), report what is left."""

from __future__ import annotations

import argparse
from pathlib import Path

from rocmkit.cli.pipeline import add_output_options, handler

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
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or directories")
    where = parser.add_argument_group(
        "where the translated code goes (default: a single file to stdout, a tree: dry run)"
    )
    where.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write one file's translated code"
    )
    where.add_argument(
        "--output-dir", type=Path, metavar="DIR", help="mirror the tree of translated code into DIR"
    )
    where.add_argument(
        "--inplace", action="store_true", help="rewrite files in place, keeping FILE.prehip backups"
    )
    where.add_argument(
        "--extension",
        choices=("keep", "hip", "hip.cpp"),
        default="keep",
        help="rename .cu outputs to .hip or .hip.cpp (default: keep .cu)",
    )
    what = parser.add_argument_group("what to translate")
    what.add_argument("--include", action="append", default=[], metavar="GLOB")
    what.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    what.add_argument(
        "--ext",
        action="append",
        default=[],
        metavar=".EXT",
        help="file extensions to translate in directories (repeatable; default .cu .cuh .cpp .h ...)",
    )
    what.add_argument(
        "--launch",
        choices=("keep", "hip"),
        default="keep",
        help="keep <<<...>>> (default) or rewrite to hipLaunchKernelGGL",
    )
    what.add_argument(
        "--translate-strings",
        action="store_true",
        help="also rewrite CUDA names inside string literals",
    )
    what.add_argument(
        "--no-runtime-include", action="store_true", help="never add #include <hip/hip_runtime.h>"
    )
    what.add_argument(
        "--mappings",
        choices=("auto", "builtin"),
        default="auto",
        help="auto: rocmkit's table over the pairs folded from PyTorch's (torch is never read); builtin: rocmkit's own alone",
    )
    what.add_argument(
        "--hip-version",
        metavar="X.Y",
        help="emit only names this HIP release declares; lower *_sync warp intrinsics when it "
        "lacks them (default: the installed hipcc's HIP, else the newest name list)",
    )
    what.add_argument(
        "--max-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="pass larger files through unchanged",
    )
    what.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (0: auto)")
    what.add_argument(
        "--cmake",
        action="store_true",
        help="only report what to change in CMakeLists.txt / *.cmake files",
    )
    show = parser.add_argument_group("reporting")
    show.add_argument("--diff", action="store_true", help="print a unified diff of each change")
    show.add_argument("--stats", action="store_true", help="print conversions by category")
    show.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only errors and the summary, no diagnostic per line (all of them: --json)",
    )
    show.add_argument(
        "--strict", action="store_true", help="exit 1 when any CUDA name was left unconverted"
    )
    show.add_argument(
        "--check",
        action="store_true",
        help="compile each translated .cu/.cpp with hipcc -c and report pass/fail",
    )
    show.add_argument("--arch", default="gfx90a", help="offload arch for --check (default gfx90a)")
    add_output_options(parser, "hipify", out_help=OUT_HELP)
    parser.set_defaults(handler=handler("rocmkit.hipify.command"))

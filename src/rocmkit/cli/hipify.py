"""`rocmkit hipify PATH...`: translate CUDA sources to HIP (files or trees), report what is left."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.cli.pipeline import add_output_options, print_json
from rocmkit.runs import prepare_out, save

if TYPE_CHECKING:
    from rocmkit.hipify.outcome import HipifyOutcome
    from rocmkit.hipify.project import HipifyConfig, HipifyReport

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
        "--strict", action="store_true", help="exit 1 when any CUDA name was left unconverted"
    )
    show.add_argument(
        "--check",
        action="store_true",
        help="compile each translated .cu/.cpp with hipcc -c and report pass/fail",
    )
    show.add_argument("--arch", default="gfx90a", help="offload arch for --check (default gfx90a)")
    add_output_options(parser, "hipify", out_help=OUT_HELP)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rocmkit.hipify.check import check_report
    from rocmkit.hipify.outcome import HipifyOutcome, to_run_result
    from rocmkit.hipify.project import hipify_paths

    config = _config(args)
    out = prepare_out(Path(args.out)) if args.out else None
    report = hipify_paths(config)
    single_to_stdout = (
        not config.writes
        and len(report.files) == 1
        and not (args.diff or args.stats or args.json or args.cmake)
        and report.files[0].text is not None
    )
    if single_to_stdout:
        _write_stdout(report.files[0].text or "")
    checks = check_report(report, arch=args.arch, jobs=args.jobs) if args.check else []
    outcome = HipifyOutcome(report=report, checks=tuple(checks), strict=args.strict)
    result = to_run_result(outcome, config, check_arch=args.arch if args.check else None)
    if out is not None:
        print(f"wrote {save(result, out)}", file=sys.stderr)
    if args.json:
        print_json(result.data)
    else:
        _print_human(args, outcome, written=config.writes, quiet_summary=single_to_stdout)
    return outcome.exit_code


def _write_stdout(text: str) -> None:
    """Write translated text as the bytes it came from (8-bit files carry lone surrogates)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
    sys.stdout.buffer.flush()


def _config(args: argparse.Namespace) -> HipifyConfig:
    from rocmkit.hipify.check import default_hip_version
    from rocmkit.hipify.project import SOURCE_EXTENSIONS, HipifyConfig
    from rocmkit.hipify.translate import TranslateOptions

    options = TranslateOptions(
        launch=args.launch,
        translate_strings=args.translate_strings,
        add_runtime_include=not args.no_runtime_include,
        mappings=args.mappings,
        hip_version=args.hip_version or default_hip_version(),
    )
    extensions = tuple(e if e.startswith(".") else f".{e}" for e in args.ext) or SOURCE_EXTENSIONS
    if args.cmake:
        extensions = ()
    return HipifyConfig(
        paths=tuple(args.paths),
        output=args.output,
        output_dir=args.output_dir,
        inplace=args.inplace,
        rename=args.extension,
        include=tuple(args.include),
        exclude=tuple(args.exclude),
        extensions=extensions,
        max_bytes=args.max_bytes,
        jobs=args.jobs,
        want_diff=args.diff,
        want_text=not (args.output or args.output_dir or args.inplace)
        and (args.check or (len(args.paths) == 1 and args.paths[0].is_file())),
        options=options,
    )


def _print_human(
    args: argparse.Namespace, outcome: HipifyOutcome, *, written: bool, quiet_summary: bool
) -> None:
    from rich.table import Table

    from rocmkit.console import make_console

    report = outcome.report

    err = make_console(stderr=True, highlight=False, soft_wrap=True)
    for result in report.files:
        if result.diff:
            _write_stdout(result.diff)
        if result.status in ("error", "skipped"):
            err.print(f"{result.source}: {result.status}: {result.reason}", markup=False)
    for diagnostic in report.diagnostics:
        err.print(
            _printable(
                f"{diagnostic.location()}: {diagnostic.kind} [{diagnostic.category}] "
                f"{diagnostic.name}: {diagnostic.message}"
            ),
            markup=False,
        )
    if args.stats:
        table = Table(title="hipify: conversions by category")
        table.add_column("category")
        table.add_column("converted", justify="right")
        table.add_column("unconverted", justify="right")
        unconverted = report.unconverted_by_category()
        converted = report.converted_by_category()
        for category in sorted(
            set(converted) | set(unconverted), key=lambda c: -converted.get(c, 0)
        ):
            table.add_row(
                category, str(converted.get(category, 0)), str(unconverted.get(category, 0))
            )
        make_console(highlight=False).print(table)
    for check in outcome.checks:
        status = "ok" if check.ok else f"FAIL: {check.first_error}"
        err.print(f"check {check.path}: {status} ({check.seconds:.1f}s)", markup=False)
    if quiet_summary:
        return
    if not written:
        for result in report.files:
            if result.status == "converted":
                names = result.stats.num_converted
                err.print(f"plan: {result.source}: would change ({names} edits)", markup=False)
    err.print(_summary(report, written=written), markup=False)
    if not written:
        err.print(
            "dry run: nothing was written (add --output-dir DIR, -o FILE or --inplace to write)",
            markup=False,
        )


def _printable(text: str) -> str:
    """A hazard snippet from an 8-bit file carries lone surrogates that a terminal cannot encode."""
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _summary(report: HipifyReport, *, written: bool) -> str:
    converted = (
        ", ".join(f"{c} {n}" for c, n in report.converted_by_category().items()) or "nothing"
    )
    changed = "changed" if written else "would change"
    return (
        f"hipify: {len(report.files)} files ({report.count('converted')} {changed}, "
        f"{report.count('passthrough')} passed through, {report.count('skipped')} skipped, "
        f"{report.count('error')} errors) in {report.elapsed_s:.2f}s; converted: {converted}; "
        f"unconverted: {report.num_unconverted}; "
        f"hazards: {sum(f.stats.num_hazards for f in report.files)}"
    )

"""`rocmkit hipify PATH...`: translate CUDA sources to HIP (files or trees), report what is left."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "hipify",
        help="translate CUDA source to HIP (files or directory trees)",
        description="Translate CUDA C++ to HIP. Comments and string literals are never changed; "
        "every CUDA name left unconverted and every warp-size-32 hazard is reported.",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or directories")
    where = parser.add_argument_group("where the output goes (default: a single file to stdout)")
    where.add_argument("-o", "--output", type=Path, metavar="FILE", help="write one file's output")
    where.add_argument("--output-dir", type=Path, metavar="DIR", help="mirror the tree into DIR")
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
    show.add_argument("--json", action="store_true", help="print the full report as JSON")
    show.add_argument(
        "--strict", action="store_true", help="exit 1 when any CUDA name was left unconverted"
    )
    show.add_argument(
        "--check",
        action="store_true",
        help="compile each translated .cu/.cpp with hipcc -c and report pass/fail",
    )
    show.add_argument("--arch", default="gfx90a", help="offload arch for --check (default gfx90a)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rocmkit.hipify.project import hipify_paths

    config = _config(args)
    report = hipify_paths(config)
    single_to_stdout = (
        not config.writes
        and len(report.files) == 1
        and not (args.diff or args.stats or args.json or args.cmake)
        and report.files[0].text is not None
    )
    if single_to_stdout:
        _write_stdout(report.files[0].text or "")
    checks = _run_check(args, report) if args.check else []
    if args.json:
        _print_json(report, checks)
    else:
        _print_human(args, report, checks, quiet_summary=single_to_stdout)
    return _exit_code(args, report, checks)


def _write_stdout(text: str) -> None:
    """Write translated text as the bytes it came from (8-bit files carry lone surrogates)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
    sys.stdout.buffer.flush()


def _config(args: argparse.Namespace) -> Any:
    from rocmkit.hipify.project import SOURCE_EXTENSIONS, HipifyConfig
    from rocmkit.hipify.translate import TranslateOptions

    options = TranslateOptions(
        launch=args.launch,
        translate_strings=args.translate_strings,
        add_runtime_include=not args.no_runtime_include,
        mappings=args.mappings,
        hip_version=args.hip_version or _default_hip_version(),
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


def _default_hip_version() -> str:
    from rocmkit.hipify.check import find_hipcc
    from rocmkit.hipify.versions import LATEST, installed_version

    return installed_version(find_hipcc()) or LATEST


def _run_check(args: argparse.Namespace, report: Any) -> list[Any]:
    from rocmkit.hipify.check import check_compiles

    translated = [
        f for f in report.files if f.status in ("converted", "unchanged") and f.reason == ""
    ]
    written = [f.output for f in translated if f.output is not None]
    if written or not translated:
        return check_compiles(written, arch=args.arch, jobs=args.jobs)
    with tempfile.TemporaryDirectory(prefix="rocmkit-hipify-check-") as scratch:
        paths = []
        for index, result in enumerate(translated):
            path = Path(scratch) / f"{index}_{result.source.name}"
            path.write_text(result.text or "", encoding="utf-8", errors="surrogateescape")
            paths.append(path)
        source_dirs = sorted({f.source.parent.resolve() for f in translated})
        results = check_compiles(paths, arch=args.arch, jobs=args.jobs, include_dirs=source_dirs)
        by_name = {p.name: f.source for p, f in zip(paths, translated, strict=True)}
        return [
            dataclasses.replace(
                r,
                path=by_name[r.path.name],
                first_error=r.first_error.replace(str(r.path), str(by_name[r.path.name])),
            )
            for r in results
        ]


def _print_json(report: Any, checks: list[Any]) -> None:
    from rocmkit.hipify.project import report_to_dict

    data = report_to_dict(report)
    if checks:
        data["check"] = [
            {
                "path": str(c.path),
                "ok": c.ok,
                "first_error": c.first_error,
                "seconds": round(c.seconds, 2),
            }
            for c in checks
        ]
    print(json.dumps(data, indent=2))


def _print_human(
    args: argparse.Namespace, report: Any, checks: list[Any], *, quiet_summary: bool
) -> None:
    from rich.table import Table

    from rocmkit.cli.console import make_console

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
    for check in checks:
        status = "ok" if check.ok else f"FAIL: {check.first_error}"
        err.print(f"check {check.path}: {status} ({check.seconds:.1f}s)", markup=False)
    if quiet_summary:
        return
    written = bool(args.output or args.output_dir or args.inplace)
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


def _summary(report: Any, *, written: bool) -> str:
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


def _exit_code(args: argparse.Namespace, report: Any, checks: list[Any]) -> int:
    if report.count("error") or any(not c.ok for c in checks):
        return 1
    # --strict: anything CUDA left behind fails, a file passed through untranslated included.
    if args.strict and (report.num_unconverted or report.count("passthrough")):
        return 1
    if not report.files:
        raise UserError("no file matched (check the paths, --ext, --include and --exclude)")
    return 0

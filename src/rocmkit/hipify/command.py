"""`rocmkit hipify` as a command of the one driver: `build` turns the flags into a `HipifyRequest`
(the translation config plus the check and report options), `run(request, ctx)` translates,
optionally compiles, and returns the `RunResult` whose `data` is the hipify report document.

Translated code is the command's product, not its report: a single file asked for on stdout (or a
`--diff`) is written through `ctx.write_product`; the report view then goes to stderr."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.hipify.project import HipifyConfig
from rocmkit.results import RunResult


@dataclass(frozen=True, kw_only=True)
class HipifyRequest:
    """One hipify run: what to translate and how (`config`), then what to check and show."""

    config: HipifyConfig
    check: bool = False  # compile each translated file with hipcc -c
    arch: str = "gfx90a"
    strict: bool = False  # anything CUDA left behind fails the run
    stats: bool = False  # the conversions-by-category table
    code_to_stdout: bool = False  # one file, nothing written: its translation is the output
    hip_version_source: str = ""  # where options.hip_version came from (said in the summary)
    quiet: bool = False  # the view shows only errors and the summary


def build(args: argparse.Namespace) -> HipifyRequest:
    from rocmkit.hipify.check import hip_version_and_source
    from rocmkit.hipify.project import SOURCE_EXTENSIONS
    from rocmkit.hipify.translate import TranslateOptions

    hip_version, hip_version_source = hip_version_and_source(args.hip_version)
    options = TranslateOptions(
        launch=args.launch,
        translate_strings=args.translate_strings,
        add_runtime_include=not args.no_runtime_include,
        mappings=args.mappings,
        hip_version=hip_version,
    )
    extensions = tuple(e if e.startswith(".") else f".{e}" for e in args.ext) or SOURCE_EXTENSIONS
    if args.cmake:
        extensions = ()
    config = HipifyConfig(
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
    _check_outputs(config)
    return HipifyRequest(
        config=config,
        hip_version_source=hip_version_source,
        quiet=args.quiet,
        check=args.check,
        arch=args.arch,
        strict=args.strict,
        stats=args.stats,
        code_to_stdout=not (config.writes or args.diff or args.stats or args.json or args.cmake),
    )


def _check_outputs(config: HipifyConfig) -> None:
    """Refuse an output that cannot be written before any file is translated (one line, exit 2),
    not once per file after all the work."""
    from rocmkit.atomic import check_writable_dir, check_writable_file

    if config.output is not None:
        check_writable_file(config.output, what="-o file")
    if config.output_dir is not None:
        if config.output_dir.exists() and not config.output_dir.is_dir():
            raise UserError(f"--output-dir {config.output_dir} is a file; give a directory")
        check_writable_dir(config.output_dir, what="--output-dir")


def run(request: HipifyRequest, ctx: Context | None = None) -> RunResult:
    """Translate (and check); a failed file, a failed compile or, with `strict`, CUDA left
    behind make the outcome "failed" (exit 1)."""
    from rocmkit.hipify.check import check_report
    from rocmkit.hipify.outcome import HipifyOutcome, to_run_result
    from rocmkit.hipify.project import hipify_paths

    ctx = ctx or Context()
    config = request.config
    report = hipify_paths(config)
    printed_code = request.code_to_stdout and len(report.files) == 1
    if printed_code and report.files[0].text is not None:
        ctx.write_product(report.files[0].text or "")
    else:
        printed_code = False
    for file in report.files:
        if file.diff and not ctx.quiet:
            ctx.write_product(file.diff)
    checks = check_report(report, arch=request.arch, jobs=config.jobs) if request.check else []
    outcome = HipifyOutcome(report=report, checks=tuple(checks), strict=request.strict)
    result = to_run_result(outcome, config, check_arch=request.arch if request.check else None)
    result.config.update(stats=request.stats, printed_code=printed_code, quiet=request.quiet)
    result.config.update(
        hip_version=config.options.hip_version, hip_version_source=request.hip_version_source
    )
    result.environment["hip_names_version_source"] = request.hip_version_source
    if outcome.exit_code:
        result.outcome = "failed"
    return result


COMMAND = Command(name="hipify", build=build, run=run, saves="with-out", view_stream="stderr")

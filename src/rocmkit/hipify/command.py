"""`rocmkit hipify` as a command of the one driver: `HipifySettings` holds every option (the CLI's
flags are generated from it), `build` resolves the flags into a `HipifyRequest` (the translation
config plus the check and report options), `run(request, ctx)` translates,
optionally compiles, and returns the `RunResult` whose `data` is the hipify report document.

Translated code is the command's product, not its report: a single file asked for on stdout (or a
`--diff`) is written through `ctx.write_product`; the report view then goes to stderr."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.hipify.project import HipifyConfig
from rocmkit.options import from_args, option
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


_WHERE = "where the translated code goes (default: a single file to stdout, a tree: dry run)"
_WHAT = "what to translate"
_SHOW = "reporting"


@dataclass(frozen=True, kw_only=True)
class HipifySettings:
    """Every option of `rocmkit hipify`: the CLI's flags are generated from these fields
    (`rocmkit.options`); `request()` resolves them into the `HipifyRequest` that runs."""

    paths: tuple[Path, ...] = option(
        help="files or directories", positional=True, nargs="+", metavar="PATH"
    )
    output: Path | None = option(
        None, "write one file's translated code", short="-o", metavar="FILE", group=_WHERE
    )
    output_dir: Path | None = option(
        None, "mirror the tree of translated code into DIR", metavar="DIR", group=_WHERE
    )
    inplace: bool = option(
        False, "rewrite files in place, keeping FILE.prehip backups", group=_WHERE
    )
    extension: Literal["keep", "hip", "hip.cpp"] = option(
        "keep", "rename .cu outputs to .hip or .hip.cpp (default: keep .cu)", group=_WHERE
    )
    include: tuple[str, ...] = option((), "", repeat=True, metavar="GLOB", group=_WHAT)
    exclude: tuple[str, ...] = option((), "", repeat=True, metavar="GLOB", group=_WHAT)
    ext: tuple[str, ...] = option(
        (),
        "file extensions to translate in directories (repeatable; default .cu .cuh .cpp .h ...)",
        repeat=True,
        metavar=".EXT",
        group=_WHAT,
    )
    launch: Literal["keep", "hip"] = option(
        "keep", "keep <<<...>>> (default) or rewrite to hipLaunchKernelGGL", group=_WHAT
    )
    translate_strings: bool = option(
        False, "also rewrite CUDA names inside string literals", group=_WHAT
    )
    runtime_include: bool = option(True, off="never add #include <hip/hip_runtime.h>", group=_WHAT)
    mappings: Literal["auto", "builtin"] = option(
        "auto",
        "auto: rocmkit's table over the pairs folded from PyTorch's (torch is never read); "
        "builtin: rocmkit's own alone",
        group=_WHAT,
    )
    hip_version: str | None = option(
        None,
        "emit only names this HIP release declares; lower *_sync warp intrinsics when it "
        "lacks them (default: the installed hipcc's HIP, else the newest name list)",
        metavar="X.Y",
        group=_WHAT,
    )
    max_bytes: int = option(16 * 1024 * 1024, "pass larger files through unchanged", group=_WHAT)
    jobs: int = option(0, "worker processes (0: auto)", short="-j", group=_WHAT)
    cmake: bool = option(
        False, "only report what to change in CMakeLists.txt / *.cmake files", group=_WHAT
    )
    diff: bool = option(False, "print a unified diff of each change", group=_SHOW)
    stats: bool = option(False, "print conversions by category", group=_SHOW)
    quiet: bool = option(
        False,
        "print only errors and the summary, no diagnostic per line (all of them: --json)",
        short="-q",
        group=_SHOW,
    )
    strict: bool = option(False, "exit 1 when any CUDA name was left unconverted", group=_SHOW)
    check: bool = option(
        False, "compile each translated .cu/.cpp with hipcc -c and report pass/fail", group=_SHOW
    )
    arch: str = option("gfx90a", "offload arch for --check (default gfx90a)", group=_SHOW)

    def request(self, *, as_json: bool = False) -> HipifyRequest:
        """The run these settings ask for: the translation config (extensions, where the code
        goes, the HIP version to target) and the check and report options; outputs that cannot
        be written are refused here, before any file is translated."""
        from rocmkit.hipify.check import absent_next_to_hipcc, find_hipcc, hip_version_and_source
        from rocmkit.hipify.project import SOURCE_EXTENSIONS
        from rocmkit.hipify.translate import TranslateOptions

        hip_version, hip_version_source = hip_version_and_source(self.hip_version)
        options = TranslateOptions(
            launch=self.launch,
            translate_strings=self.translate_strings,
            add_runtime_include=self.runtime_include,
            mappings=self.mappings,
            hip_version=hip_version,
            # the installed hipcc is the target: its missing libraries are known
            absent_libraries=absent_next_to_hipcc(hip_version, find_hipcc())
            if hip_version_source.startswith("installed hipcc")
            else frozenset(),
        )
        extensions = tuple(e if e.startswith(".") else f".{e}" for e in self.ext)
        writes = bool(self.output or self.output_dir or self.inplace)
        one_file = len(self.paths) == 1 and self.paths[0].is_file()
        config = HipifyConfig(
            paths=self.paths,
            output=self.output,
            output_dir=self.output_dir,
            inplace=self.inplace,
            rename=self.extension,
            include=self.include,
            exclude=self.exclude,
            extensions=() if self.cmake else extensions or SOURCE_EXTENSIONS,
            max_bytes=self.max_bytes,
            jobs=self.jobs,
            want_diff=self.diff,
            want_text=not writes and (self.check or one_file),
            options=options,
        )
        _check_outputs(config)
        return HipifyRequest(
            config=config,
            hip_version_source=hip_version_source,
            quiet=self.quiet,
            check=self.check,
            arch=self.arch,
            strict=self.strict,
            stats=self.stats,
            code_to_stdout=not (config.writes or self.diff or self.stats or as_json or self.cmake),
        )


def build(args: argparse.Namespace) -> HipifyRequest:
    return from_args(HipifySettings, args).request(as_json=bool(getattr(args, "json", False)))


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

"""Hipify files and trees: walk, translate in parallel, write atomically, keep backups.

Safety rules: a file is read as bytes and written with rocmkit.atomic (a kill never leaves a torn
file, a failed write leaves the original intact); in-place mode keeps `<file>.prehip` and never
converts a file that already has one; binary or huge files are passed through
byte-exact (or left alone in place) with a note; symlinks that leave the given tree are skipped.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import os
import shutil
import time
from collections import Counter
from collections.abc import Collection, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rocmkit.atomic import atomic_write_bytes
from rocmkit.errors import UserError
from rocmkit.hipify.cmake import cmake_definitions, cmake_notes, is_cmake_file
from rocmkit.hipify.mappings import load_table
from rocmkit.hipify.project_macros import amd_undefined_macros
from rocmkit.hipify.safety import check_input, check_output_location
from rocmkit.hipify.toolkit import header_verdicts
from rocmkit.hipify.translate import (
    Diagnostic,
    TranslateOptions,
    TranslationStats,
    may_be_users,
    translate,
)
from rocmkit.hipify.versions import LATEST

BACKUP_SUFFIX = ".prehip"
# Text is decoded so that every byte survives the round trip (see _run_job).
SURROGATES = "surrogateescape"
SOURCE_EXTENSIONS: tuple[str, ...] = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".c")
SOURCE_EXTENSIONS += (".h", ".hpp", ".hxx", ".inl", ".hu")  # .hu: LightGBM's CUDA headers
_RENAMES = {"keep": None, "hip": ".hip", "hip.cpp": ".hip.cpp"}
# Below this much work a process pool costs more to start than it saves.
_PARALLEL_MIN_FILES = 32

FileStatus = Literal["converted", "unchanged", "passthrough", "skipped", "error"]


@dataclass(frozen=True, kw_only=True)
class HipifyConfig:
    """What to translate and where the results go (see `rocmkit hipify --help`)."""

    paths: tuple[Path, ...]
    output: Path | None = None
    output_dir: Path | None = None
    inplace: bool = False
    rename: Literal["keep", "hip", "hip.cpp"] = "keep"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extensions: tuple[str, ...] = SOURCE_EXTENSIONS
    max_bytes: int = 16 * 1024 * 1024
    jobs: int = 0
    want_diff: bool = False
    want_text: bool = False
    options: TranslateOptions = field(default_factory=TranslateOptions)

    def __post_init__(self) -> None:
        if not self.paths:
            raise UserError("give at least one file or directory to hipify")
        modes = sum([self.output is not None, self.output_dir is not None, self.inplace])
        if modes > 1:
            raise UserError("choose one of -o FILE, --output-dir DIR and --inplace")
        if self.output is not None and (len(self.paths) != 1 or not self.paths[0].is_file()):
            raise UserError("-o FILE needs exactly one input file (use --output-dir for trees)")
        if self.rename not in _RENAMES:
            raise UserError(f"extension must be keep, hip or hip.cpp (got {self.rename!r})")
        if self.jobs < 0 or self.max_bytes <= 0:
            raise UserError("--jobs must be >= 0 and --max-bytes > 0")
        for path in self.paths:
            check_input(path)
        check_output_location(self.paths, output=self.output, output_dir=self.output_dir)

    @property
    def writes(self) -> bool:
        return self.output is not None or self.output_dir is not None or self.inplace


@dataclass(frozen=True)
class FileResult:
    source: Path
    output: Path | None
    status: FileStatus
    reason: str = ""
    stats: TranslationStats = field(default_factory=TranslationStats)
    diagnostics: tuple[Diagnostic, ...] = ()
    diff: str = ""
    text: str | None = None
    num_bytes: int = 0
    defined_names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class HipifyReport:
    files: tuple[FileResult, ...]
    elapsed_s: float

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.diagnostics]

    def converted_by_category(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for result in self.files:
            total.update(result.stats.converted)
        return dict(total.most_common())

    def unconverted_by_category(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for result in self.files:
            total.update(result.stats.unconverted)
        return dict(total.most_common())

    def count(self, status: FileStatus) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def num_unconverted(self) -> int:
        return sum(f.stats.num_unconverted for f in self.files)


@dataclass(frozen=True)
class _Job:
    source: Path
    output: Path | None
    backup: Path | None
    cmake_only: bool
    # The project's macros no AMD compile defines that this file tests (project_macros.py).
    amd_undefined: tuple[tuple[str, str], ...] = ()


def hipify_paths(config: HipifyConfig) -> HipifyReport:
    """Translate every selected file of `config.paths`; returns per-file results in walk order."""
    started = time.perf_counter()
    cuda_headers = header_verdicts(config.options.hip_version or LATEST)[1]
    known = [*load_table(config.options.mappings).includes, *cuda_headers]
    headers = project_headers(config.paths, known)
    if headers:
        options = dataclasses.replace(config.options, project_headers=headers)
        config = dataclasses.replace(config, options=options)
    jobs, build_defined = _with_project_macros(list(_plan(config)), config)
    if len(jobs) >= _PARALLEL_MIN_FILES and _num_workers(config) > 1:
        translate(
            "", options=config.options
        )  # table and regex built once; forked workers inherit them
        with _executor(config) as pool:
            results = list(pool.map(_run_job, jobs, [config] * len(jobs), chunksize=8))
    else:
        results = [_run_job(job, config) for job in jobs]
    return HipifyReport(_drop_project_names(results, build_defined), time.perf_counter() - started)


def _with_project_macros(jobs: list[_Job], config: HipifyConfig) -> tuple[list[_Job], set[str]]:
    """Each job with the project macros its file tests that no AMD compile defines (the whole
    tree's `#define`s are read first, project_macros.py), and the macros its CMake files define
    for the compiler (`-DCUDA_ARCH=61`: the project's names, not CUDA's)."""
    texts: dict[str, str] = {}
    build_defined: set[str] = set()
    for job in jobs:
        try:
            data = job.source.read_bytes()
        except OSError:
            continue  # reported when the job runs
        if job.cmake_only:
            build_defined |= cmake_definitions(data.decode("utf-8", errors="replace"))
        elif _not_text_reason(data, config.max_bytes) is None:
            texts[diff_path(job.source)] = data.decode("utf-8", errors=SURROGATES)
    undefined = frozenset(load_table(config.options.mappings).guards.version_macros)
    found = amd_undefined_macros(texts, undefined)
    if found:
        jobs = [
            dataclasses.replace(j, amd_undefined=found.get(diff_path(j.source), ())) for j in jobs
        ]
    return jobs, build_defined


def project_headers(paths: tuple[Path, ...], includes: Collection[str]) -> frozenset[str]:
    """The CUDA include paths (`cuda.h`, `cuda_runtime.h`, the toolkit's...) that name a file of
    the project itself: under a directory given, or beside a file given. Every path suffix
    counts (`include/cuda.h` and `cuda.h`), as `#include "..."` may spell either; only the few
    that collide with the table are kept, so the set stays small when shipped to workers."""
    basenames = {key.rpartition("/")[2] for key in includes}
    found: set[str] = set()
    for path in paths:
        root = path if path.is_dir() else path.parent
        walk = os.walk(root) if path.is_dir() else [(str(root), [], _listdir(root))]
        for directory, dirnames, filenames in walk:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in basenames.intersection(filenames):
                parts = (Path(directory) / name).relative_to(root).parts
                found.update("/".join(parts[i:]) for i in range(len(parts)))
    return frozenset(found.intersection(includes))


def _listdir(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _drop_project_names(
    results: list[FileResult], build_defined: set[str]
) -> tuple[FileResult, ...]:
    """A CUDA_CHECK macro (or a `umin` device function) defined in one header, or a macro the
    project's CMake files define, is the project's own name in every file."""
    defined = frozenset(build_defined).union(*(r.defined_names for r in results))
    if not defined:
        return tuple(results)
    cleaned = []
    for result in results:
        dropped = [
            d for d in result.diagnostics if may_be_users(d.kind, d.category) and d.name in defined
        ]
        if dropped:
            unconverted = Counter(result.stats.unconverted)
            unconverted.subtract(Counter(d.category for d in dropped))
            stats = dataclasses.replace(result.stats, unconverted=+unconverted)
            kept = tuple(d for d in result.diagnostics if d not in dropped)
            result = dataclasses.replace(result, diagnostics=kept, stats=stats)
        cleaned.append(result)
    return tuple(cleaned)


def _num_workers(config: HipifyConfig) -> int:
    """-j N as given; else a pool only with more than two idle cores.

    Measured on a 2-core shared machine, starting workers and shipping results back cost more
    than the translation itself saves, so `auto` stays in one process there.
    """
    if config.jobs:
        return config.jobs
    free_cores = _num_cores() - _load_average()
    return min(8, int(free_cores)) if free_cores > 2 else 1


def _num_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on this platform
        return 0.0


def _executor(config: HipifyConfig) -> Executor:
    import multiprocessing

    # Workers start from a clean server process, not a fork of this one: forking a process that
    # runs threads (torch's, JAX's, a notebook's) can deadlock the child.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    try:
        return ProcessPoolExecutor(max_workers=_num_workers(config), mp_context=context)
    except (OSError, NotImplementedError):  # no process support (some sandboxes)
        return ThreadPoolExecutor(max_workers=1)


def _plan(config: HipifyConfig) -> Iterator[_Job]:
    # One tree is walked without following links, so it cannot list a file twice; only several
    # inputs can overlap, and resolving every path (a stat per component) is then worth it.
    dedupe = len(config.paths) > 1
    seen: set[Path] = set()
    for root in config.paths:
        for source, relative in _walk(root, config):
            if dedupe:
                resolved = source.resolve()
                if resolved in seen:
                    continue
                seen.add(resolved)
            yield _job_for(source, relative, root, config)


def _walk(root: Path, config: HipifyConfig) -> Iterator[tuple[Path, Path]]:
    """(file, path relative to the tree) for every selected file; file links are skipped."""
    if not root.is_dir():  # named explicitly: a link is resolved, so in place edits its target
        yield root.resolve(), Path(root.name)
        return
    skip_dirs = {config.output_dir.resolve()} if config.output_dir else set()
    for directory, dirnames, filenames in os.walk(root):  # never follows directory links
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and (Path(directory) / d).resolve() not in skip_dirs
        )
        for name in sorted(filenames):
            path = Path(directory) / name
            relative = path.relative_to(root)
            # A link to a file inside the tree is converted through its real path; a link out of
            # the tree is never followed. Writing through a link would replace it with a file.
            if _selected(relative, config) and not path.is_symlink():
                yield path, relative


def _selected(relative: Path, config: HipifyConfig) -> bool:
    text = relative.as_posix()
    if text.endswith(BACKUP_SUFFIX):
        return False
    if config.include and not any(fnmatch.fnmatch(text, g) for g in config.include):
        return False
    if any(fnmatch.fnmatch(text, g) or fnmatch.fnmatch(relative.name, g) for g in config.exclude):
        return False
    return relative.name.endswith(tuple(config.extensions)) or is_cmake_file(relative)


def _job_for(source: Path, relative: Path, root: Path, config: HipifyConfig) -> _Job:
    cmake_only = is_cmake_file(source)
    renamed = relative if cmake_only else _renamed(relative, config.rename)
    output: Path | None = None
    backup: Path | None = None
    if config.output is not None:
        output = config.output
    elif config.output_dir is not None:
        base = config.output_dir / root.name if len(config.paths) > 1 and root.is_dir() else None
        output = (base or config.output_dir) / (renamed if root.is_dir() else renamed.name)
    elif config.inplace and not cmake_only:
        output = source.with_name(renamed.name)
        backup = source.with_name(source.name + BACKUP_SUFFIX)
    return _Job(source, output, backup, cmake_only)


def _renamed(relative: Path, rename: str) -> Path:
    suffix = _RENAMES[rename]
    if suffix is None or relative.suffix != ".cu":
        return relative
    return relative.with_name(relative.stem + suffix)


def _run_job(job: _Job, config: HipifyConfig) -> FileResult:
    try:
        data = job.source.read_bytes()
    except OSError as exc:
        return FileResult(job.source, None, "error", f"cannot read: {exc.strerror}")
    if job.cmake_only:
        return _cmake_job(job, data)
    if job.backup is not None and job.backup.exists():
        return FileResult(
            job.source, None, "skipped", f"already hipified ({job.backup.name} exists)"
        )
    reason = _not_text_reason(data, config.max_bytes)
    if reason is not None:
        return _pass_through(job, data, reason, config)
    text, encoding_note = _decode(data, job.source)
    options = config.options
    if job.amd_undefined:
        options = dataclasses.replace(options, amd_undefined_macros=job.amd_undefined)
    bom = "\ufeff" if text.startswith("\ufeff") else ""  # kept, but not seen by the lexer
    translation = translate(text[len(bom) :], options=options)
    translation = dataclasses.replace(translation, text=bom + translation.text)
    diagnostics = tuple(
        dataclasses.replace(d, path=str(job.source)) for d in translation.diagnostics
    )
    changed = translation.text != text
    result = FileResult(
        source=job.source,
        output=job.output,
        status="converted" if changed else "unchanged",
        stats=translation.stats,
        diagnostics=encoding_note + diagnostics,
        diff=_diff(job.source, text, translation.text) if config.want_diff and changed else "",
        text=translation.text if config.want_text else None,
        num_bytes=len(data),
        defined_names=translation.defined_names,
    )
    return _write(job, data, translation.text.encode("utf-8", SURROGATES), result, changed)


def _not_text_reason(data: bytes, max_bytes: int) -> str | None:
    if len(data) > max_bytes:
        return f"larger than {max_bytes} bytes"
    if b"\0" in data[:65536]:
        return "binary file"
    return None


def _decode(data: bytes, source: Path) -> tuple[str, tuple[Diagnostic, ...]]:
    """The text of a file, and a note when it is not UTF-8.

    8-bit files (Latin-1 comments, ...) are translated too: undecodable bytes become lone
    surrogates that the lexer never matches and that encode back to the same bytes.
    """
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 (byte {exc.start}): translated, other bytes kept as they were"
        note = Diagnostic("note", 1, 1, "", "file", message, str(source))
        return data.decode("utf-8", errors=SURROGATES), (note,)


def _pass_through(job: _Job, data: bytes, reason: str, config: HipifyConfig) -> FileResult:
    note = Diagnostic(
        "note", 1, 1, "", "file", f"{reason}: passed through unchanged", str(job.source)
    )
    text = data.decode("utf-8", errors=SURROGATES) if config.want_text else None
    result = FileResult(
        job.source, job.output, "passthrough", reason, diagnostics=(note,), text=text
    )
    if job.output is None or job.backup is not None:  # in place: leave it exactly as it is
        return dataclasses.replace(result, output=None)
    return _write(job, data, data, result, changed=False)


def _cmake_job(job: _Job, data: bytes) -> FileResult:
    text = data.decode("utf-8", errors="replace")
    notes = tuple(dataclasses.replace(n, path=str(job.source)) for n in cmake_notes(text))
    result = FileResult(job.source, job.output, "unchanged", "CMake file", diagnostics=notes)
    return _write(job, data, data, result, changed=False)


def _write(job: _Job, original: bytes, new: bytes, result: FileResult, changed: bool) -> FileResult:
    if job.output is None:
        return result
    try:
        if job.backup is not None:
            if not changed and job.output == job.source:
                return dataclasses.replace(result, output=None)
            shutil.copy2(job.source, job.backup)
            atomic_write_bytes(job.output, new, mode=_mode(job.source))
            if job.output != job.source:
                job.source.unlink()
        elif job.output.exists() and job.output.read_bytes() == new:
            pass  # identical output already there: do not touch its timestamp
        else:
            _write_output(job.output, new, _mode(job.source))
    except OSError as exc:
        return dataclasses.replace(result, status="error", reason=f"cannot write: {exc}")
    return result


def _write_output(path: Path, data: bytes, mode: int | None) -> None:
    """Write a file of an output tree atomically, without fsync: the sources are untouched, so
    after a power loss a rerun regenerates the output, and an fsync per file made whole-tree runs
    several times slower."""
    atomic_write_bytes(path, data, mode=mode, fsync=False)


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def diff_path(path: Path) -> str:
    """The path a diff header names after `a/`/`b/`: relative, as `git apply` requires (an
    absolute path gave `a//home/...`, which it rejects): relative to the working directory when
    inside it, else without its leading `/`."""
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.relative_to(path.anchor).as_posix()


def _diff(path: Path, before: str, after: str) -> str:
    name = diff_path(path)
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def report_to_dict(report: HipifyReport) -> dict[str, object]:
    """A JSON-ready view of a report (schema_version 1)."""
    return {
        "schema_version": 1,
        "elapsed_s": round(report.elapsed_s, 4),
        "totals": {
            "files": len(report.files),
            "converted_files": report.count("converted"),
            "converted_by_category": report.converted_by_category(),
            "unconverted_by_category": report.unconverted_by_category(),
            "hazards": sum(f.stats.num_hazards for f in report.files),
        },
        "files": [
            {
                "source": str(f.source),
                "output": str(f.output) if f.output else None,
                "status": f.status,
                "reason": f.reason,
                "converted": f.stats.converted,
                "unconverted": f.stats.unconverted,
                "hazards": f.stats.num_hazards,
                "runtime_include_added": f.stats.runtime_include_added,
            }
            for f in report.files
        ],
        "diagnostics": [dataclasses.asdict(d) for d in report.diagnostics],
    }

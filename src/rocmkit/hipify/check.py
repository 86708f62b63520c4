"""`--check`: compile translated translation units with hipcc, report pass/fail and the first error.

Debian 12's hipcc (HIP 5.2) compiles for gfx90a and friends with no GPU present. HIP_PLATFORM=amd
is forced: with a CUDA toolkit installed, hipcc would otherwise hand the job to nvcc.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rocmkit.hipify.project import FileResult, HipifyReport

HEADER_SUFFIXES = (".h", ".hpp", ".hxx", ".cuh", ".inl")
Runner = Callable[[list[str], dict[str, str]], subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class CompileResult:
    path: Path
    ok: bool
    first_error: str
    seconds: float
    command: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The entry of the report's "check" list."""
        return {
            "path": str(self.path),
            "ok": self.ok,
            "first_error": self.first_error,
            "seconds": round(self.seconds, 2),
        }


def find_hipcc() -> str | None:
    """Path of hipcc (ROCM_PATH/bin first, then PATH), or None."""
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    candidate = Path(rocm) / "bin" / "hipcc"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("hipcc")


def _default_runner(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def first_error_line(output: str) -> str:
    """The first line naming an error, else the first non-empty line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if "error:" in line or "fatal error" in line:
            return line
    return lines[0] if lines else ""


def compile_one(
    path: Path,
    *,
    arch: str = "gfx90a",
    hipcc: str,
    include_dirs: Sequence[Path] = (),
    extra_flags: Sequence[str] = (),
    runner: Runner = _default_runner,
) -> CompileResult:
    """Compile `path` with `hipcc --offload-arch=<arch> -x hip -c` into a throwaway object."""
    with tempfile.TemporaryDirectory(prefix="rocmkit-hipcc-") as scratch:
        command = [hipcc, f"--offload-arch={arch}", "-x", "hip", "-c", str(path)]
        command += [f"-I{d}" for d in include_dirs] + list(extra_flags)
        command += ["-o", str(Path(scratch) / "out.o")]
        env = dict(os.environ, HIP_PLATFORM="amd")
        started = time.perf_counter()
        try:
            completed = runner(command, env)
        except subprocess.TimeoutExpired:
            return CompileResult(
                path, False, "hipcc timed out", time.perf_counter() - started, tuple(command)
            )
        elapsed = time.perf_counter() - started
    ok = completed.returncode == 0
    error = "" if ok else first_error_line(completed.stderr + "\n" + completed.stdout)
    return CompileResult(path, ok, error, elapsed, tuple(command))


def check_compiles(
    paths: Sequence[Path],
    *,
    arch: str = "gfx90a",
    hipcc: str | None = None,
    jobs: int = 0,
    include_dirs: Sequence[Path] = (),
    extra_flags: Sequence[str] = (),
    runner: Runner = _default_runner,
) -> list[CompileResult]:
    """Compile every translation unit among `paths` (headers are skipped) in a thread pool."""
    compiler = hipcc or find_hipcc()
    if compiler is None:
        raise UserError(
            "--check needs hipcc: install it (Debian 12: apt-get install hipcc libamdhip64-dev "
            "rocm-device-libs) or set ROCM_PATH"
        )
    units = [p for p in paths if not p.name.endswith(HEADER_SUFFIXES)]
    workers = jobs or min(4, os.cpu_count() or 1)

    def one(path: Path) -> CompileResult:
        return compile_one(
            path,
            arch=arch,
            hipcc=compiler,
            include_dirs=[path.parent, *include_dirs],
            extra_flags=extra_flags,
            runner=runner,
        )

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, units))


def default_hip_version() -> str:
    """The HIP release to emit names for when none is asked: the installed hipcc's, else the
    newest name list rocmkit knows."""
    return hip_version_and_source(None)[0]


def hip_version_and_source(asked: str | None) -> tuple[str, str]:
    """The HIP release names are emitted for, and where it came from: `--hip-version`, the
    installed hipcc's headers, or rocmkit's newest name list."""
    from rocmkit.hipify.versions import LATEST, installed_version

    if asked:
        return asked, "--hip-version"
    hipcc = find_hipcc()
    found = installed_version(hipcc)
    if found:
        return found, f"installed hipcc {hipcc}"
    return LATEST, "default: no hipcc found, rocmkit's newest name list"


def absent_next_to_hipcc(hip_version: str, hipcc: str | None) -> frozenset[str]:
    """The library header folders (`rccl`, `thrust`...) missing in the include directory beside
    `hipcc` (bin/../include), when that hipcc is the target: includes of them will not compile
    there. No hipcc: nothing is known to be missing."""
    from rocmkit.hipify.mappings import table_for_version
    from rocmkit.hipify.versions import absent_libraries

    if hipcc is None:
        return frozenset()
    root = Path(hipcc).resolve().parent.parent / "include"
    if not root.is_dir():
        return frozenset()
    return absent_libraries(root, table_for_version("auto", hip_version).library_folders())


def check_report(
    report: HipifyReport,
    *,
    arch: str = "gfx90a",
    jobs: int = 0,
    hipcc: str | None = None,
    runner: Runner = _default_runner,
) -> list[CompileResult]:
    """Compile every file a hipify run translated: the written outputs, or, in a dry run, the
    translated text in a scratch directory (with the sources' directories on the include path);
    results name the source files then."""
    translated = [
        f for f in report.files if f.status in ("converted", "unchanged") and f.reason == ""
    ]
    written = [f.output for f in translated if f.output is not None]
    if written or not translated:
        return check_compiles(written, arch=arch, hipcc=hipcc, jobs=jobs, runner=runner)
    with tempfile.TemporaryDirectory(prefix="rocmkit-hipify-check-") as scratch:
        return _check_unwritten(translated, Path(scratch), arch, jobs, hipcc, runner)


def _check_unwritten(
    translated: list[FileResult],
    scratch: Path,
    arch: str,
    jobs: int,
    hipcc: str | None,
    runner: Runner,
) -> list[CompileResult]:
    paths = []
    for index, result in enumerate(translated):
        path = scratch / f"{index}_{result.source.name}"
        path.write_text(result.text or "", encoding="utf-8", errors="surrogateescape")
        paths.append(path)
    source_dirs = sorted({f.source.parent.resolve() for f in translated})
    results = check_compiles(
        paths, arch=arch, hipcc=hipcc, jobs=jobs, include_dirs=source_dirs, runner=runner
    )
    by_name = {p.name: f.source for p, f in zip(paths, translated, strict=True)}
    return [
        dataclasses.replace(
            r,
            path=by_name[r.path.name],
            first_error=r.first_error.replace(str(r.path), str(by_name[r.path.name])),
        )
        for r in results
    ]

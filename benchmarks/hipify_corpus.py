"""Real-world compile corpus: public CUDA projects from PyPI, translated and compiled for gfx90a.

hipify_corpus.toml pins each package by file name and sha256; `fetch` downloads them from the
package index into .cache/hipify-corpus/ (git-ignored: third-party code is never committed).
`translate_project` builds one tool's translated tree of a project, `compile_project` compiles
its listed files with hipcc. As a script: rocmkit, torch.utils.hipify and hipify-perl per project.

    python benchmarks/hipify_corpus.py --fetch-only
    python benchmarks/hipify_corpus.py --hipify-perl /tmp/hipify-perl
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import sysconfig
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hipify_compile
from resultfile import ResultRun, add_result_args

from rocmkit.hipify.versions import installed_version

REPO = hipify_compile.REPO
MANIFEST = Path(__file__).resolve().parent / "hipify_corpus.toml"
CACHE = REPO / ".cache" / "hipify-corpus"
_COMPLETE = ".complete"
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True, kw_only=True)
class Project:
    """One pinned package and what of it is translated and compiled (see hipify_corpus.toml)."""

    name: str
    kind: str
    version: str
    file: str
    sha256: str
    repository: str
    tag: str
    commit: str
    license: str
    translate: tuple[str, ...]
    compile: tuple[str, ...]
    include: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    python_include: bool = False
    perl_only: tuple[str, ...] = ()
    min_compile: int = 0
    url: str = ""  # the file's address on the index, where the manifest records it

    def root(self, cache: Path = CACHE) -> Path:
        """The unpacked package (its single top folder, for an sdist)."""
        return cache / f"{self.name}-{self.version}" / "tree"


def load_manifest(path: Path = MANIFEST) -> list[Project]:
    projects: list[dict[str, Any]] = tomllib.loads(path.read_text())["project"]
    return [Project(**{key: _frozen(v) for key, v in entry.items()}) for entry in projects]


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def is_fetched(project: Project, cache: Path = CACHE) -> bool:
    return (project.root(cache).parent / _COMPLETE).exists()


def fetch(projects: list[Project], cache: Path = CACHE) -> list[str]:
    """Download and unpack what is missing; returns one line per package that failed."""
    problems = []
    for project in projects:
        if is_fetched(project, cache):
            continue
        try:
            _unpack(project, _verified(project, _download(project)), cache)
        except (OSError, ValueError, KeyError) as error:
            problems.append(f"{project.name} {project.version}: {error}")
    return problems


def _index_url() -> str:
    # pip's own setting when there is one, so a mirror configured for pip is used here too.
    return os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


def _download(project: Project) -> bytes:
    """The pinned file, found through the index's JSON simple API (PEP 691)."""
    page = f"{_index_url()}/{project.name.lower()}/"
    request = urllib.request.Request(page, headers={"Accept": _SIMPLE_JSON})
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    match = [f for f in files if f["filename"] == project.file]
    if not match:
        raise ValueError(f"{project.file} is not listed at {page}")
    url = urllib.parse.urljoin(page, match[0]["url"])
    with urllib.request.urlopen(url, timeout=300) as answer:
        return bytes(answer.read())


def _verified(project: Project, data: bytes) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if digest != project.sha256:
        raise ValueError(f"sha256 {digest} differs from the manifest's {project.sha256}")
    return data


def _unpack(project: Project, data: bytes, cache: Path) -> None:
    """Unpack beside the final place, then rename: an interrupted fetch leaves no half tree."""
    target = project.root(cache).parent
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
    if project.file.endswith(".whl"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(scratch / "tree")
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            _extract(archive, scratch / "top")
        (top,) = (scratch / "top").iterdir()  # an sdist has one top folder
        top.rename(scratch / "tree")
    (scratch / _COMPLETE).write_text(f"{project.file} {project.sha256}\n")
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)


def _extract(archive: tarfile.TarFile, target: Path) -> None:
    if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 (and backports)
        archive.extractall(target, filter="data")
        return
    for member in archive.getmembers():  # the part of the data filter that matters here
        if member.name.startswith("/") or ".." in Path(member.name).parts or member.islnk():
            raise ValueError(f"unsafe path in the archive: {member.name}")
    archive.extractall(target)


def translate_project(
    project: Project, tool: hipify_compile.Tool, out: Path, cache: Path = CACHE
) -> dict[Path, Path]:
    """`out`: the package with its translate folders run through `tool`; files a tool does not
    write (other extensions) are copied as they are. Returns {original: translated file}."""
    source = project.root(cache)
    roots = [source / r for r in project.translate]
    shutil.rmtree(out, ignore_errors=True)
    if project.translate != (".",):
        shutil.copytree(source, out, ignore=_skip(roots), symlinks=True)
    translated: dict[Path, Path] = {}
    for root in roots:
        target = out / root.relative_to(source)
        shutil.rmtree(target, ignore_errors=True)
        translated |= tool(root, target)
        shutil.copytree(root, target, symlinks=True, dirs_exist_ok=True, copy_function=_missing)
    return translated


def _skip(roots: list[Path]) -> Callable[[str, list[str]], set[str]]:
    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if Path(directory, n) in roots}

    return ignore


def _missing(source: str, target: str) -> None:
    if not os.path.exists(target):
        shutil.copy2(source, target)


def compile_project(
    project: Project, tree: Path, translated: dict[Path, Path], hipcc: str, jobs: int = 2
) -> dict[str, str | None]:
    """{file: None if it compiles, else hipcc's first error line} for the manifest's files."""
    source = project.root()
    # torch.utils.hipify writes a translated header beside a `hip/` folder's copy: search it first.
    includes = [tree / d / sub for d in project.include for sub in ("hip", "")]
    includes = [d for d in includes if d.is_dir()]
    if project.python_include:
        includes.append(Path(sysconfig.get_paths()["include"]))
    targets = [translated.get(source / f, tree / f) for f in project.compile]
    errors = hipify_compile.compile_all(
        targets, includes, arch="gfx90a", hipcc=hipcc, jobs=jobs, flags=project.flags
    )
    return dict(zip(project.compile, errors, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetch-only", action="store_true", help="download, unpack, stop")
    parser.add_argument("--project", action="append", help="only these (by name)")
    parser.add_argument("--tools", default="rocmkit,torch,perl", help="comma-separated subset")
    parser.add_argument("--hipify-perl", default=shutil.which("hipify-perl"))
    parser.add_argument("--hipcc", default=shutil.which("hipcc") or "hipcc")
    parser.add_argument("--jobs", type=int, default=2, help="parallel hipcc processes")
    parser.add_argument("--keep", type=Path, help="keep the translated trees here")
    add_result_args(parser, "hipify_corpus")
    args = parser.parse_args()
    run = ResultRun.start("hipify_corpus", args)
    projects = [p for p in load_manifest() if not args.project or p.name in args.project]
    problems = fetch(projects)
    if problems:  # one line: the install goes on, and the tests say what is missing
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        print(f"hipify corpus: could not fetch {problems[0]}{more}", file=sys.stderr)
    if args.fetch_only:
        return 1 if problems else 0
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="hipify-corpus-"))
    rows = []
    hip_version = installed_version(args.hipcc) or "5.2"
    for project in projects:
        counts = {}
        tools = hipify_compile.select_tools(
            args.tools.split(","), hip_version, args.hipify_perl, list(project.perl_only)
        )
        for name, tool in tools.items():
            started = time.perf_counter()
            out = scratch / name / project.name
            errors = compile_project(
                project, out, translate_project(project, tool, out), args.hipcc, args.jobs
            )
            counts[name] = sum(e is None for e in errors.values())
            run.count(f"{project.name}.{name}.compiled", counts[name], unit="files")
            run.count(f"{project.name}.{name}.files", len(errors), unit="files")
            print(
                f"\n{project.name} {project.version}, {name}: {counts[name]}/{len(errors)}"
                f" compile ({time.perf_counter() - started:.0f} s)"
            )
            for file, error in errors.items():
                print(f"  {'ok  ' if error is None else 'FAIL'} {file}  {error or ''}"[:220])
        if "rocmkit" in counts and args.hipify_perl:
            counts["left (HIP has)"] = _left_with_equivalent(project, args.hipcc, args.hipify_perl)
        rows.append((project, counts))
    _print_table(rows)
    run.finish()
    return 0


def _left_with_equivalent(project: Project, hipcc: str, perl: str) -> int:
    """Tokens rocmkit leaves that have a HIP equivalent, in the compiled files and the headers
    directly in the include folders (not in whole trees: numba-cuda ships NVIDIA's own headers)."""
    hip_version = installed_version(hipcc) or "5.2"
    source = project.root()
    headers = [p for d in project.include for p in sorted((source / d).iterdir())]
    files = [source / f for f in project.compile] + headers
    files = [p for p in dict.fromkeys(files) if p.suffix in hipify_compile.EXTENSIONS]
    left = hipify_compile.left_unconverted(files, hip_version)
    known = hipify_compile.with_hip_equivalent(left, hip_version, perl)
    for name, count in sorted(known.items(), key=lambda item: -item[1]):
        print(f"  left by rocmkit, HIP {hip_version} has it: {count:3d}x {name}")
    return sum(known.values())


def _print_table(rows: list[tuple[Project, dict[str, int]]]) -> None:
    """The docs/hipify.md table: one row per project, compile counts per tool."""
    tools = list(dict.fromkeys(t for _, counts in rows for t in counts))
    print("\n| project | sha256 | files | " + " | ".join(tools) + " |")
    print("|---|---|---|" + "---|" * len(tools))
    total: Counter[str] = Counter()
    for project, counts in rows:
        total.update(counts)
        cells = " | ".join(str(counts.get(t, "")) for t in tools)
        print(
            f"| {project.name} {project.version} | {project.sha256[:12]} | "
            f"{len(project.compile)} | {cells} |"
        )
    files = sum(len(p.compile) for p, _ in rows)
    print(f"| all | | {files} | " + " | ".join(str(total[t]) for t in tools) + " |")


if __name__ == "__main__":
    sys.exit(main())

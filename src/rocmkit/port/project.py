"""Walk a project, route each file to its scanner, and collect one PortReport.

Files are read as bytes: binary, non-UTF-8, oversized and unparsable files become FileIssues,
never exceptions. Virtual environments, VCS folders and caches are not descended into.
"""

from __future__ import annotations

import codecs
import fnmatch
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from rocmkit.errors import UserError
from rocmkit.options import option
from rocmkit.port import (
    archive,
    build_scripts,
    cargo_crates,
    cuda_extras,
    devcontainer,
    egg_requires,
    git_ignored,
    header_reach,
    inline_ptx,
    installer,
    k8s_resources,
    nvml_query,
    pixi,
    pixi_lock,
    pkg_info,
    readme_install,
    rust_ort,
    setup_static,
    sky_tasks,
    toml_images,
    uv_lock,
)
from rocmkit.port.amd_management import AmdManagement
from rocmkit.port.constraints import ConstraintFiles
from rocmkit.port.context import build_context
from rocmkit.port.cpp_scan import scan_cuda_source
from rocmkit.port.cudnn_users import without_users
from rocmkit.port.findings import (
    FAIL_ON_CHOICES,
    FileIssue,
    Hit,
    PortFinding,
    PortReport,
    all_info,
    demoted,
)
from rocmkit.port.hosted_gpus import demote_modal_app
from rocmkit.port.import_closure import reported_by_closure
from rocmkit.port.notebook import scan_notebook
from rocmkit.port.package_imports import reported_by_package
from rocmkit.port.python_scan import scan_python, trigger_keys
from rocmkit.port.ray_noset import with_amd_side as ray_noset_with_amd_side
from rocmkit.port.requirements import (
    build_isolation_hits,
    declared_name,
    new_scan,
    pulls_own_package,
    scan_conda,
    scan_requirements_txt,
    scan_setup_cfg,
)
from rocmkit.port.rules import SEVERITIES, RuleSet, Severity, load_rules, severity_rank
from rocmkit.port.suppress import drop_ignored, inline_ignores, read_baseline, write_baseline
from rocmkit.port.test_modules import demote_test_values
from rocmkit.port.text_scan import (
    OPEN_FLAGS,
    ScanError,
    nvidia_installer_script,
    read_head,
    scan_cmake,
    scan_text,
)

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", "site-packages"}
    | {".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", ".ipynb_checkpoints"}
)
# A Weights & Biases run's own folder (wandb/run-20230215_164956-1rvl0swm/, offline-run-...):
# what the run recorded (files/requirements.txt is a pip freeze of that run, files/config.yaml
# its settings), not the project's install or code (W&B docs: the ./wandb folder "stores Run's
# data and logs": docs.wandb.ai/support/how_can_i_define_the_local_folder_where_to_save_the_wandb_files).
_WANDB_RUN = re.compile(r"(?:offline-)?run-\d{8}_\d{6}-\w+$")
_REQUIREMENTS = re.compile(r"(?:.*[-_.])?(?:requirements?|constraints)(?:[-_.].*)?\.(?:txt|in)$")
# A folder of requirement files, whatever their names: requirements/, _requirements/ (where
# `uv export` writes one file per extra), .requirements/, Requirements/, requirement_files/.
_REQUIREMENTS_FOLDER = re.compile(r"[._]*requirements?(?:[-_]files)?", re.IGNORECASE)
# conda's environment files, also under a prefix (`ffcv-conda.yml`, `cuda-environment.yml`)
_CONDA = re.compile(r"(?:(?:.*[-_.])?(?:environment|conda)|env)(?:[-_.].*)?\.ya?ml$")
_COMPOSE = re.compile(r"(?:.*[-_.])?(?:docker-)?compose(?:[-_.].*)?\.ya?ml$")
_DOCKERFILE = re.compile(r"(?:Dockerfile|Containerfile)(?:[-_.].*)?$|.*[-_.][Dd]ockerfile$")
_MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile"})
# A template of a shell script (Jinja, a plain .in/.tmpl) renders to the script its name says.
_SHELL_SUFFIXES: tuple[str, ...] = (".sh", ".bash", ".zsh", ".slurm", ".sbatch")
_SHELL_SUFFIXES += (".sh.j2", ".sh.jinja", ".sh.jinja2", ".sh.tmpl", ".sh.in", ".sbatch.j2")
_CUDA_SUFFIXES = (".cu", ".cuh")
# Scanned only when they hold CUDA device code; `.inl` is C++'s inline-implementation file, which
# a .cu includes textually (nvdiffrast's cudaraster/impl/*.inl): compiled with it.
_HEADER_SUFFIXES = (".h", ".hpp", ".inl")


@dataclass(frozen=True, kw_only=True)
class PortConfig:
    """What to scan and when the scan counts as failed (see `rocmkit port --help`)."""

    # The CLI's flags are generated from these fields (rocmkit.options).
    path: Path = option(
        help="project directory, one file, or an sdist/wheel (.tar.gz, .zip, .whl)",
        positional=True,
        nargs="?",
    )
    fail_on: Literal["info", "warn", "error", "never"] = option(
        "error", "exit 1 when a finding is at or above this severity (default: error)"
    )
    min_severity: Severity = option(
        "warn",
        "leave findings below this severity out of the report (default: warn; info "
        "findings are shown only when asked)",
    )
    show_info: bool = option(False, "also show info findings (= --min-severity info)")
    baseline: Path | None = option(
        None,
        "accepted findings to leave out (a file written by --write-baseline)",
        metavar="FILE",
    )
    write_baseline: Path | None = option(
        None, "write this scan's findings there as the accepted baseline", metavar="FILE"
    )
    exclude: tuple[str, ...] = option(
        (), "skip matching paths", repeat=True, metavar="GLOB"
    )  # globs on the path relative to the root
    max_bytes: int = option(4 * 1024 * 1024, "skip larger files (reported)")
    gitignore: bool = option(
        True,
        "skip what git ignores under PATH (virtual environments, build/ copies, caches)",
        off="scan git-ignored files too",
    )

    def __post_init__(self) -> None:
        if not self.path.exists():
            raise UserError(f"no such file or directory: {self.path}")
        if self.fail_on not in FAIL_ON_CHOICES:
            raise UserError(f"--fail-on must be one of {', '.join(FAIL_ON_CHOICES)}")
        if self.min_severity not in SEVERITIES:
            raise UserError(f"--min-severity must be one of {', '.join(SEVERITIES)}")
        if self.max_bytes <= 0:
            raise UserError("--max-bytes must be positive")
        if self.baseline is not None and not self.baseline.is_file():
            raise UserError(f"no such baseline file: {self.baseline}")

    @property
    def floor(self) -> str:
        return "info" if self.show_info else self.min_severity


def classify(name: str, parent: str = "") -> str | None:
    """The scanner kind of a file name, or None when port has nothing to say about it."""
    if name.endswith(".py"):
        return "python"
    if name.endswith(".ipynb"):
        return "notebook"
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.cfg":
        return "setupcfg"
    if _REQUIREMENTS.match(name) or (
        name.endswith((".txt", ".in")) and _REQUIREMENTS_FOLDER.fullmatch(parent)
    ):
        return "requirements"
    if _COMPOSE.match(name):
        return "compose"
    if _CONDA.match(name):
        return "conda"
    if _DOCKERFILE.match(name):
        return "dockerfile"
    if name.endswith(_SHELL_SUFFIXES) or name in _MAKEFILES or name.endswith(".mk"):
        return "shell"  # a Makefile's recipes are shell lines
    if name == "CMakeLists.txt" or name.endswith(".cmake"):
        return "cmake"
    if name in devcontainer.FILE_NAMES:
        return devcontainer.KIND
    if name in build_scripts.FILE_NAMES:
        return "rust-build"
    if name in uv_lock.FILE_NAMES:
        return uv_lock.KIND
    if name in pixi.FILE_NAMES:
        return pixi.KIND
    if name in pixi_lock.FILE_NAMES:
        return pixi_lock.KIND
    if name.endswith(_CUDA_SUFFIXES):
        return "cuda"
    if name.endswith(_HEADER_SUFFIXES):
        return "header"
    return None


def iter_files(
    root: Path,
    exclude: tuple[str, ...] = (),
    ignored: frozenset[str] | None = None,
    skipped: list[str] | None = None,
) -> Iterator[tuple[str, str, str]]:
    """(path, path relative to root, kind) of every file a scanner handles, in a stable order.
    `ignored`: paths relative to root that git ignores (folders end in '/'), left out and added
    to `skipped`."""
    if root.is_file():
        # A file named explicitly is scanned even with an unknown name, as shell-like text.
        kind = classify(root.name, root.parent.name)
        if kind is None and k8s_resources.is_manifest_name(root.name):
            kind = _manifest_kind(str(root), root.name)
        yield str(root), root.name, kind or "shell"
        return
    top = str(root)
    for directory, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(directory, top).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not (_WANDB_RUN.match(d) and os.path.basename(directory) == "wandb")
            and not _excluded(prefix + d, exclude)
            and not _git_ignored(prefix + d + "/", ignored, skipped)
            and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
        )
        parent = os.path.basename(directory)
        for name in sorted(filenames):
            if _git_ignored(prefix + name, ignored, skipped):
                continue
            kind = classify(name, parent)
            if kind is None and not prefix and name in readme_install.FILE_NAMES:
                kind = "readme"  # the project's own README: its install commands
            if kind is None and "." not in name:  # an installed script: its shebang says
                kind = shebang_kind(os.path.join(directory, name))
            if kind is None and k8s_resources.is_manifest_name(name):
                kind = _manifest_kind(os.path.join(directory, name), prefix + name)
            if kind is None and name.endswith(rust_ort.SUFFIX):
                kind = _rust_kind(os.path.join(directory, name))
            if kind is None and name.endswith(rust_ort.CPP_SUFFIXES):
                kind = _cpp_ort_kind(os.path.join(directory, name))
            if kind is None and name == cargo_crates.FILE_NAME:
                kind = _cargo_kind(os.path.join(directory, name))
            elif kind is None and name.endswith(toml_images.SUFFIX):
                kind = _toml_kind(os.path.join(directory, name))
            if kind is not None and not _excluded(prefix + name, exclude):
                yield os.path.join(directory, name), prefix + name, kind


def _git_ignored(rel: str, ignored: frozenset[str] | None, skipped: list[str] | None) -> bool:
    if not ignored or rel not in ignored:
        return False
    if skipped is not None:
        skipped.append(rel)
    return True


def _rust_kind(path: str) -> str | None:
    """'rust' for a Rust source that names NVIDIA's ONNX Runtime providers (a byte test)."""
    head = read_head(path, 1 << 20)
    return rust_ort.KIND if any(name in head for name in rust_ort.NVIDIA_BYTES) else None


def _cpp_ort_kind(path: str) -> str | None:
    """'cpp-ort' for a C/C++ source that appends or names NVIDIA's ONNX Runtime providers."""
    head = read_head(path, 1 << 20)
    return rust_ort.CPP_KIND if any(name in head for name in rust_ort.CPP_NVIDIA_BYTES) else None


def _cargo_kind(path: str) -> str | None:
    """'cargo' for a Cargo.toml that names CUDA or flash-attention (a byte test)."""
    head = read_head(path, 1 << 20).lower()
    return cargo_crates.KIND if any(word in head for word in cargo_crates.BYTES) else None


def _toml_kind(path: str) -> str | None:
    """'toml-config' for a TOML file no other scanner reads that names a CUDA image repository."""
    return toml_images.KIND if toml_images.names_an_image(read_head(path, 1 << 20)) else None


# conda's environment file format (conda docs, "Creating an environment file manually"): top-level
# `channels:` and `dependencies:`; `conda env create -f` takes it under any name
# (rapids-singlecell's conda/rsc_rapids_26.08_cuda12.yml).
_CONDA_CHANNELS = re.compile(rb"(?m)^channels[ \t]*:")
_CONDA_DEPENDENCIES = re.compile(rb"(?m)^dependencies[ \t]*:")


def _manifest_kind(path: str, rel: str) -> str | None:
    """The kind of a YAML file (or template) by its content: a conda environment file (its
    top-level keys), else the k8s_resources kind of one that names NVIDIA's resource domain or
    a CUDA image repository (a byte test; others are skipped)."""
    head = read_head(path, 1 << 20)
    if (
        rel.endswith((".yml", ".yaml"))
        and _CONDA_CHANNELS.search(head)
        and _CONDA_DEPENDENCIES.search(head)
    ):
        return "conda"
    if rel.endswith((".yml", ".yaml")) and not k8s_resources.is_ci(rel) and sky_tasks.is_task(head):
        return sky_tasks.KIND
    return k8s_resources.manifest_kind(rel, head)


# `#!/usr/bin/env python3`, `#! /usr/bin/python`: a script setuptools installs (scripts=[...]) or
# one run from a checkout keeps no .py suffix; the interpreter line says it is Python.
_PYTHON_SHEBANG = re.compile(rb"#![ \t]*\S*?(?:/env[ \t]+(?:-\S+[ \t]+)*)?python[\d.]*\s")

_SHELL_SHEBANG = re.compile(rb"#![ \t]*\S*?(?:/env[ \t]+)?(?:/|\b)(?:ba|z|da)?sh\s")


def shebang_kind(path: str) -> str | None:
    """'python' or 'shell' for a file without a suffix whose first line runs that interpreter."""
    head = read_head(path, 128)  # a FIFO or device yields b"": not a script
    if _PYTHON_SHEBANG.match(head):
        return "python"
    return "shell" if _SHELL_SHEBANG.match(head) else None


def _excluded(rel_path: str, exclude: tuple[str, ...]) -> bool:
    return bool(exclude) and any(
        fnmatch.fnmatch(rel_path, g) or fnmatch.fnmatch(rel_path, f"*/{g}") for g in exclude
    )


def scan_project(config: PortConfig, rules: RuleSet | None = None) -> PortReport:
    """Scan a file, a directory tree or an archive (sdist, wheel) and return every finding and
    unreadable file."""
    rules = rules or load_rules()
    root = config.path
    if archive.is_archive(root):  # paths relative to its top folder; the report names the archive
        with archive.unpacked(root) as top:
            report = scan_project(replace(config, path=top, gitignore=False), rules)
        return replace(report, root=str(root))
    started = time.perf_counter()
    findings: list[PortFinding] = []
    issues: list[FileIssue] = []
    num_files: Counter[str] = Counter()
    num_parsed = suppressed = 0
    ignored = git_ignored.ignored_paths(root) if config.gitignore else None
    skipped: list[str] = []
    files = list(iter_files(root, config.exclude, ignored, skipped))
    new_scan()
    context = build_context(str(root), files)
    # setuptools' requires.txt: read for the packages no shipped requirement source names
    metadata = egg_requires.metadata_files(str(root), files) if root.is_dir() else []
    declared_elsewhere = egg_requires.DeclaredElsewhere(files, str(root)) if metadata else None
    files += metadata
    # Each file's findings get their note once every file is read: the note reads the Python
    # files beside it (vendor_loading), whose bytes this loop has read by then.
    pending: list[tuple[str, list[Hit]]] = []
    amd_side = AmdManagement()  # told each Python file's bytes: does the project use AMD SMI?
    constraint_files = ConstraintFiles()  # the files passed to pip with -c and with -r
    requirement_files: set[str] = set()
    loading = context.cuda_loading

    def read(path: str, data: bytes) -> None:
        if loading is not None:
            loading.read(path, data)
        amd_side.read(path, data)

    for path, rel, kind in files:
        num_files[kind] += 1
        try:
            hits, parsed, text = scan_file(
                path, kind, rules, config.max_bytes, context.own_packages, read
            )
        except ScanError as exc:
            issues.append(FileIssue(path=rel, reason=str(exc)))
            continue
        num_parsed += parsed
        constraint_files.read(kind, text)
        if kind == "requirements" and hits:
            requirement_files.add(rel)
        if any(pulls_own_package(h, None) or cuda_extras.PULLS in h.evidence for h in hits):
            # `dep[vllm]` in vLLM, `mypkg[gpu]` in mypkg: the project's own package
            own = context.own_packages | declared_name(text) | setup_static.project_name(path)
            hits = [
                h
                for h in hits
                if not pulls_own_package(h, own) and not cuda_extras.names_own(h, own)
            ]
        if declared_elsewhere is not None and kind in egg_requires.KINDS:
            hits = declared_elsewhere.undeclared(text, hits, kind)
        if kind == "python" and hits and os.path.basename(path) == "setup.py":
            hits = setup_static.demote(path, text, hits)  # lists pyproject.toml overrides
        if hits and _LLAMA_CPP_HIP.search(text) and any(h.rule.id == _LLAMA_CUDA for h in hits):
            hits = [_llama_cpp_variant(h) for h in hits]
        if kind in _SOURCE_KINDS and hits and _VENDORED_FOLDER.search(rel):
            why = "vendored third-party source: the project ships another library's code"
            hits = all_info(hits, why)
        if kind == "python" and hits and _vendored_pynvml(rel, text):
            why = "a copy of NVIDIA's pynvml inside the project: where it is called is the finding"
            hits = all_info(hits, why)
        if kind == "pyproject" and context.builds_cuda_extension(rel):
            hits = hits + build_isolation_hits(text, rules)  # torch as a build requirement
        if kind in ("shell", "dockerfile") and hits:
            hits = nvidia_installer_script(rel, hits)
        if any(h.rule.id == "cmake-cuda-architectures" for h in hits):
            hits = _cuda_architectures_beside_hip(hits, text)
        if not hits:
            continue
        if kind == "python" and context.declared is not None:
            hits = context.declared.follow(hits, rules)
        hits = demote_test_values(rel, hits, text)
        if kind == "python":
            hits = demote_modal_app(text, context.own_packages, hits)
        ignores = inline_ignores(text)
        kept = drop_ignored(hits, ignores) if ignores else hits
        suppressed += len(hits) - len(kept)
        pending.append((rel, kept))
    for rel, kept in pending:
        if rel in requirement_files and constraint_files.is_constraints(rel):
            kept = constraint_files.demote(kept)
        findings.extend(_group(rel, _dedupe(kept), context.note_for(rel)))
    findings = reported_by_package(findings)
    if root.is_dir():  # a file scanned alone says nothing about the rest of its project
        findings = reported_by_closure(findings, str(root), [rel for _, rel, _ in files])
        findings = inline_ptx.in_opt_in_backend(findings)
        findings = without_users(findings, files)
        findings = ray_noset_with_amd_side(findings, files)
        python_files = [rel for _, rel, kind in files if kind == "python"]
        findings = header_reach.demote(findings, str(root), python_files, SKIP_DIRS)
        findings = amd_side.demote(findings, {path: rel for path, rel, _ in files})
        findings = nvml_query.required_where_called(findings, str(root))
    if config.baseline is not None:
        findings, dropped = _apply_baseline(findings, read_baseline(config.baseline))
        suppressed += dropped
    floor = severity_rank(config.floor)
    shown = [f for f in findings if severity_rank(f.severity) >= floor]
    shown.sort(key=lambda f: (f.path, f.line, f.column, f.rule_id))
    if config.write_baseline is not None:
        write_baseline(config.write_baseline, shown)
    return PortReport(
        root=str(root),
        findings=tuple(shown),
        issues=tuple(issues),
        num_files=dict(sorted(num_files.items())),
        num_python_parsed=num_parsed,
        elapsed_s=time.perf_counter() - started,
        num_suppressed=suppressed,
        num_below_floor=len(findings) - len(shown),
        git_ignored=tuple(skipped),
    )


def scan_file(
    path: str,
    kind: str,
    rules: RuleSet,
    max_bytes: int,
    own: frozenset[str] = frozenset(),
    read: Callable[[str, bytes], None] | None = None,
) -> tuple[list[Hit], bool, str]:
    """(hits, parsed-as-Python?, text) for one file; ScanError when it cannot be read as text.
    `read(path, data)` is told the bytes of each Python file."""
    data = read_bytes(path, max_bytes)
    if kind == "python":
        if data.startswith(_WIDE_BOMS):  # Python reads its source as UTF-8 (PEP 3120)
            raise ScanError("not UTF-8 (a UTF-16 or UTF-32 byte-order mark); skipped")
        if read is not None:
            read(path, data)
        # Most Python files hold no trigger: that is decided on the raw bytes, and such a file is
        # only checked for valid UTF-8 (free when it is ASCII), never decoded or scanned. A
        # setup.py is always scanned: its requirement lists hold packages, not trigger words.
        setup = os.path.basename(path) == "setup.py"
        keys = trigger_keys(data, rules)
        if not keys and not setup and not _may_install(data):
            if not data.isascii():
                decode(data)
            return [], False, ""
        text = decode(data)
        hits, parsed = scan_python(text, rules, is_setup=setup, own=own, keys=keys)
        return hits, parsed, text
    text = decode(data)
    scanner = _SCANNERS.get(kind)
    if scanner is None:
        return [], False, text
    return scanner(text, rules), False, text


# The AMD targets a HIP build of a CMake project takes (CMake's CMAKE_HIP_ARCHITECTURES, ROCm's
# GPU_TARGETS and the older AMDGPU_TARGETS): a file that sets them beside CMAKE_CUDA_ARCHITECTURES
# chooses per vendor.
_HIP_ARCHITECTURES = re.compile(r"CMAKE_HIP_ARCHITECTURES|\bAMDGPU_TARGETS\b|\bGPU_TARGETS\b")


def _cuda_architectures_beside_hip(hits: list[Hit], text: str) -> list[Hit]:
    if not _HIP_ARCHITECTURES.search(text):
        return hits
    why = "the file sets the HIP architectures too: one side of a vendor choice"
    return [
        demoted(h, "info", why)
        if h.rule.id == "cmake-cuda-architectures" and h.severity != "info"
        else h
        for h in hits
    ]


# A C++/CUDA source under a folder that holds other projects' code (third_party/cutlass,
# 3rdparty/, vendor/): the maintainer does not edit it; the library is the hazard, reported
# where the project builds or includes it (a CUTLASS include, the CMake build, the extension).
_SOURCE_KINDS = frozenset({"cuda", "header"})
_VENDORED_FOLDER = re.compile(
    r"(?:^|/)(?:third[_-]?party|3rd[_-]?party|3rdparty|vendor|vendored|_vendor)/", re.IGNORECASE
)


def _vendored_pynvml(rel: str, text: str) -> bool:
    """A module named pynvml.py in a folder of the project (`rel` is '/'-separated from the
    scanned root) that defines nvmlInit: a copy of the binding NVIDIA publishes (nvidia-ml-py's
    pynvml). Its ctypes load and nvmlInit are the binding's insides, reached only through the
    project's calls of it, which are reported. At the top of the tree it is the binding itself."""
    return "/" in rel and rel.rsplit("/", 1)[1] == "pynvml.py" and "\ndef nvmlInit" in text


# The run-time installer check (installer.py) reads a package named near one of its words, and a
# package name need hold no trigger key (`pip install vllm`): a file holding such a word is scanned
# (its words read from the check itself, so that a word it adds is looked for here too).
_INSTALLER_BYTES = tuple(w.encode() for w in installer._INSTALLER_WORDS)


def _may_install(data: bytes) -> bool:
    """Whether the bytes hold a word installer.package_lines starts from (as it does: as written)."""
    return any(w in data for w in _INSTALLER_BYTES)


# context.note_for's words for a file that is ROCm's by its name
ROCM_NAMED = "ROCm-specific by its name"


def _group(rel: str, hits: Iterator[Hit], note: str) -> list[PortFinding]:
    """One finding per rule and severity in a file, with every line; a file with a ROCm
    counterpart (or in an NVIDIA-only folder) has its findings at info with the reason."""
    groups: dict[tuple[str, Severity], list[Hit]] = {}
    rocm_named = note.startswith(ROCM_NAMED)
    for h in hits:
        severity: Severity = (
            "info" if note and not (rocm_named and h.rule.rocm_side) else h.severity
        )
        groups.setdefault((h.rule.id, severity), []).append(h)
    out = []
    for (_, severity), group in groups.items():
        group.sort(key=lambda h: (h.line, h.column))
        first = group[0]
        evidence = first.evidence
        if len(group) > 1:
            evidence = f"{evidence}  (+{len(group) - 1} more in this file)"
        out.append(
            PortFinding(
                path=rel,
                line=first.line,
                column=max(first.column, 0),
                rule_id=first.rule.id,
                severity=severity,
                title=first.rule.title,
                evidence=evidence,
                fix=first.rule.fix,
                source=first.rule.source,
                lines=tuple(h.line for h in group),
                note="" if rocm_named and first.rule.rocm_side else note,
            )
        )
    return out


def _apply_baseline(
    findings: list[PortFinding], accepted: dict[str, int]
) -> tuple[list[PortFinding], int]:
    totals: Counter[str] = Counter()
    for f in findings:
        totals[f.key()] += f.count
    kept, dropped = [], 0
    for f in findings:
        allowed = accepted.get(f.key())
        if allowed is None:
            kept.append(f)
        elif totals[f.key()] <= allowed:
            dropped += 1
        else:
            new = totals[f.key()] - allowed
            kept.append(replace(f, note=f"{new} new since the baseline ({allowed} accepted)"))
    return kept, dropped


def read_text(path: str, max_bytes: int) -> str:
    """The UTF-8 text of a file; ScanError for unreadable, huge, binary or non-UTF-8 content."""
    return decode(read_bytes(path, max_bytes))


# A FIFO or device named *.py must not block the open; for a regular file the flag does nothing.


def read_bytes(path: str, max_bytes: int) -> bytes:
    """The bytes of a regular text file; ScanError for unreadable, huge or binary content."""
    try:
        # One open, fstat and read: the size check avoids reading max_bytes for every file, and
        # a FIFO or device is refused before any read.
        fd = os.open(path, OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ScanError("not a regular file; skipped")
            if info.st_size > max_bytes:
                raise ScanError(f"larger than {max_bytes} bytes; skipped (see --max-bytes)")
            data = os.read(fd, info.st_size + 1)
            if len(data) > info.st_size:  # it grew since fstat: read the rest, as read() would
                chunks = [data]
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
                data = b"".join(chunks)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ScanError(f"cannot read it ({exc.strerror or exc})") from None
    if data.find(b"\x00", 0, 8192) >= 0 and not data.startswith(_WIDE_BOMS):
        raise ScanError("binary file; skipped")
    return data


# UTF-32 before UTF-16: the UTF-32-LE mark starts with the UTF-16-LE one. pip reads a
# requirements file by these marks (a PowerShell `pip freeze > requirements.txt` is UTF-16), so
# what it would install is read here too.
_WIDE_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_WIDE_BOMS = tuple(bom for bom, _ in _WIDE_ENCODINGS)


def decode(data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped; UTF-16 or UTF-32 when such a mark says so, as pip
    reads a requirements file) with universal newlines, as Python's `open` reads
    it: a file written with CRLF (or CR) line ends is scanned as its LF copy, so the line-anchored
    patterns (`[ \t]*$`, a line's end) read it the same; line numbers are unchanged (Python's parser
    ends a line at each of them too). ScanError when it is not UTF-8."""
    encoding = "utf-8-sig"
    if data[:1] in (b"\xff", b"\xfe", b"\x00"):
        encoding = next((e for bom, e in _WIDE_ENCODINGS if data.startswith(bom)), encoding)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding == "utf-8-sig" else encoding.upper()
        raise ScanError(f"not {name} (byte {exc.start}); skipped") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _cell_python(text: str, rules: RuleSet) -> list[Hit]:
    """A notebook cell as Python; a cell that does not parse holds no findings."""
    try:
        return scan_python(text, rules)[0]
    except ScanError:
        return []


def _cell_shell(text: str, rules: RuleSet) -> list[Hit]:
    return scan_text(text, "shell", rules)


_SCANNERS: dict[str, Callable[[str, RuleSet], list[Hit]]] = {
    "requirements": scan_requirements_txt,
    "pyproject": pixi.scan_pyproject_and_pixi,
    "setupcfg": scan_setup_cfg,
    "conda": scan_conda,
    "dockerfile": lambda text, rules: scan_text(text, "dockerfile", rules),
    "shell": lambda text, rules: scan_text(text, "shell", rules),
    "notebook": lambda text, rules: scan_notebook(text, rules, _cell_python, _cell_shell),
    # a compose file's `image:` keys are read like any YAML file's (k8s_resources.cuda_images:
    # vLLM's and SGLang's CUDA builds too, info beside a ROCm image); listed first, they are the
    # finding where the text pattern matches the same line (_dedupe keeps the first)
    "compose": lambda text, rules: k8s_resources.cuda_images(text, rules)
    + scan_text(text, "compose", rules),
    k8s_resources.KIND: k8s_resources.scan_manifest,
    sky_tasks.KIND: sky_tasks.scan_task,
    rust_ort.KIND: rust_ort.scan_rust,
    rust_ort.CPP_KIND: rust_ort.scan_cpp,
    cargo_crates.KIND: cargo_crates.scan_cargo,
    toml_images.KIND: toml_images.scan_toml_images,
    k8s_resources.CI_KIND: k8s_resources.resource_requests,
    k8s_resources.TEMPLATE_KIND: k8s_resources.resource_requests,
    "cmake": scan_cmake,
    "rust-build": build_scripts.scan_rust_build,
    uv_lock.KIND: uv_lock.scan_uv_lock,
    pixi.KIND: pixi.scan_pixi_toml,
    pixi_lock.KIND: pixi_lock.scan_pixi_lock,
    devcontainer.KIND: devcontainer.scan_devcontainer,
    egg_requires.KIND: egg_requires.scan_requires_txt,
    pkg_info.KIND: pkg_info.scan_pkg_info,
    "readme": readme_install.scan_readme,
    "cuda": scan_cuda_source,
    "header": lambda text, rules: scan_cuda_source(text, rules, header=True),
}


# llama.cpp's back-end switches that give an AMD GPU one (docs/build.md: HIP, and Vulkan, which
# runs on AMD's drivers), under their current and earlier names.
_LLAMA_CPP_HIP = re.compile(r"(?:GGML|LLAMA)_(?:HIP|HIPBLAS|VULKAN)\b")
_LLAMA_CUDA = "llama-cpp-cuda-build"


def _llama_cpp_variant(h: Hit) -> Hit:
    """A llama.cpp CUDA build in a file that also configures its HIP or Vulkan back end: the
    NVIDIA side of a choice the file makes, info."""
    if h.rule.id != _LLAMA_CUDA or h.severity == "info":
        return h
    return demoted(h, "info", "the file also configures llama.cpp's HIP/Vulkan back end")


def _dedupe(hits: list[Hit]) -> Iterator[Hit]:
    # The same rule twice on one line (an import list, a repeated variable) is one finding.
    seen: set[tuple[int, str]] = set()
    for h in hits:
        key = (h.line, h.rule.id)
        if key not in seen:
            seen.add(key)
            yield h

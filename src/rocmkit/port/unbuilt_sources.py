"""CUDA sources a project ships but never compiles.

setuptools compiles only what `setup()` is given as `ext_modules` (or a build_ext command it is
given in `cmdclass`); a pyproject build backend other than setuptools may build native code its
own way (scikit-build-core, meson-python, ...). So where the project's only build is a setuptools
`setup.py` that names no extension, build command or CMake, the pyproject says nothing else, no
CMake/Meson/kernel-builder file or build script in the tree compiles sources, and no Python module
compiles them at run time (torch.utils.cpp_extension, CuPy/PyCUDA modules, nvcc), a `.cu`/`.cuh`
file or device header is shipped only: what hipcc would reject in it breaks no install on ROCm.

Decided once per scan, only for a tree that holds CUDA sources; the Python modules are read (a
byte test each) only when every other condition already holds.

A tree that builds its kernels only at run time (CuPy, PyCUDA, torch `load()`) compiles the
sources its modules open by name: `source_verdicts` also finds the `.cu` files none names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from rocmkit.port.text_scan import read_head

_SETUP_BUILDS = (b"ext_modules", b"Extension", b"cmdclass", b"build_ext", b"cmake", b"CMake")
_PYPROJECT_BUILDS = (
    b"ext-modules",
    b"ext_modules",
    b"cmake",
    b"scikit-build",
    b"meson",
    b"maturin",
)
_SETUPTOOLS_BACKEND = b"setuptools.build_meta"
_BUILD_FILES = frozenset({"build.toml", "meson.build", "build.rs", "CMakeLists.txt", "flake.nix"})
# What a Python module or a script does when it compiles CUDA sources itself.
_RUNTIME_BUILDS = (
    b"cpp_extension",
    b"load_inline",
    b"nvcc",
    b"SourceModule",
    b"RawModule",
    b"RawKernel",
    b"build_ext",
    b"cmake",
)


def source_verdicts(root: str, files: Iterable[tuple[str, str, str]]) -> tuple[str, dict[str, str]]:
    """(why the tree's CUDA sources are never compiled, or ''; the `.cu` files a tree that
    compiles its kernels only at run time never reads: rel -> why). With no build of its own, a
    tree whose scripts compile nothing ships its sources only; one whose scripts compile at run
    time (a CuPy RawModule, PyCUDA SourceModule or torch `load()` over the sources a module opens
    by name) never compiles a `.cu` file whose name no module, script or other source spells (not
    as `name.cu`, not as the quoted stem, not as the start of a formatted name
    `f"name_v{n}.cu"`). Nothing is decided where a module lists sources by pattern
    (`glob("*.cu")`, `.endswith(".cu")`). The tree is walked once, each script read once."""
    files = list(files)
    if not _no_static_build(root, files):
        return "", {}
    texts = [_read(path) for path, _, kind in files if kind in _SCRIPT_KINDS]
    if not any(any(w in t for w in _RUNTIME_BUILDS) for t in texts):
        return _UNBUILT, {}
    sources = [rel for _, rel, kind in files if kind == "cuda" and rel.endswith(".cu")]
    if not sources or any(_PATTERN_LISTING.search(t) for t in texts):
        return "", {}
    texts += [_read(path) for path, _, kind in files if kind in ("cuda", "header")]
    named = b"\n".join(texts)
    # the literal starts of formatted names (`f"ivfpq_top1_v{n}.cu"`), read once
    prefixes = {m.group(1) for m in _FORMATTED.finditer(named) if len(m.group(1)) >= 3}
    return "", {
        rel: _UNLOADED
        for rel in sources
        if not _names_source(named, prefixes, os.path.basename(rel)[: -len(".cu")].encode())
    }


_UNBUILT = "shipped, never compiled: setup.py gives setup() no ext_modules and nothing compiles it"
_SCRIPT_KINDS = ("python", "shell", "notebook", "cmake", "rust-build")
_UNLOADED = (
    "never compiled: the project builds its kernels at run time from the sources its modules"
    " open by name, and none names this one"
)
# A module that takes every source of a folder: `glob("*.cu")`, `.endswith(".cu")`, `"*.cu"`.
_PATTERN_LISTING = re.compile(rb"""\*\.cu\b|endswith\(\s*["']\.cu["']|\.suffix\s*==\s*["']\.cu""")


_FORMATTED = re.compile(rb"""["'/]([\w.-]*)\{""")


def _names_source(text: bytes, prefixes: set[bytes], stem: bytes) -> bool:
    """Whether `text` spells a source of this stem: `stem.cu`, the quoted stem, or a formatted
    name whose literal start (one of `prefixes`) is a prefix of the stem."""
    pattern = rb"(?<![\w.])" + re.escape(stem) + rb"(?:\.cu\b|[\"'])"
    return re.search(pattern, text) is not None or any(stem.startswith(p) for p in prefixes)


def _no_static_build(root: str, files: list[tuple[str, str, str]]) -> bool:
    """Whether the tree ships CUDA sources and no build of its own: a setuptools setup.py with
    no extension, a pyproject with nothing else to build, no build file anywhere."""
    if not any(kind in ("cuda", "header") for _, _, kind in files):
        return False
    top = {rel: path for path, rel, _ in files if "/" not in rel}
    setup_py = top.get("setup.py")
    if setup_py is None or _holds(setup_py, _SETUP_BUILDS):
        return False
    pyproject = top.get("pyproject.toml")
    if pyproject is not None:
        data = _read(pyproject)
        if b"build-backend" in data and _SETUPTOOLS_BACKEND not in data:
            return False
        if any(w in data for w in _PYPROJECT_BUILDS):
            return False
    for _, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        if _BUILD_FILES.intersection(names):
            return False
    return True


def _read(path: str) -> bytes:
    return read_head(path, 1 << 20)


def _holds(path: str, words: tuple[bytes, ...]) -> bool:
    data = _read(path)
    return any(w in data for w in words)

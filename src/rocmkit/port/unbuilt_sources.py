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
"""

from __future__ import annotations

import os
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


def unbuilt_reason(root: str, files: Iterable[tuple[str, str, str]]) -> str:
    """Why the tree's CUDA sources are never compiled, or '' when something may compile them."""
    files = list(files)
    if not any(kind in ("cuda", "header") for _, _, kind in files):
        return ""
    top = {rel: path for path, rel, _ in files if "/" not in rel}
    setup_py = top.get("setup.py")
    if setup_py is None or _holds(setup_py, _SETUP_BUILDS):
        return ""
    pyproject = top.get("pyproject.toml")
    if pyproject is not None:
        data = _read(pyproject)
        if b"build-backend" in data and _SETUPTOOLS_BACKEND not in data:
            return ""
        if any(w in data for w in _PYPROJECT_BUILDS):
            return ""
    for _, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        if _BUILD_FILES.intersection(names):
            return ""
    for path, _, kind in files:
        if kind in ("python", "shell", "notebook", "cmake", "rust-build") and _holds(
            path, _RUNTIME_BUILDS
        ):
            return ""
    return "shipped, never compiled: setup.py gives setup() no ext_modules and nothing compiles it"


def _read(path: str) -> bytes:
    return read_head(path, 1 << 20)


def _holds(path: str, words: tuple[bytes, ...]) -> bool:
    data = _read(path)
    return any(w in data for w in words)

"""Headers no source of the project includes: their device code is never compiled in its build.

A C/C++/CUDA header is compiled only as part of a translation unit that includes it (C++
[cpp.include]; nvcc and hipcc compile .cu/.cpp/.hip files, never a header alone). An sdist that
carries a library's whole header tree next to the few sources its extension builds (Transformer
Engine's PyTorch extension ships the core library's `common/` headers) holds inline PTX, 32-lane
masks and `__CUDA_ARCH__` guards that hipcc never sees when the project is built for ROCm.

So, where the scanned tree has translation units, a finding in a header that none of them
reaches through `#include` (followed transitively, quoted and angled, matched on the path's
trailing components) is info, saying why. Python files count as includers too: a JIT build
(`load_inline`, a source string handed to nvcc) writes `#include "x.cuh"` in a string. A tree
with no translation unit at all (a header-only library, built by its users) is left alone: what
reaches its headers is outside the scan.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable

from rocmkit.port.findings import PortFinding
from rocmkit.port.text_scan import read_head

HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc")
UNIT_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip", ".mm")
_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]')
_MAX_BYTES = 4 << 20
NOTE = "no source file of the project includes this header, so its build never compiles it"


def demote(
    findings: list[PortFinding],
    root: str,
    python_files: Iterable[str],
    skip_dirs: frozenset[str] = frozenset(),
) -> list[PortFinding]:
    """Header findings at info where no translation unit (or Python JIT source) of the tree
    reaches the header; the others unchanged. `skip_dirs`: folder names the scan does not enter
    (virtual environments, caches), not entered here either."""
    in_headers = {
        f.path for f in findings if f.severity != "info" and f.path.endswith(HEADER_SUFFIXES)
    }
    if not in_headers:
        return findings
    headers, units = _c_files(root, skip_dirs)
    if not units:
        return findings
    reached = _reached(root, headers, [*units, *python_files])
    unreached = {path for path in in_headers if path in headers and path not in reached}
    if not unreached:
        return findings
    return [
        dataclasses.replace(f, severity="info", note=NOTE)
        if f.path in unreached and f.severity != "info"
        else f
        for f in findings
    ]


def _c_files(root: str, skip_dirs: frozenset[str]) -> tuple[set[str], list[str]]:
    """(headers, translation units) under root, as '/'-separated paths relative to it."""
    headers: set[str] = set()
    units: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip_dirs and not d.endswith(".egg-info")]
        rel_dir = os.path.relpath(directory, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for name in filenames:
            lower = name.lower()
            if lower.endswith(HEADER_SUFFIXES):
                headers.add(prefix + name)
            elif lower.endswith(UNIT_SUFFIXES):
                units.append(prefix + name)
    return headers, units


def _reached(root: str, headers: set[str], starts: list[str]) -> set[str]:
    """The headers reachable through #include from `starts` (paths relative to root)."""
    by_name: dict[str, list[str]] = {}
    for header in headers:
        by_name.setdefault(header.rsplit("/", 1)[-1], []).append(header)
    reached: set[str] = set()
    pending = list(starts)
    while pending:
        path = pending.pop()
        data = read_head(os.path.join(root, path), _MAX_BYTES)
        if b"include" not in data:
            continue
        for match in _INCLUDE.finditer(data):
            included = match.group(2).decode("utf-8", "replace")
            beside = _beside(path, included, headers) if match.group(1) == b'"' else None
            for header in [beside] if beside else _resolve(included, by_name):
                if header not in reached:
                    reached.add(header)
                    pending.append(header)
    return reached


def _beside(path: str, included: str, headers: set[str]) -> str | None:
    """The header a quoted include names in the including file's own folder, where it is there:
    the compiler looks there first ("..." form: GCC's and Clang's search order, before any -I
    folder), so a same-named header elsewhere in the tree is not the one included."""
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    candidate = os.path.normpath(os.path.join(folder, included)).replace(os.sep, "/")
    return candidate if candidate in headers else None


def _resolve(included: str, by_name: dict[str, list[str]]) -> list[str]:
    """The tree's headers an include names: same file name, and the shorter of the two paths
    (the include past any `./` or `../`, the header's path under the scanned folder) at the end
    of the other: an include path may start above the scanned folder (`implicit/gpu/dot.cuh`
    from the project root, scanned from `implicit/`)."""
    parts = [p for p in included.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if not parts:
        return []
    tail = "/".join(parts)
    return [
        h
        for h in by_name.get(parts[-1], ())
        if h == tail or h.endswith("/" + tail) or tail.endswith("/" + h)
    ]

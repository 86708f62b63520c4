"""A project's own macros that no AMD compile defines, found across the files of a tree.

DeepSpeed defines `ASYNC_COPY_AVAILABLE` in one header, only under `#if __CUDA_ARCH__ >= 800`
inside the `#else` of `#ifdef __HIP_PLATFORM_AMD__`, and tests it in another header around its
`cp.async` inline PTX. Under HIP that branch is never compiled, so a warning there is wrong; a file
alone cannot tell. This module reads the tree's `#define`s and the branches that hold them
(amd_branches.py's evaluator, with hip-clang's macros and HIP's missing version macros), to a
fixed point: a macro whose every definition in the tree sits in a branch dead on AMD is undefined
on AMD, which can make further definitions dead (a flag defined under `#ifdef` of such a flag).
Includes are resolved inside the tree (`#include "x.h"` beside the file, else a tree file whose
path ends in `x.h`): a file learns such a macro only when it and one of the macro's definitions
meet in a translation unit (one includes the other, or a third includes both), so an unrelated
part of the tree that shares a flag's name, set by `-D` on its build line, is left alone.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rocmkit.hipify.amd_branches import AmdFacts, dead_spans

# Start with the literal `#` (the engine jumps to it); that only blanks precede it on its line
# is checked apart (a `^` anchor in MULTILINE mode made the scan several times slower).
_DEFINE = re.compile(r"\#[ \t]*define[ \t]+([A-Za-z_]\w*)")
_INCLUDE = re.compile(r'\#[ \t]*include[ \t]*"([^"\n]+)"')


def _at_line_start(text: str, offset: int) -> bool:
    return not text[text.rfind("\n", 0, offset) + 1 : offset].strip(" \t")


@dataclass(slots=True)
class _Definitions:
    """Where one macro is defined: (file, offset) pairs."""

    places: list[tuple[str, int]] = field(default_factory=list)


def amd_undefined_macros(
    texts: Mapping[str, str], undefined: frozenset[str]
) -> dict[str, tuple[tuple[str, str], ...]]:
    """{file: ((macro, why), ...)} for the files that test a project macro no AMD compile defines.

    `texts`: the tree's files by path relative to the tree (posix); `undefined`: macros hip-clang
    leaves undefined to begin with (HIP's missing version macros)."""
    definitions = _definitions(texts)
    dead = _dead_macros(texts, definitions, undefined, _tree_folder(texts))
    if not dead:
        return {}
    meets = _Meetings(texts)
    result: dict[str, tuple[tuple[str, str], ...]] = {}
    for path, text in texts.items():
        found = tuple(
            (name, why)
            for name, (why, homes) in sorted(dead.items())
            if name in text and meets.any(path, homes)
        )
        if found:
            result[path] = found
    return result


def _definitions(texts: Mapping[str, str]) -> dict[str, _Definitions]:
    found: dict[str, _Definitions] = {}
    for path, text in texts.items():
        if "define" not in text:
            continue
        for match in _DEFINE.finditer(text):
            if not _at_line_start(text, match.start()):
                continue
            found.setdefault(match.group(1), _Definitions()).places.append((path, match.start()))
    return found


def _tree_folder(texts: Mapping[str, str]) -> str:
    """The folder all files share: messages name a file relative to it."""
    folders = {path.rpartition("/")[0] for path in texts}
    return posixpath.commonpath(list(folders)) if folders and "" not in folders else ""


def _dead_macros(
    texts: Mapping[str, str],
    definitions: dict[str, _Definitions],
    undefined: frozenset[str],
    folder: str,
) -> dict[str, tuple[str, set[str]]]:
    """{macro: (why, the files defining it)} for each macro all of whose definitions are dead on
    AMD; iterated until nothing changes (each round can only add macros)."""
    dead: dict[str, tuple[str, set[str]]] = {}
    while True:
        facts = AmdFacts(undefined | set(dead), tuple((n, w) for n, (w, _) in dead.items()))
        spans: dict[str, list[tuple[int, int, str]]] = {}
        added = False
        for name, where in definitions.items():
            if name in dead or name in undefined:
                continue
            reasons = []
            for path, offset in where.places:
                if path not in spans:
                    spans[path] = dead_spans(texts[path], facts)
                why = _dead_at(spans[path], offset)
                if why is None:
                    break
                line = texts[path].count("\n", 0, offset) + 1
                shown = posixpath.relpath(path, folder) if folder else path
                reasons.append(f"{shown}:{line} under {why}")
            else:
                homes = {path for path, _ in where.places}
                dead[name] = (f"{name} is defined only at {'; '.join(reasons)}", homes)
                added = True
        if not added:
            return dead


def _dead_at(spans: list[tuple[int, int, str]], offset: int) -> str | None:
    index = bisect.bisect_right(spans, (offset, 1 << 62)) - 1
    if index >= 0 and spans[index][0] <= offset < spans[index][1]:
        return spans[index][2]
    return None


class _Meetings:
    """Whether two files of the tree can be in one translation unit: some file (either of them,
    or a third) reaches both through quoted includes resolved inside the tree."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        by_name: dict[str, list[str]] = {}
        for path in texts:
            by_name.setdefault(path.rpartition("/")[2], []).append(path)
        self.includers: dict[str, set[str]] = {}
        for path, text in texts.items():
            for match in _INCLUDE.finditer(text):
                if not _at_line_start(text, match.start()):
                    continue
                for target in _resolve(path, match.group(1), texts, by_name):
                    self.includers.setdefault(target, set()).add(path)
        self._ancestors: dict[str, set[str]] = {}

    def any(self, path: str, homes: set[str]) -> bool:
        mine = self.ancestors(path)
        return any(mine & self.ancestors(home) for home in homes)

    def ancestors(self, path: str) -> set[str]:
        """The file and every file that includes it, directly or not."""
        known = self._ancestors.get(path)
        if known is None:
            known, todo = {path}, [path]
            while todo:
                for parent in self.includers.get(todo.pop(), ()):
                    if parent not in known:
                        known.add(parent)
                        todo.append(parent)
            self._ancestors[path] = known
        return known


def _resolve(
    path: str, spelled: str, texts: Mapping[str, str], by_name: dict[str, list[str]]
) -> list[str]:
    """The tree files `#include "spelled"` in `path` may name: beside it, else by path suffix."""
    folder = path.rpartition("/")[0]
    beside = _normal(f"{folder}/{spelled}" if folder else spelled)
    if beside in texts:
        return [beside]
    wanted = _normal(spelled).lstrip("./")
    return [
        candidate
        for candidate in by_name.get(wanted.rpartition("/")[2], ())
        if candidate == wanted or candidate.endswith("/" + wanted)
    ]


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)

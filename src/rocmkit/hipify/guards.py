"""Header guards and version macros inside `#if/#ifdef/#ifndef/#elif` conditions.

Helper headers decide what to compile by testing CUDA's own include guards (`#ifdef
__DRIVER_TYPES_H__` around the error-string helpers, `#ifdef CURAND_H_` for cuRAND's). After
translation CUDA's headers are never included, so unmapped guards silently drop that code. Each
guard is rewritten to the guard of the HIP header that replaces it (the pairs live in
mappings.toml's `[guards]`, with the HIP header each comes from). Version macros such as
`CUDART_VERSION` have no HIP value with the same meaning; they are reported, never guessed.
`__CUDA_ARCH__` is decided apart, in conditions and code alike (arch.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# A conditional directive, continued over backslash-newlines. It starts with `#` (a literal the
# regex engine jumps to); that only blanks precede it on its line is checked apart.
_CONDITIONAL = re.compile(
    r"\#[ \t]*(?P<keyword>ifdef|ifndef|if|elif)\b(?P<rest>(?:[^\n\\]|\\.|\\\n)*)"
)
_NAME = re.compile(r"(?<![\w$])[A-Za-z_]\w*")
_DEFINED_BEFORE = re.compile(r"\bdefined\s*\(?\s*\Z")


@dataclass(frozen=True, slots=True)
class GuardTable:
    guards: dict[str, str]  # CUDA header guard -> HIP header guard
    defined_only: dict[str, str]  # mapped only when tested with defined()/#ifdef
    version_macros: dict[str, str]  # name -> what to do instead


@dataclass(frozen=True, slots=True)
class ConditionName:
    """One name in a condition: rewritten (`replacement`) or reported (`message`)."""

    start: int
    end: int
    name: str
    replacement: str | None
    message: str = ""


def conditional_directives(
    text: str, protected: Callable[[int], bool]
) -> Iterator[tuple[str, int, int]]:
    """(keyword, start, end) of the condition of each `#if/#ifdef/#ifndef/#elif` in code."""
    if "#" not in text:
        return
    for directive in _CONDITIONAL.finditer(text):
        line_start = text.rfind("\n", 0, directive.start()) + 1
        if text[line_start : directive.start()].strip(" \t") or protected(directive.start()):
            continue
        yield directive.group("keyword"), directive.start("rest"), directive.end("rest")


def condition_names(
    text: str, table: GuardTable, protected: Callable[[int], bool]
) -> Iterator[ConditionName]:
    """Every guard or version macro named in a preprocessor condition outside comments."""
    for keyword, rest_start, rest_end in conditional_directives(text, protected):
        tests_defined = keyword in ("ifdef", "ifndef")
        for match in _NAME.finditer(text, rest_start, rest_end):
            name = match.group()
            start = match.start()
            found = _classify(name, text, start, tests_defined, table)
            if found is not None and not protected(start):
                replacement, message = found
                yield ConditionName(start, start + len(name), name, replacement, message)


def _classify(
    name: str, text: str, start: int, tests_defined: bool, table: GuardTable
) -> tuple[str | None, str] | None:
    if name in table.guards:
        return table.guards[name], ""
    if name in table.defined_only:
        line_start = text.rfind("\n", 0, start) + 1
        if tests_defined or _DEFINED_BEFORE.search(text, line_start, start):
            return table.defined_only[name], ""
        return None, (
            f"HIP has no {name} value (the comparison sees 0): test "
            f"defined({table.defined_only[name]}) or an arch macro such as __gfx90a__"
        )
    if name in table.version_macros:
        return None, table.version_macros[name]
    return None

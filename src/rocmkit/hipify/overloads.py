"""Overloads that translation makes identical: `check(CUresult)` and `check(cudaError_t)`.

CUDA's driver and runtime error types are distinct, so helper headers overload on them; HIP has
one `hipError_t` for both, and the translated pair is a redefinition. The first overload keeps
its place; every later declaration or definition whose parameter list differs from it only in
CUDA types that map to the same HIP types is compiled out with `#if 0` and a comment naming the
line it repeats, and reported: calls that went to it now reach the kept one. (Declarations stay:
declaring the same function twice is legal.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rocmkit.hipify.lexer import call_arguments

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|\S")
# Words before `name(` that make it a call or an expression, not a declaration.
_NOT_A_TYPE = frozenset({"return", "else", "case", "new", "delete", "throw", "sizeof", "do"})
_LAST_WORD = re.compile(r"[A-Za-z_]\w*\Z")
_TYPE_END = re.compile(r"(?:[\w>*&]|::)\s*\Z")
# A type in a parameter list: `CUresult r,`, `const cudaStream_t& s)`, `CUresult)`, `T r = x`.
_PARAMETER = re.compile(r"\w+[\s*&]*(?:const\b[\s*&]*)?(?:[A-Za-z_]\w*\s*)?(?:[,)=]|\[)")
_AFTER_PARAMETERS = re.compile(r"\s*(?:(?:const|noexcept|override|final)\b\s*)*([{;:]|->)")


@dataclass(frozen=True, slots=True)
class Collision:
    """text[start:end] (a function definition) repeats the one at `kept_offset`."""

    start: int
    end: int
    name: str
    kept_offset: int
    message: str


def collisions(
    text: str,
    names_at: Iterable[int],
    hip_name: Callable[[str], str | None],
    protected: Callable[[int], bool],
) -> Iterator[Collision]:
    """Declarations that repeat an earlier one once CUDA names become HIP names.

    `names_at`: offsets of the CUDA names whose HIP name another CUDA name shares (the caller
    knows them from its edits); `hip_name(cuda_name)` gives a name's translation (or None);
    `protected(offset)`: inside a comment or literal. The text is not masked (that cost more than
    the rest): a bracket in a comment only makes a declaration be missed."""
    candidates = [offset for offset in sorted(names_at) if _PARAMETER.match(text, offset)]
    code = text
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[tuple[str, ...], int, int, int]]] = {}
    seen: set[int] = set()
    for offset in candidates:
        found = _declaration_around(code, offset)
        if found is None or found[0] in seen:
            continue
        name_start, open_paren, close_paren = found
        seen.add(name_start)
        name = _IDENTIFIER.match(code, name_start).group()  # type: ignore[union-attr]
        original = _parameter_types(code[open_paren + 1 : close_paren])
        translated = tuple(" ".join(hip_name(t) or t for t in p.split()) for p in original)
        # Only definitions collide: declaring the same function twice is legal C++.
        extent = _definition_extent(code, name_start, close_paren, protected)
        if extent is not None:
            groups.setdefault((name, translated), []).append((original, name_start, *extent))
    for (name, translated), members in groups.items():
        kept, kept_offset = members[0][0], members[0][1]
        for original, _, start, end in members[1:]:
            if original != kept:
                yield Collision(
                    start, end, name, kept_offset, _message(name, kept, original, translated)
                )


def _message(
    name: str, kept: tuple[str, ...], other: tuple[str, ...], translated: tuple[str, ...]
) -> str:
    differences = [
        f"{a} and {b} are both {t}"
        for a, b, t in zip(kept, other, translated, strict=True)
        if a != b
    ]
    return (
        f"{name}({', '.join(other)}) and {name}({', '.join(kept)}) become one overload in HIP "
        f"({'; '.join(differences)}): this definition is compiled out with #if 0, so its "
        "callers reach the first one; check that its body does what they need"
    )


def _declaration_around(code: str, offset: int) -> tuple[int, int, int] | None:
    """(name start, `(`, `)`) of the function declaration whose parameter list holds `offset`."""
    depth, position = 0, offset
    while position > 0:
        position -= 1
        char = code[position]
        if char in ")]":
            depth += 1
        elif char in "([":
            if depth == 0:
                break
            depth -= 1
        elif char in ";{}" or (char == "\n" and code.startswith("#", position + 1)):
            return None
    if position == 0 or code[position] != "(":
        return None
    open_paren = position
    # A window, not the whole prefix: a search anchored at \Z still scans from the start.
    window_start = max(0, open_paren - 200)
    before = code[window_start:open_paren].rstrip()
    name = _LAST_WORD.search(before)
    if name is None or name.group() in _NOT_A_TYPE:
        return None
    prefix = before[: name.start()].rstrip()
    previous = _LAST_WORD.search(prefix)
    if not _TYPE_END.search(prefix[-80:]) or (previous and previous.group() in _NOT_A_TYPE):
        return None
    arguments = call_arguments(code, open_paren + 1)
    close_paren = arguments[-1][1] if arguments else None
    if close_paren is None or not _AFTER_PARAMETERS.match(code, close_paren + 1):
        return None
    return window_start + name.start(), open_paren, close_paren


def _parameter_types(parameters: str) -> tuple[str, ...]:
    """Each parameter's type, its name and default argument dropped: `const CUresult& r = x`
    -> `const CUresult &`."""
    types = []
    for parameter in _split_top(parameters):
        tokens = _TOKEN.findall(parameter.split("=", 1)[0])
        if len(tokens) > 1 and _IDENTIFIER.fullmatch(tokens[-1]) and tokens[-2] != "::":
            tokens = tokens[:-1]
        if tokens and tokens != ["void"]:
            types.append(" ".join(tokens))
    return tuple(types)


def _split_top(parameters: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(parameters):
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(parameters[start:index])
            start = index + 1
    parts.append(parameters[start:])
    return [p for p in parts if p.strip()]


def _definition_extent(
    code: str, name_start: int, close_paren: int, protected: Callable[[int], bool]
) -> tuple[int, int] | None:
    """(first, past last) offsets of a function definition: from the start of the line where
    its return type begins (after the previous statement, directive or comment) to the `}` of
    its body. None for a declaration without a body."""
    after = _AFTER_PARAMETERS.match(code, close_paren + 1)
    if after is None or after.group(1) == ";":
        return None
    body = code.find("{", close_paren)
    closing = _matching(code, body, "{", "}", protected) if body >= 0 else None
    if closing is None:
        return None
    end = closing + 1
    boundary = max(code.rfind(c, 0, name_start) for c in ";{}")
    start = boundary + 1
    # Skip blanks and whole preprocessor lines between the previous statement and the type.
    for line in re.finditer(r"[^\n]*\n", code[start:name_start]):
        if line.group().strip() and not line.group().lstrip().startswith("#"):
            break
        start += len(line.group())
    line_start = code.rfind("\n", 0, start) + 1
    if code[line_start:start].strip():
        return None  # the declaration shares its first line with other code: left alone
    return line_start, end


def _matching(
    code: str, opening: int, open_char: str, close_char: str, protected: Callable[[int], bool]
) -> int | None:
    """The offset of the bracket closing the one at `opening`, skipping comments and literals."""
    depth = 0
    for match in re.compile(f"[{re.escape(open_char + close_char)}]").finditer(code, opening):
        if protected(match.start()):
            continue
        depth += 1 if match.group() == open_char else -1
        if depth == 0:
            return match.start()
    return None

"""Warp-size analysis that follows values: 32-lane assumptions in device code (`warp-size`).

hazards.py matches fixed spellings (`threadIdx.x & 31`, `#define WARP_SIZE 32`). Real kernels
spell the width through a value (`constexpr int kWarp = 32; lane = tid % kWarp;`), reduce with
shuffles from offset 16, stride loops by 32 lanes and keep per-warp partial sums in
`__shared__ float partial[32]`. On AMD CDNA's 64-lane wavefronts each of these compiles and
computes something else. This module looks only inside `__global__`/`__device__` function
bodies (host code that does `pos % 32` is left alone), follows names bound to 32, `warpSize` or
a 32-bit full mask (`#define`, `const`, `constexpr`), and reports each use with its 64-lane
consequence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rocmkit.hipify.lexer import continues_name

CODE = "warp-size"
_FULL_MASK = r"0[xX][fF]{8}[uU]?[lL]{0,2}|~0[uU]?"
# Every whole-text search below starts with a literal, found by the regex engine's fast skip or
# by str.find: a pattern that starts with `\w+`, `\b` or a character set made this analysis
# cost as much as the whole translation. The context of each hit is then read back.
_DEFINE = re.compile(
    r"\#[ \t]*define[ \t]+(\w+)[ \t]+\(?([^\s()]+)\)?[ \t]*(?:$|//|/\*)", re.MULTILINE
)
_DEFINE_32 = re.compile(
    r"[ \t]*\#[ \t]*define[ \t]+(\w+)[ \t]+\(?32\)?[ \t]*(?:$|//|/\*)", re.MULTILINE
)
_CONSTANT_BEFORE = re.compile(r"\b(?:const|constexpr)\b[^;=(){}]*?\b(\w+)\s*[={]\s*\Z")
_MINUS_ONE_AFTER = re.compile(r"\s*-\s*1\s*\)")
_SHIFT_FIVE = re.compile(r">>\s*5(?![\w.])")
# A literal first, the end checked by a lookahead in C; the start is checked in Python.
_NUMBER_PATTERNS = {n: re.compile(rf"{n}(?![\w.])") for n in ("32", "31")}
_NUMBER_PATTERNS["0x1f"] = re.compile(r"0[xX]1[fF](?![\w.])")
_BRACE = re.compile(r"[{};]")
# Names that say a statement computes with thread positions.
_THREADISH = re.compile(
    r"\b(?:threadIdx|blockDim|tid\w*|lane\w*|warp\w*|wid|thread\w*|block_?[sS]ize|tx)\b"
)
_SHUFFLE_LOOP = re.compile(r"for\s*\([^;()]*=\s*(16|\w+\s*/\s*2)\s*;[^;]*;[^)]*(?:/=\s*2|>>=\s*1)")
_STRIDE_LOOP = re.compile(r"for\s*\(([^;]*);[^;]*;[^)]*\+=\s*(\w+)\s*\)")
_SHARED_ARRAY = re.compile(r"__shared__[^;{}]*?\b(\w+)\s*\[\s*(\w+)\s*\]")
_WARP_INDEX = re.compile(r"/\s*(?:warpSize|32)|>>\s*5|\bwarp\w*|\bwid\b")
_BALLOT = re.compile(r"__(?:ballot|activemask)")
_SYNC_MASK = re.compile(r"__\w+_sync\s*\(\s*(\w+)\s*[,)]")
# One literal each (the engine's fast skip needs a literal start; a `0` starts every number).
_FULL_MASK_VALUES = tuple(
    (literal, re.compile(rf"{re.escape(literal)}[uU]?[lL]{{0,2}}(?!\w)"))
    for literal in ("0xffffffff", "0xFFFFFFFF", "0XFFFFFFFF", "~0")
)
_COMPARE_BEFORE = re.compile(r"(\w+)\s*\)?\s*[=!]=\s*\Z")
_ASSIGN_BEFORE = re.compile(r"\b(?:const|constexpr)\b[^;=(){}]*?\b(\w+)\s*=\s*\Z")

_LANE_MESSAGE = (
    "lane/warp index computed for 32 lanes{via}: on a 64-lane wavefront lanes 32-63 get the "
    "lane ids of 0-31 and two 'warps' share one wavefront (use warpSize)"
)
_SHUFFLE_MESSAGE = (
    "shuffle reduction starting at offset {start} combines 32 lanes: on a 64-lane wavefront "
    "lanes 32-63 are never added, so half of the partial sums are lost (start at warpSize / 2)"
)
_STRIDE_MESSAGE = (
    "loop over lanes steps by {step} (32 lanes): on a 64-lane wavefront lanes 32-63 repeat the "
    "elements of lanes 0-31 (step by warpSize)"
)
_SHARED_MESSAGE = (
    "__shared__ {name}[{size}] holds one partial result per 32-lane warp and is indexed by a "
    "warp id: on 64-lane wavefronts the warp ids, the number of partials and the final "
    "reduction over them change (size and index it with warpSize)"
)
_MASK_MESSAGE = (
    "{name} is a 32-lane full mask (0xffffffff): on a 64-lane wavefront it names only lanes "
    "0-31 (use __activemask() or a 64-bit mask)"
)
_COMPARE_MESSAGE = (
    "a lane mask compared with the 32-lane full mask: on a 64-lane wavefront 'all lanes' is "
    "0xffffffffffffffff, so this test never (or always) holds"
)


Finding = tuple[int, str, str, str | None]
Hit = tuple[int, str, str]  # offset, spelling (32 or a name bound to it), character before


def findings(text: str, protected: Callable[[int], bool]) -> Iterator[Finding]:
    """(offset, snippet, message, the hazards.py rule that spots the same thing on its own
    spelling or None) of each 32-lane assumption inside device function bodies."""
    if "__global__" not in text and "__device__" not in text:
        return
    spans: dict[int, tuple[int, int] | None] = {}  # device keyword -> its function body

    def in_device_code(offset: int) -> bool:
        """Inside the body of the nearest `__global__`/`__device__` function before `offset`:
        one body walk per function that has a candidate, not per file."""
        if protected(offset):
            return False
        keyword = max(text.rfind("__global__", 0, offset), text.rfind("__device__", 0, offset))
        if keyword < 0:
            return False
        if keyword not in spans:
            spans[keyword] = _body(text, keyword + len("__device__"), protected)
        span = spans[keyword]
        return span is not None and span[0] <= offset < span[1]

    hits = _number_hits(text, "32")
    widths = _width_names(text, hits, protected)
    for name in widths:
        hits += [(offset, name, _char_before(text, offset)) for offset in _name_hits(text, name)]
    yield from _lane_arithmetic(text, hits, in_device_code)
    yield from _stride_loops(text, hits, in_device_code)
    if "__shfl" in text:
        yield from _shuffle_loops(text, widths, in_device_code)
    if "__shared__" in text and hits:
        yield from _shared_partials(text, widths, in_device_code)
    # A full mask matters only next to warp intrinsics (most files have none: one scan).
    if ("_sync" in text or "__ballot" in text) and (
        "ffffffff" in text or "FFFFFFFF" in text or "~0" in text
    ):
        yield from _masks(text, in_device_code)


def _number_hits(text: str, number: str) -> list[Hit]:
    """Each `number` standing alone (not in `int32_t`, `0x32`, `3.2`), with the character
    before it: the operator tests below are then string comparisons, not regex searches."""
    pattern = _NUMBER_PATTERNS[number]
    return [
        (m.start(), number, _char_before(text, m.start()))
        for m in pattern.finditer(text)
        if not (m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_.$"))
    ]


def _name_hits(text: str, name: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(name), text) if _whole(text, m.start(), name)]


def _whole(text: str, offset: int, word: str) -> bool:
    after = offset + len(word)
    return not continues_name(text, offset) and not (
        after < len(text) and (text[after].isalnum() or text[after] == "_")
    )


def _width_names(text: str, hits: list[Hit], protected: Callable[[int], bool]) -> dict[str, str]:
    """Names bound to 32 by `#define`, `const` or `constexpr` (a name bound to warpSize is
    right on AMD and needs no following)."""
    names: dict[str, str] = {}
    for offset, _, before in hits:
        if before.isalnum() or before == "_":  # `#define NAME 32`: read from its line's start
            line_start = text.rfind("\n", 0, offset) + 1
            define = _DEFINE_32.match(text, line_start) if "#" in text[line_start:offset] else None
            if define is not None and not protected(line_start):
                names[define.group(1)] = "32"
            continue
        # Cheap character tests first: `= 32;`, `{32}`, `= 32,` only.
        if not before or before not in "={" or _char_after(text, offset + 2) not in ";},":
            continue
        constant = _CONSTANT_BEFORE.search(text, max(0, offset - 120), offset)
        if constant is not None and not protected(offset):
            names[constant.group(1)] = "32"
    return names


def _char_before(text: str, offset: int) -> str:
    """The last non-blank character before `offset` (not counting `(`), or ""."""
    stripped = text[max(0, offset - 16) : offset].rstrip(" \t(")
    return stripped[-1:]


def _char_after(text: str, offset: int) -> str:
    """The first non-blank character from `offset` (not counting `)`), or ""."""
    stripped = text[offset : offset + 16].lstrip(" \t)")
    return stripped[:1]


def _body(text: str, start: int, protected: Callable[[int], bool]) -> tuple[int, int] | None:
    """(start, end) of the function body that follows a device keyword ending at `start`;
    None when a `;` comes first (a `__device__` variable or a prototype)."""
    depth, opened = 0, -1
    for brace in _BRACE.finditer(text, start):
        char = brace.group()
        if protected(brace.start()):
            continue
        if char == ";" and opened < 0:
            return None
        if char == "{":
            opened = brace.start() if opened < 0 else opened
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return opened, brace.end()
    return None


def _statement(text: str, offset: int) -> str:
    start = max(text.rfind(c, 0, offset) for c in ";{}") + 1
    ends = [e for e in (text.find(c, offset) for c in ";{}") if e >= 0]
    return text[start : min(ends, default=len(text))]


def _lane_arithmetic(
    text: str, hits: list[Hit], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    candidates: list[tuple[int, int, str]] = []  # operator start, end, width name or ""
    for offset, spelled, before in hits:
        if before in ("%", "/"):
            operator = text.rfind(before, 0, offset)
            if text[operator + 1 : offset].strip(" \t(") == "" and text[operator - 1] != "/":
                candidates.append((operator, offset + len(spelled), spelled))
        elif before == "&" and spelled != "32":
            minus_one = _MINUS_ONE_AFTER.match(text, offset + len(spelled))
            if minus_one is not None:
                candidates.append((text.rfind("&", 0, offset), minus_one.end(), spelled))
    for number in ("31", "0x1f"):
        for offset, _, before in _number_hits(text, number):
            if before == "&":
                candidates.append((text.rfind("&", 0, offset), offset + len(number), ""))
    for shift in _SHIFT_FIVE.finditer(text):
        candidates.append((shift.start(), shift.end(), ""))
    for start, end, spelled in sorted(candidates):
        if not in_device_code(start) or not _THREADISH.search(_statement(text, start)):
            continue
        via = f" (through {spelled} = 32)" if spelled not in ("", "32") else ""
        yield start, text[start:end], _LANE_MESSAGE.format(via=via), "warp-lane-arithmetic"


def _stride_loops(
    text: str, hits: list[Hit], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    for offset, spelled, before in hits:
        if before != "=" or text[text.rfind("=", 0, offset) - 1] != "+":
            continue
        header = text.rfind("for", max(0, offset - 200), offset)
        loop = _STRIDE_LOOP.match(text, header) if header >= 0 else None
        if loop is None or loop.group(2) != spelled or continues_name(text, header):
            continue
        if _THREADISH.search(loop.group(1)) and in_device_code(header):
            yield header, loop.group(), _STRIDE_MESSAGE.format(step=spelled), None


def _shuffle_loops(
    text: str, widths: dict[str, str], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    reported: set[int] = set()
    for call in (m.start() for m in re.finditer("__shfl", text)):
        header = text.rfind("for", max(0, call - 300), call)
        if header < 0 or header in reported or continues_name(text, header):
            continue
        loop = _SHUFFLE_LOOP.match(text, header)
        if loop is None:
            continue
        start_value = loop.group(1).replace(" ", "")
        halves_32 = start_value == "16" or (
            start_value.endswith("/2") and widths.get(start_value[:-2]) == "32"
        )
        if halves_32 and in_device_code(header):
            reported.add(header)
            yield header, loop.group(), _SHUFFLE_MESSAGE.format(start=loop.group(1)), None


def _shared_partials(
    text: str, widths: dict[str, str], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    for array in _SHARED_ARRAY.finditer(text):
        name, size = array.groups()
        if size != "32" and widths.get(size) != "32":
            continue
        if not in_device_code(array.start()):
            continue
        uses = re.finditer(rf"\b{re.escape(name)}\s*\[([^\]]*)\]", text[array.end() :])
        if any(_WARP_INDEX.search(use.group(1)) for use in uses):
            yield array.start(), array.group(), _SHARED_MESSAGE.format(name=name, size=size), None


def _masks(text: str, in_device_code: Callable[[int], bool]) -> Iterator[Finding]:
    """Names bound to a 32-bit full mask passed to `*_sync`, and ballots compared with one."""
    masks: set[str] = set()
    values = [
        value
        for literal, pattern in _FULL_MASK_VALUES
        if literal in text
        for value in pattern.finditer(text)
        if not continues_name(text, value.start())
    ]
    for value in values:
        offset = value.start()
        before = _char_before(text, offset)
        if before == "=" and text[offset - 2 : offset].strip() not in ("==", "!="):
            assigned = _ASSIGN_BEFORE.search(text, max(0, offset - 120), offset)
            if assigned is not None:
                masks.add(assigned.group(1))
        line_start = text.rfind("\n", 0, offset) + 1
        found = _DEFINE.match(text, line_start) if text.startswith("#", line_start) else None
        if found is not None and found.group(2) == text[offset : value.end()]:
            masks.add(found.group(1))
        if before != "=":
            continue
        compare = _COMPARE_BEFORE.search(text, max(0, offset - 80), offset)
        if compare is None or not in_device_code(offset):
            continue
        # The mask is the ballot itself, or a variable assigned from one earlier in the text.
        # (The name first: a pattern with a literal start is found fast.)
        assignment = re.compile(rf"{re.escape(compare.group(1))}\s*=\s*__(?:ballot|activemask)")
        assigned_from_ballot = any(
            not continues_name(text, m.start()) for m in assignment.finditer(text, 0, offset)
        )
        if _BALLOT.search(_statement(text, offset)) or assigned_from_ballot:
            yield compare.start(), text[compare.start() : value.end()], _COMPARE_MESSAGE, None
    if masks and "_sync" in text:
        for call in _SYNC_MASK.finditer(text):
            name = call.group(1)
            if name in masks and in_device_code(call.start()):
                yield call.start(1), name, _MASK_MESSAGE.format(name=name), "warp-full-mask"

"""The parts of a Python file worth parsing: the statements that hold a trigger, cut from the text at
their own line numbers, with blank lines elsewhere, so that `ast.parse` reads a small fraction of a
large module and every node keeps its place.

A top-level statement (a function, a class, an `if` block, with its decorators) is kept whole when
it holds a trigger. A class is cut once more: its header and the statements of its body that hold a
trigger or a vendor word; the visitor walks no other statement of a class body (its walk visits
only the nodes that span such a line, and a class body is not a block it reads for vendor
switches), so the findings are those of the whole class. Cuts are found on the text, not the
syntax tree; a wrong cut fails to parse, and the caller then parses more.
"""

from __future__ import annotations

import ast
import bisect
import functools
import gc
import re
import sys
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_CONTINUATION = r"(?![ \t#\n)\]}]|else\b|elif\b|except\b|finally\b|case\b)"
# A statement starts a line at column 0 that is not blank, a comment, a closing bracket or the
# continuation of a compound statement. The pattern begins with a literal newline, which `re`
# searches fast (a `^` under MULTILINE is tested at every character).
_TOP_AFTER_NEWLINE = re.compile(r"\n" + _CONTINUATION)
_TOP_AT_START = re.compile(_CONTINUATION)


@functools.lru_cache(maxsize=16)
def _body_starts(indent: str) -> re.Pattern[str]:
    """Statements at one indentation: a class body's."""
    return re.compile("\n" + re.escape(indent) + _CONTINUATION)


def top_level_starts(text: str) -> list[int]:
    """Offsets where a top-level statement starts (0 always counts as one)."""
    starts = [m.start() + 1 for m in _TOP_AFTER_NEWLINE.finditer(text)]
    if _TOP_AT_START.match(text):
        starts.insert(0, 0)
    return starts


def triple_quotes(text: str) -> list[int]:
    """Sorted offsets of every triple quote (as a left-to-right scan pairs them)."""
    found: list[int] = []
    for quote in ('"""', "'''"):
        position = text.find(quote)
        while position >= 0:
            found.append(position)
            position = text.find(quote, position + 3)
    found.sort()
    return found


def outside_strings(starts: list[int], quotes: list[int]) -> list[int]:
    """Drop starts after an odd number of triple quotes: inside a string (a cheap approximation;
    a wrong cut fails to parse and more of the file is parsed)."""
    if not quotes:
        return starts
    return [s for s in starts if bisect.bisect_left(quotes, s) % 2 == 0]


def statement_spans(
    text: str, starts: list[int], offsets: list[int], width: int = 0
) -> list[tuple[int, int]]:
    """(start, end) of each statement of `starts` (at indentation `width`) that holds an offset,
    decorators included."""
    chosen: set[int] = set()
    for offset in offsets:
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:
            continue
        while i > 0 and text.startswith("@", starts[i - 1] + width):
            i -= 1  # the decorators above a def belong to it
        chosen.add(i)
    spans = []
    for i in sorted(chosen):
        j = i
        while j + 1 < len(starts) and text.startswith("@", starts[j] + width):
            j += 1  # ... and the def below a decorator
        spans.append((starts[i], starts[j + 1] if j + 1 < len(starts) else len(text)))
    return spans


def class_cuts(
    text: str, span: tuple[int, int], positions: list[int], quotes: list[int]
) -> list[tuple[int, int]] | None:
    """The header of the class in `span` and its body statements that hold a position; None when
    the span is no class, a one-line one, or only its header holds a position."""
    start, end = span
    keyword = start
    while text.startswith("@", keyword):  # decorators: the class line is the first other one
        keyword = text.find("\n", keyword) + 1
        if keyword <= 0 or keyword >= end:
            return None
    if not (text.startswith("class", keyword) and text[keyword + 5 : keyword + 6] in (" ", "\t")):
        return None
    found = _body(text, keyword, end, positions, quotes)
    if found is None:
        return None
    starts, inside, width = found
    statements = statement_spans(text, starts, inside, width)
    return [(start, starts[0]), *((a, min(b, end)) for a, b in statements)]


def def_cuts(
    text: str, span: tuple[int, int], positions: list[int], quotes: list[int]
) -> list[tuple[int, int]] | None:
    """The header of the function in `span` and the statements of its body that hold a position
    or could gate the statements after them (an `if` whose text holds `raise` or `return`: the
    walk reads a function body for `if <vendor test>: return` switches); None when the span is
    no function, a one-line one, or nothing of its body can be left out.

    The walk visits only the body statements that hold a position, each of them whole, so the
    findings are those of the whole function; only the function's end line moves up, which
    nothing that holds a position can tell."""
    start, end = span
    keyword = start
    while True:  # decorators and indentation: the def line is the first other one
        keyword = _skip_blanks(text, keyword, end)
        if not text.startswith("@", keyword):
            break
        keyword = text.find("\n", keyword) + 1
        if keyword <= 0 or keyword >= end:
            return None
    if text.startswith("async", keyword):
        keyword = _skip_blanks(text, keyword + 5, end)
    if not (text.startswith("def", keyword) and text[keyword + 3 : keyword + 4] in (" ", "\t")):
        return None
    found = _body(text, keyword, end, positions, quotes)
    if found is None:
        return None
    starts, inside, width = found
    gates = [
        starts[i]
        for i, s in enumerate(starts)
        if text.startswith("if", s + width)
        and text[s + width + 2 : s + width + 3] in (" ", "(", "\t")
        and _holds_exit(text, s, starts[i + 1] if i + 1 < len(starts) else end)
    ]
    statements = statement_spans(text, starts, sorted(inside + gates), width)
    kept = [(start, starts[0]), *((a, min(b, end)) for a, b in statements)]
    return kept if _size(kept) < end - start else None


def _body(
    text: str, keyword: int, end: int, positions: list[int], quotes: list[int]
) -> tuple[list[int], list[int], int] | None:
    """The body of the class or def whose keyword is at `keyword`: where each of its statements
    starts (outside strings, not a continued line), the positions inside it, and its indent
    width; None for a one-line body or one that holds no position."""
    body = _header_end(text, keyword, end)
    found = _statement_starts(text, body, end, quotes) if body >= 0 else None
    if found is None:
        return None
    starts, width = found
    first = bisect.bisect_left(positions, starts[0])
    inside = positions[first : bisect.bisect_left(positions, end)]
    if not inside:
        return None
    return starts, inside, width


def _statement_starts(
    text: str, body: int, end: int, quotes: list[int]
) -> tuple[list[int], int] | None:
    """Where each statement of the block from `body` to `end` starts (outside strings, not a
    continued line) and the block's indent width; None for a one-line block or none found."""
    indent = _indent_of_first_line(text, body, end)
    if not indent:
        return None
    starts = [m.start() + 1 for m in _body_starts(indent).finditer(text, body - 1, end)]
    starts = [s for s in outside_strings(starts, quotes) if not _continued(text, s)]
    return (starts, len(indent)) if starts else None


_CLAUSE = re.compile(r"\n(?:elif\b|else[ \t]*:)")


def if_cuts(
    text: str, span: tuple[int, int], positions: list[int], quotes: list[int]
) -> list[tuple[int, int]] | None:
    """A top-level `if` statement with each clause's header and, of each clause's body, the
    statements that hold a position, those that could gate the ones after them, and the first
    and the last (the walk reads a branch's last statement, `if ...: raise`, and whether it is
    a lone `return`); None when the span is no top-level `if` or nothing can be left out.
    Every other statement of a body is one the walk would not visit."""
    start, end = span
    if not (text.startswith("if", start) and text[start + 2 : start + 3] in (" ", "(", "\t")):
        return None
    headers = [start]
    headers += [m.start() + 1 for m in _CLAUSE.finditer(text, start, end)]
    headers = [h for h in outside_strings(headers, quotes) if h == start or not _continued(text, h)]
    kept: list[tuple[int, int]] = []
    for i, header in enumerate(headers):
        clause_end = headers[i + 1] if i + 1 < len(headers) else end
        body = _header_end(text, header, clause_end)
        if body < 0:
            return None
        statements = _kept_statements(text, body, clause_end, positions, quotes)
        if statements is None:
            return None
        kept.append((header, statements[0][0] if statements else clause_end))
        kept += statements
    return kept if _size(kept) < end - start else None


def _kept_statements(
    text: str, body: int, end: int, positions: list[int], quotes: list[int]
) -> list[tuple[int, int]] | None:
    """Of the block from `body` to `end`: its first and last statements, those that hold a
    position and the `if`s holding raise or return."""
    found = _statement_starts(text, body, end, quotes)
    if found is None:
        return None
    starts, width = found
    inside = positions[
        bisect.bisect_left(positions, starts[0]) : bisect.bisect_left(positions, end)
    ]
    gates = [
        s
        for i, s in enumerate(starts)
        if text.startswith("if", s + width)
        and text[s + width + 2 : s + width + 3] in (" ", "(", "\t")
        and _holds_exit(text, s, starts[i + 1] if i + 1 < len(starts) else end)
    ]
    chosen = sorted({starts[0], starts[-1], *inside, *gates})
    return [(a, min(b, end)) for a, b in statement_spans(text, starts, chosen, width)]


# `NAME = (` (or `[`, `{`) ending its line: a literal container assigned to a plain name.
_LITERAL_HEAD = re.compile(r"[A-Za-z_]\w*[ \t]*=[ \t]*[(\[{][ \t]*\r?\n")


def literal_cuts(
    text: str, span: tuple[int, int], positions: list[int], quotes: list[int]
) -> list[tuple[int, int]] | None:
    """A top-level `NAME = (` literal written one item per indented block (a generated table)
    with only its items that hold a position, each whole and ending in a comma (the value stays
    a tuple, list or dict); None when the span is no such statement or nothing can be left out.

    The walk visits only the items that hold a position, each whole; what it reads of the value
    as a whole (an environment read, a vendor test) it reads only in a file with a vendor word,
    where the caller asks for no such cut."""
    start, end = span
    head = _LITERAL_HEAD.match(text, start, end)
    if head is None:
        return None
    found = _statement_starts(text, head.end(), end, quotes)
    if found is None:
        return None
    starts, width = found
    close = max(text.rfind("\n" + c, starts[-1], end) for c in ")]}") + 1
    if close <= starts[-1]:
        return None  # no closing bracket at column 0 after the last item
    inside = positions[
        bisect.bisect_left(positions, starts[0]) : bisect.bisect_left(positions, close)
    ]
    if not inside or any(p < starts[0] or p >= close for p in positions if start <= p < end):
        return None  # a position in the header or the closing line: keep the statement whole
    items = statement_spans(text, [*starts, close], inside, width)
    if any(not text[a:b].rstrip().endswith(",") for a, b in items):
        return None
    kept = [(start, starts[0]), *items, (close, end)]
    return kept if _size(kept) < end - start else None


def _holds_exit(text: str, start: int, end: int) -> bool:
    return text.find("raise", start, end) >= 0 or text.find("return", start, end) >= 0


def _skip_blanks(text: str, position: int, end: int) -> int:
    while position < end and text[position] in " \t":
        position += 1
    return position


def _header_end(text: str, keyword: int, end: int) -> int:
    """Offset of the line after `class X(...):`, or -1 when the body is on the same line or the
    header cannot be read (brackets are counted; strings in a header are rare enough)."""
    depth = 0
    i = keyword
    while i < end:
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == ":" and depth == 0:
            newline = text.find("\n", i)
            if newline < 0 or newline >= end:
                return -1
            rest = text[i + 1 : newline].strip()
            return newline + 1 if not rest or rest.startswith("#") else -1
        i += 1
    return -1


def _indent_of_first_line(text: str, body: int, end: int) -> str:
    """The indentation of the first code line of a block ('' when there is none)."""
    line = body
    while line < end:
        newline = text.find("\n", line, end)
        content = text[line : newline if newline >= 0 else end]
        stripped = content.lstrip(" \t")
        if stripped.strip() and not stripped.startswith("#"):
            return content[: len(content) - len(stripped)]
        if newline < 0:
            return ""
        line = newline + 1
    return ""


def _continued(text: str, start: int) -> bool:
    """Whether the line before `start` ends in a backslash (then `start` is no statement)."""
    return text[max(0, start - 3) : start - 1].rstrip("\r").endswith("\\")


def assemble(text: str, spans: list[tuple[int, int]]) -> str:
    """The text of the spans at their own offsets' lines, blank lines between them."""
    out, position = [], 0
    for a, b in spans:
        a = max(a, position)
        out.append("\n" * text.count("\n", position, a))
        out.append(text[a:b])
        position = max(position, b)
    return "".join(out)


def line_numbers(text: str, positions: list[int]) -> list[int]:
    """Sorted distinct line numbers (1-based) of sorted offsets: one pass counting newlines."""
    lines: list[int] = []
    line, last = 1, 0
    for position in positions:
        line += text.count("\n", last, position)
        last = position
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


# Where the words of a vocabulary start in text[start:end], as `re.finditer` of their alternation
# would find them (python_scan.vendor_starts).
WordStarts = Callable[[str, int, int], list[int]]


@dataclass(frozen=True, slots=True)
class Plan:
    """What to parse of one file: `sources` to try in turn (the cut statements, then the top-level
    statements alone when a class cut does not parse); `lines`: the lines the walk visits."""

    sources: tuple[str, ...]
    lines: list[int]


def plan(text: str, offsets: list[int], vendor_words: WordStarts | None) -> Plan:
    """The pieces of `text` that hold `offsets` (trigger places) and, with `vendor_words`, the
    vendor words the walk also visits. No sources: the whole file is parsed (see whole_lines).

    The choice of top-level statements is that of a whole-file walk: when the statements that hold
    a trigger are at most half of the file, those; otherwise every statement a whole-file walk
    would visit (a trigger or a vendor word on one of its lines) and every top-level `if` that
    could gate the statements after it (`if <vendor test>: raise`)."""
    offsets = sorted(offsets)
    quotes = triple_quotes(text) if ('"""' in text or "'''" in text) else []
    starts = outside_strings(top_level_starts(text), quotes)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    spans = statement_spans(text, starts, offsets)
    sources: list[str] = []
    if _size(spans) <= len(text) // 2:
        if vendor_words is not None and spans:
            spans = sorted({*spans, *_later_sides(text, starts, spans[0][0], vendor_words)})
        words = [p for a, b in spans for p in _matches(vendor_words, text, a, b)]
        positions = sorted(offsets + words)
        sources.append(assemble(text, spans))
    else:
        positions = whole_positions(text, offsets, vendor_words)
        spans = statement_spans(text, starts, positions)
        if vendor_words is not None:
            spans = sorted({*spans, *_gates(text, starts)})
    cut = [c for span in spans for c in (class_cuts(text, span, positions, quotes) or [span])]
    # Finer still: a function's (or method's) body statements that hold a position, and those
    # that could gate the ones after them (see def_cuts); tried first, the coarser cuts after.
    finer = [
        c
        for span in cut
        for c in (
            def_cuts(text, span, positions, quotes)
            or if_cuts(text, span, positions, quotes)
            or (literal_cuts(text, span, positions, quotes) if vendor_words is None else None)
            or [span]
        )
    ]
    for candidate in (cut, finer) if finer != cut else (cut,):
        if _size(candidate) <= len(text) // 2:
            source = assemble(text, candidate)
            if source not in sources:
                sources.insert(0, source)
    return Plan(sources=tuple(sources), lines=line_numbers(text, positions))


def places(text: str, word: str) -> list[int]:
    """Every offset where `word` starts in `text`."""
    found, position = [], text.find(word)
    while position >= 0:
        found.append(position)
        position = text.find(word, position + 1)
    return found


def line_starts(text: str, lines: list[int]) -> list[int]:
    """The offsets where the sorted 1-based `lines` start (those past the end left out)."""
    found, line, position = [], 1, 0
    for wanted in lines:
        while line < wanted and position >= 0:
            position = text.find("\n", position)
            if position >= 0:
                position += 1
                line += 1
        if position < 0:
            break
        found.append(position)
    return found


def statements_holding(text: str, offsets: list[int]) -> str | None:
    """The top-level statements (decorators included) that hold the sorted `offsets`, at their
    own lines; None when they are more than half of the file (then parse it whole)."""
    quotes = triple_quotes(text) if ('"""' in text or "'''" in text) else []
    starts = outside_strings(top_level_starts(text), quotes)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    spans = statement_spans(text, starts, offsets)
    return assemble(text, spans) if _size(spans) <= len(text) // 2 else None


def enclosing_statements(text: str, offsets: list[int]) -> str:
    """The top-level statements (decorators included) that hold the sorted `offsets`, at their
    own lines, each class cut to its header and the body statements that hold an offset: every
    statement that holds an offset is there whole, whatever its share of the file (a caller
    that needs only the nodes on those lines; a wrong cut fails to parse)."""
    quotes = triple_quotes(text) if ('"""' in text or "'''" in text) else []
    starts = outside_strings(top_level_starts(text), quotes)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    spans = statement_spans(text, starts, offsets)
    return assemble(
        text, [c for span in spans for c in (class_cuts(text, span, offsets, quotes) or [span])]
    )


def whole_positions(text: str, offsets: list[int], vendor_words: WordStarts | None) -> list[int]:
    """The trigger offsets and every vendor word's offset in the whole file, sorted."""
    return sorted(offsets + _matches(vendor_words, text, 0, len(text)))


def _matches(words: WordStarts | None, text: str, start: int, end: int) -> list[int]:
    return [] if words is None else words(text, start, end)


def _gates(text: str, starts: list[int]) -> list[tuple[int, int]]:
    """Top-level `if` statements that end a branch with raise or return (candidates for a vendor
    gate over the statements after them)."""
    gates = []
    for i, start in enumerate(starts):
        if text.startswith("if", start) and text[start + 2 : start + 3] in (" ", "(", "\t"):
            end = starts[i + 1] if i + 1 < len(starts) else len(text)
            if text.find("raise", start, end) >= 0 or text.find("return", start, end) >= 0:
                gates.append((start, end))
    return gates


def _later_sides(
    text: str, starts: list[int], after: int, vendor_words: WordStarts
) -> list[tuple[int, int]]:
    """Top-level `if` and `try` statements after `after` that hold a vendor word: the other
    vendor's side of a fallback chain (`if is_amdsmi_available(): import amdsmi` after the NVML
    import), which makes the statements before it the NVIDIA side in a whole-file walk."""
    sides = []
    for i, start in enumerate(starts):
        if start <= after or not (
            (text.startswith("if", start) and text[start + 2 : start + 3] in (" ", "(", "\t"))
            or text.startswith("try:", start)
        ):
            continue
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        if vendor_words(text, start, end):
            sides.append((start, end))
    return sides


def _size(spans: list[tuple[int, int]]) -> int:
    return sum(b - a for a, b in spans)


# The fields that hold statements (an `if` or an import is always a statement, and no expression
# holds one), in the order every node type's _fields has them (Try: body, handlers, orelse,
# finalbody), which is the order ast.walk visits them in.
_BLOCK_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")
_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def statement_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes ast.walk(root) gives (root: a module or a statement), in its breadth-first
    order, less the expressions and everything under them: statements, `except` handlers and
    match cases. No expression holds a statement, so no `if` or import is left out (ast.walk
    visits about ten times as many nodes)."""
    todo = deque([root])
    while todo:
        node = todo.popleft()
        fields = _FIELDS_OF.get(type(node))
        if fields is None:
            fields = _FIELDS_OF[type(node)] = tuple(f for f in _BLOCK_FIELDS if hasattr(node, f))
        for name in fields:
            todo.extend(getattr(node, name))
        yield node


def parse(source: str) -> ast.Module:
    """ast.parse of scanned code: quiet about the code's own warnings (an invalid escape such as
    "\\d" in a project's string is the project's business, not a line on the user's terminal), and
    with the cyclic collector paused: a syntax tree is thousands of new objects and no reference
    cycle, so the collections its allocations trigger find nothing to free (about a tenth of a
    parse's time on the corpus). An f-string's parts are placed as Python 3.11 places them
    (`place_fstring_parts_as_311`), so that a project gives the same findings on every Python."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        paused = gc.isenabled()
        gc.disable()
        try:
            tree = ast.parse(source)
        finally:
            if paused:
                gc.enable()
    if _FSTRING_PARTS_PLACED:
        place_fstring_parts_as_311(tree)
    return tree


# Python 3.12's parser (PEP 701) gives each literal part and replacement field of an f-string its
# own place; 3.11 gives them all the whole f-string's. A finding read from a part (the
# "nvidia.com/gpu=" of f"nvidia.com/gpu={i}") would move by a few columns, or lines in a
# multi-line f-string, with the Python that runs port.
_FSTRING_PARTS_PLACED = sys.version_info >= (3, 12)


def place_fstring_parts_as_311(tree: ast.AST) -> None:
    """Give every part of each f-string (its literal pieces, replacement fields and their format
    specs, nested) the whole f-string's place, as Python 3.11's parser does; the expressions inside
    the replacement fields keep their own places, as on 3.11. Idempotent."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            _spread_place(node, node)


def _spread_place(joined: ast.JoinedStr, whole: ast.JoinedStr) -> None:
    for part in joined.values:
        part.lineno, part.col_offset = whole.lineno, whole.col_offset
        part.end_lineno, part.end_col_offset = whole.end_lineno, whole.end_col_offset
        spec = getattr(part, "format_spec", None)
        if isinstance(spec, ast.JoinedStr):
            spec.lineno, spec.col_offset = whole.lineno, whole.col_offset
            spec.end_lineno, spec.end_col_offset = whole.end_lineno, whole.end_col_offset
            _spread_place(spec, whole)

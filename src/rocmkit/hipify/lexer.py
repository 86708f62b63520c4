"""A C/C++/CUDA lexer built from one regular expression, fast enough for whole source trees.

It finds the spans that must never be rewritten (comments, string/char/raw-string literals), the
`#include` directives, and identifiers. Everything else (operators, numbers, whitespace) is skipped
by the regex engine without a Python-level step, which is what makes the translator fast.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Each fragment is one alternative of the master pattern; the group name is the token kind.
# Line and block comments. A line comment continues over backslash-newline, as the preprocessor splices lines first.
COMMENT = r"(?P<comment>//(?:[^\n\\]|\\.|\\\n)*|/\*.*?(?:\*/|\Z))"
# R"delim( ... )delim" with an optional encoding prefix; the delimiter is at most 16 characters.
RAW_STRING = r'(?P<raw>(?<!\w)(?:u8R|[uUL]R|R)"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)")'
STRING = r'(?P<string>"(?:[^"\\\n]|\\.|\\\n)*")'
# Not after a digit, so C++14 digit separators (1'000'000) are not read as character literals.
CHAR = r"(?P<char>(?<!\d)'(?:[^'\\\n]|\\.)*')"
# `#include` can only start a line (after blanks); anywhere else it sits in a comment or literal.
INCLUDE = r'(?P<include>\#[ \t]*include(?:_next)?[ \t]*(?P<open>[<"])(?P<path>[^>"\n]*)[>"])'
IDENTIFIER = r"(?P<ident>(?<![\w$])[A-Za-z_]\w*)"

_FLAGS = re.DOTALL | re.MULTILINE
# Characters that can start a comment, literal or directive.
_LEAD = "/\"'#uULR"

PROTECTED_KINDS = frozenset({"comment", "raw", "string", "char"})


def build_scanner(prefixes: Sequence[str] | None = None) -> re.Pattern[str]:
    """The master pattern; `prefixes` narrows identifiers to names starting with one of them.

    A lookahead on the possible first characters lets the regex engine skip every other position
    cheaply; it made the scan three times faster than the bare alternation.
    """
    if prefixes is None:
        identifier, lead = IDENTIFIER, _LEAD + "A-Za-z_"
    else:
        identifier = identifier_pattern_for(prefixes)
        lead = re.escape(_LEAD + "".join(sorted({p[0] for p in prefixes})))
    parts = (COMMENT, RAW_STRING, STRING, CHAR, INCLUDE, identifier)
    return re.compile(f"(?=[{lead}])(?:{'|'.join(parts)})", _FLAGS)


def identifier_pattern_for(prefixes: Sequence[str]) -> str:
    """An identifier alternative that matches only names starting with one of `prefixes`.

    The prefixes are factored into a trie (one branch per next character): Python's regex engine
    tries a flat alternation's branches one by one at each position, and the table's whole names
    (the device functions a release lacks, `make_cuComplex`) number in the hundreds."""
    return rf"(?P<ident>(?<![\w$]){_trie(sorted(set(prefixes)))}\w*)"


def _trie(words: list[str]) -> str:
    """A regex matching a start by any of `words`, factored by first character. A word that is a
    prefix of others makes them redundant (an identifier pattern continues with any word
    characters), so its branch ends there."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    branches = []
    for first, rests in sorted(groups.items()):
        if "" in rests:  # this prefix alone matches: the longer ones add nothing
            branches.append(re.escape(first))
        else:
            branches.append(re.escape(first) + _trie(rests))
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


_FULL_SCANNER = build_scanner()


def _literal_led(include: bool) -> re.Pattern[str]:
    """Comments, literals (and includes) as the fragments above match them, each alternative
    spelled to begin with a literal character: the regex engine then skips to the next of those
    characters in C and picks the alternative by it, where a leading lookahead or look-behind
    entered the matcher at every position (twice as fast on CUDA sources). The first characters
    of the kinds differ, so the order of the alternatives changes no match. A kind is named by
    an empty group closing last (`lastgroup`); raw strings with a prefix are `raw_u8`, `raw_u`,
    `raw_U`, `raw_L`, as a group name is used once."""
    parts = [
        r"/(?:/(?:[^\n\\]|\\.|\\\n)*|\*.*?(?:\*/|\Z))(?P<comment>)",
        r'"(?:[^"\\\n]|\\.|\\\n)*"(?P<string>)',
        r"'(?<!\d')(?:[^'\\\n]|\\.)*'(?P<char>)",  # not after a digit (1'000)
    ]
    if include:
        parts.append(
            r'\#[ \t]*include(?:_next)?[ \t]*(?P<open>[<"])(?P<path>[^>"\n]*)[>"](?P<include>)'
        )
    for prefix, kind in (
        ("u8R", "raw_u8"),
        ("uR", "raw_u"),
        ("UR", "raw_U"),
        ("LR", "raw_L"),
        ("R", "raw"),
    ):
        delim = f"delim_{kind}"  # not after a word character: `FOOR"` is no raw string
        parts.append(
            rf'{prefix}"(?<!\w{prefix}")(?P<{delim}>[^()\\\s"]{{0,16}})\(.*?\)(?P={delim})"(?P<{kind}>)'
        )
    return re.compile("|".join(parts), _FLAGS)


# The master pattern without identifiers: the same comments, literals and includes (no
# identifier match can hide the start of one: a name holds none of their first characters but a
# raw string's prefix, and a raw string needs a non-word character before it).
PROTECTED_SCANNER = _literal_led(include=True)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # comment | raw | string | char | include | ident
    start: int
    end: int
    text: str


def tokenize(text: str) -> Iterator[Token]:
    """Yield comments, literals, include directives and identifiers, in order of appearance."""
    for match in _FULL_SCANNER.finditer(text):
        # lastgroup names the outermost group: inner groups (delim, path) close before it.
        kind = match.lastgroup or ""
        yield Token(kind, match.start(), match.end(), match.group())


_PROTECTED_SCANNER = _literal_led(include=False)


def mask_protected(text: str) -> str:
    """`text` with comments and literals blanked (newlines kept), so offsets still line up.

    Code-structure searches (hazards, `<<<...>>>` parsing) run on this so that a `(` or `<<<`
    inside a string or comment never counts.
    """
    return _PROTECTED_SCANNER.sub(_blank, text)


# Brackets, commas and semicolons in code; comments and literals are matched whole and skipped.
_STRUCTURE = re.compile(f"(?P<punct>[][(){{}},;])|{COMMENT}|{RAW_STRING}|{STRING}|{CHAR}", _FLAGS)


def call_arguments(text: str, start: int) -> list[tuple[int, int]] | None:
    """(start, end) of each top-level argument of a call whose `(` ends just before `start`.

    None when a `;` at the call's own level or the end of the text comes first (not a call).
    Brackets and commas inside comments and literals do not count; the walk stops at the
    closing parenthesis, so it costs the length of the call, not of the file.
    """
    spans, depth, part_start = [], 0, start
    for match in _STRUCTURE.finditer(text, start):
        char = match.group("punct")
        if char is None:
            continue
        position = match.start()
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                spans.append((part_start, position))
                return spans
            depth -= 1
        elif char == "," and depth == 0:
            spans.append((part_start, position))
            part_start = position + 1
        elif char == ";":
            return None
    return None


def continues_name(text: str, offset: int) -> bool:
    """Whether the character before `offset` belongs to a name, so that a match at `offset` is
    inside a longer one. Patterns that start with a literal (which the regex engine finds fast)
    check their start with this instead of a slow look-behind."""
    return offset > 0 and (text[offset - 1].isalnum() or text[offset - 1] in "_$")


def _blank(match: re.Match[str]) -> str:
    text = match.group()
    if "\n" not in text:
        return " " * len(text)
    return "\n".join(" " * len(line) for line in text.split("\n"))


def line_columns(text: str, offsets: Sequence[int]) -> list[tuple[int, int]]:
    """(line, column), both 1-based, of each of the ascending `offsets`.

    Newlines are counted between consecutive offsets by `str.count`, so the cost is one pass over
    the text in C, whatever the number of offsets (no per-line list as in LineIndex).
    """
    positions, line, line_start, last = [], 1, 0, 0
    for offset in offsets:
        newlines = text.count("\n", last, offset)
        if newlines:  # only then search back, and never past the previous offset
            line += newlines
            line_start = text.rfind("\n", last, offset) + 1
        last = offset
        positions.append((line, offset - line_start + 1))
    return positions


class LineIndex:
    """Offset -> (line, column), both 1-based, by binary search over newline positions."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1

"""Preprocessor branches no AMD compile takes: where a warning describes code hip-clang never sees.

Projects that already support ROCm keep their CUDA-only code behind `#ifndef __HIP_PLATFORM_AMD__`,
`#if defined(X) && !defined(__HIP_PLATFORM_AMD__)` or the `#else` of `#ifdef __HIP_PLATFORM_AMD__`
(DeepSpeed's `hw_warp_size = 32`, its `<cuda_bf16.h>`); others behind `#if __CUDA_ARCH__ >= 800`
(which rocmkit decides false for AMD, see arch.py) or a project flag that only such code defines
(DeepSpeed's `ASYNC_COPY_AVAILABLE`, see project_macros.py). Every condition is evaluated as the
preprocessor would after translation, once for HIP's device pass and once for its host pass, with
three outcomes (true, false, unknown): only what hip-clang surely defines or surely leaves
undefined is known, every other macro is unknown. A branch false in both passes is dead on AMD,
and a warning about its contents becomes a note.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from rocmkit.hipify.arch import DEVICE_PASS, NAME, arch_table

# Defined by hip-clang/HIP's headers in every AMD compile, or turned into one by rocmkit
# (`__CUDACC__` -> `__HIPCC__`).
AMD_DEFINED = frozenset({"__HIP_PLATFORM_AMD__", "__HIPCC__", "__HIP__", "__CUDACC__"})
# Defined by no current AMD compile: __HIP_PLATFORM_HCC__, deprecated for __HIP_PLATFORM_AMD__
# and removed in ROCm 6.0 (PyTorch's ROCm build stopped passing it then, pytorch#111975; HIP's
# porting guide, "Identifying HIP Target Platform"), the ROCm every MI300 needs.
REMOVED = frozenset({"__HIP_PLATFORM_HCC__"})
_DIRECTIVE = re.compile(
    r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b((?:[^\n\\]|\\.|\\\n)*)", re.MULTILINE
)


@functools.cache
def _known_names(undefined: frozenset[str]) -> tuple[re.Pattern[str], ...]:
    """Patterns for the names the facts decide, one per two-letter start: each begins with a
    literal, which the regex engine searches fast (one alternation of all was slower than
    reading the file)."""
    starts: dict[str, list[str]] = {}
    names = AMD_DEFINED | REMOVED | {NAME, DEVICE_PASS} | undefined
    for name in sorted(names, key=lambda n: (-len(n), n)):
        starts.setdefault(name[:2], []).append(re.escape(name[2:]))
    return tuple(
        re.compile(f"{re.escape(start)}(?:{'|'.join(rests)})") for start, rests in starts.items()
    )


@dataclass(frozen=True, slots=True)
class AmdFacts:
    """What an AMD compile knows beyond hip-clang's own macros: macros it never defines (HIP's
    missing version macros, a project's CUDA-only flags) and, per name, why (for the message)."""

    undefined: frozenset[str] = frozenset()
    reasons: tuple[tuple[str, str], ...] = ()

    def mentioned_in(self, text: str) -> bool:
        """Whether `text` names anything these facts decide (else no branch of it is known)."""
        return any(pattern.search(text) for pattern in _known_names(self.undefined))

    def defined(self, name: str, device: bool) -> bool | None:
        if name in AMD_DEFINED:
            return True
        if name in (NAME, DEVICE_PASS):
            return device
        return False if name in self.undefined or name in REMOVED else None

    def value(self, name: str, device: bool) -> int | None:
        if name == NAME:
            return arch_table().amd_value if device else 0
        known = self.defined(name, device)
        return None if known is None else int(known)


NO_FACTS = AmdFacts()


def evaluate(condition: str, facts: AmdFacts, device: bool) -> bool | None:
    """An `#if` condition in one of HIP's passes on AMD: True, False or None (unknown)."""
    tokens = _tokens(condition)
    if tokens is None:
        return None
    parser = _Parser(tokens, facts, device)
    try:
        value = parser.ternary()
    except _Unparsable:
        return None
    if parser.position != len(tokens) or value is None:
        return None
    return value != 0


def dead_spans(text: str, facts: AmdFacts = NO_FACTS) -> list[tuple[int, int, str]]:
    """(start, end, directive) of every region inside a branch an AMD compile never takes."""
    return list(_dead_spans(text, facts))


# `rocmkit port` asks twice for one file's spans (its own findings and hipify's hazards): the
# second ask is a dictionary hit. A few entries: the texts of one file's scan, not a tree's.
@functools.lru_cache(maxsize=4)
def _dead_spans(text: str, facts: AmdFacts) -> tuple[tuple[int, int, str], ...]:
    if not facts.mentioned_in(text):
        return ()
    spans: list[tuple[int, int, str]] = []
    stack: list[_Branch] = []
    dead_since: tuple[int, str] | None = None
    for match in _DIRECTIVE.finditer(text):
        keyword, condition = match.group(1), _code(match.group(2))
        # The directive's own line is dead only when an enclosing group is: `#elif X` after a
        # dead `#if` is read by the compiler (and a warning on it stands).
        enclosing = stack if keyword in ("if", "ifdef", "ifndef") else stack[:-1]
        if dead_since is not None and _why_dead(enclosing, facts) is None:
            spans.append((dead_since[0], match.start(), dead_since[1]))
            dead_since = None
        if keyword in ("if", "ifdef", "ifndef"):
            stack.append(_Branch.first(keyword, condition, facts))
        elif keyword == "endif":
            if stack:
                stack.pop()
        elif stack:
            stack[-1] = stack[-1].next(keyword, condition, facts)
        why = _why_dead(stack, facts)
        if dead_since is not None and why is None:
            spans.append((dead_since[0], match.start(), dead_since[1]))
            dead_since = None
        elif dead_since is None and why is not None:
            dead_since = (match.end(), why)
    if dead_since is not None:
        spans.append((dead_since[0], len(text), dead_since[1]))
    return tuple(spans)


def dead_branch(spans: list[tuple[int, int, str]], offset: int) -> str | None:
    """The directive that makes `offset` dead on AMD, if any (`spans` from dead_spans)."""
    index = bisect.bisect_right(spans, (offset, 1 << 62)) - 1
    if index >= 0 and spans[index][0] <= offset < spans[index][1]:
        return spans[index][2]
    return None


@dataclass(frozen=True, slots=True)
class _Branch:
    """One branch of an open `#if` group, per pass: whether an earlier branch surely ran
    (`taken`, None: maybe) and whether this one is surely skipped (`dead`)."""

    taken: tuple[bool | None, bool | None]
    dead: tuple[bool, bool]
    directive: str  # `#else of #ifdef __HIP_PLATFORM_AMD__`: the group's opening one named
    opening: str = ""

    @staticmethod
    def first(keyword: str, condition: str, facts: AmdFacts) -> _Branch:
        return _Branch((False, False), (False, False), "").next(keyword, condition, facts)

    def next(self, keyword: str, condition: str, facts: AmdFacts) -> _Branch:
        values = [_branch_value(keyword, condition, facts, device) for device in (True, False)]
        dead = tuple(t is True or v is False for t, v in zip(self.taken, values, strict=True))
        taken = tuple(
            True if (t is True or v is True) else (None if None in (t, v) else False)
            for t, v in zip(self.taken, values, strict=True)
        )
        directive = f"#{keyword} {condition}".strip()
        opening = self.opening or directive
        if keyword in ("elif", "else"):
            directive += f" of {opening}"
        return _Branch(taken, dead, directive, opening)  # type: ignore[arg-type]


def _branch_value(keyword: str, condition: str, facts: AmdFacts, device: bool) -> bool | None:
    if keyword == "else":
        return True
    if keyword in ("ifdef", "ifndef"):
        name = condition.split()[0] if condition.split() else ""
        known = facts.defined(name, device)
        return known if known is None or keyword == "ifdef" else not known
    return evaluate(condition, facts, device)


def _why_dead(stack: list[_Branch], facts: AmdFacts) -> str | None:
    """The directive(s) that make the innermost branch dead in both passes, or None."""
    both = next((b for b in stack if all(b.dead)), None)
    if both is not None:
        return _described(both.directive, facts)
    device = next((b for b in stack if b.dead[0]), None)
    host = next((b for b in stack if b.dead[1]), None)
    if device is None or host is None:
        return None
    return f"{_described(device.directive, facts)} and {_described(host.directive, facts)}"


def _described(directive: str, facts: AmdFacts) -> str:
    """`#ifdef X` and, for a project's flag, why no AMD compile defines it."""
    reasons = [why for name, why in facts.reasons if re.search(rf"\b{name}\b", directive)]
    return f"`{directive}`" + (f" ({'; '.join(reasons)})" if reasons else "")


def _code(condition: str) -> str:
    return re.sub(r"/\*.*?\*/|//.*", "", condition.replace("\\\n", " ")).strip()


# The C preprocessor's expression grammar, enough of it for #if lines.
_TOKEN = re.compile(
    r"\s*(?:(?P<number>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),]))"
)
_PRECEDENCE = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6}
_PRECEDENCE |= {"<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9}
_PRECEDENCE |= {"*": 10, "/": 10, "%": 10}


# C++'s alternative tokens ([lex.digraph]): `#if __CUDA_ARCH__ < 600 and defined(__CUDA_ARCH__)` is
# `&&` in any C++ compile (CUDA and HIP sources are C++). The compound assignments (and_eq, ...)
# have no place in an #if.
_ALTERNATIVE_TOKENS = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "not_eq": "!=",
    "bitand": "&",
    "bitor": "|",
    "xor": "^",
    "compl": "~",
}


class _Unparsable(Exception):
    pass


def _tokens(condition: str) -> list[tuple[str, str]] | None:
    tokens, position = [], 0
    condition = condition.rstrip()
    while position < len(condition):
        match = _TOKEN.match(condition, position)
        if match is None or match.end() == position:
            return None  # a character literal, a string: not evaluated
        kind = match.lastgroup
        assert kind is not None
        value = match.group(kind)
        if kind == "name" and value in _ALTERNATIVE_TOKENS:
            kind, value = "op", _ALTERNATIVE_TOKENS[value]
        tokens.append((kind, value))
        position = match.end()
    return tokens


class _Parser:
    """Recursive descent over the tokens, values int or None (unknown)."""

    def __init__(self, tokens: list[tuple[str, str]], facts: AmdFacts, device: bool) -> None:
        self.tokens, self.facts, self.device, self.position = tokens, facts, device, 0

    def peek(self) -> str | None:
        return self.tokens[self.position][1] if self.position < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.position >= len(self.tokens):
            raise _Unparsable
        token = self.tokens[self.position]
        if expected is not None and token[1] != expected:
            raise _Unparsable
        self.position += 1
        return token

    def ternary(self) -> int | None:
        condition = self.binary(1)
        if self.peek() != "?":
            return condition
        self.take("?")
        then = self.ternary()
        self.take(":")
        otherwise = self.ternary()
        if condition is None:
            return then if then == otherwise else None
        return then if condition else otherwise

    def binary(self, minimum: int) -> int | None:
        left = self.unary()
        while True:
            op = self.peek()
            if op is None or _PRECEDENCE.get(op, 0) < max(minimum, 1):
                return left
            self.take()
            left = _combine(op, left, self.binary(_PRECEDENCE[op] + 1))

    def unary(self) -> int | None:
        op = self.peek()
        if op in ("!", "-", "+", "~"):
            self.take()
            value = self.unary()
            if value is None:
                return None
            return {"!": int(not value), "-": -value, "+": value, "~": ~value}[op]
        return self.primary()

    def primary(self) -> int | None:
        kind, token = self.take()
        if kind == "number":
            return _number(token)
        if token == "(":
            value = self.ternary()
            self.take(")")
            return value
        if kind != "name":
            raise _Unparsable
        if token == "defined":
            parenthesised = self.peek() == "("
            if parenthesised:
                self.take("(")
            kind, name = self.take()
            if parenthesised:
                self.take(")")
            known = self.facts.defined(name, self.device)
            return None if known is None else int(known)
        if self.peek() == "(":  # a function-like macro: not expanded
            self._skip_arguments()
            return None
        return self.facts.value(token, self.device)

    def _skip_arguments(self) -> None:
        depth = 0
        while True:
            _, token = self.take()
            depth += {"(": 1, ")": -1}.get(token, 0)
            if depth == 0:
                return


def _number(token: str) -> int:
    try:
        if token[1:2] in ("x", "X"):
            return int(token, 16)
        return int(token, 8) if token.startswith("0") else int(token)
    except ValueError:  # `09`: not an octal number
        raise _Unparsable from None


_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "&": lambda a, b: a & b,
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "<<": lambda a, b: a << b if 0 <= b < 64 else 0,
    ">>": lambda a, b: a >> b if 0 <= b < 64 else 0,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
}


def _combine(op: str, left: int | None, right: int | None) -> int | None:
    """Three-valued: `0 && unknown` is 0 and `1 || unknown` is 1, as the preprocessor decides."""
    if op == "&&":
        if left == 0 or right == 0:
            return 0
        return None if left is None or right is None else 1
    if op == "||":
        if (left is not None and left != 0) or (right is not None and right != 0):
            return 1
        return None if left is None or right is None else 0
    if left is None or right is None:
        return None
    if op in ("/", "%"):
        if right == 0:
            return None
        quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)
        return quotient if op == "/" else left - right * quotient
    return _ARITHMETIC[op](left, right)

"""Whether an occurrence of a name is the project declaring it: its own CUDA_CHECK macro, a
`cudaHelper` struct, a `cuArray` variable, a `curandom` namespace. Such names are the project's,
not CUDA's API, and are not reported as unconverted (issue 29: astra-toolbox's `cuArray`
variables, pycuda's `curandom` namespace).

Two readings of the text before the name (and the character after it), both of C++'s grammar:
a keyword that introduces a name (`#define`, `struct`, `class`, `enum`, `union`, `namespace`,
`using`, `typedef`), or a declaration `TYPE [*&] NAME` followed by `;`, `=`, `,`, `[`, `(`, `)`
or `{`, where TYPE is an identifier that is not a keyword ending an expression (`return x;`,
`case x:`, `throw x(...)`, `else x;`) nor a qualifier of a type being used (`(const cudaX)p`,
`: public CUDA_X {`), and the line is not a preprocessor directive (in `#define
CHECK cuFoo(...)` the macro's name precedes a use); also a template parameter (`typename
CURAND_TYPE>`) and an enumerator (a name in the braces of an `enum`). `a * cuFoo(x)` reads as a product, so a
declaration spelled `T * name`, spaced on both sides, is missed (reported, the safe side).
"""

from __future__ import annotations

import re

_KEYWORD_BEFORE = re.compile(
    r"(?:\#[ \t]*define|\b(?:struct|class|enum|union|namespace|using|typedef[^;]*))[ \t*&]+\Z"
)
# `T* x`, `T *x`, `T x`; not `a * x`, which reads as a product.
_TYPE_BEFORE = re.compile(r"(?<![\w$])([A-Za-z_]\w*)(?:[*&]+\s*|\s+[*&]+|\s+)\Z")
_DECLARATION_AFTER = re.compile(r"\s*(?:[;,\[(){]|=(?!=))")
# Identifiers that can precede an expression (so `KEYWORD name(` is a use, not a declaration), or
# a type that is not being declared (`(const cudnnTensorDescriptor_t)x`, `: public CUDA_X {`).
_NOT_A_TYPE = frozenset(
    [
        "return",
        "case",
        "throw",
        "else",
        "do",
        "new",
        "delete",
        "sizeof",
        "alignof",
        "typeid",
        "decltype",
        "goto",
        "co_return",
        "co_yield",
        "co_await",
        "and",
        "or",
        "not",
        "xor",
        "bitand",
        "bitor",
        "compl",
        "defined",
        "if",
        "while",
        "for",
        "switch",
        "const",
        "volatile",
        "public",
        "private",
        "protected",
        "virtual",
    ]
)


# A template parameter (`template <typename CURAND_TYPE>`) and an enumerator (`enum { CURAND_X, ...`).
_TYPENAME_BEFORE = re.compile(r"\btypename(?:\s*\.\.\.)?\s*(?<=[\s.])\Z")
_PARAMETER_AFTER = re.compile(r"\s*(?:[>,=]|\.\.\.)")
_ENUMERATOR_AFTER = re.compile(r"\s*[,=}]")
_ENUM_HEAD = re.compile(r"\benum\b[^;{}()]*\Z")


def declares(text: str, offset: int, end: int) -> bool:
    """Whether text[offset:end], a name, is being declared or defined there."""
    start = max(0, offset - 120)
    if _KEYWORD_BEFORE.search(text, start, offset):
        return True
    if _TYPENAME_BEFORE.search(text, start, offset) and _PARAMETER_AFTER.match(text, end):
        return True
    if _ENUMERATOR_AFTER.match(text, end) and _in_enum_body(text, offset):
        return True
    before = _TYPE_BEFORE.search(text, start, offset)
    if before is None or before.group(1) in _NOT_A_TYPE:
        return False
    line_start = text.rfind("\n", 0, before.start()) + 1
    if text[line_start : before.start()].lstrip().startswith("#"):
        return False
    return _DECLARATION_AFTER.match(text, end) is not None


def _in_enum_body(text: str, offset: int) -> bool:
    """Whether `offset` lies in the braces of an `enum [class] [Name] [: type] { ... }`."""
    opening = text.rfind("{", max(0, offset - 4000), offset)
    if opening < 0 or any(c in text[opening + 1 : offset] for c in "{};"):
        return False
    return _ENUM_HEAD.search(text, max(0, opening - 200), opening) is not None

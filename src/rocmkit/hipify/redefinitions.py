"""A project's own definitions of what HIP's headers already define (issue 29).

CUDA leaves some helpers to projects that HIP's headers define globally: `min`/`max` overloads and
a `template <class T> T min(T, T)` (amd_math_functions.h), every `make_<vector>()` and member
compound operators on the vector types (amd_hip_vector_types.h). A project defining the same
function at global scope gets `redefinition of 'min'` from hipcc; a free `operator+=(float2&, float2)`
makes every `a += b` on a float2 ambiguous. Which signatures clash is data, not a guess:
hip_names/<X.Y>.definitions.txt lists what each release's headers define, read from the headers
with `definitions_in_headers` (benchmarks/hipify_hip_headers.py rebuilds it).

A signature is spelled `name(type,type)`, `name<N>(T0,T0)` for a template with N type parameters,
and `operator+=(vector&,vector)` / `operator+=(vector&,scalar)` for the vector operators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from rocmkit.hipify.lexer import mask_protected

CODE = "redefinition"
# A definition's name, parameters and opening brace: calls (`min(a, b);`) never match, so the raw
# text is searched first and most files stop there. A leading `template <...>` is looked up
# behind the name (a pattern starting with an optional group would be tried at every offset);
# the lookahead on the first letter lets the engine skip other offsets cheaply (lexer.py).
_DEFINITION = re.compile(
    r"(?=[mo])(?<![\w$])(?P<name>min|max|make_\w+|operator\s*(?:<<=|>>=|[-+*/%^|&]=))"
    r"\s*\((?P<params>[^(){};]*)\)\s*(?:const\s*)?(?:noexcept\s*)?\{"
)
_TEMPLATE_BEFORE = re.compile(r"template\s*<(?P<tparams>[^<>{};]*)>[\w \t\n*&:]*\Z")
# An invocation starts its line (the `#define` of the macro does not).
_MAKE = re.compile(
    r"^[ \t]*DECLOP_MAKE_(ONE|TWO|THREE|FOUR)_COMPONENT\(\s*([\w ]+?)\s*,\s*(\w+)\s*\)",
    re.MULTILINE,
)
_COMPONENTS = {"ONE": 1, "TWO": 2, "THREE": 3, "FOUR": 4}
_OVERLOAD2 = re.compile(r"__HIP_OVERLOAD2\(\s*\w+\s*,\s*(min|max)\s*\)")
_MEMBER_OPERATOR = re.compile(
    r"HIP_vector_type&\s*operator\s*(?P<op><<=|>>=|[-+*/%^|&]=)\s*\(\s*(?P<param>[^)]*)\)"
)
_QUALIFIERS = re.compile(r"\b(?:const|volatile|register|__restrict__|__restrict|restrict)\b")
_SYNONYMS = {"unsigned": "unsigned int", "uint32_t": "unsigned int", "int32_t": "int"}
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|\S")
_NAME = re.compile(r"[A-Za-z_]\w*")
_BUILTIN_TYPES = frozenset(
    {"int", "char", "short", "long", "float", "double", "unsigned", "signed"}
)
_BUILTIN_TYPES |= {"bool", "const", "volatile"}


class Redefinition(NamedTuple):
    offset: int  # of the defined name
    signature: str
    message: str


def definitions_in_headers(texts: Iterable[str]) -> set[str]:
    """The clashing-prone global definitions HIP's header texts make, as signatures."""
    found: set[str] = set()
    for text in texts:
        code = mask_protected(text)
        for kind, comp, vector in _MAKE.findall(code):
            found.add(f"make_{vector}({','.join([_type(comp)] * _COMPONENTS[kind])})")
        for name in _OVERLOAD2.findall(code):
            found.add(f"{name}<2>(T0,T1)")
        for match in _DEFINITION.finditer(code):
            if not match.group("name").startswith("operator"):
                found.add(_signature(code, match, frozenset()))
        for match in _MEMBER_OPERATOR.finditer(code):
            second = "vector" if "HIP_vector_type" in match.group("param") else "scalar"
            found.add(f"operator{match.group('op')}(vector&,{second})")
    return found


def vector_types(defined: frozenset[str]) -> frozenset[str]:
    """The vector type names (`float2`...) a release defines, from its `make_` helpers."""
    return frozenset(s[5 : s.index("(")] for s in defined if s.startswith("make_"))


def find(
    text: str,
    defined: frozenset[str],
    version: str,
    protected: Callable[[int], bool],
) -> Iterator[Redefinition]:
    """Global definitions in `text` whose signature HIP `version` already defines."""
    if _DEFINITION.search(text) is None:
        return
    code = mask_protected(text)
    vectors = vector_types(defined)
    depth = _GlobalScope(code)
    for match in _DEFINITION.finditer(code):
        name_at = match.start("name")
        if protected(name_at) or not depth.is_global(match.start()):
            continue
        signature = _signature(code, match, vectors)
        if signature in defined:
            yield Redefinition(name_at, signature, _message(signature, version))


def _signature(code: str, match: re.Match[str], vectors: frozenset[str]) -> str:
    name = re.sub(r"\s+", "", match.group("name"))
    head = _TEMPLATE_BEFORE.search(code, max(0, match.start() - 300), match.start())
    templated = head.group("tparams") if head is not None else None
    renames: dict[str, str] = {}
    if templated is not None:
        for index, parameter in enumerate(templated.split(",")):
            tokens = _TOKEN.findall(parameter.split("=", 1)[0])
            if tokens and tokens[0] in ("class", "typename"):
                renames[tokens[-1]] = f"T{index}"
    types = [_type(p, renames) for p in _parameters(match.group("params"))]
    if name.startswith("operator") and len(types) == 2 and types[0].endswith("&"):
        first = "vector&" if types[0][:-1] in vectors else types[0]
        second = "vector" if types[1].rstrip("&") in vectors else "scalar"
        return f"{name}({first},{second})"
    suffix = f"<{len(renames)}>" if templated is not None else ""
    return f"{name}{suffix}({','.join(types)})"


def _parameters(text: str) -> list[str]:
    """Each parameter without its name and default argument."""
    result = []
    for parameter in text.split(","):
        tokens = _TOKEN.findall(parameter.split("=", 1)[0])
        named = len(tokens) > 1 and _NAME.fullmatch(tokens[-1]) and tokens[-2] != "::"
        if named and tokens[-1] not in _BUILTIN_TYPES:
            tokens = tokens[:-1]
        if tokens and tokens != ["void"]:
            result.append(" ".join(tokens))
    return result


def _type(spelled: str, renames: dict[str, str] | None = None) -> str:
    """`const float &` -> `float` (a const reference binds like a value in overload
    resolution); `unsigned` -> `unsigned int`; template parameters by position."""
    words = _QUALIFIERS.sub(" ", spelled).split()
    words = [(renames or {}).get(w, w) for w in words]
    text = " ".join(words).replace(" &", "&").replace(" *", "*")
    if "const" in spelled and text.endswith("&") and not text.endswith("&&"):
        text = text[:-1]
    return _SYNONYMS.get(text, text)


def _message(signature: str, version: str) -> str:
    if signature.startswith("operator"):
        op = signature[8 : signature.index("(")]
        return (
            f"HIP {version}'s vector types already have a member {op}: with this free "
            f"{signature} every `a {op} b` on them is ambiguous; guard it with "
            "#if !defined(__HIP_PLATFORM_AMD__)"
        )
    return (
        f"HIP {version}'s headers already define {_shown(signature)}: redefinition on AMD; "
        "remove it or guard it with #if !defined(__HIP_PLATFORM_AMD__)"
    )


def _shown(signature: str) -> str:
    """`max<1>(T0,T0)` -> `template max(T0, T0)`, as a reader would look for it."""
    name, _, rest = signature.partition("(")
    shown = f"{name.split('<')[0]}({rest.replace(',', ', ')}"
    return f"template {shown}" if "<" in name else shown


class _GlobalScope:
    """Whether an offset sits at global scope: outside every brace block except `extern "C"`
    (literals are masked, so the "C" is blank) and the unnamed preprocessor-free top level."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.braces = [(m.start(), m.group()) for m in re.finditer(r"[{}]", code)]

    def is_global(self, offset: int) -> bool:
        stack: list[bool] = []  # True for an `extern "C" {` block
        for position, brace in self.braces:
            if position >= offset:
                break
            if brace == "{":
                before = self.code[max(0, position - 40) : position]
                stack.append(re.search(r"\bextern\s*\Z", before) is not None)
            elif stack:
                stack.pop()
        return all(stack)

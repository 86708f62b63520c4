"""PTX assembly handed to an inline-asm call from Python.

Triton's `tl.inline_asm_elementwise(asm, constraints, args, ...)` and MLIR's LLVM dialect
`llvm.inline_asm(result, operands, asm_string, constraints, ...)` (which the CuTe DSL and other
MLIR-built kernels call) pass their text to the target's assembler unchanged: PTX text compiles
only for NVIDIA GPUs (the AMD back end assembles AMDGPU instructions), so the kernel fails to
build on ROCm. Inside `if is_cuda():` / `if torch.version.hip ...` the project has the other side.

PTX is recognised by its instruction syntax (NVIDIA, "Parallel Thread Execution ISA", chapters 5
and 9): an opcode whose dotted modifiers end in one of PTX's fundamental types (`cvt.rni.f32.f32`,
`setp.eq.f16x2`, `mov.b32`, `shfl.sync.bfly.b32`, `ld.global.nc.v4.u32`), a `.reg .pred`
declaration, a special register (`%laneid`, `%tid.x`), or a typeless synchronising instruction
(`bar.sync`, `fence.proxy.async`, `membar.gl`, `elect.sync`). AMDGPU assembly spells its
instructions with underscores (`v_cvt_f32_f16`, `s_waitcnt`): no match.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from collections.abc import Iterator

from rocmkit.port.findings import PortFinding

GATE = "inline_asm"
RULE = "python-inline-ptx"
# The calls that take assembly text: Triton's elementwise asm, MLIR's LLVM dialect op.
_CALLS = frozenset({"inline_asm_elementwise", "inline_asm", "InlineAsmOp"})
# PTX ISA 5.2.1 fundamental types (and the alternate floating-point types of 5.2.2).
_TYPES = r"(?:[subf](?:8|16|32|64)|b128|f16x2|bf16(?:x2)?|tf32|pred|e[45]m[23](?:x[24])?|e2m1x2)"
_PTX = re.compile(
    rf"(?<![\w.%$])[a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)*\.{_TYPES}(?![\w])"
    r"|\.reg\s+\.\w"
    r"|%%?(?:laneid|warpid|tid\.|ntid\.|ctaid\.|nctaid\.|smid|clock|globaltimer|lanemask_)"
    r"|(?<![\w.])(?:bar\.sync|barrier\.sync|fence\.\w|membar\.\w|elect\.sync|griddepcontrol\.)"
)
# A test of the CUDA target or of the vendor (`tl.target_info.is_cuda()`, `is_hip()`,
# `torch.version.hip`, `current_platform.is_rocm()`), or of a flag named for PTX (`if ptx_pack:`,
# `USE_PTX`): the project's own switch between the PTX path and another.
_TARGET_TEST = re.compile(
    r"(?i)\bis_?(?:cuda|hip|rocm|nvidia|amd)\b|version\.(?:hip|cuda)\b|(?:\b|_)ptx(?:_|\b)"
)


@dataclasses.dataclass(frozen=True)
class AsmUse:
    line: int
    column: int
    evidence: str
    gated: bool


def ptx_in(text: str) -> str | None:
    """The first PTX instruction or declaration in assembly text, None when it holds none."""
    match = _PTX.search(text)
    if match is None:
        return None
    start = max(text.rfind("\n", 0, match.start()), text.rfind(";", 0, match.start())) + 1
    end = min(
        i for i in (text.find("\n", match.end()), text.find(";", match.end()), len(text)) if i >= 0
    )
    return " ".join(text[start:end].split())[:60]


def asm_uses(tree: ast.Module, text: str | None = None) -> list[AsmUse]:
    """Each inline-asm call whose assembly text (a string argument, or a name bound to one in
    the module) holds PTX, and whether it sits under a CUDA-target or vendor test. With the
    module's `text`, expressions are walked only where a line names an inline-asm call."""
    lines = None if text is None else _call_lines(text)
    calls, strings = _walk(tree, lines)
    found = []
    for call, gated in calls:
        for text in _texts(call, strings):
            ptx = ptx_in(text)
            if ptx is not None:
                evidence = f"{_name(call.func)}(...): PTX `{ptx}`"
                found.append(AsmUse(call.lineno, call.col_offset, evidence, gated))
                break
    return found


def _call_lines(text: str) -> list[int]:
    """The line numbers (sorted) holding the name of an inline-asm call (`_CALLS`: each holds
    "inline_asm" or "InlineAsmOp")."""
    return [
        number
        for number, line in enumerate(text.split("\n"), 1)
        if "inline_asm" in line or "InlineAsmOp" in line
    ]


def _spans_call(node: ast.AST, lines: list[int] | None) -> bool:
    """Whether a node can hold an inline-asm call: its lines hold one of the names (a node
    without a position, or no line list, is walked)."""
    start = getattr(node, "lineno", None)
    if lines is None or start is None:
        return True
    end = getattr(node, "end_lineno", None) or start
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end


def _walk(
    tree: ast.Module, lines: list[int] | None = None
) -> tuple[list[tuple[ast.Call, bool]], dict[str, list[str]]]:
    """One walk of the module: each inline-asm call with whether an `if` around it (or a
    conditional expression holding it) tests the CUDA target, the vendor or a PTX flag, and the
    names assigned a literal string anywhere (`asm = "cvt.rni.f32.f32 ..."`). Every statement is
    visited (an assignment is one); an expression only where `lines` say a call may be in it
    (most of a big module's nodes are expressions). The enclosing tests are unparsed only at a
    matching call: a big module holds thousands of `if`s and few calls."""
    calls: list[tuple[ast.Call, bool]] = []
    bound: dict[str, list[str]] = {}
    stack: list[tuple[ast.AST, tuple[ast.expr, ...]]] = [(tree, ())]
    while stack:
        node, tests = stack.pop()
        if isinstance(node, ast.Call):
            if _name(node.func) in _CALLS:
                gated = any(_TARGET_TEST.search(ast.unparse(t)) for t in tests)
                calls.append((node, gated))
        elif isinstance(node, (ast.If, ast.IfExp)):
            tests = (*tests, node.test)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                text = _literal(node.value)
                if text:
                    bound.setdefault(target.id, []).append(text)
        # children pushed last-first: popped in source order (a name bound twice keeps its order)
        children = [
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, ast.expr) or _spans_call(child, lines)
        ]
        stack.extend((child, tests) for child in reversed(children))
    return calls, bound


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _texts(call: ast.Call, strings: dict[str, list[str]]) -> Iterator[str]:
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(argument, ast.Name):
            yield from strings.get(argument.id, ())
        else:
            text = _literal(argument)
            if text:
                yield text


def _literal(node: ast.expr) -> str:
    """The literal text of a string expression: constants, `+` of them, an f-string's parts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left) + _literal(node.right)
    if isinstance(node, ast.JoinedStr):
        return " ".join(_literal(v) for v in node.values if isinstance(v, ast.Constant))
    return ""


# declared.py's words for a module-level import of a package only an opt-in extra declares
OPT_IN = "an opt-in back end: the extra at "


def in_opt_in_backend(findings: list[PortFinding]) -> list[PortFinding]:
    """PTX findings in a module whose CUDA-only import is an opt-in extra's path turned to info:
    the module loads only where that extra is installed (its line is the finding)."""
    backends = {f.path: f for f in findings if f.rule_id != RULE and OPT_IN in f.evidence}
    if not backends:
        return findings
    out = []
    for f in findings:
        backend = backends.get(f.path) if f.rule_id == RULE and f.severity != "info" else None
        if backend is None:
            out.append(f)
            continue
        why = backend.evidence.split(OPT_IN, 1)[1].split(" is the finding", 1)[0]
        note = f"in an opt-in back end: the module imports {_imports(backend)}, which only the extra at {why} installs"
        out.append(dataclasses.replace(f, severity="info", note=note))
    return out


def _imports(finding: PortFinding) -> str:
    return finding.evidence.split("  (", 1)[0].removeprefix("import ")

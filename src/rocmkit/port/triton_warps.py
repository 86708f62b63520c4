"""A Triton kernel given 32 warps, which a 64-lane AMD wavefront makes 2048 threads.

Triton runs a program as `num_warps` warps of the target's warp size. HIP allows at most 1024
threads per block (hipDeviceProp_t.maxThreadsPerBlock), and on CDNA GPUs (MI200, MI300) a warp is
a 64-lane wavefront (Triton's AMD back end: warp size 64 below gfx10), so `num_warps=32` asks for
2048: the launch fails with "Triton Error [HIP]: invalid argument" (triton-lang/triton#4128), or
with Triton's own refusal where its AMD back end checks the limit (triton#6125). On NVIDIA's
32-lane warps the same 32 is exactly 1024, which is why the value is common in CUDA-first kernels.
Liger-Kernel, Unsloth's cross entropy and mamba cap it at 16 under `torch.version.hip`.

An autotune config is different: Triton since its max-threads check (triton#6522) skips a config
that asks for too many threads, while older Triton failed the whole autotune on it (#4128); a
32-warp `triton.Config` is a warning, a launch or a launch helper's choice an error.

Found where the 32 is written: given as `num_warps=` (a launch `kernel[grid](...)`, a wrapper or
`triton.Config`), in a list a loop takes the value given there from, or set to a warp-count name
(`num_warps`, `nwarps`, `optimal_warp_count`) that its function returns or gives as `num_warps=`.
A conditional whose test reads HIP (`32 if not is_hip() else 16`) is the cap and is left alone,
and so is every place in a module that tests for ROCm anywhere (its own AMD branch), a loop
value its loop filters (`if w * warp_size <= 1024`), and a branch the value's own bound never
opens: `32 if BLOCK_SIZE >= 128 * 1024` where BLOCK_SIZE is `min(..., 16 * 1024)`, also through a
helper's parameter when every call in the module passes such a bounded value (Liger's
`get_num_warps(BLOCK_SIZE)` under `MAX_FUSED_SIZE = 65536 // 4`).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rocmkit.port.rules import Severity
from rocmkit.port.whole_tree import call_name, own_nodes, walk

RULE = "triton-num-warps-32"
TRIGGERS = ("num_warps", "warp_count")
_LIMIT = 16  # 1024 threads per block / 64 lanes
_WARP_COUNT = re.compile(r"(?i)^_*(?:\w+_)?(?:num_?warps|n_?warps|warps?_count|warps)$")
_READS_HIP = re.compile(r"(?i)hip|rocm|cdna|amd")
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Place:
    line: int
    column: int
    evidence: str
    severity: Severity


# A cheap look at the text before the module's whole tree is parsed: a warp-count name given a
# line holding a number over 16 (`num_warps = 32`, `optimal_warp_count = 32`, `WARPS = [4, 32]`)
# that is not compared with or computed from (`BT == 128`, `BD // 256`), or a loop over a literal
# list holding one after a count of 8 or fewer (`for w in [4, 8, 16, 32]`): a list of block sizes
# (`for BT in [16, 32, 64]`, most of a Triton kernel module's autotune loops) starts above 8, and
# reading it made a module's whole tree parsed for nothing.
_NOT_AN_OPERAND = r"(?<![<>*/%])(?<![<>*/%]\s)(?<![<>=!]=)(?<![<>=!]=\s)"
_MAYBE = re.compile(
    r"(?i)warps?\w*\s*[=:][^\n]*" + _NOT_AN_OPERAND + r"\b(?:1[7-9]|[2-9]\d|\d{3,})\b"
    r"|\bin\s*[\[(][^\n\])]*\b[1-8]\b[^\n\])]*\b(?:1[7-9]|[2-9]\d|\d{3,})\b"
)


def may_have(text: str) -> bool:
    """Whether a module can hold a place: its text has a number over 16 where a warp count is
    (not as the right side of a comparison or an arithmetic operator: `num_warps=8 if BT == 128`),
    and the module does not look at ROCm (where `places` finds none)."""
    return bool(_MAYBE.search(text)) and not _looks_at_rocm(text)


def places(tree: ast.Module, text: str) -> list[Place]:
    """The 32s (or more) that reach a Triton num_warps, in source order; none in a module that
    looks at ROCm."""
    if _looks_at_rocm(text):
        return []
    nodes = walk(tree)
    # Only the scopes that give a num_warps something other than a small number, or return a
    # warp count, are read (most kernels' launches pass 4 or 8, or a parameter).
    asked = [
        n
        for n in nodes
        if (
            isinstance(n, ast.Call)
            and any(k.arg == "num_warps" and not _small(k.value) for k in n.keywords)
        )
        or (isinstance(n, ast.Return) and any(map(_WARP_COUNT.match, _returned_names(n))))
    ]
    if not asked:
        return []
    functions = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    scopes = {id(s): s for s in (_innermost(n, functions, tree) for n in asked)}
    found: dict[int, Place] = {}
    bounds = _Bounds(tree)
    for scope in scopes.values():
        _scope_places(scope, found, bounds)
    return sorted(found.values(), key=lambda p: (p.line, p.column))


def _small(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Constant) and isinstance(value.value, int) and value.value <= _LIMIT
    )


def _returned_names(node: ast.Return) -> list[str]:
    """The names a `return` gives back, alone or in a tuple."""
    if node.value is None:
        return []
    values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
    return [v.id for v in values if isinstance(v, ast.Name)]


def _innermost(
    node: ast.AST, functions: Sequence[ast.FunctionDef | ast.AsyncFunctionDef], tree: ast.Module
) -> ast.AST:
    """The function a node is written in (by line range), or the module."""
    line = getattr(node, "lineno", 0)
    holding = [f for f in functions if f.lineno <= line <= (f.end_lineno or f.lineno)]
    return max(holding, key=lambda f: f.lineno) if holding else tree


# Not python_scan._looks_at_rocm: that one reads ROCm build words and tools, and misses the flags
# Triton kernel modules test (`is_cdna()`, `IS_HIP`, `is_amd`): 14 such corpus modules.
def _looks_at_rocm(text: str) -> bool:
    return "version.hip" in text or bool(
        re.search(r"(?i)\bis_?(?:hip|rocm|cdna|amd)\w*|\brocm\b|use_rocm|HIP_", text)
    )


def _scope_places(scope: ast.AST, found: dict[int, Place], bounds: _Bounds) -> None:
    assigned: dict[str, list[ast.expr]] = {}
    looped: dict[str, list[ast.expr]] = {}
    sinks: list[tuple[ast.expr, Severity]] = []  # (value given as num_warps, severity)
    returned: list[str] = []
    for node in own_nodes(scope):
        if isinstance(node, ast.Assign):
            _bind(node.targets, node.value, assigned)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _bind([node.target], node.value, assigned)
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            filters = node.ifs if isinstance(node, ast.comprehension) else _loop_tests(node)
            if not any(_names(f, node.target.id) for f in filters):
                looped.setdefault(node.target.id, []).append(node.iter)
        elif isinstance(node, ast.Return):
            returned.extend(_returned_names(node))
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "num_warps":
                    config = call_name(node.func) == "Config"
                    sinks.append((keyword.value, "warn" if config else "error"))
    for name in returned:
        if _WARP_COUNT.match(name):
            sinks.extend((value, "error") for value in assigned.get(name, []))
    for value, severity in sinks:
        for constant in _big(value, assigned, looped, set()):
            if bounds.never_reached(constant, scope):
                continue
            if id(constant) not in found or severity == "error":
                found[id(constant)] = _place(constant, severity)


def _bind(targets: list[ast.expr], value: ast.expr, assigned: dict[str, list[ast.expr]]) -> None:
    for target in targets:
        if isinstance(target, ast.Name):
            assigned.setdefault(target.id, []).append(value)
        elif (
            isinstance(target, ast.Tuple)
            and isinstance(value, ast.Tuple)
            and len(target.elts) == len(value.elts)
        ):
            for t, v in zip(target.elts, value.elts, strict=True):
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(v)


def _big(
    value: ast.expr,
    assigned: dict[str, list[ast.expr]],
    looped: dict[str, list[ast.expr]],
    seen: set[str],
) -> list[ast.Constant]:
    """The int constants over 16 a value can be: itself, a conditional's branches (unless its
    test reads HIP), what a name holds in the scope or takes from a literal list in a loop."""
    if isinstance(value, ast.Constant):
        number = value.value
        big = isinstance(number, int) and not isinstance(number, bool) and number > _LIMIT
        return [value] if big else []
    if isinstance(value, ast.IfExp):
        if _READS_HIP.search(ast.unparse(value.test)):
            return []
        return _big(value.body, assigned, looped, seen) + _big(value.orelse, assigned, looped, seen)
    if isinstance(value, ast.Name) and value.id not in seen:
        seen.add(value.id)
        out = [c for v in assigned.get(value.id, []) for c in _big(v, assigned, looped, seen)]
        for iterable in looped.get(value.id, []):
            if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
                out += [c for e in iterable.elts for c in _big(e, assigned, looped, seen)]
        return out
    return []


def _place(constant: ast.Constant, severity: Severity) -> Place:
    n = int(constant.value)  # type: ignore[arg-type]  # _big keeps ints only
    why = f"num_warps {n}: {n} x 64 = {n * 64} threads on a 64-lane AMD wavefront, over HIP's 1024"
    if severity == "warn":
        why += " (an autotune config: older Triton fails the autotune, newer skips it)"
    return Place(constant.lineno, constant.col_offset + 1, why, severity)


def _names(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _loop_tests(loop: ast.For) -> list[ast.expr]:
    return [n.test for s in loop.body for n in ast.walk(s) if isinstance(n, ast.If)]


class _Bounds:
    """Upper bounds of names, from a module's own arithmetic: a module constant (`MAX = 65536 //
    4`), a name set to `min(..., bounded)`, and a function's parameter where every call of the
    function in the module passes a bounded value. A branch that needs more than the bound is
    never taken."""

    # Both built on the first question only: most modules with a warp count have no 32 to ask
    # about.
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree

    @functools.cached_property
    def parents(self) -> dict[int, ast.AST]:
        return {id(c): p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}

    @functools.cached_property
    def constants(self) -> dict[str, int]:
        """Module-level names bound to an int expression, in order (a later one may use an
        earlier one: `MAX = BLOCK * 4`)."""
        found: dict[str, int] = {}
        for statement in self.tree.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and (value := _number(statement.value, found)) is not None
            ):
                found[statement.targets[0].id] = value
        return found

    def never_reached(self, constant: ast.AST, scope: ast.AST) -> bool:
        """Whether a branch holding `constant` needs a name above its bound."""
        child, node = constant, self.parents.get(id(constant))
        while node is not None and node is not scope:
            if isinstance(node, (ast.If, ast.IfExp)) and child is not node.test:
                in_body = child in node.body if isinstance(node, ast.If) else child is node.body
                if self._closed(node.test, in_body, scope):
                    return True
            child, node = node, self.parents.get(id(node))
        return False

    def _closed(self, test: ast.expr, in_body: bool, scope: ast.AST) -> bool:
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.left, ast.Name)
            and isinstance(test.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE))
        ):
            return False
        limit = _number(test.comparators[0], self.constants)
        if limit is None:
            return False
        # The branch needs the name above `limit` (at or above for >= / not <).
        above = isinstance(test.ops[0], (ast.Gt, ast.GtE)) == in_body
        if not above:
            return False
        inclusive = isinstance(test.ops[0], ast.GtE) if in_body else isinstance(test.ops[0], ast.Lt)
        bound = self.bound(test.left.id, scope, 0)
        return bound is not None and (bound < limit if inclusive else bound <= limit)

    def bound(self, name: str, scope: ast.AST, depth: int) -> int | None:
        if depth > 2:
            return None
        values = [
            n.value
            for n in own_nodes(scope)
            if isinstance(n, ast.Assign) and any(_names(t, name) for t in n.targets)
        ]
        if values:
            bounds = [self._upper(v, scope, depth) for v in values]
            return None if None in bounds else max(b for b in bounds if b is not None)
        if name in self.constants:
            return self.constants[name]
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._parameter_bound(scope, name, depth)
        return None

    def _upper(self, value: ast.expr, scope: ast.AST, depth: int) -> int | None:
        number = _number(value, self.constants)
        if number is not None:
            return number
        if isinstance(value, ast.Name):
            return self.bound(value.id, scope, depth + 1)
        if isinstance(value, ast.Call) and call_name(value.func) == "min" and value.args:
            bounded = [b for a in value.args if (b := self._upper(a, scope, depth)) is not None]
            return min(bounded) if bounded else None
        return None

    def _parameter_bound(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, depth: int
    ) -> int | None:
        names = [a.arg for a in function.args.args]
        if name not in names:
            return None
        index = names.index(name)
        calls = [
            n
            for n in ast.walk(self.tree)
            if isinstance(n, ast.Call) and call_name(n.func) == function.name
        ]
        bounds = []
        for call in calls:
            given = next((k.value for k in call.keywords if k.arg == name), None)
            if given is None and index < len(call.args):
                given = call.args[index]
            caller = self._scope_of(call)
            bounds.append(None if given is None else self._upper(given, caller, depth + 1))
        return max(bounds) if calls and None not in bounds else None  # type: ignore[type-var]

    def _scope_of(self, node: ast.AST) -> ast.AST:
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, _SCOPES):
            parent = self.parents.get(id(parent))
        return parent if parent is not None else self.tree


def _number(value: ast.expr, constants: dict[str, int]) -> int | None:
    """An int expression of literals and module constants: `65536 // 4`, `16 * 1024`."""
    if isinstance(value, ast.Constant):
        v = value.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(value, ast.Name):
        return constants.get(value.id)
    if isinstance(value, ast.BinOp):
        left, right = _number(value.left, constants), _number(value.right, constants)
        if left is None or right is None:
            return None
        op = type(value.op)
        if op is ast.Mult:
            return left * right
        if op is ast.Add:
            return left + right
        if op is ast.Sub:
            return left - right
        if op is ast.FloorDiv and right:
            return left // right
        if op is ast.LShift and 0 <= right < 64:
            return left << right
    return None

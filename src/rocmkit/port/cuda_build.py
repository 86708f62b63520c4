"""What an extension build with no ROCm side does on a ROCm machine, read from its own code.

These passes run over a build module (one that uses torch.utils.cpp_extension) that never looks
at ROCm's side (no ROCM_HOME, IS_HIP_EXTENSION, torch.version.hip, hipcc): every line of it runs
on a ROCm machine as written. Each verdict follows from what torch defines there:

- `CUDA_HOME` is None where no CUDA toolkit is found (torch.utils.cpp_extension: `_find_cuda_home`
  looks for $CUDA_HOME, nvcc on the PATH and /usr/local/cuda; a ROCm machine has none), so a name
  bound only under `if CUDA_HOME is not None:` and read after it raises NameError there.
- `torch.cuda.get_device_capability()` is the gfx number on ROCm ((9, 4) on MI300X), so a build
  target made from it (`compute_{cap}`, `sm_{cap}`) names an NVIDIA architecture that does not
  exist, in a flag only nvcc reads.
- A wheel file name with a `+cu{...}` local version is a CUDA build of the extension (PEP 440
  local versions; the `+cuXXX` convention of PyTorch's and these projects' release wheels):
  fetching it instead of compiling installs a binary a ROCm torch cannot load.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rocmkit.port.whole_tree import LEAF_FIELDS, walk

# How a module asks whether the CUDA toolkit is there (torch's CUDA_HOME or its finder).
_CUDA_HOME_NAMES = frozenset({"CUDA_HOME", "CUDA_PATH"})
# Literal text that makes an f-string a CUDA build target around a formatted field.
_TARGET_PARTS = ("compute_", "sm_")


def unbound_without_cuda_home(tree: ast.Module) -> Iterator[tuple[ast.Name, str, int]]:
    """(first read, name, line of the gate) for each module-level name bound only inside
    `if CUDA_HOME is not None:` / `if CUDA_HOME:` (and nowhere else in the module) and read
    after that statement outside such a gate: on a ROCm machine the read raises NameError."""
    gates = [n for n in walk(tree) if isinstance(n, ast.If) and _needs_cuda_home(n.test)]
    if not gates:
        return
    stores: dict[str, int] = {}  # module-level bindings (a function's locals are its own)
    for node in _module_scope(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    # A read under any test that names CUDA_HOME (`if CUDA_HOME and WITH_CUDA:`) is the
    # project's own guard: only reads outside every such test count.
    gated_lines: set[int] = set()
    for node in walk(tree):
        if isinstance(node, ast.If) and any(
            isinstance(m, ast.Name) and m.id in _CUDA_HOME_NAMES for m in walk(node.test)
        ):
            # the test too: `CUDA_HOME and x` never reads x without it
            gated_lines.update(_lines(node.test))
            for statement in node.body:
                gated_lines.update(_lines(statement))
    for gate in gates:
        inside = {
            n.id
            for s in gate.body
            for n in walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id != "_"
        }
        for name in sorted(inside):
            if stores[name] != _count_stores(gate.body, name):
                continue  # bound elsewhere too: it may have a value on ROCm
            read = _first_read_after(tree, name, gate.end_lineno or gate.lineno, gated_lines)
            if read is not None:
                yield read, name, gate.lineno


def _lines(node: ast.expr | ast.stmt) -> range:
    return range(node.lineno, (node.end_lineno or node.lineno) + 1)


def _module_scope(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node outside function, lambda and class bodies."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _needs_cuda_home(test: ast.expr) -> bool:
    """`CUDA_HOME is not None`, `CUDA_HOME`, `CUDA_HOME != None` (true only with a toolkit)."""
    if isinstance(test, ast.Name):
        return test.id in _CUDA_HOME_NAMES
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id in _CUDA_HOME_NAMES
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.IsNot, ast.NotEq))
    ):
        comparator = test.comparators[0]
        return isinstance(comparator, ast.Constant) and comparator.value is None
    return False


def _count_stores(body: list[ast.stmt], name: str) -> int:
    return sum(
        1
        for s in body
        for n in walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
    )


def _first_read_after(
    tree: ast.Module, name: str, after: int, gated_lines: set[int]
) -> ast.Name | None:
    reads = [
        n
        for n in walk(tree)
        if isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and n.id == name
        and n.lineno > after
        and n.lineno not in gated_lines
    ]
    # Only reads the module runs (not inside a function that may never be called).
    functions = [
        (f.lineno, f.end_lineno or f.lineno)
        for f in walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    ]
    top = [r for r in reads if not any(a <= r.lineno <= b for a, b in functions)]
    return min(top, key=lambda n: (n.lineno, n.col_offset)) if top else None


def capability_targets(tree: ast.Module) -> Iterator[tuple[ast.Call, str]]:
    """(the get_device_capability() call, the f-string's text) where the capability, through
    the name it is assigned to, becomes an NVIDIA build target: f"...compute_{cap}..."."""
    holders: dict[str, ast.Call] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr == "get_device_capability":
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        holders.setdefault(target.id, node.value)
    if not holders:
        return
    for node in walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        fields = {
            n.id
            for part in node.values
            if isinstance(part, ast.FormattedValue)
            for n in walk(part.value)
            if isinstance(n, ast.Name)
        }
        text = _template(node)
        used = sorted(fields & set(holders))
        if used and any(p in text for p in _TARGET_PARTS):
            yield holders[used[0]], text


def cuda_wheel_names(tree: ast.Module) -> Iterator[tuple[ast.JoinedStr, str]]:
    """f-strings that name a wheel file with a `+cu{...}` local version (a CUDA build)."""
    for node in walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = _template(node)
            if "+cu{}" in text and ".whl" in text:
                yield node, text


def _template(node: ast.JoinedStr) -> str:
    """The f-string's text with `{}` for each field."""
    return "".join(
        part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}"
        for part in node.values
    )


def extension_needs_cuda_home(tree: ast.Module) -> Iterator[tuple[ast.expr, int]]:
    """(the CUDA_HOME test, line of the CUDAExtension) for each CUDAExtension(...) built only
    where that test is true: `if CUDA_HOME:` / `if cuda_ok and CUDA_HOME is not None:` around
    it, directly or through a module-level name assigned such a test (`WITH_CUDA = ... and
    CUDA_HOME is not None`). torch.utils.cpp_extension sets CUDA_HOME only on a CUDA torch
    (`CUDA_HOME = _find_cuda_home() if (torch.cuda._is_compiled() and torch.version.cuda) else
    None`, torch 2.x), so on ROCm the GPU extension is never built (the package has no GPU ops)."""
    assigned: dict[str, ast.expr] = {}
    for node in _module_scope(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id not in assigned:
                found = _requires_cuda_home(node.value, {})
                if found is not None:
                    assigned[target.id] = found
    built = [
        n for n in walk(tree) if isinstance(n, ast.Call) and _called(n.func) == "CUDAExtension"
    ]
    parents = _parents(tree) if built else {}
    reported: set[int] = set()
    for node in built:
        child: ast.AST = node
        while id(child) in parents:
            parent = parents[id(child)]
            body = parent.body if isinstance(parent, (ast.If, ast.IfExp)) else None
            inside = child in body if isinstance(body, list) else child is body
            if isinstance(parent, (ast.If, ast.IfExp)) and inside:
                test = _requires_cuda_home(parent.test, assigned)
                if test is not None and id(test) not in reported:
                    reported.add(id(test))
                    yield test, node.lineno
            child = parent


def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    """id(node) -> its parent, for every node but the contexts (Load, Store)."""
    parents: dict[int, ast.AST] = {}
    for parent in walk(tree):
        for name in parent._fields:
            if name in LEAF_FIELDS:
                continue
            value = getattr(parent, name, None)
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        parents[id(child)] = parent
            elif isinstance(value, ast.AST):
                parents[id(value)] = parent
    return parents


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _requires_cuda_home(test: ast.expr, assigned: dict[str, ast.expr]) -> ast.expr | None:
    """The part of a test that is true only when CUDA_HOME is set (one `and` operand, or the
    test a name was assigned), or None."""
    if _needs_cuda_home(test):
        return test
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            found = _requires_cuda_home(value, assigned)
            if found is not None:
                return found
    if isinstance(test, ast.Name):
        return assigned.get(test.id)
    return None

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
from collections.abc import Callable, Iterator
from typing import Any

from rocmkit.port.whole_tree import LEAF_FIELDS, call_name, walk

# How a module asks whether the CUDA toolkit is there (torch's CUDA_HOME or its finder).
_CUDA_HOME_NAMES = frozenset({"CUDA_HOME", "CUDA_PATH"})
# Literal text that makes an f-string a CUDA build target around a formatted field.
_TARGET_PARTS = ("compute_", "sm_")


def unbound_without_cuda_home(tree: ast.Module) -> Iterator[tuple[ast.Name, str, int]]:
    """(first read, name, line of the gate) for each module-level name bound only inside
    `if CUDA_HOME is not None:` / `if CUDA_HOME:`, or an `if` whose test a ROCm build evaluates
    false because CUDA_HOME is None (RocmBuild), and nowhere else in the module, and read
    after that statement outside such a gate: on a ROCm machine the read raises NameError."""
    ifs = [n for n in walk(tree) if isinstance(n, ast.If)]
    gates = [n for n in ifs if _needs_cuda_home(n.test)]
    # ... at module level: a function's names are its own locals.
    others = [
        n for n in _module_scope(tree) if isinstance(n, ast.If) and not _needs_cuda_home(n.test)
    ]
    if others:
        # Any other test a ROCm build evaluates false and a CUDA toolkit true (`if WITH_CUDA:`
        # with `WITH_CUDA = torch.cuda.is_available() and CUDA_HOME is not None`).
        build = RocmBuild(tree)
        gates += [n for n in others if build.never_taken(n.test, True) is not None]
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
            if stores.get(name, 0) != _count_stores(gate.body, name):
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
    the name it is assigned to, becomes an NVIDIA build target: f"...compute_{cap}...", or an SM
    number f"{cap[0]}{cap[1]}" in a module whose other f-strings make `compute_{}`/`sm_{}`
    targets of such numbers."""
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
    reached = _reached_on_rocm(tree)
    holders = {name: call for name, call in holders.items() if reached(call)}
    strings = [n for n in walk(tree) if isinstance(n, ast.JoinedStr)]
    # An SM number made of the capability (`f"{cap[0]}{cap[1]}"`: 94 for MI300X) in a module that
    # writes nvcc targets from such numbers elsewhere (`f"-gencode=arch=compute_{sm},..."`).
    makes_targets = any(any(p + "{}" in _template(n) for p in _TARGET_PARTS) for n in strings)
    for node in strings:
        fields = {
            n.id
            for part in node.values
            if isinstance(part, ast.FormattedValue)
            for n in walk(part.value)
            if isinstance(n, ast.Name)
        }
        text = _template(node)
        used = sorted(fields & set(holders))
        if used and (any(p in text for p in _TARGET_PARTS) or (makes_targets and text == "{}{}")):
            yield holders[used[0]], text


def _reached_on_rocm(tree: ast.Module) -> Callable[[ast.AST], bool]:
    """Whether a node is outside every `if` branch that a ROCm build's evaluated condition
    never takes (`if "cu" in torch.__version__ and CUDA_HOME is not None:`)."""
    parents = _parents(tree)
    build: RocmBuild | None = None

    def reached(node: ast.AST) -> bool:
        nonlocal build
        child = node
        while id(child) in parents:
            parent = parents[id(child)]
            if isinstance(parent, ast.If) and child is not parent.test:
                build = build or RocmBuild(tree)
                truth = build.truth(parent.test, cuda_home=None)
                taken = any(child is b for b in parent.body)
                if truth is (not taken):
                    return False
            child = parent
        return True

    return reached


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


def extension_needs_cuda_home(tree: ast.Module) -> Iterator[tuple[ast.expr, int, list[str]]]:
    """(the test, line of the CUDAExtension, environment variables the test reads) for each
    CUDAExtension (a call, or the class given to a name: `extension = CUDAExtension`) that a ROCm
    build never reaches: inside an `if` (or `x if c else y`) whose test is false there, or in the
    `else` of one that is true, and that CUDA_HOME decides. The test is evaluated as a ROCm build
    runs it (`RocmBuild`): torch.utils.cpp_extension sets CUDA_HOME only on a CUDA torch
    (`CUDA_HOME = _find_cuda_home() if (torch.cuda._is_compiled() and torch.version.cuda) else
    None`, torch 2.x), so `if CUDA_HOME:`, `WITH_CUDA = torch.cuda.is_available() and CUDA_HOME
    is not None` or `(torch.cuda.is_available() and CUDA_HOME is not None) or
    os.getenv("FORCE_CUDA", "0") == "1"` build no GPU extension (the package has no GPU ops)."""
    named = [
        n
        for n in walk(tree)
        if (isinstance(n, ast.Call) and call_name(n.func) == "CUDAExtension")
        or (isinstance(n, ast.Name) and n.id == "CUDAExtension" and isinstance(n.ctx, ast.Load))
    ]
    if not named:
        return
    build: RocmBuild | None = None  # made at the first CUDAExtension (it walks the module)
    parents = _parents(tree)
    reported: set[int] = set()
    for node in named:
        if isinstance(node, ast.Name) and isinstance(parents.get(id(node)), ast.Call):
            continue  # CUDAExtension(...) itself, or the class handed to a call
        used: ast.expr = node
        child: ast.AST = used
        while id(child) in parents:
            parent = parents[id(child)]
            if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
                body: list[ast.AST] = (
                    list(parent.body) if isinstance(parent.body, list) else [parent.body]
                )
                taken = any(child is b for b in body)
                build = build or RocmBuild(tree)
                test = build.never_taken(parent.test, taken)
                if test is not None and id(test) not in reported:
                    reported.add(id(test))
                    yield test, used.lineno, build.env_names(parent.test)
            child = parent


_UNKNOWN = object()
# What a ROCm build of a setup.py sees: torch.cuda.is_available() is true on a ROCm torch with an
# AMD GPU (HIP stands behind torch.cuda); torch.version.cuda is None and torch.version.hip a
# version string; CUDA_HOME and torch's _find_cuda_home() find no toolkit (no nvcc).
_ROCM_CALLS = {
    "torch.cuda.is_available": True,
    "cuda.is_available": True,  # from torch import cuda
    "_find_cuda_home": None,
    "cpp_extension._find_cuda_home": None,
}
# str methods a build condition applies to an environment value (FORCE_CUDA.lower() == "1").
_STR_METHODS = frozenset({"lower", "upper", "strip", "casefold"})
_ROCM_ATTRIBUTES = {"torch.version.cuda": None, "torch.version.hip": "6.4"}
_ENV_READS = frozenset({"os.getenv", "os.environ.get", "getenv", "environ.get"})
_CONVERSIONS = {"int": int, "bool": bool, "str": str}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


class RocmBuild:
    """A small evaluator of build conditions (and/or/not, comparisons, env reads with their
    defaults, names assigned once) with the values a ROCm build has; anything else is unknown."""

    def __init__(self, tree: ast.Module) -> None:
        self._tree = tree
        self._assigned: dict[str, ast.expr] | None = None

    @property
    def assigned(self) -> dict[str, ast.expr]:
        """The module's names with the value a ROCm build gives them, found at the first test
        that reads a plain name (it walks the whole module; most tests read none)."""
        if self._assigned is None:
            counts: dict[str, int] = {}
            found: dict[str, ast.expr] = {}
            for node in walk(self._tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    counts[node.id] = counts.get(node.id, 0) + 1
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    found[node.targets[0].id] = node.value
            # A name bound more than once (or by a loop, an import, a parameter) is unknown,
            # unless the module's own top-level statements, run in order, decide its value.
            self._assigned = {k: v for k, v in found.items() if counts.get(k) == 1}
            self._run(self._tree.body)  # reads and changes the dict above
        return self._assigned

    def _run(self, statements: list[ast.stmt]) -> None:
        """Module-level flow: `X = ...` binds X; an `if` whose test a ROCm build decides runs
        its branch (`if os.getenv("FORCE_CUDA", "0") == "1": WITH_CUDA = True` does not run);
        any other statement that binds a name makes it unknown."""
        for statement in statements:
            if isinstance(statement, ast.Assign) and all(
                isinstance(t, ast.Name) for t in statement.targets
            ):
                # `BUILD_CPP = BUILD_CUDA = False` binds each name
                for target in statement.targets:
                    self.assigned[target.id] = statement.value  # type: ignore[attr-defined]
                continue
            if isinstance(statement, ast.Try):
                # The build's normal path: torch imports on a ROCm build, so the `try` body runs
                # (`from torch.utils.cpp_extension import CUDA_HOME` ... `BUILD_CUDA = ...`);
                # what a handler binds is unknown.
                self._run(statement.body)
                self._run(statement.orelse)
                for node in (n for h in statement.handlers for n in ast.walk(h)):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        self.assigned.pop(node.id, None)
                self._run(statement.finalbody)
                continue
            if isinstance(statement, ast.If):
                truth = self.truth(statement.test, cuda_home=None)
                if truth is not _UNKNOWN and truth == self.truth(statement.test, "/usr/local/cuda"):
                    self._run(statement.body if truth else statement.orelse)
                    continue
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    self.assigned.pop(node.id, None)

    def never_taken(self, test: ast.expr, body: bool) -> ast.expr | None:
        """The test (its CUDA_HOME operand where one decides it) when a ROCm build does not
        take the branch (`body`: the if-branch, else the else-branch) and a CUDA toolkit would
        change that; else None."""
        on_rocm = self.truth(test, cuda_home=None)
        with_toolkit = self.truth(test, cuda_home="/usr/local/cuda")
        if on_rocm is _UNKNOWN or on_rocm == body or with_toolkit == on_rocm:
            return None
        if isinstance(test, ast.Name) and test.id in self.assigned:
            return _requires_cuda_home(self.assigned[test.id], {}) or self.assigned[test.id]
        return _requires_cuda_home(test, {}) or test

    def env_names(self, test: ast.expr, depth: int = 0) -> list[str]:
        """The environment variables a test reads (through names assigned once)."""
        found: list[str] = []
        for node in ast.walk(test):
            if isinstance(node, ast.Call) and _dotted(node.func) in _ENV_READS and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append(first.value)
            elif isinstance(node, ast.Name) and node.id in self.assigned and depth < 4:
                found += self.env_names(self.assigned[node.id], depth + 1)
        return sorted(set(found))

    def truth(self, node: ast.expr, cuda_home: str | None) -> object:
        value = self.value(node, cuda_home, depth=0)
        return _UNKNOWN if value is _UNKNOWN else bool(value)

    def value(self, node: ast.expr, cuda_home: str | None, depth: int) -> object:
        if depth > 8:
            return _UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # `in ("1", "true")`
            items = [self.value(e, cuda_home, depth + 1) for e in node.elts]
            return _UNKNOWN if _UNKNOWN in items else tuple(items)
        if isinstance(node, ast.BoolOp):
            truths = [self.truth_at(v, cuda_home, depth) for v in node.values]
            decisive = isinstance(node.op, ast.Or)  # the value that settles `or` / `and`
            if decisive in truths:
                return decisive
            return _UNKNOWN if _UNKNOWN in truths else not decisive
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            truth = self.truth_at(node.operand, cuda_home, depth)
            return _UNKNOWN if truth is _UNKNOWN else not truth
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self.value(node.left, cuda_home, depth + 1)
            right = self.value(node.comparators[0], cuda_home, depth + 1)
            if _UNKNOWN in (left, right):
                return _UNKNOWN
            try:
                return _COMPARE[type(node.ops[0])](left, right)
            except (TypeError, KeyError):
                return _UNKNOWN
        if isinstance(node, ast.IfExp):
            truth = self.truth_at(node.test, cuda_home, depth)
            if truth is _UNKNOWN:
                return _UNKNOWN
            return self.value(node.body if truth else node.orelse, cuda_home, depth + 1)
        if isinstance(node, ast.Name):
            if node.id in _CUDA_HOME_NAMES:
                return cuda_home
            if node.id in self.assigned:
                return self.value(self.assigned[node.id], cuda_home, depth + 1)
            return _UNKNOWN
        if isinstance(node, ast.Attribute):
            if node.attr in _CUDA_HOME_NAMES:  # cpp_extension.CUDA_HOME
                return cuda_home
            return _ROCM_ATTRIBUTES.get(_dotted(node), _UNKNOWN)
        if isinstance(node, ast.Call):
            return self._call(node, cuda_home, depth)
        return _UNKNOWN

    def truth_at(self, node: ast.expr, cuda_home: str | None, depth: int) -> object:
        value = self.value(node, cuda_home, depth + 1)
        return _UNKNOWN if value is _UNKNOWN else bool(value)

    def _call(self, node: ast.Call, cuda_home: str | None, depth: int) -> object:
        name = _dotted(node.func)
        if name in _ROCM_CALLS and not node.args:
            return cuda_home if name.endswith("_find_cuda_home") else _ROCM_CALLS[name]
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _STR_METHODS and not node.args:
            value = self.value(func.value, cuda_home, depth + 1)
            return getattr(value, func.attr)() if isinstance(value, str) else _UNKNOWN
        if name in _ENV_READS and node.args and not node.keywords:
            # The build's environment: a variable is unset unless the user sets it, so the
            # read gives its default (None without one).
            default = node.args[1] if len(node.args) > 1 else None
            return None if default is None else self.value(default, cuda_home, depth + 1)
        if name in _CONVERSIONS and len(node.args) == 1 and not node.keywords:
            value = self.value(node.args[0], cuda_home, depth + 1)
            try:
                return _UNKNOWN if value is _UNKNOWN else _CONVERSIONS[name](value)
            except (TypeError, ValueError):
                return _UNKNOWN
        return _UNKNOWN


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return node.id if isinstance(node, ast.Name) else ""


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

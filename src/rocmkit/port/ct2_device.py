"""torch.cuda.is_available() choosing the GPU for a CTranslate2 engine (faster-whisper, WhisperX).

CTranslate2's installation page: the wheels `pip install ctranslate2` gets from PyPI support the
CPU and CUDA; its HIP back end (4.7) is published as GitHub release assets, not on PyPI. On a ROCm
build of torch, torch.cuda.is_available() is True (the AMD GPU answers as device "cuda"), so code
that asks torch whether to put a faster-whisper, WhisperX or CTranslate2 model on "cuda" gives
CTranslate2 a device its PyPI wheel cannot open: the model load raises. CTranslate2 answers the
question itself: ctranslate2.get_cuda_device_count() counts the GPUs its own build can use (0 for
the CUDA wheel on an AMD machine). A module that asks it, or that has a ROCm branch
(torch.version.hip), is left alone.

Only a decision that reaches an engine's device is reported, at the place that makes it:
- `"cuda" if torch.cuda.is_available() else "cpu"` given as the device, bound to a local name
  or a parameter's default that is given, or inside a function whose result is given
  (`device, compute = self._device()`): at the test;
- `WhisperModel(..., device="cuda")` inside `if torch.cuda.is_available():`, or
  `device=self.device` of a class that sets `self.device` from the test: at the engine call.
The same test choosing the device of a torch model (openai-whisper, a transformers pipeline) is
right on ROCm and not reported.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from rocmkit.port.whole_tree import argument_defaults, call_name

GATE = "is_available"
# The modules whose models run on CTranslate2 (faster-whisper and WhisperX load through it).
ENGINE_MODULES = frozenset({"faster_whisper", "ctranslate2", "whisperx"})
_ENGINE_IMPORT = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:faster_whisper|ctranslate2|whisperx)\b", re.M
)
# Where the module asks the right question, or has its own ROCm side.
_ANSWERED = ("get_cuda_device_count", "version.hip")
# The device is the second positional parameter of WhisperModel, whisperx.load_model and
# ctranslate2.Translator/Generator/Encoder (after the model).
_DEVICE_POSITION = 1


_Functions = dict[str, ast.FunctionDef | ast.AsyncFunctionDef]


class Use(NamedTuple):
    line: int
    column: int
    evidence: str


def may_have(text: str) -> bool:
    """The cheap test: an engine import and torch's availability test, no CTranslate2 answer."""
    return (
        "cuda" in text
        and bool(_ENGINE_IMPORT.search(text))
        and not any(a in text for a in _ANSWERED)
    )


def torch_chosen_devices(tree: ast.Module) -> list[Use]:
    """The places where torch's availability test picks "cuda" for a CTranslate2 engine."""
    nodes = list(ast.walk(tree))  # walked once: the tree is read four ways below
    engines, modules = _engine_names(nodes)
    if not engines and not modules:
        return []
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    functions = {f.name: f for f in nodes if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    uses: dict[int, Use] = {}
    for call in nodes:
        if not (isinstance(call, ast.Call) and _is_engine(call.func, engines, modules)):
            continue
        device = _device_argument(call)
        if device is None:
            continue
        for use in _decisions(device, call, parents, functions, tree):
            uses.setdefault(use.line, use)
    return sorted(uses.values())


def _engine_names(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """(names imported from an engine module, local names of the engine modules)."""
    engines: set[str] = set()
    modules: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in ENGINE_MODULES:
                engines.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ENGINE_MODULES:
                    modules.add(a.asname or a.name.split(".")[0])
    return engines, modules


def _is_engine(func: ast.expr, engines: set[str], modules: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in engines
    base = func
    while isinstance(base, ast.Attribute):
        base = base.value
    return isinstance(base, ast.Name) and base.id in modules and isinstance(func, ast.Attribute)


def _device_argument(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "device":
            return keyword.value
    if len(call.args) > _DEVICE_POSITION and not any(
        isinstance(a, ast.Starred) for a in call.args[: _DEVICE_POSITION + 1]
    ):
        return call.args[_DEVICE_POSITION]
    return None


def _decisions(
    device: ast.expr,
    call: ast.Call,
    parents: dict[int, ast.AST],
    functions: _Functions,
    tree: ast.Module,
) -> list[Use]:
    if _is_cuda(device):
        test = _enclosing_test(call, parents)
        return (
            [_use(call, "device 'cuda' given inside `if torch.cuda.is_available():`")]
            if test
            else []
        )
    choice = _choice(device)
    if choice is not None:
        return [_use(choice, "the device is torch's answer")]
    scope = _scope(call, parents) or tree
    if isinstance(device, ast.Name):
        return _through_name(device.id, scope, functions)
    if (
        isinstance(device, ast.Attribute)
        and isinstance(device.value, ast.Name)
        and device.value.id == "self"
    ):
        owner = _enclosing(call, parents, ast.ClassDef)
        if isinstance(owner, ast.ClassDef) and any(
            _choice(value) is not None or _returned_choices(value, functions)
            for value in _self_values(owner, device.attr)
        ):
            return [_use(device, f"self.{device.attr} is torch's answer")]
    return []


def _through_name(name: str, scope: ast.AST, functions: _Functions) -> list[Use]:
    """A local name (or a parameter) whose value is torch's choice."""
    found: list[Use] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for argument, default in argument_defaults(scope.args):
            if argument.arg == name and (choice := _choice(default)) is not None:
                found.append(_use(choice, f"parameter {name}'s default is torch's answer"))
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(_binds(t, name) for t in node.targets):
            if (choice := _choice(node.value)) is not None:
                found.append(_use(choice, f"{name} is torch's answer"))
            else:
                found += _returned_choices(node.value, functions)
        elif (
            isinstance(node, ast.If)
            and _tests_torch(node.test)
            and any(
                isinstance(s, ast.Assign)
                and any(_binds(t, name) for t in s.targets)
                and _is_cuda(s.value)
                for s in node.body
            )
        ):
            found.append(_use(node, f"{name} = 'cuda' when torch.cuda.is_available()"))
    return found


def _returned_choices(value: ast.expr, functions: _Functions) -> list[Use]:
    """The availability tests of a module function (or method) whose call gives the value and
    that returns "cuda" when torch has a GPU."""
    if not isinstance(value, ast.Call):
        return []
    function = functions.get(call_name(value.func))
    if function is None:
        return []
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.If) and _tests_torch(node.test):
            if any(
                isinstance(s, ast.Return) and s.value is not None and _holds_cuda(s.value)
                for s in node.body
            ):
                found.append(_use(node, f"{call_name(value.func)}() returns torch's answer"))
        elif (
            isinstance(node, ast.Return)
            and node.value is not None
            and (c := _choice(node.value)) is not None
        ):
            found.append(_use(c, f"{call_name(value.func)}() returns torch's answer"))
    return found


def _self_values(owner: ast.ClassDef, attribute: str) -> list[ast.expr]:
    return [
        node.value
        for node in ast.walk(owner)
        if isinstance(node, ast.Assign)
        and any(
            isinstance(t, ast.Attribute)
            and t.attr == attribute
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            for t in node.targets
        )
    ]


def _choice(value: ast.expr) -> ast.IfExp | None:
    """`"cuda" if torch.cuda.is_available() else ...` (possibly inside a tuple)."""
    if isinstance(value, ast.IfExp) and _tests_torch(value.test) and _holds_cuda(value.body):
        return value
    if isinstance(value, ast.Tuple):
        return next((c for e in value.elts if (c := _choice(e)) is not None), None)
    return None


def _tests_torch(test: ast.expr) -> bool:
    """`torch.cuda.is_available()` (any name for torch) in the test, not negated."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "is_available"
        and isinstance(n.func.value, ast.Attribute)
        and n.func.value.attr == "cuda"
        for n in ast.walk(test)
    )


def _is_cuda(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Constant)
        and isinstance(value.value, str)
        and re.fullmatch(r"cuda(?::\d+)?", value.value) is not None
    )


def _holds_cuda(value: ast.expr) -> bool:
    return _is_cuda(value) or (
        isinstance(value, ast.Tuple) and any(_is_cuda(e) for e in value.elts)
    )


def _binds(target: ast.expr, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(e, name) for e in target.elts)
    return False


def _enclosing_test(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether the node is in the body of an `if torch.cuda.is_available():`."""
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if (
            isinstance(parent, ast.If)
            and _tests_torch(parent.test)
            and any(child is s for s in parent.body)
        ):
            return True
        child, parent = parent, parents.get(id(parent))
    return False


def _enclosing(
    node: ast.AST, parents: dict[int, ast.AST], kind: type | tuple[type, ...]
) -> ast.AST | None:
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, kind):
        parent = parents.get(id(parent))
    return parent


def _scope(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST | None:
    return _enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))


def _use(node: ast.expr | ast.stmt, why: str) -> Use:
    return Use(node.lineno, node.col_offset + 1, why)

"""Python sources: one `ast.parse` per file, one walk over the tree, and only for files whose text
contains a trigger token (a file without any of them cannot hold a finding, so it is not parsed).

Code is matched on the syntax tree, never by regex: `torch.version.cuda` in a comment or a
docstring is not a finding; `subprocess.run(["nvidia-smi", "-L"])` is.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from rocmkit.port.findings import Hit, hit
from rocmkit.port.requirements import requirement_hits
from rocmkit.port.rules import Rule, RuleSet
from rocmkit.port.text_scan import ScanError

# Substrings a file must contain for each named check to be able to match.
CHECK_TRIGGERS: dict[str, tuple[str, ...]] = {
    "torch-version-cuda": ("version.cuda", "version import cuda"),
    "device-capability": ("get_device_capability",),
    "cudnn-setting": ("cudnn",),
    "cudnn-disabled": ("cudnn",),
    "warp-size-32": ("warp", "WARP", "Warp"),
    "cuda-extension": ("CUDAExtension",),
    # The flags are only looked for in extension builds, so the build markers are the trigger.
    "nvcc-flags": ("cpp_extension", "BuildExtension", "CUDAExtension"),
}
# A Python file that already has a ROCm path (it names HIP/ROCm APIs, tools or devices) gets its
# findings as info: the CUDA-only code is probably one branch of a vendor switch.
ROCM_MARKERS: tuple[str, ...] = (
    *("version.hip", "is_hip", "is_rocm", "IS_ROCM", "IS_HIP", "ROCM_HOME", "/dev/kfd"),
    *("amdsmi", "amd-smi", "rocm-smi", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"),
)
_BUILD_MARKERS = ("cpp_extension", "CUDAExtension", "BuildExtension")
_WARP_NAME = re.compile(r"(?i)^(?:\w*_)?(?:warp_?size|threads_per_warp|lanes_per_warp)$")
_NVCC_FLAG = re.compile(
    r"^(?:-gencode\b|-?-?arch=compute_\d|-arch=sm_\d|-Xptxas\b|--ptxas-options)"
)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_DISPLAY_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "log", "write"})
_REQUIREMENT_KEYWORDS = ("install_requires", "setup_requires", "extras_require")


@functools.lru_cache(maxsize=8)
def python_triggers(rules: RuleSet) -> tuple[str, ...]:
    """Every substring whose presence means a Python file may hold a finding."""
    triggers: set[str] = set(rules.imports) | set(rules.env_prefixes) | set(rules.commands)
    for rule in rules.text_rules:
        if "python" in rule.files:
            triggers.update(rule.triggers)
    for check in rules.by_check:
        triggers.update(CHECK_TRIGGERS.get(check, ()))
    # A trigger that contains another is redundant (NCCL_NVLS_ENABLE vs NCCL_): each `in` test
    # costs about half a microsecond even when it fails, and most files fail all of them.
    return tuple(sorted(t for t in triggers if not any(o != t and o in t for o in triggers)))


def scan_python(text: str, rules: RuleSet, *, is_setup: bool = False) -> tuple[list[Hit], bool]:
    """(findings, parsed?) for one Python file; raises ScanError when it does not parse."""
    if not is_setup and not any(t in text for t in python_triggers(rules)):
        return [], False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise ScanError(
            f"Python syntax error{f' at line {line}' if line else ''}; not scanned"
        ) from None
    visitor = _Visitor(rules, text, is_setup=is_setup)
    return visitor.run(tree), True


class _Visitor:
    """One pass over the tree; each node type is looked at by the checks that care about it."""

    def __init__(self, rules: RuleSet, text: str, *, is_setup: bool) -> None:
        self.rules = rules
        self.hits: list[Hit] = []
        self.rocm_aware = any(m in text for m in ROCM_MARKERS)
        self.builds_extension = any(m in text for m in _BUILD_MARKERS)
        self.is_setup = is_setup
        self.docstrings: set[int] = set()
        # Values only shown to a person (print/log arguments, f-string fields): reporting the
        # CUDA version or capability there is harmless, so those are not findings.
        self.displayed: set[int] = set()

    def run(self, tree: ast.AST) -> list[Hit]:
        # ast.walk costs ~40% more than this explicit stack (generators per node). Parents are
        # handled before their children, which the docstring bookkeeping relies on.
        handlers, node_type, stack = _HANDLERS, ast.AST, [tree]
        while stack:
            node = stack.pop()
            handler = handlers.get(type(node))
            if handler is not None:
                handler(self, node)
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    stack.extend(v for v in value if isinstance(v, node_type))
                elif isinstance(value, node_type):
                    stack.append(value)
        return self.hits

    def add(self, node: ast.AST, rule_or_check: Rule | str, evidence: str) -> None:
        rule: Rule | None = None
        if isinstance(rule_or_check, str):  # a named check: absent from a trimmed rule set
            rule = self.rules.by_check.get(rule_or_check) or self.rules.by_id.get(rule_or_check)
        else:
            rule = rule_or_check
        if rule is None:
            return
        severity = rule.severity
        if self.rocm_aware and severity != "info":
            severity, evidence = "info", evidence + "  (this file also has a ROCm path)"
        line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", -1) + 1
        self.hits.append(hit(line, column, rule, evidence, severity))

    # -- imports -------------------------------------------------------------------------------
    def visit_import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)

    def visit_import_from(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._import(node, node.module)
            if node.module == "torch.version" and any(a.name == "cuda" for a in node.names):
                self.add(node, "torch-version-cuda", "from torch.version import cuda")

    def _import(self, node: ast.AST, module: str) -> None:
        rule = self.rules.imports.get(module.split(".")[0])
        if rule is not None:
            self.add(node, rule, f"import {module}")

    # -- strings: env vars, commands, index URLs, nvcc flags ----------------------------------
    def visit_expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            self.docstrings.add(id(node.value))  # bare string statements are documentation

    def visit_constant(self, node: ast.Constant) -> None:
        value = node.value
        if not isinstance(value, str) or not value or id(node) in self.docstrings:
            return
        if (
            _ENV_NAME.match(value)
            and value[-1] != "_"
            and value.startswith(self.rules.env_prefixes)
        ):
            rule = self.rules.env_rule(value)
            if rule is not None:
                self.add(node, rule, repr(value))
        words = value.split(None, 2)
        # A command line ("nvidia-smi", "nvidia-smi -L ..."), not prose that mentions it.
        command = words[0].rsplit("/", 1)[-1] if words else ""
        if command in self.rules.commands and (len(words) == 1 or words[1].startswith("-")):
            rule = self.rules.command_rule(command)
            if rule is not None:
                self.add(node, rule, repr(value))
        for rule in self.rules.text_rules:
            if "python" in rule.files and any(t in value for t in rule.triggers):
                assert rule.pattern is not None
                if rule.pattern.search(value):
                    self.add(node, rule, repr(value))
        if self.builds_extension and _NVCC_FLAG.match(value):
            self.add(node, "nvcc-flags", repr(value))

    # -- torch.version.cuda, cudnn settings, warp size ----------------------------------------
    def visit_attribute(self, node: ast.Attribute) -> None:
        is_version_cuda = node.attr == "cuda" and _dotted(node.value) == "torch.version"
        if is_version_cuda and id(node) not in self.displayed:
            self.add(node, "torch-version-cuda", "torch.version.cuda")

    def visit_formatted_value(self, node: ast.FormattedValue) -> None:
        self.displayed.add(id(node.value))

    def visit_call(self, node: ast.Call) -> None:
        name = _call_name(node.func)
        if name in _DISPLAY_CALLS:
            self.displayed.update(id(arg) for arg in node.args)
        if name == "get_device_capability" and id(node) not in self.displayed:
            self.add(node, "device-capability", f"{_dotted(node.func)}()")
        elif name == "CUDAExtension":
            self.add(node, "cuda-extension", f"{_dotted(node.func)}(...)")
        for keyword in node.keywords:
            if keyword.arg and _WARP_NAME.match(keyword.arg) and _is_32(keyword.value):
                self.add(keyword.value, "warp-size-32", f"{keyword.arg}=32")
            if self.is_setup and keyword.arg in _REQUIREMENT_KEYWORDS:
                for constant in _requirement_strings(keyword.value):
                    self.hits.extend(
                        requirement_hits(str(constant.value), constant.lineno, self.rules)
                    )

    def visit_assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            dotted = _dotted(target)
            if ".cudnn." in f".{dotted}" and isinstance(target, ast.Attribute):
                self._cudnn(node, target.attr, node.value)
            name = target.attr if isinstance(target, ast.Attribute) else dotted
            if _WARP_NAME.match(name) and node.value is not None and _is_32(node.value):
                self.add(node, "warp-size-32", f"{name} = 32")

    def _cudnn(self, node: ast.AST, setting: str, value: ast.expr | None) -> None:
        shown = ast.unparse(value) if value is not None else "?"
        if setting == "enabled" and isinstance(value, ast.Constant) and value.value is False:
            self.add(node, "cudnn-disabled", f"cudnn.enabled = {shown}")
        elif setting in ("benchmark", "deterministic", "allow_tf32", "enabled"):
            self.add(node, "cudnn-setting", f"cudnn.{setting} = {shown}")

    def visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        pairs = list(
            zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
        )
        pairs += [
            (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
        ]
        for arg, default in pairs:
            if _WARP_NAME.match(arg.arg) and _is_32(default):
                self.add(default, "warp-size-32", f"{arg.arg}=32 (default of {node.name})")


_HANDLERS: dict[type, Callable[[_Visitor, Any], None]] = {
    ast.Import: _Visitor.visit_import,
    ast.ImportFrom: _Visitor.visit_import_from,
    ast.Expr: _Visitor.visit_expr,
    ast.Constant: _Visitor.visit_constant,
    ast.Attribute: _Visitor.visit_attribute,
    ast.Call: _Visitor.visit_call,
    ast.FormattedValue: _Visitor.visit_formatted_value,
    ast.Assign: _Visitor.visit_assign,
    ast.AnnAssign: _Visitor.visit_assign,
    ast.FunctionDef: _Visitor.visit_function,
    ast.AsyncFunctionDef: _Visitor.visit_function,
}


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for a Name/Attribute chain, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_32(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 32


def _requirement_strings(node: ast.AST) -> Iterator[ast.Constant]:
    """String constants of a list/tuple (or the values of a dict of lists) in setup(...)."""
    values: list[ast.expr] = []
    if isinstance(node, (ast.List, ast.Tuple)):
        values = list(node.elts)
    elif isinstance(node, ast.Dict):
        for value in node.values:
            if isinstance(value, (ast.List, ast.Tuple)):
                values.extend(value.elts)
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            yield value

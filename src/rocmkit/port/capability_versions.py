"""Device capabilities compared as version numbers: `version.parse(f"{p.major}.{p.minor}") >
version.parse("8.0")`, `float(f"{major}.{minor}") >= 8.0`.

On a ROCm torch `get_device_properties(d).major/.minor` and `get_device_capability()` are the gfx
numbers HIP reports (capability_features.AMD_CAPABILITIES: gfx942 -> 9.4), so a threshold written
for NVIDIA's SMs is evaluated for every AMD target as the tuple and `.major` forms are. Only a
value built from those two fields (of a name bound to get_device_properties(...) or
get_device_capability(), or the calls themselves) counts as a capability; torch's or Python's own
version (`torch.__version__`, `sys.version_info`) does not. What the branch does decides:
- it turns on PyTorch's flash SDPA backend and an AMD target without that backend (MI100, RDNA2,
  RDNA3/4 where AOTriton's flash is experimental) takes it, or no target with it does: `warn`;
- it names an NVIDIA feature (capability_features.FEATURES) an AMD target taking it lacks: `warn`;
- otherwise `info` (the comparison is shown, as other capability reads are).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from rocmkit.port import capability_features as features
from rocmkit.port import whole_tree
from rocmkit.port.rules import Severity

TRIGGERS = ("get_device_properties", "get_device_capability")
# Every form read here is a parser call (_PARSERS) whose one argument is a two-field f-string
# joined by a dot (`version.parse(f"{p.major}.{p.minor}")`, `float(f"{major:d}.{minor}")`), itself
# or through a name it is assigned to: a module whose text holds no such call has none, and
# python_scan tests these before parsing it ("}.{" first, as the cheaper test).
JOIN = "}.{"
_PARSERS = frozenset({"parse", "Version", "LooseVersion", "float"})
# The call's argument is looked for first: a search led by "(" lets `re` skip to each
# parenthesis, where one led by the names' alternation tries every position (twenty times slower
# on a large module); the parser's name is then read backwards from the parenthesis.
_FSTRING_ARGUMENT = re.compile(r"\(\s*(?:[rR]?[fF]|[fF][rR])[\"']{1,3}\{")
_PARSER_NAME_BEFORE = re.compile(r"\b(?:parse|Version|LooseVersion|float)\Z")
_LONGEST_PARSER = max(len(p) for p in _PARSERS)


def holds_parser_call(text: str) -> bool:
    """Whether the text holds `parse(`, `Version(`, `LooseVersion(` or `float(` (whitespace
    allowed before and inside the parenthesis) given an f-string that starts with a field."""
    for match in _FSTRING_ARGUMENT.finditer(text):
        end = match.start()
        while end and text[end - 1].isspace():  # `\s` is str.isspace
            end -= 1
        if _PARSER_NAME_BEFORE.search(text, max(0, end - _LONGEST_PARSER), end):
            return True
    return False


_SOURCES = frozenset({"get_device_properties", "get_device_capability"})


@dataclass(frozen=True)
class Comparison:
    line: int
    column: int
    severity: Severity
    evidence: str


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _device_names(nodes: list[ast.AST]) -> set[str]:
    """Names bound to get_device_properties(...) or get_device_capability() (or unpacked)."""
    names: set[str] = set()
    for node in nodes:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _name(node.value.func) in _SOURCES
        ):
            for target in node.targets:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                names.update(e.id for e in elements if isinstance(e, ast.Name))
    return names


def _is_capability_text(node: ast.expr, devices: set[str]) -> bool:
    """f"{p.major}.{p.minor}" / f"{major}.{minor}" / f"{cap[0]}.{cap[1]}" over a device's fields."""
    if not isinstance(node, ast.JoinedStr) or len(node.values) != 3:
        return False
    first, dot, second = node.values
    if not (
        isinstance(first, ast.FormattedValue)
        and isinstance(dot, ast.Constant)
        and dot.value == "."
        and isinstance(second, ast.FormattedValue)
    ):
        return False  # a version is major.minor; JOIN is what the text must then hold
    values = [first.value, second.value]
    for value in values:
        if isinstance(value, ast.Attribute) and value.attr in ("major", "minor"):
            base = value.value
            if not (
                (isinstance(base, ast.Name) and base.id in devices)
                or (isinstance(base, ast.Call) and _name(base.func) in _SOURCES)
            ):
                return False
        elif isinstance(value, ast.Name):
            if value.id not in devices:
                return False
        elif isinstance(value, ast.Subscript):
            if _name(value.value) not in devices and not (
                isinstance(value.value, ast.Call) and _name(value.value.func) in _SOURCES
            ):
                return False
        else:
            return False
    return True


def _parsed_capability(node: ast.expr, devices: set[str], stored: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in stored
    return (
        isinstance(node, ast.Call)
        and _name(node.func) in _PARSERS
        and len(node.args) == 1
        and _is_capability_text(node.args[0], devices)
    )


def _constant(node: ast.expr) -> float | None:
    """8.0 from `8.0`, `"8.0"` or `version.parse("8.0")`."""
    if isinstance(node, ast.Call) and _name(node.func) in _PARSERS and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        try:
            return float(node.value)
        except ValueError:
            return None
    return None


_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _compares(nodes: list[ast.AST]) -> Iterator[tuple[ast.Compare, str, float, bool]]:
    """(comparison, operator, threshold, constant on the left) of each capability version test."""
    devices = _device_names(nodes)
    stored: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and _parsed_capability(node.value, devices, set()):
            stored.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in nodes:
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        op = _OPS.get(type(node.ops[0]))
        left, right = node.left, node.comparators[0]
        if op is None:
            continue
        if _parsed_capability(left, devices, stored) and (value := _constant(right)) is not None:
            yield node, op, value, False
        elif _parsed_capability(right, devices, stored) and (value := _constant(left)) is not None:
            yield node, op, value, True


def _branches(nodes: list[ast.AST]) -> dict[int, list[ast.stmt]]:
    """id(comparison) -> the body of the `if` whose test holds it."""
    bodies: dict[int, list[ast.stmt]] = {}
    for node in nodes:
        if isinstance(node, ast.If):
            for inner in ast.walk(node.test):
                bodies[id(inner)] = node.body
    return bodies


def _verdict(op: str, threshold: float, left: bool, body: list[ast.stmt]) -> tuple[Severity, str]:
    taken = features.passing(op, threshold, left, False)
    if body and features.turns_on_sdpa_flash(body):
        taken = features.holding(op, threshold, left)  # the targets that run the body
        without = [t for t in taken if t not in features.SDPA_FLASH_TARGETS]
        if without:
            return "warn", (
                "turns on SDPA's flash backend for AMD GPUs without it: " + features.shown(without)
            )
        if not set(taken) & features.SDPA_FLASH_TARGETS:
            return "warn", "turns on SDPA's flash backend only for NVIDIA chips"
    words = [ast.unparse(s) for s in body]
    feature = features.named_feature([], words) if body else None
    lacking = features.lacking(feature, taken) if feature else []
    if feature is not None and lacking:
        return "warn", f"{feature.name} branch, taken without it by {features.shown(lacking)}"
    return "info", f"taken by {features.shown(taken) or 'no AMD GPU'}"


def version_comparisons(tree: ast.Module) -> list[Comparison]:
    """Capability tests written through version parsing, each with its verdict."""
    nodes = whole_tree.walk(tree)  # one walk of the module, shared with the other passes
    found = []
    compares = list(_compares(nodes))
    bodies = _branches(nodes) if compares else {}
    for compare, op, threshold, left in compares:
        severity, why = _verdict(op, threshold, left, bodies.get(id(compare), []))
        evidence = f"{ast.unparse(compare)[:90]}  (a capability as a version: {why})"
        found.append(Comparison(compare.lineno, compare.col_offset + 1, severity, evidence))
    return found

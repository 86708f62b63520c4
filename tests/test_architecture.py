"""The import rules of docs/architecture.md ("Boundaries"), read from the code with `ast`, so a
change that breaks one fails here instead of in a review."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import rocmkit

PACKAGE = Path(rocmkit.__file__).resolve().parent
CAPABILITIES = {
    "doctor",
    "hipify",
    "train",
    "bench",
    "infer",
    "profile",
    "port",
    "jaxtrain",
    "report",
}
# Where a capability uses another beyond its public package (docs/architecture.md says why).
ALLOWED_INTERNALS = {
    ("jaxtrain", "train"),  # train's JAX backend shares its config, data, models and metrics
    ("bench", "jaxtrain.bench"),  # what bench's train-precision suite asks of the JAX backend
    ("report", "profile.estimator"),  # the memory chart reads a MemoryEstimate
    ("report", "profile.summary"),  # the profile view formats a saved trace summary
    ("profile", "report.memory_chart"),  # `profile memory --plot`: only report draws
    ("train", "profile.fit"),  # the memory-fit warning before a training run
    ("bench", "train.shortcuts"),  # the one table of short train flags (--micro-batch ...)
    ("profile", "train.shortcuts"),
}
# Files that may print: the command line, the driver, the consoles, and the report renderers.
# doctor/probe.py is the script of a child process; its stdout is the pipe its parent reads.
PRINTERS = {"driver.py", "console.py", "doctor/probe.py"}


@cache
def _imports() -> dict[str, set[str]]:
    """Each module (path relative to the package) -> the rocmkit modules it imports, anywhere."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[path.relative_to(PACKAGE).as_posix()] = names
    return found


def _owner(relative: str) -> str:
    return relative.split("/")[0] if "/" in relative else relative.removesuffix(".py")


def _violations(owner: str, forbidden: set[str]) -> list[str]:
    return [
        f"{module} imports {name}"
        for module, names in _imports().items()
        if _owner(module) == owner
        for name in names
        if name.startswith("rocmkit.") and name.split(".")[1] in forbidden
    ]


@pytest.mark.parametrize("lower", ["platform", "measure"])
def test_the_lower_layers_know_no_capability(lower: str) -> None:
    upper = CAPABILITIES | {"cli", "driver", "runs"}
    if lower == "platform":
        upper |= {"measure"}
    assert _violations(lower, upper) == []


@pytest.mark.parametrize("core", ["errors", "atomic", "results", "config", "options", "lazy"])
def test_the_core_modules_know_no_capability(core: str) -> None:
    assert _violations(core, CAPABILITIES | {"cli", "driver", "measure", "platform"}) == []


def test_capabilities_use_each_other_only_through_their_public_package() -> None:
    bad = []
    for module, names in _imports().items():
        owner = _owner(module)
        if owner not in CAPABILITIES:
            continue
        for name in names:
            parts = name.split(".")
            if len(parts) < 2 or parts[0] != "rocmkit" or parts[1] == owner:
                continue
            if parts[1] in CAPABILITIES and len(parts) > 2:
                inner = ".".join(parts[1:])
                if not any(
                    owner == o and (inner == t or inner.startswith(t + "."))
                    for o, t in ALLOWED_INTERNALS
                ):
                    bad.append(f"{module} imports {name}")
    assert bad == []


def test_hipify_never_imports_torch() -> None:
    bad = [
        module
        for module, names in _imports().items()
        if module.startswith("hipify/") and module != "hipify/fold.py"
        if any(n == "torch" or n.startswith("torch.") for n in names)
    ]
    assert bad == []


def _calls(path: Path, names: set[str]) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ]


def test_only_the_command_line_driver_and_report_print() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(("cli/", "report/")) or relative in PRINTERS:
            continue
        bad += [f"{relative}:{line}" for line in _calls(path, {"print"})]
    assert bad == []


def test_cli_modules_only_declare_arguments() -> None:
    """cli/ parses; the driver runs, saves and prints (main.py prints the one-line errors)."""
    bad = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        if path.name == "main.py":
            continue
        bad += [f"cli/{path.name}:{line}" for line in _calls(path, {"print", "make_console"})]
        names = _imports()[f"cli/{path.name}"]
        bad += [f"cli/{path.name} imports {n}" for n in names if n in ("rocmkit.runs",)]
    assert bad == []

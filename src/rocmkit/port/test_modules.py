"""Values written into a project's tests: test data, not what a user runs.

pytest collects `test_*.py` and `*_test.py` files (its default `python_files`), reads fixtures
from `conftest.py`, and by convention finds them under a `tests/` or `test/` folder (pytest's
"Good Integration Practices"). In those files a Kubernetes resource name, an ONNX Runtime provider
list, a wheel index URL, an out-of-memory message, an ffmpeg encoder name, a container's NVIDIA
variable, a CUDA image's name or a CDI device name is what a test feeds to
the code under test or expects back from it (`assert limits == {"nvidia.com/gpu": 1}`): a ROCm
user never runs it, and the project's own code, where the value comes from, is scanned anyway.
Such findings are kept at info. So is a tool's name a test only hands around (a fake path for
`shutil.which`, a patched `subprocess.run`'s expected argument, an exception's message): a test
starts a program only by giving it to a process launch (`subprocess.run(["nvidia-smi", ...])`,
`os.system("nvidia-smi")`). Calls and imports in tests stay as they are: an NVIDIA-only import or
an nvidia-smi run in a test is still a test that fails on an AMD machine.
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath

from rocmkit.port.findings import Hit, demoted

# pytest's defaults (docs: "Changing naming conventions", python_files) and its plugin file
_TEST_FILES = ("test_*.py", "*_test.py", "conftest.py")
_TEST_DIRS = frozenset({"tests", "test"})
# Checks and rules whose finding is a value written in the code rather than a call or an import:
# a test's fixture or expected output when it sits in a test module.
VALUE_CHECKS = frozenset(
    {"container-gpu-request", "ort-nvidia-provider", "cuda-oom-message", "ffmpeg-nvidia-codec"}
)
VALUE_RULES = frozenset(
    {"torch-cuda-index", "cuda-wheel-index", "docker-gpus"}
    # a container's NVIDIA variables, a CUDA image's name, a CDI device name: what a test sets
    # up or expects a deployer to write (session twenty-one)
    | {"nvidia-container-env", "cuda-image", "cdi-nvidia-device"}
    # nvcc's own flags a test compares against or builds a test kernel with (session thirty: the
    # seen lists name none of the 27 such lines a hazard); the project's build is scanned anyway
    | {"nvcc-only-flags"}
)
NOTE = "a value in the project's tests (test data): a ROCm user never runs it"


def is_test_file(rel: str) -> bool:
    """Whether `rel` ('/'-separated) is a test module by pytest's conventions, or any file in a
    tests/ or test/ folder (fixtures, golden outputs)."""
    folders = rel.split("/")[:-1]
    if any(part.lower() in _TEST_DIRS for part in folders):
        return True
    name = posixpath.basename(rel)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _TEST_FILES)


# What starts a process from its first argument (subprocess's and os's launchers)
_LAUNCHERS = frozenset(
    {"run", "Popen", "call", "check_call", "check_output", "system", "popen", "getoutput"}
    | {"getstatusoutput", "create_subprocess_exec", "create_subprocess_shell"}
)


def demote_test_values(rel: str, hits: list[Hit], text: str = "") -> list[Hit]:
    """`hits` of a file, with the values a test module holds kept at info (`text`: the file's
    text, read for the tool names a Python test only hands around)."""
    if not hits or not is_test_file(rel):
        return hits
    launched: set[int] | None = None
    out = []
    for h in hits:
        value = _is_value(h)
        if not value and h.severity != "info" and h.rule.commands and rel.endswith(".py"):
            if launched is None:
                launched = _launch_lines(text)
            value = h.line not in launched
        out.append(demoted(h, "info", NOTE) if value else h)
    return out


def _is_value(h: Hit) -> bool:
    return h.severity != "info" and (h.rule.check in VALUE_CHECKS or h.rule.id in VALUE_RULES)


def _launch_lines(text: str) -> set[int]:
    """The lines of every process launch and of the strings it gets as its command (the first
    argument, an item of it, what a name or default argument it gets was given): a command
    finding nvml_query moved to its launch sits on the launch's line. Every line when the module
    cannot be parsed (nothing is demoted then)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set(range(1, text.count("\n") + 2))
    commands: list[ast.expr] = []  # what launches get, and what names they get were given
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and _callee(node.func) in _LAUNCHERS:
            commands.append(node.args[0])
            lines.add(node.lineno)
    names = {c.id for c in commands if isinstance(c, ast.Name)}
    if names:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                    commands.append(node.value)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args.posonlyargs + node.args.args
                for arg, default in zip(arguments[::-1], node.args.defaults[::-1], strict=False):
                    if arg.arg in names:
                        commands.append(default)  # def nvidia_smi(cmd="nvidia-smi"): run(cmd)
    for command in commands:
        for leaf in ast.walk(command):
            if isinstance(leaf, (ast.Constant, ast.JoinedStr)):
                lines.update(range(leaf.lineno, (leaf.end_lineno or leaf.lineno) + 1))
    return lines


def _callee(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")

"""GPU requests for containers and clusters written in Python, judged by who can serve them.

Docker serves a device request through a registered device driver (moby daemon/nvidia_linux.go,
amd_linux.go): the `nvidia` driver has the capabilities gpu, nvidia and NVIDIA's driver
capabilities (compute, compat32, graphics, utility, video, display: containerd contrib/nvidia);
the `amd` driver, registered only where the AMD container runtime is installed and NVIDIA's hook
is not, has gpu and amd. A request is a list of alternatives, each a list of capabilities all of
which one driver must have. So `capabilities=[["gpu"]]` (what `docker run --gpus` sends) can be
served on an AMD host that has the AMD Container Toolkit, while `[["compute", "utility"]]` or
`driver="nvidia"` can only be served by NVIDIA's stack. In Kubernetes, `nvidia.com/gpu` is the
extended resource NVIDIA's device plugin advertises; AMD's plugin advertises `amd.com/gpu`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_NVIDIA_ONLY_CAPABILITIES = frozenset(
    {"nvidia", "compute", "compat32", "graphics", "utility", "video", "display"}
)
_AMD_DRIVER_CAPABILITIES = frozenset({"gpu", "amd"})
NVIDIA_RESOURCE = "nvidia.com/gpu"
AMD_RESOURCE = "amd.com/gpu"
# docker run / docker create (and `docker container run`): where --gpus is docker's option.
_DOCKER_SUBCOMMANDS = frozenset({"run", "create"})


def device_request_verdict(call: ast.Call) -> str | None:
    """Why a DeviceRequest(...) can be served only by NVIDIA's container stack, or None when an
    AMD driver could serve it (or the request is not written out as constants)."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    driver = keywords.get("driver")
    if isinstance(driver, ast.Constant) and driver.value == "nvidia":
        return "DeviceRequest(driver='nvidia'): served only by the NVIDIA container toolkit"
    alternatives = _capability_sets(keywords.get("capabilities"))
    if not alternatives:
        return None
    if any(set(a) <= _AMD_DRIVER_CAPABILITIES for a in alternatives):
        return None  # the amd driver can serve it (with the AMD Container Toolkit)
    shown = [sorted(set(a) & _NVIDIA_ONLY_CAPABILITIES) or a for a in alternatives]
    return f"DeviceRequest(capabilities={alternatives}): {shown} are NVIDIA driver capabilities"


def _capability_sets(node: ast.AST | None) -> list[list[str]]:
    """[["compute", "utility"]] written as constants -> the lists; anything else -> []."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return []
    sets: list[list[str]] = []
    for inner in node.elts:
        if not isinstance(inner, (ast.List, ast.Tuple)):
            return []
        values = [e.value for e in inner.elts if isinstance(e, ast.Constant)]
        if len(values) != len(inner.elts) or not all(isinstance(v, str) for v in values):
            return []
        sets.append([str(v) for v in values])
    return sets


def docker_argv_gpus(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Constant]:
    """The "--gpus" items appended to a docker run/create argv that a function builds in a name
    (`cmd = ["docker", "run", ...]`, then `cmd += ["--gpus", "all"]` or cmd.extend/append)."""
    argv_names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and _is_docker_run(node.value):
            argv_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            yield from _gpus_items(node.value)
    if not argv_names:
        return
    for node in ast.walk(function):
        added: list[ast.expr] = []
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in argv_names
        ):
            added = [node.value]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "insert")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in argv_names
        ):
            added = list(node.args)
        for value in added:
            yield from _gpus_items(value)


def _is_docker_run(node: ast.AST) -> bool:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return False
    words = [e.value for e in node.elts[:3] if isinstance(e, ast.Constant)]
    if not words or not isinstance(words[0], str) or words[0].rsplit("/", 1)[-1] != "docker":
        return False
    rest = [w for w in words[1:] if w != "container"]
    return bool(rest) and rest[0] in _DOCKER_SUBCOMMANDS


def _gpus_items(value: ast.expr) -> Iterator[ast.Constant]:
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    for item in items:
        if (
            isinstance(item, ast.Constant)
            and isinstance(item.value, str)
            and (item.value == "--gpus" or item.value.startswith("--gpus="))
        ):
            yield item

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


def docker_client_gpus(tree: ast.Module) -> Iterator[ast.Constant]:
    """The GPU requests given to a Python docker client's `run`/`create` as `gpus=` (the
    python-on-whales API: `docker.run(image, gpus="all")` is `docker run --gpus all`): the string
    itself, or, where `gpus=` is a parameter of the function that calls the client, each string
    the module passes for that parameter (`_docker_run("all" if use_gpu else None)`)."""
    parameters: dict[str, tuple[int, str]] = {}  # function -> (position, name) of its gpus
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [a.arg for a in function.args.args]
        for node in ast.walk(function):
            value = _client_gpus(node)
            if isinstance(value, ast.Name) and value.id in names:
                parameters[function.name] = (names.index(value.id), value.id)
    for node in ast.walk(tree):
        value = _client_gpus(node)
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
            yield value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            position, name = parameters.get(node.func.id, (-1, ""))
            given = [k.value for k in node.keywords if k.arg == name]
            if 0 <= position < len(node.args):
                given.append(node.args[position])
            for argument in given:
                yield from (
                    c
                    for c in ast.walk(argument)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value
                )


def _client_gpus(node: ast.AST) -> ast.expr | None:
    """The `gpus=` value of a call `<...docker...>.run(...)`/`.create(...)`, else None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("run", "create")
        and "docker" in ast.unparse(node.func.value).lower()
    ):
        return None
    return next((k.value for k in node.keywords if k.arg == "gpus"), None)

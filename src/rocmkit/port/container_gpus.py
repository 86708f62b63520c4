"""GPU requests for containers and clusters written in Python, judged by who can serve them.

Docker serves a device request through a registered device driver (moby daemon/nvidia_linux.go,
amd_linux.go): the `nvidia` driver has the capabilities gpu, nvidia and NVIDIA's driver
capabilities (compute, compat32, graphics, utility, video, display: containerd contrib/nvidia);
the `amd` driver, registered only where the AMD container runtime is installed and NVIDIA's hook
is not, has gpu and amd. A request is a list of alternatives, each a list of capabilities all of
which one driver must have. So `capabilities=[["gpu"]]` (what `docker run --gpus` sends) can be
served on an AMD host that has the AMD Container Toolkit, while `[["compute", "utility"]]` or
`driver="nvidia"` can only be served by NVIDIA's stack; the plain `[["gpu"]]` is reported as
docker-gpus, as `--gpus` on a command line is (an AMD host serves it only with that toolkit,
`--runtime=amd`). A compose device reservation that a project writes as a Python dict names
its driver the same way (`"driver": "nvidia"`). In Kubernetes, `nvidia.com/gpu` is the
extended resource NVIDIA's device plugin advertises; AMD's plugin advertises `amd.com/gpu`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

_NVIDIA_ONLY_CAPABILITIES = frozenset(
    {"nvidia", "compute", "compat32", "graphics", "utility", "video", "display"}
)
_AMD_DRIVER_CAPABILITIES = frozenset({"gpu", "amd"})
NVIDIA_RESOURCE = "nvidia.com/gpu"
AMD_RESOURCE = "amd.com/gpu"
# The fields of the Kubernetes objects where a resource name is read or written (the core/v1 API):
# a container's resources.limits (an extended resource such as nvidia.com/gpu must have a limit:
# its request defaults to it and cannot differ), a node's status.capacity / allocatable, a pod's
# nodeSelector, tolerations and affinity matchExpressions; the apiVersion of every object, and
# the official Python client's model classes (V1Pod, V1ResourceRequirements: kubernetes.client).
_KUBERNETES_FIELDS = re.compile(
    r"limits|capacity|allocatable|node_?[sS]elector|tolerations|match_?[eE]xpressions"
    r"|apiVersion|\bV1[A-Z][a-z]"
)
# docker run / docker create (and `docker container run`): where --gpus is docker's option.
_DOCKER_SUBCOMMANDS = frozenset({"run", "create"})


def speaks_kubernetes(text: str) -> bool:
    """Whether a module names a field of the Kubernetes objects that hold resource names: where
    none is named, `nvidia.com/gpu` is a name of the project's own (a key of its resource
    config), and what fails on AMD is how it finds the GPUs, judged where it does."""
    return _KUBERNETES_FIELDS.search(text) is not None


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


# Compose's device reservation (compose-spec deploy.md, "devices": capabilities, driver, count,
# device_ids, options) written out as a Python dict, as a project that generates its compose files
# writes it: `{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}`. `driver: nvidia` asks
# for NVIDIA's container driver by name, which no AMD host has (the same reservation in a compose
# file is compose-nvidia's); AMD GPUs are given to a compose service as devices (/dev/kfd, /dev/dri).
COMPOSE_DRIVER_TRIGGERS = ('"driver": "nvidia"', "'driver': 'nvidia'")
_RESERVATION_FIELDS = frozenset({"capabilities", "count", "device_ids"})


def compose_nvidia_driver(node: ast.Dict) -> ast.Constant | None:
    """The "nvidia" of a compose device reservation dict naming NVIDIA's driver (with one of the
    reservation's other fields, so a dict of the project's own that has a "driver" key is not
    one), else None."""
    fields = {
        k.value: v
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }
    driver = fields.get("driver")
    if (
        isinstance(driver, ast.Constant)
        and driver.value == "nvidia"
        and (_RESERVATION_FIELDS & fields.keys())
    ):
        return driver
    return None


def nvidia_runtime(value: ast.AST | None) -> bool:
    """Whether a docker SDK `runtime=` value is (or may be) "nvidia": the runtime the NVIDIA
    Container Toolkit registers with dockerd (docker SDK: containers.run(runtime=...), "Runtime to
    use with this container"); AMD's toolkit registers "amd". An `"nvidia" if gpus else None`
    chooses it for every GPU."""
    if isinstance(value, ast.IfExp):
        return nvidia_runtime(value.body) or nvidia_runtime(value.orelse)
    return isinstance(value, ast.Constant) and value.value == "nvidia"


def speaks_docker(text: str) -> bool:
    """Whether a module drives docker through its SDK (the runtime keyword is the SDK's)."""
    return "docker" in text and ("containers." in text or "import docker" in text)


def plain_gpus_request(call: ast.Call) -> str | None:
    """A DeviceRequest(...) that asks for what `docker run --gpus` asks (`capabilities=[["gpu"]]`,
    no driver): an AMD host serves it only where the AMD Container Toolkit registered its driver,
    so it is the docker-gpus hazard, as `--gpus` written on a command line is."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if "driver" in keywords:
        return None
    alternatives = _capability_sets(keywords.get("capabilities"))
    if alternatives and all(set(a) == {"gpu"} for a in alternatives):
        return f"DeviceRequest(capabilities={alternatives}): docker run --gpus"
    return None


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
        elif (
            isinstance(node, ast.Call)
            and node.args
            and _is_docker_run(node.args[0])
            and not _starts_with_text(node.args[0])
        ):
            # run([shutil.which("docker"), "run", "--gpus", "all", ...]) handed straight to a
            # launch (an argv that starts with the text "docker" is read as a command line)
            yield from _gpus_items(node.args[0])
    if not argv_names:
        return
    for node in ast.walk(function):
        target, added = list_additions(node)
        if target in argv_names:
            for value in added:
                yield from _gpus_items(value)


def _starts_with_text(argv: ast.expr) -> bool:
    elts = argv.elts if isinstance(argv, (ast.List, ast.Tuple)) else []
    return bool(elts) and isinstance(elts[0], ast.Constant) and isinstance(elts[0].value, str)


def list_additions(node: ast.AST) -> tuple[str | None, list[ast.expr]]:
    """What a statement or call adds to a list, and the list's name when it is a plain name:
    `x += [...]` and `x.append(...)`, `x.extend(...)`, `x.insert(...)`."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        return (node.target.id if isinstance(node.target, ast.Name) else None), [node.value]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "extend", "insert")
    ):
        receiver = node.func.value
        return (receiver.id if isinstance(receiver, ast.Name) else None), list(node.args)
    return None, []


def names_docker(text: str) -> bool:
    """Whether a module speaks of docker anywhere, in a name too (`docker_mem_bytes`, a module
    of the `_docker` package), or of podman, whose run takes docker's options. (One lower-cased
    copy and two substring tests: a case-insensitive regex has no literal to skip to and was
    tried at every character, 2 ms for a large module.)"""
    low = text.lower()
    return "docker" in low or "podman" in low


def docker_option_gpus(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> Iterator[ast.Constant]:
    """In a module that speaks of docker: the "--gpus" that opens an option pair added to an
    argument list (`cmd_args += ["--gpus", self.gpus]`, `options.extend(["--gpus", n])`), the
    argv of a `docker run` another function completes (docker run's own option)."""
    for node in ast.walk(function):
        for value in list_additions(node)[1]:
            if isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) == 2:
                yield from _gpus_items(value.elts[0])


# Commands that run the command named after them (sudo(8): `sudo [options] command`; env(1):
# `env [NAME=VALUE]... command`; nohup, time, exec the same): the argv is that command's.
_COMMAND_WRAPPERS = frozenset({"sudo", "env", "nohup", "time", "exec", "command"})


def _is_docker_run(node: ast.AST) -> bool:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return False
    words: list[str] = []
    for element in node.elts[:8]:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            words += element.value.split()  # ["docker run", "--gpus all"]: a command's pieces
        elif not words and (_DOCKER_BINARY.match(_last_name(element)) or _found_docker(element)):
            # [docker_exe, "run", ...], [_docker(), "run", ...], [shutil.which("docker"), ...]:
            # the docker binary, found earlier or by the call
            words.append("docker")
        else:
            break
    start = 0  # past the wrappers, their options (-E, -n) and env's NAME=VALUE settings
    while start < len(words) and words[start].rsplit("/", 1)[-1] in _COMMAND_WRAPPERS:
        start += 1
        while start < len(words) and (words[start].startswith("-") or "=" in words[start]):
            start += 1
    words = words[start:]
    if not words or words[0].rsplit("/", 1)[-1] != "docker":
        return False
    rest = [w for w in words[1:3] if w != "container"]
    return bool(rest) and rest[0] in _DOCKER_SUBCOMMANDS


# A name that holds the docker (or podman) executable: docker_exe, DOCKER_BIN, self.docker_path.
_DOCKER_BINARY = re.compile(r"(?i)^_*(?:docker|podman)(?:_?(?:exe|bin|binary|path|cmd|command))?$")


def _found_docker(node: ast.AST) -> bool:
    """A call that finds or names the docker binary: `_docker()`, `self.docker_path()`,
    `shutil.which("docker")`."""
    if not isinstance(node, ast.Call):
        return False
    if _DOCKER_BINARY.match(_last_name(node.func)):
        return True
    return (
        _last_name(node.func) == "which"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in ("docker", "podman")
    )


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _gpus_items(value: ast.expr) -> Iterator[ast.Constant]:
    """The "--gpus" items of an argv (or of what is added to one), and a "--runtime" item whose
    next item is "nvidia" (docker's options take their value as the next argument too)."""
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    for item, after in zip(items, [*items[1:], None], strict=True):
        if not isinstance(item, ast.Constant) or not isinstance(item.value, str):
            continue
        gpus = item.value == "--gpus" or item.value.startswith(("--gpus=", "--gpus "))
        runtime = (
            item.value == "--runtime"
            and isinstance(after, ast.Constant)
            and after.value == "nvidia"
        )
        if gpus or runtime:
            yield item


def docker_client_gpus(tree: ast.Module) -> Iterator[ast.Constant]:
    """The GPU requests given to a Python docker client's `run`/`create` as `gpus=` (the
    python-on-whales API: `docker.run(image, gpus="all")` is `docker run --gpus all`): the string
    itself, or, where `gpus=` is a parameter of the function that calls the client, each string
    the module passes for that parameter (`_docker_run("all" if use_gpu else None)`)."""
    requests: list[ast.expr] = []  # each client call's gpus= value, in walk order
    calls: list[tuple[ast.Call, str]] = []  # calls of a function by name: may pass the request
    for node in ast.walk(tree):
        value = _client_gpus(node)
        if value is not None:
            requests.append(value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.append((node, node.func.id))
    yield from (v for v in requests if isinstance(v, ast.Constant) and _nonempty(v.value))
    given_by_name = {v.id for v in requests if isinstance(v, ast.Name)}
    if not given_by_name:
        return
    parameters: dict[str, tuple[int, str]] = {}  # function -> (position, name) of its gpus
    for function in ast.walk(tree):  # only a function with such a parameter can be handed one
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [a.arg for a in function.args.args]
        if given_by_name.isdisjoint(names):
            continue
        for node in ast.walk(function):
            value = _client_gpus(node)
            if isinstance(value, ast.Name) and value.id in names:
                parameters[function.name] = (names.index(value.id), value.id)
    for call, called in calls:
        position, name = parameters.get(called, (-1, ""))
        given = [k.value for k in call.keywords if k.arg == name]
        if 0 <= position < len(call.args):
            given.append(call.args[position])
        for argument in given:
            yield from (
                c for c in ast.walk(argument) if isinstance(c, ast.Constant) and _nonempty(c.value)
            )


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _client_gpus(node: ast.AST) -> ast.expr | None:
    """The `gpus=` value of a call `<...docker...>.run(...)`/`.create(...)`, else None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("run", "create")
    ):
        return None
    value = next((k.value for k in node.keywords if k.arg == "gpus"), None)
    if value is None or "docker" not in ast.unparse(node.func.value).lower():
        return None
    return value


# A shell variable set to a docker binary (`DOCKER_BINARY="nvidia-docker"`) or to docker options
# (`CUDA_ENV=" --gpus all "`), both read where the script runs `${DOCKER_BINARY} run ... ${CUDA_ENV}`.
_SHELL_ASSIGN = re.compile(r"^\s*(?:export\s+|local\s+)?([A-Za-z_]\w*)\+?=(.*)$")
_SHELL_REFERENCE = re.compile(r"\$\{?([A-Za-z_]\w*)")
_SUDO = frozenset({"sudo", "exec", "command"})
# nvidia-docker (NVIDIA's wrapper of docker) runs every container with the NVIDIA runtime, and
# `--runtime=nvidia` names it: both give a GPU through NVIDIA's container stack only.
_NVIDIA_DOCKER = "nvidia-docker"
_NVIDIA_RUNTIME = re.compile(r"--runtime[=\s]+nvidia\b")
_GPUS_WORD = re.compile(r"(?<![\w-])--gpus(?:[=\s]|$)")


def names_nvidia_runtime(value: str) -> bool:
    """Whether a string is docker's option selecting NVIDIA's runtime (`--runtime=nvidia`)."""
    return value.startswith("--runtime") and bool(_NVIDIA_RUNTIME.match(value))


def names_amd_devices(text: str) -> bool:
    """Whether a file passes AMD's GPU devices or runtime to a container too."""
    return "/dev/kfd" in text or "--runtime=amd" in text


def shell_docker_gpus(text: str) -> list[tuple[int, str]]:
    """(line, why) for each NVIDIA-only GPU request that a shell script passes to `docker run`
    through a variable (an option string or the docker binary, nvidia-docker), or as
    `--runtime=nvidia` / `nvidia-docker run`; none where the script also passes AMD's devices."""
    if names_amd_devices(text):
        return []  # the script gives AMD GPUs a container too: one vendor's side
    lines = command_lines(text)
    values: dict[str, list[tuple[int, str]]] = {}
    for number, line in lines:
        match = _SHELL_ASSIGN.match(line)
        if match:
            values.setdefault(match.group(1), []).append((number, match.group(2).strip("'\" ")))
    binaries = {
        name
        for name, assigned in values.items()
        if any(_program(v) in ("docker", _NVIDIA_DOCKER) for _, v in assigned)
    }
    found: list[tuple[int, str]] = []
    for number, line in lines:
        words = line.split()
        while words and words[0] in _SUDO:
            words = words[1:]
        if len(words) < 2 or words[1] not in _DOCKER_SUBCOMMANDS | {"container"}:
            continue
        program = words[0]
        variable = _SHELL_REFERENCE.match(program)
        if not (
            _program(program) in ("docker", _NVIDIA_DOCKER)
            or (variable and variable.group(1) in binaries)
        ):
            continue
        if _program(program) == _NVIDIA_DOCKER:
            found.append((number, f"{_NVIDIA_DOCKER} run (NVIDIA's docker wrapper)"))
        if _NVIDIA_RUNTIME.search(line):
            found.append((number, "docker run --runtime=nvidia (NVIDIA's container runtime)"))
        options = " ".join(_option_words(words[2:], values))
        for name in {m.group(1) for m in _SHELL_REFERENCE.finditer(options)}:
            for at, value in values.get(name, []):
                if _GPUS_WORD.search(value) or _NVIDIA_RUNTIME.search(value):
                    found.append((at, f"{name}={value!r}, passed to docker run at line {number}"))
        if variable and variable.group(1) in binaries:
            for at, value in values[variable.group(1)]:
                if _program(value) == _NVIDIA_DOCKER:
                    found.append((at, f"{value} (NVIDIA's docker wrapper) runs line {number}"))
    return sorted(set(found))


# docker run's options that take no value (docker's `run` reference); every other option takes one.
_DOCKER_RUN_FLAGS = frozenset(
    {"--rm", "--privileged", "--init", "--read-only", "--interactive", "--tty", "--detach"}
    | {"--no-healthcheck", "--oom-kill-disable", "--sig-proxy", "--disable-content-trust"}
)


def _option_words(words: list[str], values: dict[str, list[tuple[int, str]]]) -> list[str]:
    """The words of `docker run`'s own options (up to the image): a variable counts as options
    when every value the script gives it is empty or starts with an option (`CUDA_ENV=" --gpus all "`);
    any other word that is not an option or an option's value is the image."""
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        reference = _SHELL_REFERENCE.match(word.lstrip('"'))
        if word.startswith("-"):
            short_flags = len(word) > 1 and word[1] != "-" and set(word[1:]) <= set("itd")
            takes_value = not ("=" in word or word in _DOCKER_RUN_FLAGS or short_flags)
            kept += words[index : index + 1 + takes_value]
            index += 1 + takes_value
        elif reference:
            assigned = values.get(reference.group(1), [])
            if not assigned or not all(v.lstrip()[:1] in ("", "-") for _, v in assigned):
                break  # the image (or the command) held in a variable
            kept.append(word)
            index += 1
        else:
            break
    return kept


def _program(word: str) -> str:
    return word.split()[0].rsplit("/", 1)[-1] if word.split() else ""


def command_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each shell command line, backslash continuations joined and
    comment lines left out (a comment ends at its newline, backslash or not)."""
    joined: list[tuple[int, str]] = []
    start, parts = 0, list[str]()
    for number, line in enumerate(text.splitlines(), 1):
        if not parts:
            if line.lstrip().startswith("#"):
                continue
            start = number
        parts.append(line.rstrip().removesuffix("\\"))
        if not line.rstrip().endswith("\\"):
            joined.append((start, " ".join(parts)))
            parts = []
    if parts:
        joined.append((start, " ".join(parts)))
    return joined


# Apptainer (formerly Singularity) gives a container the host's GPU only when asked: `--nv` (or
# `--nvccli`, through nvidia-container-cli) binds NVIDIA's devices and driver libraries, `--rocm`
# binds /dev/kfd, /dev/dri and the ROCm libraries (apptainer.org, "GPU Support"). The
# APPTAINER_NV / SINGULARITY_NV variables set to 1 do what --nv does. On an AMD host --nv binds
# nothing and the container starts without a GPU.
_APPTAINER = frozenset({"apptainer", "singularity"})
_APPTAINER_RUNS = frozenset({"exec", "run", "shell", "test", "instance"})
NV_OPTIONS = frozenset({"--nv", "--nvccli"})
_NV_VARIABLE = re.compile(
    r"(?<![\w])(?:APPTAINER|SINGULARITY)_NV(?:CCLI)?=['\"]?(?:1|true|yes)\b", re.I
)


def names_apptainer(text: str) -> bool:
    """Whether a file names Apptainer or Singularity (the program that reads --nv)."""
    low = text.lower()
    return "apptainer" in low or "singularity" in low


def names_rocm_flag(text: str) -> bool:
    """Whether a file also asks Apptainer for AMD's GPUs (--rocm, or APPTAINER_ROCM=1)."""
    return "--rocm" in text or "_ROCM=1" in text


def apptainer_run_in_string(value: str) -> str:
    """The Apptainer/Singularity run with NVIDIA's GPU binding that a command line built in a
    string holds ('singularity exec --nv' in "singularity exec --nv {image} ..."; 'exec --nv' in
    the constant part of f"{container_program} exec --nv ...", where the program is a value),
    or ''. `--nv` is Apptainer's own option: after one of its run verbs it is nothing else."""
    words = value.split()
    for i, word in enumerate(words):
        if word not in _APPTAINER_RUNS or not (i == 0 or _program(words[i - 1]) in _APPTAINER):
            continue
        option = next((w for w in words[i + 1 :] if w in NV_OPTIONS), "")
        if option:
            return " ".join([*words[max(i - 1, 0) : i + 1], option])
    return ""


def apptainer_nv(text: str) -> list[tuple[int, str]]:
    """(line, what) for each Apptainer/Singularity run that asks for NVIDIA's GPU binding (--nv,
    --nvccli, APPTAINER_NV=1) in a shell script; none where the script asks for --rocm too."""
    if names_rocm_flag(text):
        return []  # the script binds AMD's GPUs too: one vendor's side
    found: list[tuple[int, str]] = []
    for number, line in command_lines(text):
        words = line.split()
        for i, word in enumerate(words):
            if _program(word) not in _APPTAINER or i + 1 >= len(words):
                continue
            if words[i + 1] in _APPTAINER_RUNS and NV_OPTIONS & set(words[i + 2 :]):
                option = next(w for w in words[i + 2 :] if w in NV_OPTIONS)
                found.append((number, f"{_program(word)} {words[i + 1]} {option}"))
                break
        else:
            match = _NV_VARIABLE.search(line)
            if match is not None:
                found.append((number, match.group(0)))
    return found


# A compose file's device reservation (compose-spec deploy.md, "devices"): `capabilities` is the
# one list of capabilities a driver must all have, `driver` names the driver; with no driver,
# docker compose sends the request as `docker run --gpus` does (DeviceRequest with an empty
# Driver, Capabilities [[...]]), which the `amd` driver can serve only with "gpu"/"amd" in it.
_COMPOSE_CAPABILITIES = re.compile(r"^([ \t]*)(-[ \t]+)?capabilities[ \t]*:[ \t]*(.*)$")
_YAML_KEY = re.compile(r"^([ \t]*)(-[ \t]+)?([\w.-]+)[ \t]*:[ \t]*(.*)$")


def compose_gpu_reservations(text: str) -> list[tuple[int, str, bool]]:
    """(line, why, nvidia_only) for each compose device reservation that names no driver and
    asks for "gpu" (served as `--gpus` is: by NVIDIA's driver, or by AMD's where the AMD
    Container Toolkit is installed) or for a capability only NVIDIA's driver has (nvidia_only)."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        match = _COMPOSE_CAPABILITIES.match(line)
        if match is None:
            continue
        column = len(match.group(1)) + len(match.group(2) or "")
        capabilities = _yaml_list(match.group(3), lines, index, column)
        if not capabilities or "driver" in _entry_keys(lines, index, column, bool(match.group(2))):
            continue
        nvidia = sorted(set(capabilities) & _NVIDIA_ONLY_CAPABILITIES)
        if nvidia:
            found.append((index + 1, f"capabilities {capabilities}: {nvidia} only NVIDIA's", True))
        elif "gpu" in capabilities:
            found.append((index + 1, f"capabilities {capabilities} with no driver: --gpus", False))
    return found


def _yaml_list(rest: str, lines: list[str], index: int, column: int) -> list[str]:
    """The items of a YAML list written after a key: a flow list `[gpu, utility]` on the key's
    line, or block items `- gpu` on the lines below it (at the key's column or deeper)."""
    rest = rest.split(" #", 1)[0].strip()
    if rest.startswith("[") and rest.endswith("]"):
        return [v.strip().strip("'\"") for v in rest[1:-1].split(",") if v.strip()]
    if rest:
        return []
    items = []
    for line in lines[index + 1 :]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent < column or not stripped.startswith("- "):
            break
        items.append(stripped[2:].split(" #", 1)[0].strip().strip("'\""))
    return items


def _entry_keys(lines: list[str], index: int, column: int, opens_entry: bool) -> set[str]:
    """The keys of the mapping (a list item) that holds the key at lines[index], whose keys sit
    at `column`: its lines above up to the `- ` that opens it, and below until it ends."""
    keys = set()
    above = [] if opens_entry else range(index - 1, -1, -1)
    for i in above:
        match = _YAML_KEY.match(lines[i])
        if match is None or lines[i].lstrip().startswith("#"):
            continue
        indent = len(match.group(1)) + len(match.group(2) or "")
        if indent > column:
            continue
        if indent < column:
            break
        keys.add(match.group(3))
        if match.group(2):
            break  # the `- ` that opens the entry
    for line in lines[index + 1 :]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent < column or (indent == column and stripped.startswith("- ")):
            break
        match = _YAML_KEY.match(line)
        if match is not None and indent == column:
            keys.add(match.group(3))
    return keys

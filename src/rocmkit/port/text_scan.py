"""Text files that are not Python: Dockerfiles, shell scripts, compose files (and the regex rules
shared with requirements, pyproject and conda files). Comment lines are skipped; regexes are the
right tool here because these files have no syntax tree worth building for a one-line match.
"""

from __future__ import annotations

import functools
import os
import re
import stat

from rocmkit.port import container_gpus, vendor_images
from rocmkit.port.findings import Hit, demoted, hit
from rocmkit.port.rules import Rule, RuleSet


class ScanError(Exception):
    """A file whose content cannot be scanned (the reason becomes a FileIssue)."""


# Non-blocking: a FIFO or device named like a project file is refused, never waited on.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


def read_head(path: str, max_bytes: int) -> bytes:
    """At most the first max_bytes of a regular file; b"" for anything else or an unreadable one
    (for the project-wide checks that only look for words: no FileIssue, no wait on a FIFO)."""
    try:
        fd = os.open(path, OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return b""
            return os.read(fd, min(max_bytes, info.st_size))
        finally:
            os.close(fd)
    except OSError:
        return b""


def text_rule_hits(text: str, kind: str, rules: RuleSet) -> list[Hit]:
    """Matches of the rules with a `pattern` for this file kind, outside comment lines."""
    hits: list[Hit] = []
    for rule in rules.text_rules:
        if kind not in rule.files or not any(t in text for t in rule.triggers or ("",)):
            continue
        assert rule.pattern is not None
        for match in rule.pattern.finditer(text):
            # a pattern's `at` group is the place (a package on a continued install line)
            start = match.start("at") if "at" in rule.pattern.groupindex else match.start()
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", start)
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            if line.lstrip().startswith("#"):
                continue
            number = text.count("\n", 0, start) + 1
            hits.append(hit(number, start - line_start + 1, rule, line.strip()))
    return hits


@functools.lru_cache(maxsize=8)
def _word_patterns(rules: RuleSet) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    prefixes = "|".join(re.escape(p) for p in rules.env_prefixes)
    env = re.compile(rf"(?<![A-Za-z0-9_])((?:{prefixes})[A-Za-z0-9_]*)")
    names = "|".join(re.escape(c) for c in rules.commands)
    command = re.compile(rf"(?<![\w.-])(?:[\w./-]*/)?({names})(?![\w.-])") if names else None
    return env, command


_CMAKE_CUDA = re.compile(
    r"enable_language\s*\(\s*CUDA|LANGUAGES[^)]*\bCUDA\b|find_package\s*\(\s*(?:CUDA|CUDAToolkit)\b"
    r"|project\s*\([^)]*\bCUDA\b",
    re.IGNORECASE,
)
_CMAKE_HIP = re.compile(r"\bHIP\b|hip::|ROCM|rocm|USE_HIP|enable_language\s*\(\s*HIP", re.I)


def scan_cmake(text: str, rules: RuleSet) -> list[Hit]:
    """CMakeLists.txt / *.cmake: a build that enables CUDA and never mentions HIP or ROCm, and
    the nvcc-only architecture flags it hard-codes."""
    rule = rules.by_check.get("cmake-cuda-only")
    old_hip = findhip_hits(text, rules) if "hip_add_" in text else []
    if "CUDA" not in text.upper() and not _CMAKE_RAPIDS.search(text):
        return old_hip
    code = "\n".join(line.split("#")[0] for line in text.splitlines())
    if _CMAKE_HIP.search(code):
        return old_hip
    hits = nvcc_arch_hits(code, text, rules) + rapids_hits(code, text, rules)
    if rule is None:
        return hits
    # find_package(CUDAToolkit) only looks for the toolkit; enable_language(CUDA) / LANGUAGES
    # CUDA is what makes the build compile CUDA. Where the two are apart, both lines are shown
    # (the first of each), rather than guessing which one the reader acts on.
    lines = text.splitlines()
    firsts: dict[str, int] = {}
    for match in _CMAKE_CUDA.finditer(code):
        kind = "find" if match.group(0).lower().startswith("find_package") else "language"
        firsts.setdefault(kind, code.count("\n", 0, match.start()) + 1)
    if not firsts:
        return _cuda_option_hits(code, lines, rule) + hits
    found = [hit(n, 1, rule, lines[n - 1].strip()) for n in sorted(set(firsts.values()))]
    linked: set[int] = set()
    for link in _cuda_library_links(code):
        # FindCUDAToolkit's imported targets (CUDA::cudart, CUDA::cublas, CUDA::cuda_driver):
        # the CUDA Toolkit's libraries, which a HIP build replaces (hip::host, roc::hipblas);
        # each line that links one is a place to change
        line = code.count("\n", 0, link.start()) + 1
        if line not in linked:
            linked.add(line)
            why = f"links {link.group(0)}, a CUDA Toolkit library (hip::host, roc::hipblas ... on ROCm)"
            found.append(hit(line, 1, rule, why))
    for arch in _CUDA_ARCHITECTURES.finditer(code):
        # the NVIDIA targets the CUDA build compiles for (CMake's CMAKE_CUDA_ARCHITECTURES and
        # the CUDA_ARCHITECTURES target property: SM numbers, native, all-major); a HIP build
        # names gfx targets in CMAKE_HIP_ARCHITECTURES instead: a place to change
        line = code.count("\n", 0, arch.start()) + 1
        if line not in linked:
            linked.add(line)
            found.append(hit(line, 1, rule, f"{lines[line - 1].strip()[:120]}  (NVIDIA targets)"))
    return found + hits


# An imported target of CMake's FindCUDAToolkit module (CUDA::cudart, CUDA::cuda_driver, ...).
_CUDA_TARGET = re.compile(r"\bCUDA::\w+")
# What target_link_libraries(...) names of the CUDA Toolkit's libraries by their file names
# (libcublas.so -> cublas; the toolkit's library list) or FindCUDA's variables for them.
_LINK_CALL = re.compile(r"(?is)\btarget_link_libraries\s*\(([^)]*)\)")
_TOOLKIT_LIBRARY = re.compile(
    r"(?<![\w:/.${-])(?:cublas|cublasLt|cudart|cudart_static|cufft|cufftw|curand|cusparse|cusolver"
    r"|cusparseLt|nvrtc|nvToolsExt|nvjpeg|npp\w*|cudnn|nccl)(?![\w.-])"
    r"|\$\{CUDA_(?:LIBRARIES|CUBLAS_LIBRARIES|cublas_LIBRARY|CUFFT_LIBRARIES|curand_LIBRARY"
    r"|cusparse_LIBRARY|cusolver_LIBRARY|cudart_static_LIBRARY)\}"
)


def _cuda_library_links(code: str) -> list[re.Match[str]]:
    """FindCUDAToolkit's imported targets anywhere, and the toolkit's libraries named by file
    name or FindCUDA's variables inside target_link_libraries(...)."""
    found = list(_CUDA_TARGET.finditer(code))
    for call in _LINK_CALL.finditer(code):
        found.extend(_TOOLKIT_LIBRARY.finditer(code, call.start(1), call.end(1)))
    return sorted(found, key=lambda m: m.start())


# CMake's CUDA architecture settings (CMAKE_CUDA_ARCHITECTURES, the CUDA_ARCHITECTURES property),
# not OFF (which hands the choice to the flags) and not a read of it (`${CMAKE_CUDA_ARCHITECTURES}`)
_CUDA_ARCHITECTURES = re.compile(
    r"(?im)^[ \t]*(?:set[ \t]*\([ \t]*CMAKE_CUDA_ARCHITECTURES|set_(?:target_)?propert(?:y|ies)"
    r"[ \t]*\([^)]*\bCUDA_ARCHITECTURES)\b(?![ \t]+\"?OFF\b)"
)


# `option(<name> "help" [value])` (CMake's option command) declaring a switch named for CUDA, and
# the `if(<name>)` that acts on it: a build that compiles CUDA through its own rules (a
# CUDA-only source list, a run-time compiled kernel) without enable_language(CUDA).
_CUDA_OPTION = re.compile(r"(?im)^[ \t]*option[ \t]*\([ \t]*(\w*CUDA\w*)")


_DELEGATES = re.compile(r"(?im)^[ \t]*(?:add_subdirectory|include)[ \t]*\(")
_IF_OR_END = re.compile(r"(?im)^[ \t]*(if|endif)[ \t]*\(")


def _if_block(code: str, start: int) -> str:
    """The text of an `if(...)` block from `start` (just past its `if(`) to its own endif."""
    depth = 1
    for match in _IF_OR_END.finditer(code, start):
        depth += 1 if match.group(1).lower() == "if" else -1
        if depth == 0:
            return code[start : match.start()]
    return code[start:]


def _cuda_option_hits(code: str, lines: list[str], rule: Rule) -> list[Hit]:
    """A CUDA build switch (and the first `if` on it) in a CMake file with no HIP or ROCm."""
    match = _CUDA_OPTION.search(code)
    if match is None:
        return []
    name = match.group(1)
    found = [code.count("\n", 0, match.start()) + 1]
    use = re.search(rf"(?im)^[ \t]*if[ \t]*\((?:[^)\n]*\W)?{re.escape(name)}\b", code)
    if use is not None:
        if _DELEGATES.search(_if_block(code, use.end())):
            return []  # the switch brings in other CMake files: their CUDA build is judged there
        found.append(code.count("\n", 0, use.start()) + 1)
    why = f"option {name}: the build's only GPU switch is CUDA's, none for HIP"
    return [hit(n, 1, rule, f"{lines[n - 1].strip()}  ({why})") for n in found]


# hip_add_library / hip_add_executable are macros of the FindHIP module only (HIP's config package,
# hip-config.cmake, defines targets, not these). A build that finds that module in a `hip/cmake`
# folder (`${HIP_PATH}/cmake`, /opt/rocm/hip/cmake) relies on ROCm's old /opt/rocm/hip layout,
# which ROCm 6.0 removed: find_package(HIP) then loads the config package and CMake stops at
# the first macro with "Unknown CMake command". ROCm 6 keeps FindHIP.cmake in lib/cmake/hip.
_HIP_MACRO = re.compile(r"(?im)^[ \t]*(hip_add_(?:library|executable))[ \t]*\(")
_OLD_HIP_MODULE_PATH = re.compile(
    r"(?im)^[ \t]*(?:set|list)[ \t]*\([ \t]*(?:APPEND[ \t]+)?CMAKE_MODULE_PATH\b[^)\n]*"
    r"(?:\$\{HIP_PATH\}|\$ENV\{HIP_PATH\}|/hip)/cmake\b"
)


def findhip_hits(text: str, rules: RuleSet) -> list[Hit]:
    """The first FindHIP macro of a build that looks the module up in the pre-ROCm-6 folder."""
    rule = rules.by_id.get("cmake-old-findhip")
    macro = _HIP_MACRO.search(text)
    if rule is None or macro is None or _OLD_HIP_MODULE_PATH.search(text) is None:
        return []
    line = text.count("\n", 0, macro.start(1)) + 1
    return [hit(line, 1, rule, text.splitlines()[line - 1].strip())]


# RAPIDS libraries looked up by CMake (rapids-cmake's rapids_cpm_find / rapids_cpm_<lib>(), or
# find_package): RAFT, RMM, cuDF, cuML, cuGraph and cuVS are CUDA libraries with no HIP build
# (docs.rapids.ai/install: CUDA and NVIDIA drivers are system requirements).
_RAPIDS_LIBRARIES = "raft|rmm|cudf|cuml|cugraph|cuvs"
_CMAKE_RAPIDS = re.compile(
    rf"rapids_cpm_find\s*\(\s*(?:{_RAPIDS_LIBRARIES})\b|rapids_cpm_(?:{_RAPIDS_LIBRARIES})\s*\("
    rf"|find_package\s*\(\s*(?:{_RAPIDS_LIBRARIES})\b",
    re.IGNORECASE,
)


def rapids_hits(code: str, text: str, rules: RuleSet) -> list[Hit]:
    """Each line of `code` (comments blanked) that looks up a RAPIDS CUDA library."""
    rule = rules.by_id.get("rapids-cuda")
    if rule is None:
        return []
    lines = text.splitlines()
    return [
        hit(n, 1, rule, lines[n - 1].strip())
        for n in sorted({code.count("\n", 0, m.start()) + 1 for m in _CMAKE_RAPIDS.finditer(code)})
    ]


# nvcc's architecture options (`-gencode arch=compute_80,code=sm_80`, `--generate-code=...`,
# `-arch=sm_80`): nvcc_only_flags.toml lists them as flags hipcc's clang rejects; a build file
# that hard-codes them and never names HIP/ROCm (hipcc, --offload-arch, USE_ROCM) builds for
# NVIDIA only.
_NVCC_ARCH = re.compile(
    r"(?<![\w-])(?:-gencode|--generate-code)(?:=|[ \t]+)[\"']?arch=compute_\d+"
    r"|(?<![\w-])-arch(?:=|[ \t]+)sm_\d+"
)


def nvcc_arch_hits(code: str, text: str, rules: RuleSet) -> list[Hit]:
    """Each line of `code` (comments blanked) that hard-codes an nvcc architecture flag."""
    rule = rules.by_check.get("nvcc-flags")
    if rule is None or ("arch=compute_" not in code and "sm_" not in code):
        return []
    lines = text.splitlines()
    hits = []
    for match in _NVCC_ARCH.finditer(code):
        number = code.count("\n", 0, match.start()) + 1
        hits.append(hit(number, 1, rule, lines[number - 1].strip()))
    return hits


# uv picks the PyTorch index from its torch backend (--torch-backend / UV_TORCH_BACKEND; a
# cuXXX value is download.pytorch.org/whl/cuXXX: docs.astral.sh/uv/guides/integration/pytorch).
# The value is often a variable with a CUDA default (ARG TORCH_BACKEND="cu130",
# TORCH_BACKEND=${TORCH_BACKEND:-cu130}): the default and every install that uses it count.
_UV_BACKEND = re.compile(
    r"""(?:UV_TORCH_BACKEND=|--torch-backend[= \t]+)["']?(\$\{?\w+\}?|cu\d+)"""
)
_BACKEND_DEFAULT = re.compile(
    r"""(?m)^[ \t]*(?:ARG[ \t]+|ENV[ \t]+|export[ \t]+)?(\w*TORCH_BACKEND)[ \t]*=[ \t]*["']?"""
    r"""(?:\$\{\w+:-)?(cu\d+)"""
)


def uv_backend_hits(text: str, rules: RuleSet) -> list[Hit]:
    """uv installs that select a CUDA torch through its torch backend, and the CUDA defaults of
    the variables they use."""
    rule = rules.by_id.get("torch-cuda-index")
    upper = text.upper()
    if rule is None or ("TORCH_BACKEND" not in upper and "TORCH-BACKEND" not in upper):
        return []
    cuda_vars = {m.group(1): m for m in _BACKEND_DEFAULT.finditer(text)}
    hits = [_line_hit(text, m.start(2), rule) for m in cuda_vars.values()]
    for match in _UV_BACKEND.finditer(text):
        value = match.group(1).strip("${}")
        if match.group(1).startswith("cu") or value in cuda_vars:
            hits.append(_line_hit(text, match.start(), rule))
    return [h for h in hits if not h.evidence.startswith("#")]


def _line_hit(text: str, position: int, rule: Rule) -> Hit:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    line = text[start : end if end >= 0 else len(text)].strip()
    return hit(text.count("\n", 0, position) + 1, position - start + 1, rule, line)


# A build argument used as the base image: `ARG BASE=nvidia/cuda:12.8.1-base` then `FROM ${BASE}`.
# Docker substitutes the ARG's default unless `--build-arg` overrides it
# (docs.docker.com/reference/dockerfile/#understand-how-arg-and-from-interact).
_ARG_DEFAULT = re.compile(r"""(?m)^[ \t]*ARG[ \t]+(\w+)[ \t]*=[ \t]*["']?([^\s"']+)""")
_FROM_ARG = re.compile(r"""(?m)^[ \t]*FROM[ \t]+(?:--platform=\S+[ \t]+)?\$\{?(\w+)\}?""")


def arg_base_image_hits(text: str, rules: RuleSet) -> list[Hit]:
    """A CUDA base image that reaches FROM through an ARG default, reported at the ARG line."""
    rule = rules.by_id.get("cuda-base-image")
    if rule is None or rule.pattern is None or "ARG" not in text:
        return []
    used: dict[str, int] = {}  # name -> where the last FROM that reads it starts
    for m in _FROM_ARG.finditer(text):
        used[m.group(1)] = m.start()
    hits: list[Hit] = []
    for match in _ARG_DEFAULT.finditer(text):
        name, value = match.groups()
        # Only an ARG declared before a FROM (the global scope) is substituted into it.
        if match.start() < used.get(name, -1) and rule.pattern.match(f"FROM {value}"):
            hits.append(_line_hit(text, match.start(2), rule))
    return hits


_SHELL_HIP = re.compile(r"hipcc|--offload-arch|\bHIP\b|ROCM|rocm|USE_HIP|amdgpu", re.I)


# Container GPU requests only NVIDIA's stack serves (docker's --gpus/nvidia runtime, compose's
# nvidia driver reservation, NVIDIA's container variables).
_CONTAINER_RULES = frozenset({"docker-gpus", "compose-nvidia", "nvidia-container-env"})


def scan_text(text: str, kind: str, rules: RuleSet) -> list[Hit]:
    """Dockerfile, shell script or compose file: regex rules, environment variables, commands,
    and the packages of `pip install` lines. A file that also passes AMD's GPU devices to a
    container (/dev/kfd, --runtime=amd: a ROCm service or `case` branch beside the CUDA one)
    makes its NVIDIA container requests one vendor's side: info."""
    hits = _text_hits(text, kind, rules)
    if hits and container_gpus.names_amd_devices(text):
        why = "the file also passes AMD's GPU devices to a container: the NVIDIA side"
        hits = [
            demoted(h, "info", why) if h.rule.id in _CONTAINER_RULES and h.severity != "info" else h
            for h in hits
        ]
    return hits


def _compose_reservation_hits(text: str, rules: RuleSet) -> list[Hit]:
    """A compose device reservation with no driver: `capabilities: [gpu]` is `--gpus`
    (docker-gpus), one that asks for a capability only NVIDIA's driver has is compose-nvidia."""
    hits = []
    for line, why, nvidia_only in container_gpus.compose_gpu_reservations(text):
        rule = rules.by_id.get("compose-nvidia" if nvidia_only else "docker-gpus")
        if rule is not None:
            hits.append(hit(line, 1, rule, why))
    return hits


def _text_hits(text: str, kind: str, rules: RuleSet) -> list[Hit]:
    from rocmkit.port.conda_commands import conda_command_hits
    from rocmkit.port.requirements import pip_install_hits

    hits = text_rule_hits(text, kind, rules)
    if kind == "shell" and ("arch=compute_" in text or "sm_" in text):
        code = "\n".join("" if ln.lstrip().startswith("#") else ln for ln in text.splitlines())
        if not _SHELL_HIP.search(code):
            hits += nvcc_arch_hits(code, text, rules)
    if kind == "dockerfile":
        hits += arg_base_image_hits(text, rules)
        hits = vendor_images.drop_rocm_tags(text, hits)
    if kind == "shell" and ("docker" in text) and rules.by_id.get("docker-gpus") is not None:
        hits += [
            hit(line, 1, rules.by_id["docker-gpus"], why)
            for line, why in container_gpus.shell_docker_gpus(text)
        ]
    if kind == "compose" and "capabilities" in text:
        hits += _compose_reservation_hits(text, rules)
    apptainer = rules.by_check.get("apptainer-nv")
    if kind == "shell" and apptainer is not None and ("--nv" in text or "_NV=" in text):
        hits += [hit(line, 1, apptainer, why) for line, why in container_gpus.apptainer_nv(text)]
    if kind in ("dockerfile", "shell"):
        hits += pip_install_hits(text, rules)
        hits += uv_backend_hits(text, rules)
        hits += conda_command_hits(text, rules)
    env_pattern, command_pattern = _word_patterns(rules)
    env_possible = any(p in text for p in rules.env_prefixes)
    command_possible = command_pattern is not None and any(c in text for c in rules.commands)
    if not (env_possible or command_possible):
        return hits
    conditions: list[str] = []  # the tests of the shell `if`s a line is inside
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        _track_if(line, conditions)
        if env_possible:
            for match in env_pattern.finditer(line):
                rule = rules.env_rule(match.group(1))
                if rule is not None:
                    hits.append(hit(number, match.start() + 1, rule, line.strip()))
        if command_possible and command_pattern is not None:
            for match in command_pattern.finditer(line):
                rule = rules.command_rule(match.group(1))
                if rule is None:
                    continue
                tested = _presence_tested(match.group(1), [line, *conditions])
                if tested:
                    # `which nvidia-smi && nvidia-smi || echo ...`: the script asks first
                    why = f"{line.strip()}  (run only where `{tested}` finds it)"[:160]
                    hits.append(hit(number, match.start() + 1, rule, why, "info"))
                else:
                    hits.append(hit(number, match.start() + 1, rule, line.strip()))
    return hits


# POSIX shells' tests for a program on PATH (`command -v`, `type`, `hash`) and which(1).
_PRESENCE = re.compile(r"\b(?:command\s+-v|which|type|hash)\s+(?:-\w+\s+)*([\w./-]+)")


def _presence_tested(command: str, tests: list[str]) -> str:
    """The presence test of `command` among `tests` (its own line, the `if`s around it)."""
    for text in tests:
        for match in _PRESENCE.finditer(text):
            if match.group(1).rsplit("/", 1)[-1] == command:
                return match.group(0)
    return ""


def _track_if(line: str, conditions: list[str]) -> None:
    """Keep `conditions` to the tests of the `if` blocks open at `line` (a shell script)."""
    stripped = line.strip()
    if re.match(r"(?:if|elif)\s", stripped) and not re.search(r"\bfi\s*;?\s*$", stripped):
        if stripped.startswith("elif") and conditions:
            conditions.pop()
        conditions.append(stripped)
    elif re.match(r"fi\b", stripped) and conditions:
        conditions.pop()


# File-name words that say a script installs NVIDIA's own stack (install_cuda_13.sh,
# nvidia-setup.sh, install_tensor_rt.sh): what it installs is its purpose, and whoever runs it on
# an AMD machine is the place to change.
_NVIDIA_STACK_WORDS = frozenset(
    {"cuda", "nvidia", "cudnn", "nccl", "tensorrt", "trt", "jetson", "jetpack"}
)


def nvidia_installer_script(rel: str, hits: list[Hit]) -> list[Hit]:
    """`hits` with NVIDIA's system packages at info in a script named for NVIDIA's stack."""
    name = rel.rsplit("/", 1)[-1].lower()
    words = set(re.split(r"[-_.]+|(?<=[a-z])(?=\d)", name))
    if not _NVIDIA_STACK_WORDS & words and "tensorrt" not in re.sub(r"[-_.]", "", name):
        return hits
    why = f"a script for NVIDIA's stack by its name ({name})"
    return [
        demoted(h, "info", why)
        if h.rule.id == "nvidia-system-package" and h.severity != "info"
        else h
        for h in hits
    ]

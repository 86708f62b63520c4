"""Python sources: one `ast.parse` per file, one walk over the tree, and only for files whose text
contains a trigger token (a file without any of them cannot hold a finding, so it is not parsed).

Code is matched on the syntax tree, never by regex: `torch.version.cuda` in a comment or a
docstring is not a finding; `subprocess.run(["nvidia-smi", "-L"])` is.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from keyword import iskeyword
from typing import Any

from rocmkit.port import (
    build_flags,
    capability_branches,
    capability_features,
    capability_tables,
    capability_versions,
    container_gpus,
    ct2_device,
    ctypes_libraries,
    cuda_build,
    cuda_libraries,
    ffmpeg_nvidia,
    inline_cuda,
    inline_ptx,
    installer,
    numba_cuda,
    nvml_query,
    nvml_wrappers,
    oom_messages,
    opencv_dnn,
    ort_providers,
    pieces,
    product_imports,
    triton_dot,
    triton_libdevice,
    triton_warps,
    whole_tree,
)
from rocmkit.port.findings import Hit, demoted, hit
from rocmkit.port.requirements import group_hits, offers_rocm_build
from rocmkit.port.rules import Rule, RuleSet, Severity
from rocmkit.port.text_scan import ScanError

# Taichi imported by its usual names (`import taichi as ti`): its init and its CUDA arch.
_TAICHI_INIT = frozenset({"ti.init", "taichi.init"})
_TAICHI_CUDA = frozenset({"ti.cuda", "taichi.cuda"})

# Substrings a file must contain for each named check to be able to match.
CHECK_TRIGGERS: dict[str, tuple[str, ...]] = {
    "torch-version-cuda": (
        "version.cuda",
        "version import cuda",
        "assert torch.version.hip",
        "assert not torch.version.hip",
    ),
    "device-capability": ("get_device_capability", "get_device_properties"),
    "taichi-cuda-arch": ("ti.cuda", "taichi.cuda"),
    "cuda-oom-message": oom_messages.TRIGGERS,
    "cudnn-setting": ("cudnn",),
    "cudnn-disabled": ("cudnn",),
    "warp-size-32": ("warp", "WARP", "Warp", "wavefront", "WAVEFRONT", "Wavefront"),
    "cuda-extension": ("CUDAExtension", "CUDA_HOME"),
    # NVML's first call: where an AMD machine loses the feature (also through dask's wrapper)
    "nvml-call": ("nvmlInit", *nvml_wrappers.TRIGGERS, *nvml_query.QUERY_TRIGGERS),
    # The flags are only looked for in extension builds, so the build markers are the trigger.
    "nvcc-flags": ("cpp_extension", "BuildExtension", "CUDAExtension", "get_gencode_flags"),
    # gpus=: a Python docker client's run (python-on-whales), judged on the whole tree
    "container-gpu-request": (
        "DeviceRequest",
        container_gpus.NVIDIA_RESOURCE,
        "--gpus",
        "gpus=",
        # the docker SDK's runtime: a keyword (`runtime="nvidia"`) or a kwargs key (`["runtime"]`)
        'runtime="nvidia"',
        "runtime='nvidia'",
        '"runtime"]',
        "'runtime']",
        *container_gpus.COMPOSE_DRIVER_TRIGGERS,  # a compose reservation written as a dict
    ),
    "cuda-library-load": (
        cuda_libraries.TRIGGERS + cuda_libraries.TRIGGERS_NVML + cuda_libraries.TRIGGERS_LINK
    ),
    "ort-nvidia-provider": (ort_providers.TRIGGER, *ort_providers.NVIDIA_PROVIDERS),
    "paddle-tensorrt": ("enable_tensorrt_engine",),
    "ffmpeg-nvidia-codec": ffmpeg_nvidia.TRIGGERS,
    "opencv-dnn-cuda": opencv_dnn.TRIGGERS,
    # both hold "cuda", a key every scan looks for already: no search of its own
    "numba-cuda": ("numba.cuda", "import cuda"),
    "python-inline-ptx": (inline_ptx.GATE,),  # round fifteen (a)
    "cuda-home-none": ("CUDA_HOME",),  # torch.utils.cpp_extension's, None on ROCm
    # JAX lowerings and XLA custom-call / FFI targets registered per platform
    "jax-cuda-platform": (
        "register_lowering",
        "register_ffi_target",
        "register_custom_call_target",
    ),
    # an argv an Apptainer/Singularity launcher builds (`args += ["--nv"]`)
    "apptainer-nv": tuple(container_gpus.NV_OPTIONS),
    "tf-built-with-cuda": ("is_built_with_cuda",),  # session thirteen
    "triton-tf32-dot": (triton_dot.TRIGGER,),  # session thirteen
    "triton-num-warps-32": triton_warps.TRIGGERS,  # session fourteen
}
# A file holding one of these looks at the ROCm side of an extension build.
_HIP_BUILD_WORDS = ("ROCM_HOME", "HIP_HOME", "IS_HIP_EXTENSION", "version.hip", "is_rocm", "hipcc")
# Vendor switches: code under `if torch.version.hip:` / `if torch.version.cuda:` / `if is_rocm():`
# (either branch), after `if torch.version.hip: raise/return`, or after `has_cuda and ...` is on
# one side of a switch the project already has: its findings are info ("gated"). Only files that
# hold one of these tokens are analysed for switches.
VENDOR_TOKENS: tuple[str, ...] = (
    *(
        "version.hip",
        "_hip",
        "hip_",
        "HIP",
        "rocm",
        "ROCM",
        "Rocm",
        "version.cuda",
        "is_cuda",
        "_amd",
        "amd_",
    ),
    *("'amd'", '"amd"', "AMD", "'nvidia'", '"nvidia"', "nvidia_", "_nvidia", "nvml", "nvsmi"),
    *("amd-smi", "amdsmi"),
)
# The AMD tools (amd-smi and its Python API, rocm-smi, rocminfo): a `try:` whose handler falls
# back to one of them (`try: nvidia-smi ... except FileNotFoundError: rocm-smi ...`) is a vendor
# switch by trial: its body is the NVIDIA side (ROCm documents these as the amd-smi / rocm-smi
# replacements of nvidia-smi / NVML).
_AMD_TOOLS = frozenset({"amd-smi", "rocm-smi", "rocminfo", "amdsmi", "pyrsmi", "rocm_smi"})
_AMD_TOOL_TEXT = re.compile("|".join(sorted(_AMD_TOOLS)))
_AMD_NAME = re.compile(r"rocm|amd", re.IGNORECASE)
# The NVIDIA management tools a fallback chain tries first (nvidia-smi, NVML and its wrappers).
_NVIDIA_TOOL_TEXT = re.compile(r"nvidia-smi|nvidia_smi|nvml|GPUtil|gpustat", re.IGNORECASE)
# A name that says HIP/ROCm/AMD (is_hip, _is_hip(), HIP_BUILD, IS_ROCM, current_platform.is_rocm())
# tests the vendor, unless it is read from the environment (ROCM_VERSION = os.environ.get(...)):
# an environment variable says what the user asked for, not which torch is installed.
# The vendor word ends the name or is followed by a word that makes it a flag (IS_ROCM,
# use_hip, rocm_available, HIP_BUILD, is_rocm_pytorch); a value about ROCm named after it
# (_rocm_wavefront_size, rocm_gpu_arch, a cache) is not a vendor test.
_VENDOR_NAME = re.compile(
    r"(?i)(?:^|_)(?:is_?)?(?:hip|rocm|amd)(?:$|available|_(?:available|build|built|enabled|"
    r"platform|version|backend|torch|pytorch|only|supported|system|env|device|gpu)?$)"
)
# A function named for NVIDIA (_check_nvidia_connectivity, _nvidia_smi, get_nvml_info) is the
# NVIDIA side by its own declaration; `_is_cuda()` / `current_platform.is_cuda()` called with no
# argument asks for the platform (tensor.is_cuda, an attribute, is True on ROCm too and is not).
_NVIDIA_FUNCTION = re.compile(r"(?i)(?:^|_)(?:nvidia|nvml|nvsmi|nvlink)(?:_|$)")
# ... but only where the module has another vendor's side: a function or name for AMD/ROCm/HIP
# (_check_amd_connectivity beside _check_nvidia_connectivity) or an AMD tool (rocm-smi, amdsmi).
# A lone check_cuda_with_nvidia_smi() is the project's only GPU detection, not one side of two.
_OTHER_VENDOR_DEF = re.compile(r"(?i)\bdef\s+\w*?(?:^|_)(?:amd|rocm|hip)(?:_|\b)")
# A function named for an NVIDIA-only product (TensorRT, TensorRT-LLM: no ROCm build exists) is
# that product's feature: the user reaches it only by asking for it (an export or inference target).
_DEF_NAME = re.compile(r"\bdef\s+(\w+)")
# The two without their leading \b, which leaves `re` no literal to skip ahead to (it then tries
# every character: 3x slower for the first, 15x for the second on real files); _defines_other_vendor
# and _def_names test the boundary themselves.
_OTHER_VENDOR_DEF_AT = re.compile(_OTHER_VENDOR_DEF.pattern.replace(r"\bdef", "def", 1))
_DEF_NAME_AT = re.compile(_DEF_NAME.pattern.replace(r"\bdef", "def", 1))


def _defines_other_vendor(text: str) -> bool:
    """Whether _OTHER_VENDOR_DEF.search(text) finds something."""
    start = 0
    while (match := _OTHER_VENDOR_DEF_AT.search(text, start)) is not None:
        if match.start() == 0 or not _is_word(text[match.start() - 1]):
            return True
        start = match.start() + 1
    return False


def _def_names(text: str) -> list[str]:
    """_DEF_NAME.findall(text): the names after each `def` that starts a word."""
    names, position = [], text.find("def")
    while position >= 0:
        match = None
        if position == 0 or not _is_word(text[position - 1]):
            match = _DEF_NAME_AT.match(text, position)
        if match is None:
            position = text.find("def", position + 1)
        else:
            names.append(match.group(1))
            position = text.find("def", match.end())
    return names


_ROCM_WORDS = frozenset({"rocm", "hip", "amd", "amdsmi"})
_NVIDIA_WORDS = frozenset({"cuda", "nvidia", "nvml", "nvsmi", "nv"})


def _without_vendor(name: str) -> tuple[str, ...]:
    """A function name without its vendor words: cuda_platform_plugin and rocm_platform_plugin
    are both ('platform', 'plugin'); a name with no vendor word gives () (matches nothing)."""
    words = name.lower().strip("_").split("_")
    rest = tuple(w for w in words if w not in _ROCM_WORDS and w not in _NVIDIA_WORDS)
    return rest if len(rest) < len(words) else ()


# A ROCm container image (rocm/pytorch:6.4..., rocm/dev-ubuntu-22.04:6.4): AMD's Docker Hub names.
# A ROCm image: AMD's rocm/<repository>:<tag>, vLLM's ROCm repository, a tag naming ROCm.
_ROCM_IMAGE = re.compile(
    r"(?<![\w/.-])rocm/[\w.-]+:|vllm/vllm-openai-rocm(?![\w.-])|(?<![\w.-])[\w.-]+/[\w.-]+:[\w.-]*rocm"
)
_STRING_TESTS = frozenset({"startswith", "endswith"})
# The functions of Python's re module (and the regex package's same names) whose first argument is
# a pattern (docs.python.org/3/library/re.html): an image named there is one strings are matched
# against (a discovery step recognising vLLM pods), not one the module runs.
_REGEX_FUNCTIONS = frozenset(
    f"{module}.{function}"
    for module in ("re", "regex")
    for function in (
        "compile",
        "match",
        "search",
        "fullmatch",
        "findall",
        "finditer",
        "sub",
        "subn",
        "split",
    )
)
_NVIDIA_PRODUCT_FUNCTION = re.compile(r"(?i)(?:^|_)(?:tensorrt|trt|trtllm)(?:_|$)")
_IS_CUDA_CALL = re.compile(r"(?i)^_*is_?(?:cuda|nvidia)(?:_platform|_available)?$")
_VENDOR_WORDS = frozenset({"amd", "rocm", "hip", "nvidia", "cuda", "advanced micro devices"})
_VENDOR_HINT = re.compile(r"(?i)hip|rocm|amd|cuda|nvidia|advanced micro")
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# get_device_capability() on ROCm is (gfx major, minor): 9.x for CDNA (MI100..MI350), 10-12 for
# RDNA. Every one of them is above an exclusion threshold up to Ampere's 8.6 (`cap < (8, 0)`:
# return False) and unequal to an NVIDIA SM below 9, so it takes the general path; a threshold
# that turns something on (`cap >= (8, 0)`: use this kernel), any threshold from Ada's 8.9 up, or
# an equality with 9.x is decided by the gfx number (MI200 (9, 0) "is" Hopper, has no fp8): that
# is the hazard.
_CAPABILITY_SAFE_BELOW = 8.7
_BUILD_MARKERS = ("cpp_extension", "CUDAExtension", "BuildExtension")
# AMD's word for the warp is the wavefront (64 lanes on CDNA; RDNA runs 32 or 64): a wavefront
# size that falls back to 32 builds CDNA code for half its lanes.
_WARP_NAME = re.compile(
    r"(?i)^(?:\w*_)?(?:warp_?size|threads_per_warp|lanes_per_warp|wavefront_?size)$"
)
_NVCC_FLAG = re.compile(
    r"^(?:-gencode\b|-?-?arch=compute_\d|-arch=sm_\d|-Xptxas\b|--ptxas-options)"
)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ENV_SETTING = re.compile(r"^[A-Z][A-Z0-9_]*=[^\s=]*$")
_ROCM_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?rocm\d")


_REQUIREMENT_KEYWORDS = ("install_requires", "setup_requires", "extras_require")


@functools.lru_cache(maxsize=8)
def python_triggers(rules: RuleSet) -> tuple[str, ...]:
    """Every substring whose presence means a Python file may hold a finding."""
    triggers: set[str] = set(rules.imports) | set(rules.env_prefixes) | set(rules.commands)
    # `from cuda import cudart` names the submodule cuda.cudart without spelling it.
    triggers.update(_from_parent(m) for m in rules.imports if "." in m)
    for rule in rules.text_rules:
        if "python" in rule.files:
            triggers.update(rule.triggers)
    for check in rules.by_check:
        triggers.update(CHECK_TRIGGERS.get(check, ()))
    # A trigger that contains another is redundant (NCCL_NVLS_ENABLE vs NCCL_): each `in` test
    # costs about half a microsecond even when it fails, and most files fail all of them.
    return tuple(sorted(t for t in triggers if not any(o != t and o in t for o in triggers)))


# A substring trigger says a file *may* hold a finding; for the triggers that also occur in
# unrelated code (`num_warps` for "warp", a docstring naming a package), a regex confirms that the
# construct a rule matches is there before the file is parsed.
_WARP_CONFIRM = re.compile(
    r"(?i)(?:warp_?size|threads_per_warp|lanes_per_warp|wavefront_?size)[\w\]\[ .'\":]*=\s*"
    r"[\"']?32\b"
)


# Where a _WARP_CONFIRM match can start, relative to a "warp" or "wavefront" in it (every
# alternative has one of them).
_WARP_WORD = re.compile("(?i)warp|wavefront")
_WARP_STARTS = (0, len("threads_per_"), len("lanes_per_"))


def _warp_words(text: str) -> list[int]:
    """Where _WARP_WORD.finditer(text) matches: in ASCII text, by a search for each word in the
    lower-cased text (a case-insensitive alternation tries every character: ~20x slower)."""
    if not text.isascii():  # str.lower() may change a length: places would not be the text's
        return [m.start() for m in _WARP_WORD.finditer(text)]
    low = text.lower()
    found = []
    for word in ("warp", "wavefront"):  # neither can start inside the other
        position = low.find(word)
        while position >= 0:
            found.append(position)
            position = low.find(word, position + len(word))
    return sorted(found)


def _warp_confirmed(text: str) -> list[int]:
    """The starts _WARP_CONFIRM.finditer gives, from matches tried only where a "warp" is (the
    case-insensitive alternation is slow to scan for): leftmost first, none inside the last."""
    starts = sorted({p - back for p in _warp_words(text) for back in _WARP_STARTS if p >= back})
    found, end = [], 0
    for start in starts:
        if start >= end and (match := _WARP_CONFIRM.match(text, start)) is not None:
            found.append(start)
            end = match.end()
    return found


def _from_parent(module: str) -> str:
    """The text that starts `from <parent> import <submodule>` for a dotted module."""
    return f"from {module.rsplit('.', 1)[0]} import"


@functools.lru_cache(maxsize=64)
def _import_confirm(rules: RuleSet, own: frozenset[str]) -> re.Pattern[str]:
    modules = sorted(
        {m for m in rules.imports if m.split(".")[0] not in own}, key=len, reverse=True
    )
    names = "|".join(re.escape(m) for m in modules) or "(?!x)x"
    submodules = "|".join(
        rf"{re.escape(m.rsplit('.', 1)[0])}[ \t]+import[ \t][^\n]*?\b{re.escape(m.rsplit('.', 1)[1])}\b"
        for m in modules
        if "." in m
    )
    # `from cuda import cudart`: a rule's submodule named after its parent
    parents = rf"|from[ \t]+(?:{submodules})" if submodules else ""
    return re.compile(
        rf"^[ \t]*(?:from[ \t]+(?:{names})\b{parents}"
        rf"|import[ \t][^\n]*?(?<![\w.])(?:{names})\b"
        # ... or an import call with the name as its first argument (product_imports)
        rf"|[^\n]*?(?:import_module|optional_import|__import__)\([ \t]*[\"'](?:{names})\b)",
        re.MULTILINE,
    )


def scan_python(
    text: str,
    rules: RuleSet,
    *,
    is_setup: bool = False,
    own: frozenset[str] = frozenset(),
    exhaustive: bool = False,
    keys: tuple[str, ...] | None = None,
) -> tuple[list[Hit], bool]:
    """(findings, parsed?) for one Python file: see _scan_python; in setup.py also the
    requirement lists that setup() is given by name (install_requires=install_requires)."""
    whole = whole_tree.Whole(text)  # the whole tree, parsed once if any check needs it
    hits, parsed = _scan_python(
        text, rules, is_setup=is_setup, own=own, exhaustive=exhaustive, keys=keys, whole=whole
    )
    if is_setup:
        offered = offers_rocm_build(text)
        hits = hits + _named_requirement_hits(text, rules, whole, offered)
        if "extras_require" in text and _has_extras_of_names(text):
            hits = hits + _extras_of_names(whole, rules, offered)
    if parsed and any(
        h.rule.check == "nvml-call" and h.evidence.startswith("import ") for h in hits
    ):
        tree = _nvml_statements(text, hits, whole)
        if tree is not None:
            hits = nvml_query.move_to_queries(tree, hits, text)
    if any(h.rule.check == "nvml-call" and h.severity != "info" for h in hits):
        # the module's NVML queries join its init's finding (read on the whole tree: a query
        # may be a bare name a star import bound)
        with contextlib.suppress(SyntaxError, ValueError):
            hits = hits + nvml_query.queries_beside(whole.tree(), hits, text)
    elif (
        any(t in text for t in nvml_query.QUERY_TRIGGERS)
        and not any(h.rule.check == "nvml-call" for h in hits)
        and (nvml := rules.by_check.get("nvml-call")) is not None
    ):
        with contextlib.suppress(SyntaxError, ValueError):
            hits = hits + nvml_query.queries_through_held_binding(whole.tree(), text, nvml)
    if oom_messages.may_test(text) and (oom := rules.by_check.get("cuda-oom-message")):
        with contextlib.suppress(SyntaxError, ValueError):
            hits = hits + oom_messages.scan_oom_tests(whole.tree(), text, oom)
    # Its own pre-filter, whether or not the statements with triggers were parsed (a pruned scan
    # and a whole-file scan must agree).
    installs = installer.package_lines(text, rules)
    if installs:
        hits = hits + installer.run_time_hits(whole, rules, installs)
    if (
        not is_setup  # setup.py's lists are setuptools' (setup_static, the requirement readers)
        and ("REQUIREMENT" in text or "INSTALL" in text)
        and installer.TABLE_TEXT.search(text)
        and _INSTALLER_CALL.search(text)
    ):
        hits = hits + _install_table_hits(whole, rules)
    if parsed and any(h.rule.commands and h.severity != "info" for h in hits):
        tree = _launch_statements(text, hits, whole)
        if tree is not None:
            hits = nvml_query.move_to_launches(tree, hits, _looks_at_rocm(text))
    if "gpus=" in text and "ocker" in text:
        hits = hits + _docker_client_gpus(whole, rules)
    if triton_libdevice.GATE in text:  # round fourteen (a): a line scan, no parse
        hits = hits + triton_libdevice.scan_libdevice(text, rules)
    if inline_ptx.GATE in text:  # round fifteen (a): PTX text given to an inline-asm call
        hits = hits + _inline_ptx_hits(whole, rules)
    if inline_cuda.GATE in text:  # CUDA C++ in a string that load_inline compiles
        with contextlib.suppress(SyntaxError, ValueError):
            hits = hits + inline_cuda.inline_cuda_hits(whole.tree(), rules)
    if any(p in text for p in ort_providers.NVIDIA_PROVIDERS):
        hits = hits + _ort_provider_hits(whole, rules)
    if ct2_device.GATE in text and ct2_device.may_have(text):
        hits = hits + _ct2_device_hits(whole, rules)
    if numba_cuda.TRIGGER in text and "cuda" in text and numba_cuda.imports_target(text):
        hits = hits + _numba_cuda_hits(whole, rules)
    if any(t in text for t in ffmpeg_nvidia.TRIGGERS):
        hits = hits + _ffmpeg_nvidia_hits(whole, rules)
    if any(t in text for t in opencv_dnn.TRIGGERS):
        hits = hits + _opencv_dnn_hits(whole, rules)
    if triton_dot.TRIGGER in text and "tf32" in text:
        hits = hits + _triton_tf32_hits(whole, rules)
    if (
        "triton" in text
        and any(t in text for t in triton_warps.TRIGGERS)
        and triton_warps.may_have(text)
    ):
        hits = hits + _triton_warps_hits(whole, rules, text)
    if any(t in text for t in ctypes_libraries.TRIGGERS):
        loads = _import_time_library_hits(text, whole, rules)
        taken = {h.line for h in loads}  # its verdict replaces the load's generic info
        hits = loads + [
            h for h in hits if h.rule.check != "cuda-library-load" or h.line not in taken
        ]
    if (
        capability_versions.JOIN in text
        and any(t in text for t in capability_versions.TRIGGERS)
        and capability_versions.holds_parser_call(text)
    ):
        versions = _capability_version_hits(text, whole, rules)
        if versions:  # the read is compared after all, through its version
            hits = [h for h in hits if "(read, never compared)" not in h.evidence] + versions
    if "CUDA_VISIBLE_DEVICES" in text and ("--gpus" in text or "nvidia" in text):
        tests = _visible_device_tests(text, rules, whole)
        hits = [h for h, _ in tests] + [_beside_test(h, tests) for h in hits]  # first: wins
    if (
        (is_setup or "cpp_extension" in text)  # setuptools' builds, torch's JIT builds
        and _CUDA_LINK_TEXT.search(text)
        and not any(w in text for w in _HIP_BUILD_WORDS)
    ):
        hits = hits + _cuda_link_hits(whole, rules)
    if "get_device_" in text and _holds_match(capability_tables.TEXT_HINT, text):
        hits = _capability_table_hits(whole, rules) + hits  # first: it wins the line
    if "cpp_extension" in text and not any(w in text for w in _HIP_BUILD_WORDS):
        # First: at a line the walk also reported (a capability it saw only read), this verdict,
        # which knows where the value goes, is the one kept.
        hits = (
            _cuda_build_hits(text, rules, whole) + hits + _nvcc_gated_jit_hits(text, rules, whole)
        )
        if any(h.rule.check == "nvcc-flags" and h.severity != "info" for h in hits):
            hits = _flags_behind_closed_gates(whole, hits)
        if any(h.rule.check == "nvcc-flags" and h.severity != "info" for h in hits) and (
            _WINDOWS_TEST.search(text)  # the costlier test second: no literal to skip to
        ):
            hits = _windows_only_flags(whole, hits)
    if any(h.rule.check == "nvcc-flags" and h.severity != "info" for h in hits):
        hits = hits + _returned_flag_places(whole, hits)
    if "TYPE_CHECKING" in text and any(h.severity != "info" for h in hits):
        hits = _type_checking_only(whole, hits)
    return hits, parsed


def _type_checking_only(whole: whole_tree.Whole, hits: list[Hit]) -> list[Hit]:
    """Findings in the body of `if TYPE_CHECKING:` (`typing.TYPE_CHECKING`) are info: the
    constant is False at run time and True only for static type checkers (typing's
    documentation, PEP 484), so an import there is never executed on any machine; the `else:`
    branch is what runs."""
    why = "under `if TYPE_CHECKING:`, which is False at run time: never run"
    return _info_in_if_bodies(whole, hits, _is_type_checking, why)


def _is_type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `<module>.TYPE_CHECKING` (typing, typing_extensions)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _returned_flag_places(whole: whole_tree.Whole, hits: list[Hit]) -> list[Hit]:
    """Where a local function writes the nvcc-only flags it returns into a build's nvcc
    arguments (`return args + ["--threads", n]`): the line a maintainer edits, at the severity
    the call's finding was given (the call's place decides a vendor switch's gating)."""
    try:
        tree = whole.tree()
        module = whole.derived(_build_module)
    except (SyntaxError, ValueError):
        return []
    _, returned = build_flags.nvcc_arguments(tree, module)
    called = {line: name for line, name in returned}  # the call's line -> the local function
    out = []
    for h in hits:
        name = called.get(h.line) if h.rule.check == "nvcc-flags" else None
        if name is None or h.severity == "info":
            continue
        for line, flag in build_flags.returned_flag_lines(module, name):
            if line != h.line:
                why = f"{flag} written here: {name}() returns it into nvcc's arguments (line {h.line})"
                out.append(Hit(line, 1, h.rule, why[:160], h.severity))
    return out


def _launch_statements(text: str, hits: list[Hit], whole: whole_tree.Whole) -> ast.Module | None:
    """The tree move_to_launches reads: the top-level statements that hold the command findings
    when each of those is inside a top-level function or class (a launch is followed only in a
    function that holds the command, or at module level when the module's own statements, not
    a function's or a class's, hold it); otherwise, or when it is parsed already, the whole tree."""
    if not whole.parsed:
        lines = sorted({h.line for h in hits if h.rule.commands and h.severity != "info"})
        tree = whole_tree.holding(text, pieces.line_starts(text, lines), whole)
        if tree is None:
            return None
        if (
            not whole.parsed
            and all(_in_definition(tree, line) for line in lines)
            and not _returns_a_command(tree, lines)
        ):
            return tree
    with contextlib.suppress(SyntaxError, ValueError):
        return whole.tree()
    return None


def _looks_at_rocm(text: str) -> bool:
    """Whether a module looks at ROCm at all: ROCm by name, a HIP build word (torch.version.hip,
    ROCM_HOME, hipcc ...), an AMD tool (amd-smi, amdsmi ...) or an is_hip test."""
    return (
        "rocm" in text.lower()
        or "is_hip" in text
        or any(w in text for w in (*_HIP_BUILD_WORDS, *_AMD_TOOLS))
    )


def _returns_a_command(tree: ast.Module, lines: list[int]) -> bool:
    """Whether a top-level function that holds the command found at one of `lines` returns a
    name or a string, not a call's result (its callers, elsewhere in the module, may be where
    the command is run: move_to_launches then needs the whole tree)."""
    return any(
        isinstance(node, ast.Return)
        and node.value is not None
        and not any(isinstance(n, ast.Call) for n in ast.walk(node.value))
        for function in tree.body
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(function.lineno <= line <= (function.end_lineno or 0) for line in lines)
        for node in ast.walk(function)
    )


def _in_definition(tree: ast.Module, line: int) -> bool:
    """Whether `line` is inside a top-level def or class of `tree` (its decorators included)."""
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([statement.lineno, *(d.lineno for d in statement.decorator_list)])
            if first <= line <= (statement.end_lineno or statement.lineno):
                return True
    return False


def _docker_client_gpus(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """`gpus=` given to a Python docker client's run (container_gpus.docker_client_gpus)."""
    rule = rules.by_id.get("docker-gpus")
    if rule is None:
        return []
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return []
    return [
        hit(c.lineno, c.col_offset + 1, rule, f"gpus={c.value!r}  (a docker client's --gpus)")
        for c in container_gpus.docker_client_gpus(tree)
    ]


# A call of a function named for installing (installer.py): the table check's text gate, written
# in lower case as the byte pre-filter's installer words are.
_INSTALLER_CALL = re.compile(r"(?:install(?!ed)|requirement)\w*\s*\(")


def _install_table_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """Requirement strings of a module-level install table (installer.table_hits)."""
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return []
    return installer.table_hits(tree, rules)


def _ort_provider_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """ONNX Runtime provider choices that test only NVIDIA's providers, give them to the device
    "cuda", or list them with no AMD provider in the module (ort_providers)."""
    rule, tree = _rule_and_tree(rules, "ort-nvidia-provider", whole)
    if rule is None or tree is None:
        return []
    choices = ort_providers.nvidia_only_choices(tree)
    taken = {(c.line, c.column) for c in choices}
    # The most specific reading of a place wins: a test, then a device mapped to a provider,
    # then a list.
    for more in (ort_providers.device_mapped_choices, ort_providers.provider_lists):
        added = [c for c in more(tree) if (c.line, c.column) not in taken]
        taken.update((c.line, c.column) for c in added)
        choices += added
    return [hit(c.line, c.column, rule, f"{c.provider!r} {c.how}", c.severity) for c in choices]


def _ct2_device_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """torch's availability test choosing the GPU of a CTranslate2 model (ct2_device)."""
    rule, tree = _rule_and_tree(rules, "ct2-torch-device", whole)
    if rule is None or tree is None:
        return []
    return [hit(u.line, u.column, rule, u.evidence) for u in ct2_device.torch_chosen_devices(tree)]


def _numba_cuda_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """Numba's CUDA target, judged by how the module uses it (numba_cuda)."""
    rule, tree = _rule_and_tree(rules, "numba-cuda", whole)
    if rule is None or tree is None:
        return []
    return [hit(u.line, u.column, rule, u.evidence, u.severity) for u in numba_cuda.uses(tree)]


def _triton_tf32_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """tl.dot asked for TF32 by name (triton_dot): AMD's back end allows it on CDNA3 only."""
    rule, tree = _rule_and_tree(rules, triton_dot.RULE, whole)
    if rule is None or tree is None:
        return []
    why = "reaches tl.dot's input_precision: AMD's Triton allows it on gfx942 (MI300) only"
    return [
        hit(c.lineno, c.col_offset + 1, rule, f"{c.value!r} {why}")
        for c in triton_dot.tf32_precisions(tree)
    ]


def _triton_warps_hits(whole: whole_tree.Whole, rules: RuleSet, text: str) -> list[Hit]:
    """32 warps for a Triton kernel (triton_warps): 2048 threads on a 64-lane AMD wavefront."""
    rule, tree = _rule_and_tree(rules, triton_warps.RULE, whole)
    if rule is None or tree is None:
        return []
    return [
        hit(p.line, p.column, rule, p.evidence, p.severity) for p in triton_warps.places(tree, text)
    ]


def _opencv_dnn_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """OpenCV's DNN module set to its CUDA back end (opencv_dnn): warn, info beside OpenCL."""
    rule, tree = _rule_and_tree(rules, opencv_dnn.RULE, whole)
    if rule is None or tree is None:
        return []
    switch = opencv_dnn.names_opencl(whole.text)
    why = "  (the module also names an OpenCL target: one side of a choice)" if switch else ""
    return [
        hit(call.lineno, call.col_offset + 1, rule, shown + why, "info" if switch else None)
        for call, shown in opencv_dnn.cuda_choices(tree)
    ]


def _ffmpeg_nvidia_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """ffmpeg asked for NVIDIA's video engines (ffmpeg_nvidia): warn, info beside VAAPI/AMF."""
    rule, tree = _rule_and_tree(rules, ffmpeg_nvidia.RULE, whole)
    if rule is None or tree is None:
        return []
    found = ffmpeg_nvidia.uses(tree, whole.text, rule.severity)
    return [hit(u.line, u.column, rule, u.evidence, u.severity) for u in found]


def _inline_ptx_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """PTX assembly handed to an inline-asm call (inline_ptx): error, info under a target test."""
    rule, tree = _rule_and_tree(rules, inline_ptx.RULE, whole)
    if rule is None or tree is None:
        return []
    uses = inline_ptx.asm_uses(tree, whole.text)
    return [
        hit(
            u.line,
            u.column,
            rule,
            u.evidence + ("  (gated: a CUDA target test)" if u.gated else ""),
            "info" if u.gated else rule.severity,
        )
        for u in uses
    ]


def _import_time_library_hits(text: str, whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """NVIDIA libraries loaded through ctypes when the module is imported (ctypes_libraries)."""
    rule, tree = _rule_and_tree(rules, "nvidia-library-load", whole)
    if rule is None or tree is None:
        return []
    loads = ctypes_libraries.import_time_loads(tree, text)
    return [hit(x.line, x.column, rule, x.evidence, x.severity) for x in loads]


def _capability_version_hits(text: str, whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """Capability tests written through version parsing (capability_versions)."""
    rule, tree = _rule_and_tree(rules, "device-capability", whole)
    if rule is None or tree is None:
        return []
    aware = vendor_aware(text) or "pytest" in text  # a vendor switch, or a test's pick: info
    return [
        hit(c.line, c.column, rule, c.evidence, "info" if aware else c.severity)
        for c in capability_versions.version_comparisons(tree)
    ]


def _nvml_statements(text: str, hits: list[Hit], whole: whole_tree.Whole) -> ast.Module | None:
    """The top-level statements move_to_queries reads: those of the NVML imports and those
    that name what the imports bind (a query is a call through such a name, written as itself
    where whole_tree.ascii_names); the whole tree when it is parsed already or a name may not be."""
    if whole.parsed or not whole_tree.ascii_names(text):
        with contextlib.suppress(SyntaxError, ValueError):
            return whole.tree()
        return None
    lines = sorted({h.line for h in hits if h.rule.check == "nvml-call"})
    imports = pieces.line_starts(text, lines)
    first = whole_tree.holding(text, imports, whole)
    if first is None:
        return None
    names = {
        alias.asname or alias.name.split(".")[0]
        for node in pieces.statement_nodes(first)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno in lines
        for alias in node.names
    }
    return whole_tree.holding(text, imports + _word_offsets(text, names), whole)


# What only an NVIDIA container gets: docker's --gpus (NVIDIA Container Toolkit), the CDI name
# nvidia.com/gpu, the nvidia runtime.
_NVIDIA_CONTAINER_WORDS = ("--gpus", "nvidia.com/gpu", "nvidia")


def _visible_devices_as_vendor(
    text: str, rules: RuleSet, whole: whole_tree.Whole | None = None
) -> list[Hit]:
    """`if <CUDA_VISIBLE_DEVICES is set>:` around NVIDIA-only container options: the variable's
    presence is read as "an NVIDIA host", but the HIP runtime honours CUDA_VISIBLE_DEVICES too
    (ROCm's GPU isolation page), so an AMD host where it is set gets NVIDIA's options (warn)."""
    return [h for h, _ in _visible_device_tests(text, rules, whole)]


def _visible_device_tests(
    text: str, rules: RuleSet, whole: whole_tree.Whole | None = None
) -> list[tuple[Hit, tuple[int, int]]]:
    """_visible_devices_as_vendor's findings, each with the lines of the `if` body it holds
    (the NVIDIA options there are that test's side)."""
    rule = rules.env_rule("CUDA_VISIBLE_DEVICES")
    if rule is None:
        return []
    # Such an `if` names the variable in its test: the top-level statements that hold the name
    # hold every such `if` whole (the whole tree when another check has parsed it).
    tree = whole_tree.holding(text, pieces.places(text, "CUDA_VISIBLE_DEVICES"), whole)
    if tree is None:
        return []
    hits: list[tuple[Hit, tuple[int, int]]] = []
    for node in pieces.statement_nodes(tree):  # an `if` is a statement: ast.walk's order
        if not isinstance(node, ast.If):
            continue
        named = next(
            (
                n
                for n in whole_tree.walk(node.test)
                if isinstance(n, ast.Constant) and n.value == "CUDA_VISIBLE_DEVICES"
            ),
            None,
        )
        if named is None:
            continue
        nvidia = next(
            (
                n.value
                for s in node.body
                for n in whole_tree.walk(s)
                if isinstance(n, ast.Constant)
                and isinstance(n.value, str)
                and any(w in n.value for w in _NVIDIA_CONTAINER_WORDS)
            ),
            None,
        )
        if nvidia is not None:
            why = (
                f"'CUDA_VISIBLE_DEVICES' taken as an NVIDIA host (then {nvidia!r}): the HIP"
                " runtime honours it too, so an AMD host where it is set gets NVIDIA's options"
            )
            body = (node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
            hits.append((hit(named.lineno, named.col_offset + 1, rule, why, "warn"), body))
    return hits


def _beside_test(found: Hit, tests: list[tuple[Hit, tuple[int, int]]]) -> Hit:
    """A CDI device name in the body of an `if <CUDA_VISIBLE_DEVICES is set>:` is that test's
    NVIDIA side: info, the test is the finding."""
    if found.rule.id != "cdi-nvidia-device" or found.severity == "info":
        return found
    test = next((t for t, (a, b) in tests if a <= found.line <= b), None)
    if test is None:
        return found
    return demoted(found, "info", f"the NVIDIA side of the test at line {test.line}")


def _holds_match(pattern: re.Pattern[str], text: str) -> bool:
    """Whether pattern.search(text) finds a match, searched as the reversed pattern over the
    reversed text when that pattern starts with a literal and this one does not: a pattern led
    by a set of common characters (`[{,]`) is tried at each of them, a literal one only where
    its literal is (capability_tables.TEXT_HINT: 6x faster)."""
    backwards = _backwards(pattern)
    if backwards is None:
        return pattern.search(text) is not None
    return backwards.search(text[::-1]) is not None


@functools.lru_cache(maxsize=16)
def _backwards(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern whose language is the reversal of `pattern`'s (a substring of a text matches
    one exactly where its reversal matches the other, so a search finds a match in the text
    exactly when the other finds one in the reversed text), built from `re`'s own parse of it;
    None when it would not be led by a literal, `pattern` is, or it uses what has no reversal
    here (anchors, lookarounds, back-references)."""
    try:
        try:
            from re import _compiler, _parser  # type: ignore[attr-defined]
        except ImportError:  # pragma: no cover - Python 3.10
            import sre_compile as _compiler
            import sre_parse as _parser
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        data = _reversed_items(parsed.data, lambda d: _parser.SubPattern(parsed.state, d))
        if _led_by_literal(parsed.data) or data is None or not _led_by_literal(data):
            return None
        backwards = _compiler.compile(_parser.SubPattern(parsed.state, data), pattern.flags)
        return backwards if isinstance(backwards, re.Pattern) else None
    except Exception:  # re's internals moved: search forwards
        return None


def _led_by_literal(items: Any) -> bool:
    return bool(items) and getattr(items[0][0], "name", None) == "LITERAL"


def _reversed_items(items: Any, wrap: Callable[[list[Any]], Any]) -> list[Any] | None:
    """`re`'s parsed items of a pattern in reverse order, each reversed (`wrap` makes a
    subpattern); None for an item with no reversal here."""
    out = []
    for op, value in reversed(list(items)):
        name = getattr(op, "name", None)
        if name in ("LITERAL", "NOT_LITERAL", "IN", "ANY"):
            out.append((op, value))
        elif name == "BRANCH":
            branches = []
            for branch in value[1]:
                reversed_branch = _reversed_items(branch, wrap)
                if reversed_branch is None:
                    return None
                branches.append(wrap(reversed_branch))
            out.append((op, (value[0], branches)))
        elif name == "SUBPATTERN":
            inner = _reversed_items(value[3], wrap)
            if inner is None:
                return None
            out.append((op, (*value[:3], wrap(inner))))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            inner = _reversed_items(value[2], wrap)
            if inner is None:
                return None
            out.append((op, (value[0], value[1], wrap(inner))))
        else:
            return None
    return out


# NVIDIA's math and runtime libraries by link name (libcusparse.so is `cusparse` / `-lcusparse`):
# ROCm ships hipSPARSE/rocSPARSE, hipBLAS/rocBLAS, ... under other names, and torch's hipify
# rewrites sources, not the `libraries=` of an extension, so the link fails on ROCm.
# Inside a link list the driver's name is no device string: `libraries=["cuda"]`, "-lcuda".
_CUDA_LINK_LIBS = cuda_libraries.LINK_NAMES | {cuda_libraries.DRIVER_LINK}
_CUDA_LINK_TEXT = re.compile(
    r"""["'](?:-l)?(?:""" + "|".join(sorted(_CUDA_LINK_LIBS)) + r""")["']"""
)
# sys.platform == "win32", os.name == "nt", platform.system() == "Windows", a `windows` flag
_WINDOWS_TEST = re.compile(r"""(?i)(?:^|[^a-z])win(?:32|dows)?\b|["']nt["']""")


# A shell word that assigns a variable (POSIX, Shell Command Language 2.9.1: a simple command's
# leading NAME=value words are assignments, not its name), or `env` with its own assignments.
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")


def _command_words(value: str) -> list[str]:
    """The command word of a shell command line and up to two words after it: the leading
    variable assignments (`GENV_BYPASS=1 nvidia-smi -L`) and an `env` before them skipped."""
    words = value.split()
    start = 0
    if words and words[0].rsplit("/", 1)[-1] == "env":
        start = 1
    while start < len(words) and _ASSIGNMENT_WORD.fullmatch(words[start]):
        start += 1
    if start and start < len(words):
        return words[start : start + 3]
    return value.split(None, 2)


def _rule_and_tree(
    rules: RuleSet, check: str, whole: whole_tree.Whole
) -> tuple[Rule | None, ast.Module | None]:
    """The rule of `check` and the file's whole tree (None: no such rule, or no parse)."""
    rule = rules.by_check.get(check)
    if rule is None:
        return None, None
    try:
        return rule, whole.tree()
    except (SyntaxError, ValueError):
        return rule, None


def _cuda_link_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """CUDA libraries an extension build links by name (setup.py's extensions, torch's JIT
    `load(extra_ldflags=...)`), in a build that never looks at ROCm's side: error (rule
    cuda-extension). One chosen only on Windows (`["cublas"] if
    windows else []`) is not what a ROCm (Linux) build links."""
    rule, tree = _rule_and_tree(rules, "cuda-extension", whole)
    if rule is None or tree is None:
        return []
    windows_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.IfExp, ast.If)) and _WINDOWS_TEST.search(ast.unparse(node.test)):
            body: list[ast.AST] = [*node.body] if isinstance(node, ast.If) else [node.body]
            windows_only.update(id(n) for b in body for n in ast.walk(b))
    hits = []
    for node, value in _linked(tree):
        name = value.removeprefix("-l")
        if name in _CUDA_LINK_LIBS and id(node) not in windows_only:
            why = f"links NVIDIA's {name} by name: ROCm has no such library"
            hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "error"))
    return hits


# setuptools' Extension and CUDAExtension; torch.utils.cpp_extension.load()/load_inline()
_LINK_KEYWORDS = frozenset({"libraries", "extra_link_args", "extra_ldflags"})


def _linked(tree: ast.Module) -> Iterator[tuple[ast.Constant, str]]:
    """The strings a build links by: what flows into a `libraries=` or `extra_link_args=`
    keyword (setuptools' Extension and CUDAExtension, distutils' compilers), through list
    items, `+`, `x if c else y`, and names (assigned, `+=`, append/extend/insert), not the
    extension's or a package's name that happens to be spelled like a library."""
    values: dict[str, list[ast.expr]] = {}
    stack: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if _held_in(target):
                    values.setdefault(_held_in(target), []).append(node.value)
        elif isinstance(node, ast.AugAssign) and _held_in(node.target):
            values.setdefault(_held_in(node.target), []).append(node.value)
        elif isinstance(node, ast.Dict):  # load(**{"extra_ldflags": [...]})
            stack += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value in _LINK_KEYWORDS
            ]
        elif isinstance(node, ast.Call):
            stack += [k.value for k in node.keywords if k.arg in _LINK_KEYWORDS]
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("append", "extend", "insert")
                and _held_in(func.value)
            ):
                values.setdefault(_held_in(func.value), []).extend(node.args)
    seen: set[str] = set()
    while stack:
        for leaf in build_flags.value_leaves(stack.pop()):
            held = _held_in(leaf)
            if held:
                if held not in seen:
                    seen.add(held)
                    stack.extend(values.get(held, ()))
            elif isinstance(leaf, ast.Call) and whole_tree.call_name(leaf.func) in _COPIES:
                stack.extend(leaf.args)  # list(info["libs"]): a copy holds the same names
            elif isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                yield leaf, leaf.value


_COPIES = frozenset({"list", "tuple", "sorted", "set"})


def _held_in(node: ast.AST) -> str:
    """The name a value is kept in: `libs`, or `info["libs"]` (a dict entry by a constant key)."""
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return f"{node.value.id}[{node.slice.value!r}]"
    return ""


def _capability_table_hits(whole: whole_tree.Whole, rules: RuleSet) -> list[Hit]:
    """The device capability looked up in a table of NVIDIA capabilities (capability_tables)."""
    rule, tree = _rule_and_tree(rules, "device-capability", whole)
    if rule is None or tree is None:
        return []
    why = (
        "a table keyed by NVIDIA compute capabilities, looked up with the device's: on ROCm that"
        " is the gfx version (MI300X 9.4: absent; MI200 9.0: Hopper's entry)"
    )
    return [
        hit(node.lineno, node.col_offset + 1, rule, f"{name}[...]  ({why})", "error")
        for node, name in capability_tables.lookups(whole.text, tree)
    ]


def _cuda_build_hits(text: str, rules: RuleSet, whole: whole_tree.Whole | None = None) -> list[Hit]:
    """An extension build with no ROCm side, read as a ROCm machine runs it (cuda_build.py): a
    name bound only where CUDA_HOME is set, a build target made from the device capability, a
    `+cu` wheel name it downloads."""
    if "CUDA_HOME" not in text and "get_device_capability" not in text and "+cu{" not in text:
        return []
    whole = whole or whole_tree.Whole(text)
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return []
    hits: list[Hit] = []
    extension = rules.by_check.get("cuda-extension")
    capability = rules.by_check.get("device-capability")
    tag = rules.by_check.get("requirement-cuda-tag")
    if extension is not None:
        for read, name, gate in cuda_build.unbound_without_cuda_home(tree):
            why = (
                f"{name} is bound only under the CUDA_HOME test at line {gate}: CUDA_HOME is"
                " None where no CUDA toolkit is found (a ROCm machine): this read raises NameError"
            )
            hits.append(hit(read.lineno, read.col_offset + 1, extension, why, "error"))
        for test, built, env in cuda_build.extension_needs_cuda_home(tree):
            unless = f", unless {' or '.join(env)} is set for the build" if env else ""
            why = (
                f"the CUDAExtension at line {built} is not built on a ROCm torch{unless}:"
                " torch.utils.cpp_extension sets CUDA_HOME only on a CUDA torch"
                " (add `or torch.version.hip is not None` to the test)"
            )
            hits.append(hit(test.lineno, test.col_offset + 1, extension, why, "error"))
    if capability is not None:
        for call, target in cuda_build.capability_targets(tree):
            why = (
                f"get_device_capability() becomes the build target {target!r}: on ROCm it is the"
                " gfx number ((9, 4) on MI300X), an NVIDIA architecture that does not exist"
            )
            hits.append(hit(call.lineno, call.col_offset + 1, capability, why, "warn"))
    if tag is not None:
        for node, name in cuda_build.cuda_wheel_names(tree):
            why = f"{name!r}: a +cu (CUDA) build of the extension is fetched instead of compiled"
            hits.append(hit(node.lineno, node.col_offset + 1, tag, why, "error"))
    return hits


def _nvcc_gated_jit_hits(
    text: str, rules: RuleSet, whole: whole_tree.Whole | None = None
) -> list[Hit]:
    """A JIT build that starts only where nvcc is found, in a module that never looks at ROCm's
    side: on a ROCm machine (hipcc, no nvcc) the extension is never built (rule cuda-extension,
    at warn: its kernels are missing; what runs instead, a fallback or nothing, the module's
    other code decides)."""
    rule = rules.by_check.get("cuda-extension")
    if rule is None or not any(j in text for j in (*build_flags.JIT_CALLS, "CUDAExtension")):
        return []
    whole = whole or whole_tree.Whole(text)
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return []
    return [
        hit(
            node.lineno,
            node.col_offset + 1,
            rule,
            f"if {ast.unparse(node.test)}: <extension build>  ({probe}: a ROCm machine has hipcc, not"
            " nvcc, and this module never looks for it, so the extension is never built)",
            "warn",
        )
        for node, probe in build_flags.nvcc_gated_jit(tree, whole.derived(_build_module))
    ]


def _flags_behind_closed_gates(whole: whole_tree.Whole, hits: list[Hit]) -> list[Hit]:
    """nvcc-only flags inside an `if` that asks for nvcc and that no environment variable can
    open (`if cuda_toolkit_available():` running `nvcc`), in a module with no ROCm side: a ROCm
    build never reaches them (the gate is the finding, cuda-extension), so they are info. A gate
    a variable opens (`... or os.getenv("FORCE_CUDA")`) keeps them: with it set they reach hipcc."""
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return hits
    closed = [
        (gate.lineno, gate.body[0].lineno, gate.body[-1].end_lineno or gate.lineno)
        for gate, build in build_flags.nvcc_gates(tree)
        if not build.env_names(gate.test) and build.truth(gate.test, cuda_home=None) is not True
    ]
    out = []
    for h in hits:
        gate = next((g for g, first, last in closed if first <= h.line <= last), None)
        if h.rule.check == "nvcc-flags" and h.severity != "info" and gate is not None:
            why = f"  (reached only where nvcc is found: the gate at line {gate})"
            h = Hit(h.line, h.column, h.rule, (h.evidence + why)[:160], "info")
        out.append(h)
    return out


def _windows_only_flags(whole: whole_tree.Whole, hits: list[Hit]) -> list[Hit]:
    """nvcc-only flags added in the body of an `if` that tests for Windows (`if os.name ==
    'nt':`): a ROCm build runs on Linux and never adds them, so they are info."""
    return _info_in_if_bodies(
        whole,
        hits,
        lambda test: bool(_WINDOWS_TEST.search(ast.unparse(test))),
        "added only on Windows: a ROCm build runs on Linux",
        lambda h: h.rule.check == "nvcc-flags",
    )


def _info_in_if_bodies(
    whole: whole_tree.Whole,
    hits: list[Hit],
    test: Callable[[ast.expr], bool],
    why: str,
    applies: Callable[[Hit], bool] = lambda h: True,
) -> list[Hit]:
    """The hits `applies` accepts that stand in the body of an `if` whose test `test` accepts
    (a branch no ROCm machine runs), demoted to info with `why`; the others as they are."""
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return hits
    bodies = [
        (node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
        for node in whole_tree.walk(tree)
        if isinstance(node, ast.If) and test(node.test)
    ]
    if not bodies:
        return hits
    return [
        demoted(h, "info", why)
        if h.severity != "info"
        and applies(h)
        and any(first <= h.line <= last for first, last in bodies)
        else h
        for h in hits
    ]


def _build_module(whole: whole_tree.Whole) -> build_flags._Module:
    return build_flags.read_module(whole.tree(), whole.text)


def _named_requirement_hits(
    text: str, rules: RuleSet, whole: whole_tree.Whole | None = None, offered: bool = True
) -> list[Hit]:
    """Requirements that setup(...) receives as a module-level name: `reqs = [...]` and
    `extras = {...}` / `extras["x"] = [...]` (a list built that way is what pip installs)."""
    lines = _named_keyword_lines(text) if whole_tree.ascii_names(text) else None
    if lines == []:
        return []
    whole = whole or whole_tree.Whole(text)
    # The setup() call is in the top-level statements that hold its keywords, the lists in those
    # that name them (the whole tree when it is parsed already, or the text is not ASCII).
    if lines is None or whole.parsed:
        with contextlib.suppress(SyntaxError, ValueError):
            return _requirements_passed_by_name(whole.tree(), whole.tree(), lines, rules, offered)
        return []
    calls = whole_tree.holding(text, pieces.line_starts(text, lines), whole)
    if calls is None:
        return []
    return _requirements_passed_by_name(
        calls,
        lambda names: whole_tree.holding(text, _word_offsets(text, names), whole),
        lines,
        rules,
        offered,
    )


def _requirements_passed_by_name(
    calls: ast.Module,
    lists: ast.Module | Callable[[Iterable[str]], ast.Module | None],
    lines: list[int] | None,
    rules: RuleSet,
    offered: bool = True,
) -> list[Hit]:
    """The hits of _named_requirement_hits: the setup() keywords given a name in `calls`, the
    module-level lists assigned to those names in `lists` (or in what it gives for the names)."""
    passed: dict[str, str] = {}  # module-level name -> setup() keyword it is given to
    for node in _walk_lines(calls, lines):
        if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "setup":
            for keyword in node.keywords:
                if keyword.arg in _REQUIREMENT_KEYWORDS and isinstance(keyword.value, ast.Name):
                    passed[keyword.value.id] = keyword.arg
    if not passed:
        return []
    tree = lists(passed) if callable(lists) else lists
    if tree is None:
        return []
    hits: list[Hit] = []
    for statement in whole_tree.module_statements(tree):  # the code setup.py runs
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target, value = statement.targets[0], statement.value
        if isinstance(target, ast.Name) and target.id in passed:
            groups = list(_requirement_groups(value))
            if passed[target.id] == "extras_require":
                groups = [(g if g is not None else "?", c) for g, c in groups if g is not None]
            elif (spliced := _spliced_names(value)) and (
                held := lists(spliced) if callable(lists) else lists
            ) is not None:
                # `requirements = ["numpy", *platform_packages]`: what the module appends to
                # the spliced list (in either branch of a platform test) reaches setup() too
                groups.append((None, _appended_requirements(held, spliced)))
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and passed.get(target.value.id) == "extras_require"
            and isinstance(value, (ast.List, ast.Tuple))
        ):
            key = target.slice
            name = str(key.value) if isinstance(key, ast.Constant) else "?"
            groups = [(name, _string_constants(value.elts))]
        else:
            continue
        for group, constants in groups:
            placed = [(str(c.value), c.lineno) for c in constants]
            hits.extend(group_hits(group, placed, rules, rocm_build_offered=offered))
    return hits


# `extras_require={"local": LOCAL, ...}`: a dict literal with a value that is a name (not a call);
# `extras_require=extras` names a dict, looked for as `extras = {... : NAME ...}`.
_EXTRAS_DICT_OF_NAMES = re.compile(r"extras_require\s*=\s*\{[^}]*?:\s*[A-Za-z_]\w*\s*[,}+\n]")
_EXTRAS_BY_NAME = re.compile(r"extras_require\s*=\s*([A-Za-z_]\w*)")


def _has_extras_of_names(text: str) -> bool:
    """Whether setup() may get an extras dict whose values are names (_extras_of_names)."""
    if _EXTRAS_DICT_OF_NAMES.search(text):
        return True
    named = _EXTRAS_BY_NAME.search(text)
    return named is not None and (
        re.search(rf"\b{named.group(1)}\s*=\s*\{{[^}}]*?:\s*[A-Za-z_]\w*\s*[,}}+\n]", text)
        is not None
    )


def _extras_of_names(whole: whole_tree.Whole, rules: RuleSet, offered: bool = True) -> list[Hit]:
    """The extras of `extras_require={"local": LOCAL, "all": LOCAL + API}` (a dict literal in
    setup(), or one assigned to the name setup() is given) whose values are module-level names:
    setuptools receives the lists those names hold, so pip installs them for that extra."""
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return []
    assigned: dict[str, ast.expr] = {}  # module-level name -> its value (the last assignment)
    for statement in tree.body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        if isinstance(statement.targets[0], ast.Name):
            assigned[statement.targets[0].id] = statement.value
    hits: list[Hit] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "setup"):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg != "extras_require":
                continue
            if isinstance(value, ast.Name):
                value = assigned.get(value.id, value)
            if not isinstance(value, ast.Dict):
                continue
            for key, item in zip(value.keys, value.values, strict=True):
                if isinstance(item, (ast.List, ast.Tuple)):
                    continue  # read with the setup() call itself (_requirement_groups)
                group = str(key.value) if isinstance(key, ast.Constant) else "?"
                constants = _list_of_names(item, assigned, depth=0)
                placed = [(str(c.value), c.lineno) for c in constants]
                hits.extend(group_hits(group, placed, rules, rocm_build_offered=offered))
    return hits


def _list_of_names(node: ast.expr, assigned: dict[str, ast.expr], depth: int) -> list[ast.Constant]:
    """The string requirements a name or a `+` of names and lists stands for (names followed
    through module-level assignments, a few levels deep)."""
    if depth > 4:
        return []
    if isinstance(node, ast.Name) and node.id in assigned:
        return _list_of_names(assigned[node.id], assigned, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _list_of_names(node.left, assigned, depth + 1) + _list_of_names(
            node.right, assigned, depth + 1
        )
    if isinstance(node, (ast.List, ast.Tuple)):
        return _requirement_constants(node.elts)
    return []


# A setup() keyword given a name (install_requires=reqs, extras_require=(extras)), allowing what
# may stand between (spaces, newlines, continuations, comments, parentheses): a file with none
# passes no list by name. Only where whole_tree.ascii_names: a keyword is NFKC-normalised, so an exotic
# spelling of install_requires would be the same keyword.
_NAMED_KEYWORD = re.compile(
    r"\b(?:install_requires|setup_requires|extras_require)(?:[\s\\]|#[^\n]*)*=(?!=)"
    r"(?:[\s\\(]|#[^\n]*)*[A-Za-z_]"
)


# The pattern from its keyword on: tried only where a keyword starts a word (a leading \b leaves
# `re` no literal to skip to, and it then tries every character: the slowest part of setup.py).
_NAMED_KEYWORD_AT = re.compile(_NAMED_KEYWORD.pattern.replace(r"\b", "", 1))


def _named_keyword_lines(text: str) -> list[int]:
    """The lines where _NAMED_KEYWORD.finditer(text) finds a match (each keyword's own line)."""
    lines, line, last, end = [], 1, 0, 0
    for start in _word_offsets(text, _REQUIREMENT_KEYWORDS):
        if start < end or (match := _NAMED_KEYWORD_AT.match(text, start)) is None:
            continue
        end = match.end()
        line += text.count("\n", last, start)
        last = start
        lines.append(line)
    return lines


def _walk_lines(tree: ast.Module, lines: list[int] | None) -> list[ast.AST]:
    """ast.walk(tree) (less the contexts), less the top-level statements (decorators included)
    that span none of `lines` (None: all of them), in ast.walk's order: a pruned breadth-first
    walk keeps it."""
    if lines is None:
        return whole_tree.walk(tree)
    kept: list[ast.AST] = []
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", ())
        first = min([statement.lineno, *(d.lineno for d in decorators)])
        end = statement.end_lineno or statement.lineno
        if any(first <= line <= end for line in lines):
            kept.append(statement)
    return whole_tree.walk_from(kept)


def _scan_python(
    text: str,
    rules: RuleSet,
    *,
    is_setup: bool = False,
    own: frozenset[str] = frozenset(),
    exhaustive: bool = False,
    keys: tuple[str, ...] | None = None,
    whole: whole_tree.Whole | None = None,
) -> tuple[list[Hit], bool]:
    """(findings, parsed?) for one Python file; raises ScanError when it does not parse. `own`:
    the project's own top-level packages, whose imports are never findings.

    Only the top-level statements (a function, a class, an `if` block) that hold a trigger are
    parsed, each at its own line numbers; the whole file is parsed when that fails or when the
    pieces would be most of it. In setup.py the statements holding the setup() keywords
    (install_requires, extras_require, setup_requires) are pieces too. `exhaustive`: parse and
    walk the whole file instead (the reference the pruned scan is tested against). `keys`: the
    trigger keys of the file when the caller has looked for them (trigger_keys). `whole`: the
    file's whole tree, shared with the other checks (a whole tree one of them parsed is walked
    at the lines a failed cut would walk instead of parsing pieces)."""
    whole = whole or whole_tree.Whole(text)
    offsets = _trigger_offsets(text, rules, own, keys)
    if is_setup:  # its requirement lists: the keywords of the setup() call
        offsets += _word_offsets(text, _SETUP_WORDS)
    if offsets and any(m in text for m in _BUILD_MARKERS):
        # nvcc flags count anywhere in a file that builds an extension: their places are pieces.
        offsets += _nvcc_offsets(text)
    if not offsets and not exhaustive:
        return [], False
    offsets += _stored_uses(text) + _followed_uses(text, offsets)
    visitor = _Visitor(rules, text, is_setup=is_setup, own=own, whole=whole, keys=keys)
    offsets += visitor.nvcc_offsets(text)  # where nvcc-only flags flow into a build's arguments
    vendor_words = vendor_starts if visitor.vendor_possible else None
    lines: list[int] | None = None
    if not exhaustive and whole.parsed:
        lines = _whole_lines(text, offsets, vendor_words)
    elif not exhaustive:
        plan = pieces.plan(text, offsets, vendor_words)
        for source in plan.sources:
            try:
                tree = _parse(source)
            except (SyntaxError, ValueError):
                continue  # a cut that does not parse: the next, coarser one (the visitor is new)
            return visitor.run(tree, plan.lines), True
        lines = plan.lines if not plan.sources else _whole_lines(text, offsets, vendor_words)
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise ScanError(
            f"Python syntax error{f' at line {line}' if line else ''}; not scanned"
        ) from None
    return visitor.run(tree, lines), True


_VENDOR_TEXT = re.compile("|".join(re.escape(t) for t in VENDOR_TOKENS))


def vendor_starts(text: str, start: int = 0, end: int | None = None) -> list[int]:
    """Where _VENDOR_TEXT.finditer(text, start, end) finds a vendor token, found with one
    str.find loop per token (the alternation is tried at every character: 1.5x slower): at each
    place the first token in VENDOR_TOKENS order, the next match only after its end."""
    end = len(text) if end is None else end
    first: dict[int, int] = {}  # place -> index of the first token there
    for index, token in enumerate(VENDOR_TOKENS):
        position = text.find(token, start, end)
        while position >= 0:
            if first.setdefault(position, index) > index:
                first[position] = index
            position = text.find(token, position + 1, end)
    found, after = [], start
    for position in sorted(first):
        if position >= after:
            found.append(position)
            after = position + len(VENDOR_TOKENS[first[position]])
    return found


# Every vendor token holds one of these in lower case: a file with none of them in its lower-cased
# text has no token (8 substring passes instead of 23 for the files that have none; "cuda" alone
# would not do: nearly every file that gets this far holds it).
_BASE_KEYS = ("hip", "rocm", "version.cuda", "is_cuda", "amd", "nvidia", "nvml", "nvsmi")
# ... and a token added later that none of them covers is its own key.
_VENDOR_KEYS = _BASE_KEYS + tuple(
    t.lower() for t in VENDOR_TOKENS if not any(k in t.lower() for k in _BASE_KEYS)
)


def vendor_possible(text: str) -> bool:
    """Whether `text` holds a vendor token (VENDOR_TOKENS): only then are switches looked for."""
    # On the UTF-8 bytes: every token is ASCII, and no byte of a multi-byte character is, so a
    # token is in the text exactly where its bytes are; bytes.lower() folds ASCII alone, which
    # keeps every place (str.lower() of a non-ASCII text may not, and costs 20x more there).
    if not _ASCII_TOKENS:  # a token added with a non-ASCII character: the plain test
        return any(t in text for t in VENDOR_TOKENS)
    data = text.encode()
    low = data.lower()
    # Each token at the places of its key ("hip" also stands in "chip" and "relationship": the
    # tokens are tested only there, not by a search of the whole text each).
    for key, tokens in _BYTE_TOKENS_BY_KEY:
        position = low.find(key)
        while position >= 0:
            if any(data.startswith(t, position - at) for t, at in tokens):
                return True
            position = low.find(key, position + 1)
    return False


def _tokens_by_key() -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """(key, ((token, where the key starts in it), ...)) for each key of _VENDOR_KEYS: a token
    belongs to the first key its lower case holds, so it is in the text exactly where a place
    of that key, moved back by the key's offset in the token, starts it."""
    groups: dict[str, list[tuple[str, int]]] = {k: [] for k in _VENDOR_KEYS}
    for token in VENDOR_TOKENS:
        key = next(k for k in _VENDOR_KEYS if k in token.lower())
        groups[key].append((token, token.lower().find(key)))
    return tuple((k, tuple(v)) for k, v in groups.items() if v)


_TOKENS_BY_KEY = _tokens_by_key()
_ASCII_TOKENS = all(t.isascii() for t in VENDOR_TOKENS)
_BYTE_TOKENS_BY_KEY = tuple(
    (key.encode(), tuple((t.encode(), at) for t, at in tokens)) for key, tokens in _TOKENS_BY_KEY
)


_parse = pieces.parse


def _whole_lines(
    text: str, offsets: list[int], vendor_words: pieces.WordStarts | None
) -> list[int]:
    """The lines of the triggers and of the vendor words in the whole file."""
    return pieces.line_numbers(text, pieces.whole_positions(text, offsets, vendor_words))


_STORE_TARGET = re.compile(r"[ \t]*([\w, ()\[\]]+?)[ \t]*(?::[^=]+)?=(?!=)")


def _stored_uses(text: str) -> list[int]:
    """Offsets of the names a capability or the CUDA version is stored in, wherever they are
    used (`major, minor = ...get_device_capability()` compared lines later): the verdict is
    made there."""
    names: set[str] = set()
    for token in ("get_device_capability", "version.cuda", "get_device_properties"):
        if token in text:
            names |= _stored_names(text, token)
    if "get_device_" in text:
        if names:
            names |= _capability_aliases(text, names)
        names |= _compared_names(text, names | {"get_device_capability", "get_device_properties"})
    return _word_offsets(text, names) if names else []


_COMPARED = re.compile(r"[<>]=?|[!=]=")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _compared_names(text: str, names: set[str]) -> set[str]:
    """Identifiers on the lines that compare one of `names` (`cc >= min_fp8_capability`): a
    threshold kept in a name is read where it is assigned (_Visitor.thresholds)."""
    found: set[str] = set()
    for name in names:
        for position in _word_offsets(text, [name]):
            start = text.rfind("\n", 0, position) + 1
            end = text.find("\n", position)
            line = text[start : end if end >= 0 else len(text)]
            if _COMPARED.search(line):
                found.update(w for w in _NAME.findall(line) if not iskeyword(w))
    return found - names


# `cc = cap[0] * 10 + cap[1]`: a plain assignment (not `==`) whose value reads a name.
_ASSIGN_LINE = re.compile(r"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]+)?=(?!=)([^\n]*)")


def _capability_reads(value: ast.expr) -> set[str]:
    """The names a value reads as a capability (see _capability_part): bare, subscripted, or
    through .major / .minor, not through another attribute."""
    through_other = {
        id(n.value)
        for n in ast.walk(value)
        if isinstance(n, ast.Attribute) and n.attr not in ("major", "minor")
    }
    return {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in through_other}


def _capability_aliases(text: str, names: set[str]) -> set[str]:
    """Names assigned a value computed from a stored capability (one step: the visitor judges
    the comparison of such a number, see _Visitor.visit_assign)."""
    found: set[str] = set()
    for match in _ASSIGN_LINE.finditer(text):
        value = match.group(2)
        if not _CALLED.search(value) and any(_capability_part(n).search(value) for n in names):
            found.add(match.group(1))
    return found - names


_CALLED = re.compile(r"\w[ \t]*\(")  # a call in the value: its result is no capability


@functools.lru_cache(maxsize=64)
def _capability_part(name: str) -> re.Pattern[str]:
    """`name` read as a capability: bare, subscripted, or its .major / .minor (a device's
    properties hold much else: total_memory is no capability)."""
    return re.compile(rf"\b{re.escape(name)}\b(?:\.(?:major|minor)\b|[ \t]*\[|(?![\w.]))")


# The statements a function-wide check reads besides its trigger's: where a docker argv starts
# (its "--gpus" is appended later) and where a library file name tried from a list is loaded.
_ARGV_STARTS = ("'docker'", '"docker"')
_LOADER_WORDS = ("CDLL", "LoadLibrary", "WinDLL")


def _followed_uses(text: str, offsets: list[int]) -> list[int]:
    found: list[int] = []
    if offsets and "--gpus" in text:
        found += _text_offsets(text, _ARGV_STARTS)
    if offsets and any(w in text for w in _LOADER_WORDS):
        found += _word_offsets(text, _LOADER_WORDS)
    return found


def _text_offsets(text: str, needles: Iterable[str]) -> list[int]:
    found: list[int] = []
    for needle in needles:
        position = text.find(needle)
        while position >= 0 and len(found) < 400:
            found.append(position)
            position = text.find(needle, position + 1)
    return found


def _word_offsets(text: str, words: Iterable[str]) -> list[int]:
    """Sorted starts of the whole-word occurrences of identifiers (as `\\b(?:a|b)\\b` finds
    them: a regex alternation tests every character; each word's own pattern skips to its
    literal, and only the places that end a word come back to be checked at their start)."""
    found = []
    for word in words:
        for match in _word_end(word).finditer(text):
            position = match.start()
            if position == 0 or not _is_word(text[position - 1]):
                found.append(position)
    found.sort()
    return found


@functools.lru_cache(maxsize=256)
def _word_end(word: str) -> re.Pattern[str]:
    return re.compile(re.escape(word) + r"(?!\w)")


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # the \\w of re for str patterns


# nvcc-only flag texts (the same as _NVCC_FLAG, anywhere in a string): (literal, digit follows?)
_NVCC_LITERALS = (
    ("-gencode", False),
    ("arch=compute_", True),
    ("-arch=sm_", True),
    ("-Xptxas", False),
    ("--ptxas-options", False),
)


def _nvcc_offsets(text: str) -> list[int]:
    """Starts of the nvcc flag texts (none of them can overlap another)."""
    found = []
    for literal, digit in _NVCC_LITERALS:
        position = text.find(literal)
        while position >= 0:
            end = position + len(literal)
            if not digit or text[end : end + 1].isdecimal():  # \d: any decimal digit
                found.append(position)
            position = text.find(literal, end if not digit else position + 1)
    found.sort()
    return found


def _stored_names(text: str, token: str) -> set[str]:
    """Names on the left of `... = ...<token>...` lines (plain text), e.g. the capability or
    the CUDA version kept in a variable and used lines later."""
    names: set[str] = set()
    position = text.find(token)
    while position >= 0:
        start = text.rfind("\n", 0, position) + 1
        match = _STORE_TARGET.match(text, start, position)
        if match:
            names.update(w for w in re.findall(r"[A-Za-z_]\w*", match.group(1)) if w != "self")
        position = text.find(token, position + 1)
    return names


_ENV_ASSIGN = re.compile(r"(?m)^[ \t]*(\w+)[ \t]*(?::[^=\n]+)?=[^=\n][^\n]*(?:environ|getenv)")
_SETUP_WORDS = ("install_requires", "extras_require", "setup_requires")


def _env_assigned(text: str) -> set[str]:
    """The names _ENV_ASSIGN assigns, tested only on the lines that read the environment."""
    starts: set[int] = set()
    for word in ("environ", "getenv"):
        position = text.find(word)
        while position >= 0:
            starts.add(text.rfind("\n", 0, position) + 1)
            position = text.find(word, position + 1)
    return {m.group(1) for s in starts if (m := _ENV_ASSIGN.match(text, s)) is not None}


def _trigger_offsets(
    text: str, rules: RuleSet, own: frozenset[str], keys: tuple[str, ...] | None = None
) -> list[int]:
    """Where in the file a rule's construct may be (see the confirm regexes); [] when nowhere.
    The project's own package names never count (an xformers module importing xformers).
    `keys`: the trigger keys the file holds, when a pre-filter (trigger_keys) found them."""
    confirm = _confirmers(rules)
    offsets: list[int] = []
    present: list[str] = []  # import triggers in the text
    if keys is None:
        low = text.lower()  # one pass; then a few lower-case keys stand for groups of triggers
        keys = tuple(k for k, _ in _trigger_groups(rules) if k in low)
    groups = _groups_by_key(rules)
    memo: dict[str, list[int]] = {}
    for key in keys:
        offsets = _group_offsets(text, key, groups[key], own, confirm, offsets, present, memo)
    if any(t not in own for t in present):
        offsets += _import_lines(text, rules, own, present)
    return offsets


def trigger_keys(data: bytes, rules: RuleSet) -> tuple[str, ...]:
    """The trigger keys (lower case) that the raw bytes of a Python file hold; none: no rule can
    match the file, which then need not even be decoded. Every trigger holds its key, so a file
    holding a trigger holds its key in either case."""
    low = data.lower()
    found: set[bytes] = set()
    for key, pattern in _key_searches(rules):
        if pattern is None:
            if key in low:
                found.add(key)
        else:
            found.update(pattern.findall(low))
    if found:  # a key inside a longer one (cuda in cudart) is there when the longer one is
        implied = _keys_inside(rules)
        for key in list(found):
            found.update(implied[key])
    return tuple(k for k, b in _byte_keys(rules) if b in found)


@functools.lru_cache(maxsize=8)
def _keys_inside(rules: RuleSet) -> dict[bytes, tuple[bytes, ...]]:
    """Each byte key -> the keys it contains (itself included)."""
    keys = [b for _, b in _byte_keys(rules)]
    return {f: tuple(k for k in keys if k in f) for f in keys}


@functools.lru_cache(maxsize=8)
def _byte_keys(rules: RuleSet) -> tuple[tuple[str, bytes], ...]:
    keys = [k for k, _ in _trigger_groups(rules)]
    # bytes.lower() folds ASCII only: a non-ASCII key could hide in upper case, so it is looked
    # for as the empty string, which every file holds.
    return tuple((k, k.encode() if k.isascii() else b"") for k in keys)


@functools.lru_cache(maxsize=8)
def _key_searches(rules: RuleSet) -> tuple[tuple[bytes, re.Pattern[bytes] | None], ...]:
    """How trigger_keys looks for each key: alone with `in`, or, for keys that share their first
    two bytes (cuda, cudnn, cutlass), one findall of `cu(?:da|dnn|tlass)`, which `re` runs as
    fast as one `in` (it searches its literal prefix). Only keys none of which can start inside
    another's match share a pattern, so findall misses none (a key that is the start of a
    longer one is added by trigger_keys)."""
    by_prefix: dict[bytes, list[bytes]] = {}
    for _, key in _byte_keys(rules):
        by_prefix.setdefault(key[:2], []).append(key)
    searches: list[tuple[bytes, re.Pattern[bytes] | None]] = []
    for prefix, keys in by_prefix.items():
        if len(keys) < 2 or len(prefix) < 2 or _overlap(keys):
            searches.extend((k, None) for k in keys)
            continue
        rests = b"|".join(re.escape(k[2:]) for k in sorted(keys, key=len, reverse=True))
        pattern = re.compile(re.escape(prefix) + b"(?:" + rests + b")")
        searches.append((b"", pattern))
    return tuple(searches)


def _overlap(keys: list[bytes]) -> bool:
    """Whether one key can start inside a match of another (its tail is the other's head)."""
    return any(
        b.startswith(a[i:]) or a[i:].startswith(b)
        for a in keys
        for b in keys
        if a != b
        for i in range(1, len(a))
    )


_GROUP_KEYS = ("cuda", "nvidia", "warp", "extension")


@functools.lru_cache(maxsize=8)
def _trigger_groups(rules: RuleSet) -> tuple[tuple[str, tuple[str, ...]], ...]:
    groups: dict[str, list[str]] = {}
    for trigger in python_triggers(rules):
        low = trigger.lower()
        key = next((k for k in _GROUP_KEYS if k in low), low)
        groups.setdefault(key, []).append(trigger)
    return tuple((k, tuple(v)) for k, v in groups.items())


@functools.lru_cache(maxsize=8)
def _groups_by_key(rules: RuleSet) -> dict[str, tuple[str, ...]]:
    return dict(_trigger_groups(rules))


def _group_offsets(
    text: str,
    key: str,
    triggers: tuple[str, ...],
    own: frozenset[str],
    confirm: dict[str, str],
    offsets: list[int],
    present: list[str],
    memo: dict[str, list[int]],
) -> list[int]:
    held = _held(text, key, triggers)
    for trigger in triggers:
        if trigger not in held:
            continue
        kind = confirm.get(trigger)
        if kind == "import":
            present.append(trigger)  # the project's own name too: it may be part of another's
            continue
        if trigger in own:
            continue
        if kind == "warp+import" and (f"import {trigger}" in text or f"from {trigger}" in text):
            present.append(trigger)  # `warp` is common (num_warps): only an import line counts
        if kind in ("warp", "warp+import"):  # the confirm regex once a file, its places once
            if "warp" not in memo:
                memo["warp"] = _warp_confirmed(text)
            offsets += memo["warp"]
            continue
        position = text.find(trigger)
        while position >= 0 and len(offsets) < 400:
            offsets.append(position)
            position = text.find(trigger, position + 1)
    return offsets


def _held(text: str, key: str, triggers: tuple[str, ...]) -> set[str] | tuple[str, ...]:
    """The triggers of a group that `text` holds. A large group (the 15 triggers holding "cuda")
    is tested at the places of its key's spellings (`cuda`, `CUDA`: two searches, not 15): a
    trigger is in the text exactly where the spelling of the key it holds is, moved back by the
    offset of that spelling in it (a place too near the start to hold it tests nothing)."""
    spellings = _spellings(key, triggers)
    if spellings is None:
        return tuple(t for t in triggers if t in text)
    held: set[str] = set()
    for spelling, placed in spellings:
        left = len(placed)
        position = text.find(spelling)
        while position >= 0 and left:
            for trigger, at in placed:
                if trigger not in held and text.startswith(trigger, position - at):
                    held.add(trigger)
                    left -= 1
            position = text.find(spelling, position + 1)
    return held


@functools.lru_cache(maxsize=64)
def _spellings(
    key: str, triggers: tuple[str, ...]
) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...] | None:
    """((spelling of the group's key, ((trigger, offset of the spelling in it), ...)), ...);
    None for a small group or one whose triggers do not all hold the key in ASCII (those are
    tested one by one)."""
    if len(triggers) < 3 or not key.isascii() or not all(t.isascii() for t in triggers):
        return None
    lows = [t.lower() for t in triggers]
    if not all(key in low for low in lows):
        return None
    by_spelling: dict[str, list[tuple[str, int]]] = {}
    for trigger, low in zip(triggers, lows, strict=True):
        at = low.find(key)
        by_spelling.setdefault(trigger[at : at + len(key)], []).append((trigger, at))
    return tuple((s, tuple(p)) for s, p in by_spelling.items())


def _import_lines(text: str, rules: RuleSet, own: frozenset[str], present: list[str]) -> list[int]:
    """Starts of the lines that import a rule's module (the import confirm regex), tested only on
    the lines where such a module's name occurs: the regex itself scans every line slowly."""
    pattern = _import_confirm(rules, own)
    modules = _modules_holding(rules)
    starts: set[int] = set()
    for module in {m for t in present for m in modules[t]}:
        position = text.find(module)
        while position >= 0:
            starts.add(text.rfind("\n", 0, position) + 1)
            position = text.find(module, position + 1)
    return [m.start() for s in sorted(starts) if (m := pattern.match(text, s)) is not None]


@functools.lru_cache(maxsize=8)
def _modules_holding(rules: RuleSet) -> dict[str, tuple[str, ...]]:
    """import trigger -> the rules' modules that contain it (whose names are then looked for)."""
    triggers = [t for t, kind in _confirmers(rules).items() if kind in ("import", "warp+import")]
    return {t: tuple(m for m in rules.imports if t in m) for t in triggers}


@functools.lru_cache(maxsize=8)
def _confirmers(rules: RuleSet) -> dict[str, str]:
    """trigger -> which confirm regex it needs ('warp', 'import'); absent: none."""
    kinds: dict[str, str] = {t: "warp" for t in CHECK_TRIGGERS["warp-size-32"]}
    other = set(rules.env_prefixes) | set(rules.commands)
    for rule in rules.text_rules:
        other.update(rule.triggers)
    for check in rules.by_check:
        if check != "warp-size-32":
            other.update(CHECK_TRIGGERS.get(check, ()))
    for module in rules.imports:
        if module in kinds:  # a module named like a warp trigger (NVIDIA Warp's `warp`): both
            kinds[module] = "warp+import"
        elif not any(module in o for o in other):
            # (a check's trigger that holds the module's name, `enable_tensorrt_engine` for
            # `tensorrt`, is folded into it by python_triggers: it needs no import)
            kinds[module] = "import"
    return kinds


@functools.lru_cache(maxsize=8)
def _lazy_import_modules(rules: RuleSet) -> tuple[str, ...]:
    """The import rules' modules that name a lazy-import note, less those that hold another
    (a text holding dask_cudf holds cudf): enough to tell whether a file can import one."""
    modules = [m for m, r in rules.imports.items() if r.lazy_import_note]
    return tuple(m for m in modules if not any(o != m and o in m for o in modules))


class _Visitor:
    """One pass over the tree; each node type is looked at by the checks that care about it."""

    def __init__(
        self,
        rules: RuleSet,
        text: str,
        *,
        is_setup: bool,
        own: frozenset[str] = frozenset(),
        whole: whole_tree.Whole | None = None,
        keys: tuple[str, ...] | None = None,
    ) -> None:
        self.rules = rules
        # torch.utils.cpp_extension sets CUDA_HOME only on a CUDA torch (`... if
        # torch.version.cuda else None`): a file that never looks at ROCm's side has no HIP path.
        self.hip_build_aware = any(w in text for w in _HIP_BUILD_WORDS)
        self.torch_cuda_home = "CUDA_HOME" in text and bool(_TORCH_CUDA_HOME.search(text))
        self.hits: list[Hit] = []
        self.own = own
        self.vendor_possible = vendor_possible(text)
        self.text = text  # for the facts asked lazily (lines, other_vendor_side, rocm_functions)
        # Imports of rules that name a lazy-import note (TensorRT) made inside a function.
        # (a module name is its own trigger key: a file without the key cannot hold it)
        self.lazy_modules = any(
            (keys is None or m in keys) and m in text for m in _lazy_import_modules(rules)
        )
        self.lazy: set[int] = set()
        self.product_imports: set[int] = set()  # imports in a function named for the product
        self.import_calls: dict[int, tuple[ast.AST, str]] = {}  # call -> (statement, module)
        self.gated = False  # the node being handled is on one side of a vendor switch
        self.gate_children: set[int] = set()  # children a handler put behind a switch
        self.tested: set[int] = set()  # torch.version.cuda nodes used as a truth value
        self.rejects: set[int] = set()  # ... in `if torch.version.cuda is None: raise`
        self.rejects_version: set[int] = set()  # ... in `if torch.version.cuda != "12.8": raise`
        self.optional: set[int] = set()  # imports inside try/except ImportError
        self.found_by_spec: set[int] = set()  # ... or under `if find_spec("m"):`
        # Names read from the environment (found in the text: a piece of the file may be parsed
        # without the module-level assignment).
        self.env_names: set[str] = (
            _env_assigned(text)
            if self.vendor_possible and ("environ" in text or "getenv" in text)
            else set()
        )
        self.vendor_names: set[str] = set()  # names holding a vendor test (has_cuda = ...)
        self.compares: dict[str, list[ast.Compare]] = {}  # name -> comparisons that read it
        self.reads_capability = "get_device_capability" in text or (
            "get_device_properties" in text and ".major" in text
        )
        self.parents_compares: dict[int, list[ast.Compare]] = {}  # capability call -> compares
        self.stored_as: dict[int, list[str]] = {}  # capability call -> names it is stored in
        self.thresholds: dict[str, ast.expr] = {}  # name -> the number or (major, minor) it holds
        self.capability_aliases: set[str] = set()  # `cc = cap[0] * 10 + cap[1]`
        self.functions: list[tuple[int, int]] = []  # (first, last line) of every function
        self.capability_calls: list[tuple[ast.Call, bool]] = []  # judged after the walk
        # get_device_properties() calls: judged only where their .major is compared
        self.properties_calls: list[tuple[ast.Call, bool]] = []
        # compare -> the names it is stored in or returned from, and the strings, calls and
        # imports of the `if` it tests: what the branch is for
        self.compare_words: dict[int, list[str]] = {}
        self.branch_words: dict[int, list[str]] = {}
        # compare -> the statements of the `if` it tests (the names they read are followed only
        # for a comparison that reaches a verdict: capability_branches.followed)
        self.branch_bodies: dict[int, list[ast.stmt]] = {}
        # comparisons an `assert` makes: the rest of its function is the branch it lets through
        self.asserted: set[int] = set()
        # strings a comparison reads (`assert "exec --nv" in cmd`): what is looked for, not run
        self.compared_strings: set[int] = set()
        self.builds_extension = any(m in text for m in _BUILD_MARKERS)
        # Strings that reach nvcc's arguments, followed through names and local functions.
        self.nvcc_direct: set[tuple[int, str]] = set()
        self.nvcc_returned: dict[tuple[int, str], str] = {}
        if self.builds_extension and build_flags.mentions_nvcc_only(text):
            whole = whole or whole_tree.Whole(text)
            with contextlib.suppress(SyntaxError, ValueError):  # the walk reports it
                tree = whole.tree()
                module = whole.derived(_build_module)
                self.nvcc_direct, self.nvcc_returned = build_flags.nvcc_arguments(tree, module)
        self.is_setup = is_setup
        self.docstrings: set[int] = set()
        # Values only shown to a person (print/log arguments, f-string fields): reporting the
        # CUDA version or capability there is harmless, so those are not findings.
        self.displayed: set[int] = set()
        self.text_tested: set[int] = set()  # str()/repr() calls whose text is tested or parsed
        # string constants inside a `raise ...(...)` statement or a call that shows its text
        self.in_message: set[int] = set()
        # torch.backends.cudnn.flags(...) calls opened by a `with` whose block runs no convolution
        self.scoped_cudnn_off: set[int] = set()
        # the values of a call's GPU keywords (`KubernetesJob(gpu_type=...)`): id -> "callee(kw=)"
        self.gpu_keywords: dict[int, str] = {}
        # string constants a mock compares with what it recorded, or a process error holds
        self.recorded_call: set[int] = set()
        self.disabling: set[int] = set()  # capability compares whose branch only returns False
        # the branch of each comparison an `if` needs (all of an `and`), in modules that name
        # PyTorch's flash SDPA backend
        self.sdpa_flash: dict[int, list[ast.stmt]] = {}
        self.names_sdpa = capability_features.names_sdpa(text)
        self.importing: set[int] = set()  # compares whose `if` body imports a module
        # Names holding torch.version.cuda (`v = torch.version.cuda`) -> the assignment; a use
        # of the name as a value is the finding, at the assignment.
        self.cuda_names: dict[str, ast.AST] = {}
        self.stored: set[int] = set()  # torch.version.cuda nodes assigned to a name
        # Values only recorded or compared for equality (a dict value, `v == "12.1"`): None
        # there is reported or takes the other branch, it does not crash; info.
        self.recorded: set[int] = set()
        self.reported: set[int] = set()  # nodes a function-wide check already reported
        self.argv_gpus = "--gpus" in text or "--runtime" in text
        self.docker_gpus: set[int] = set()  # "--gpus" items of a docker run argv
        self.loads_cuda = (
            "CDLL" in text or "LoadLibrary" in text or "WinDLL" in text or "find_library" in text
        )
        self.blanks_before_nvml = "nvmlInit" in text and "CUDA_VISIBLE_DEVICES" in text
        self.dask_nvml = nvml_wrappers.bound_names(text)  # names bound to dask's NVML wrapper
        self.gpu_info = nvml_wrappers.gpu_info_names(text)  # names bound to Ignite's GpuInfo

    def nvcc_offsets(self, text: str) -> list[int]:
        """Offsets of the lines where an nvcc-only flag flows into a build (pieces to parse)."""
        lines = sorted(
            {line for line, value in self.nvcc_direct if build_flags.rejected_flags(value)}
            | {line for line, _ in self.nvcc_returned}
        )
        if not lines:
            return []
        starts = [0]
        position = text.find("\n")
        while position >= 0 and len(starts) < lines[-1]:
            starts.append(position + 1)
            position = text.find("\n", position + 1)
        return [starts[n - 1] for n in lines if n <= len(starts)]

    @functools.cached_property
    def lines(self) -> list[str]:
        """The text's lines where a vendor test may be read off them (split when first asked)."""
        return self.text.splitlines() if self.vendor_possible else []

    @functools.cached_property
    def rocm_image(self) -> bool:
        """The module writes a ROCm image (asked only for a CUDA image found in a string)."""
        return "rocm" in self.text and bool(_ROCM_IMAGE.search(self.text))

    @functools.cached_property
    def names_amd(self) -> bool:
        """The module names ROCm or AMD somewhere (asked for blocks that may fall back to it)."""
        return self.vendor_possible and bool(_AMD_NAME.search(self.text))

    @functools.cached_property
    def other_vendor_side(self) -> bool:
        """The module has another vendor's side: an AMD tool, or a function named for AMD/ROCm/
        HIP. Asked only for a function named for NVIDIA (each search reads the whole text)."""
        text = self.text
        return bool(
            self.vendor_possible
            and (any(t in text for t in _AMD_TOOLS) or _defines_other_vendor(text))
        )

    @functools.cached_property
    def rocm_functions(self) -> set[tuple[str, ...]]:
        """Functions named for ROCm/AMD (rocm_platform_plugin), by their name without the vendor
        word: cuda_platform_plugin beside them is the NVIDIA side of a dispatch by name."""
        if not self.vendor_possible:
            return set()
        return {
            _without_vendor(n)
            for n in _def_names(self.text)
            if any(t in _ROCM_WORDS for t in n.lower().split("_")) and _without_vendor(n)
        }

    def run(self, tree: ast.AST, lines: list[int] | None = None) -> list[Hit]:
        """Handle every node of `tree`; with `lines` (sorted line numbers), only the statements
        and list items that span one of them: a node holding no trigger and no vendor word
        cannot produce a finding nor gate one."""
        # ast.walk costs ~40% more than this explicit stack (generators per node). Nodes are
        # handled in source order, parents before children: the docstring and gating bookkeeping
        # rely on it, and a flag (HIP_BUILD = ...) is seen before the `if` that tests it.
        handlers, node_type, walked = _HANDLERS, ast.AST, _WALKED_FIELDS
        bisect_left, num_lines = bisect.bisect_left, len(lines) if lines is not None else 0
        stack: list[tuple[ast.AST, bool]] = [(tree, False)]
        gate_children = self.gate_children
        while stack:
            node, gated = stack.pop()
            self.gated = gated
            kind = type(node)
            handler = handlers.get(kind)
            if handler is not None:
                handler(self, node)
            fields = walked.get(kind)
            if fields is None:
                fields = walked[kind] = _walked_fields(kind)
            if not fields:
                continue
            children: list[tuple[ast.AST, bool]] = []
            for name in fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    if lines is not None and value:
                        # _spans, inline (a call per list item costs a fifth of the walk)
                        # a decorated def or class starts at its first decorator, not at
                        # `lineno` (the def line): its decorators' arguments are its own lines
                        value = [
                            v
                            for v in value
                            if (first := getattr(v, "lineno", None)) is None
                            or (
                                (
                                    i := bisect_left(
                                        lines,
                                        v.decorator_list[0].lineno
                                        if type(v) in _DECORATED and v.decorator_list
                                        else first,
                                    )
                                )
                                < num_lines
                                and lines[i] <= (v.end_lineno or first)
                            )
                        ]
                    if gated or not gate_children:
                        children.extend((v, gated) for v in value if isinstance(v, node_type))
                    else:
                        children.extend(
                            (v, id(v) in gate_children) for v in value if isinstance(v, node_type)
                        )
                elif isinstance(value, node_type):
                    children.append((value, gated or id(value) in gate_children))
            children.reverse()
            stack.extend(children)
        for call, gated in self.capability_calls:
            self.gated = gated
            self._capability(call)
        for call, gated in self.properties_calls:
            if id(call) in self.parents_compares or self.stored_as.get(id(call)):
                self.gated = gated
                self._capability(call)
        return self.hits

    def is_vendor_test(self, expr: ast.AST) -> bool:
        """Whether an expression tests which GPU vendor's torch (or platform) is running."""
        line = getattr(expr, "lineno", 0)
        if line and line == getattr(expr, "end_lineno", 0) and line <= len(self.lines):
            # One line of source: no vendor word in it, no vendor test (most `if`s end here).
            segment = self.lines[line - 1][expr.col_offset : expr.end_col_offset]  # type: ignore[attr-defined]
            if not _VENDOR_HINT.search(segment) and not any(
                n in segment for n in self.vendor_names
            ):
                return False
        for node in _nodes(expr):
            if isinstance(node, ast.Attribute):
                if node.attr in ("hip", "cuda") and _dotted(node.value) == "torch.version":
                    return True
                if _VENDOR_NAME.search(node.attr) and node.attr not in self.env_names:
                    return True
            elif (
                isinstance(node, ast.Call)
                and not node.args
                and _IS_CUDA_CALL.match(whole_tree.call_name(node.func))
            ) or (
                isinstance(node, ast.Compare)
                and any(
                    isinstance(c, ast.Constant)
                    and isinstance(c.value, str)
                    and c.value.lower() in _VENDOR_WORDS
                    for c in (node.left, *node.comparators)
                )
            ):
                return True
            elif isinstance(node, ast.Name) and node.id not in self.env_names:
                if node.id in self.vendor_names or _VENDOR_NAME.search(node.id):
                    return True
        return False

    def _spec_test(self, test: ast.expr) -> str | None:
        """The module of `if find_spec("m") is not None:` / `if find_spec("m"):`, or of a call
        of this module's own function that returns that test (`def is_bnb_available(): return
        importlib.util.find_spec("bitsandbytes") is not None`): importlib.util.find_spec gives
        None where the module cannot be imported, so the body runs only where it is installed."""
        if "find_spec" not in self.text:
            return None
        module = _find_spec_module(test)
        if module is not None:
            return module
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and not test.args:
            return _spec_functions(self.text).get(test.func.id)
        return None

    # -- vendor switches ----------------------------------------------------------------------
    def visit_if_statement(self, node: ast.If) -> None:
        available = (
            _availability_test(node.test)
            or self._spec_test(node.test)
            or _library_availability_call(node.test, self.text)
        )
        if available is not None and available not in self.rules.imports:
            available = _flagged_module(available, self.rules)
        if available is not None and available in self.rules.imports:
            # `if cudf:` after `cudf = None` on ImportError (or `from compat import cudf`): the
            # body imports the module, or another of the same rule's (dask_cudf: RAPIDS), only
            # where it is installed
            family = self.rules.imports[available]
            # (the rule of the most precise name imported: find_spec("flash_attn") finds 2.x,
            # which lacks 1.x's flash_attn.flash_attention, so that import is not guarded)
            guarded = {
                id(n)
                for s in node.body
                for n in ast.walk(s)
                if isinstance(n, (ast.Import, ast.ImportFrom))
                and (
                    self._family_rule(n) is family
                    or (
                        self.rules.imports.get(_top_module(n)) is family
                        and self._family_rule(n) is None
                    )
                )
            } | {
                id(s)
                for s in node.body
                if (module := _imported_by_call(s)) and self._import_rule(module) is family
            }
            self.optional.update(guarded)
            if "find_spec" in self.text and _availability_test(node.test) is None:
                self.found_by_spec.update(guarded)
        # `if torch.version.cuda is None: raise ...` / `if not torch.version.cuda: sys.exit()`
        # refuses every ROCm build: a hazard, unlike the same test choosing a branch.
        # So does `if torch.version.cuda != "12.8": raise` (None differs from every version).
        attribute = _rejecting_version_cuda(node.test)
        if attribute is not None and node.body and whole_tree.exits(node.body[-1]):
            self.rejects.add(id(attribute))
            if _none_test_of_version_cuda(node.test) is None:
                self.rejects_version.add(id(attribute))
        if self.reads_capability and any(
            self._chip_specific_import(n) for s in node.body for n in pieces.statement_nodes(s)
        ):
            self.importing.update(id(n) for n in ast.walk(node.test) if isinstance(n, ast.Compare))
        if self.reads_capability:
            tested = [n for n in ast.walk(node.test) if isinstance(n, ast.Compare)]
            if tested and not _only_displays(node.body):
                words = _branch_words(node.body)
                for compare in tested:
                    self.branch_words.setdefault(id(compare), []).extend(words)
                    self.branch_bodies.setdefault(id(compare), []).extend(node.body)
        if self.reads_capability and self.names_sdpa:
            # what the branch does is read only for a capability comparison (_sdpa_flash_withheld)
            self.sdpa_flash.update({id(c): node.body for c in _conjuncts(node.test)})
        if _returns_off(node.body):
            # `if cap >= (9, 0): return False`: a misfire only turns a path off on AMD.
            self.disabling.update(id(n) for n in ast.walk(node.test) if isinstance(n, ast.Compare))
        repaired = _none_test_of_name(node.test)
        if (
            (repaired == "CUDA_HOME" or _none_test_of_cpp_extension_cuda_home(node.test))
            and not self.hip_build_aware
            and node.body
            and whole_tree.exits(node.body[-1])
        ):
            self.add_at(
                node,
                "cuda-extension",
                "if not CUDA_HOME: raise  (torch's CUDA_HOME is None on every ROCm torch and this"
                " file has no ROCM_HOME / torch.version.hip path: the build or load always stops)",
                "error",
            )
        if repaired in self.cuda_names and _assigns(node.body, repaired):
            del self.cuda_names[repaired]  # `if not v: v = fallback`: None does not get past
        self.visit_if(node)
        self.visit_body(node)

    def _chip_specific_import(self, node: ast.AST) -> bool:
        """An import of a module a rule calls CUDA-only (warn/error: pycuda, tensorrt, apex...):
        the branch then loads NVIDIA-only code. A module with a ROCm build (an info rule:
        flash_attn, xformers) or one no rule knows is not evidence either way."""
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            return False
        for name in names:
            rule = self.rules._lookup("imports", name.split(".")[0], frozenset())
            if rule is not None and rule.severity != "info":
                return True
        return False

    def visit_if(self, node: ast.If | ast.IfExp | ast.While) -> None:
        self._truth_test(node.test)
        if self.vendor_possible and not self.gated and self.is_vendor_test(node.test):
            self.gate_children.update(id(n) for n in _children(node) if n is not node.test)

    def visit_bool_op(self, node: ast.BoolOp) -> None:
        for value in node.values:
            self._truth_test(value)
        # `is_hip and X` / `bool(torch.version.hip) or X`: X runs on one vendor only either way.
        if self.vendor_possible and not self.gated:
            for i, value in enumerate(node.values):
                if self.is_vendor_test(value):
                    self.gate_children.update(id(v) for v in node.values[i + 1 :])
                    break

    def visit_unary(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._truth_test(node.operand)

    def visit_compare(self, node: ast.Compare) -> None:
        self.text_tested.update(
            id(side) for side in (node.left, *node.comparators) if _made_text(side)
        )
        self.compared_strings.update(
            id(side)
            for side in (node.left, *node.comparators)
            if isinstance(side, ast.Constant) and isinstance(side.value, str)
        )
        if self.reads_capability:
            for side in (node.left, *node.comparators):
                call = _capability_call(side)
                if call is not None:
                    self.parents_compares.setdefault(id(call), []).append(node)
                base = side.value if isinstance(side, ast.Subscript) else side
                if isinstance(base, ast.Attribute) and base.attr == "major":
                    base = base.value  # props.major, props stored from get_device_properties()
                if isinstance(base, ast.Name):
                    self.compares.setdefault(base.id, []).append(node)
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and any(
            isinstance(c, ast.Constant) and c.value is None for c in node.comparators
        ):
            self._truth_test(node.left)
        elif all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            # `v == "12.1"` is False for None: the non-CUDA branch, not a crash.
            self.recorded.update(id(n) for n in (node.left, *node.comparators))

    def _truth_test(self, node: ast.AST) -> None:
        # `if torch.version.cuda:` / `torch.version.cuda is None`: the right way to ask "is this
        # a CUDA build", not a hazard (None on ROCm simply takes the other branch).
        self.tested.add(id(node))

    def visit_body(self, node: ast.AST) -> None:
        """After `if <vendor test>: raise/return` the rest of the block runs on one vendor only."""
        if isinstance(node, ast.With):
            self._scoped_cudnn(node)
        if not self.vendor_possible or self.gated:
            return
        for name in ("body", "orelse", "finalbody"):
            statements = getattr(node, name, None)
            if not isinstance(statements, list):
                continue
            for i, statement in enumerate(statements):
                if (
                    isinstance(statement, ast.If)
                    and statement.body
                    and isinstance(statement.body[-1], (ast.Raise, ast.Return))
                    and self.is_vendor_test(statement.test)
                ):
                    self.gate_children.update(id(s) for s in statements[i + 1 :])
                    break
            if self.names_amd and len(statements) > 1:
                self._gate_before_amd_fallback(statements)

    def _feature_denied_by_version_cuda(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """`def check_bf16_supported(): return torch.version.cuda is not None and ...`: a
        predicate named for a feature (supported, available, can_...) that returns a conjunction
        with a torch.version.cuda test returns False on every ROCm build, where that test is
        false: it denies the feature on AMD GPUs (a function named for the vendor, `is_cuda()`,
        answers another question and is not read here)."""
        for statement in pieces.statement_nodes(node):
            value = statement.value if isinstance(statement, ast.Return) else None
            if not (isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And)):
                continue
            for operand in value.values:
                if _version_cuda_truth(operand):
                    why = f"{node.name}() returns False on every ROCm build (torch.version.cuda is None)"
                    self.add(operand, "torch-version-cuda", why)

    def _scoped_cudnn(self, node: ast.With) -> None:
        """`with torch.backends.cudnn.flags(enabled=False):` around a block that calls no
        convolution (a grid_sample, an RNN's double backward) and does not yield to its caller
        (a context-manager helper, whose block is the caller's): the block turns cuDNN off on
        NVIDIA too, and what MIOpen is for on AMD, convolutions, does not run in it."""
        calls = [c.context_expr for c in node.items if isinstance(c.context_expr, ast.Call)]
        flags = [c for c in calls if _is_cudnn_flags(c)]
        if not flags:
            return
        inner = [n for statement in node.body for n in ast.walk(statement)]
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in inner):
            return
        if not any(
            isinstance(n, ast.Call) and "conv" in whole_tree.call_name(n.func).lower()
            for n in inner
        ):
            self.scoped_cudnn_off.update(id(f) for f in flags)

    def _gate_before_amd_fallback(self, statements: list[ast.stmt]) -> None:
        """`out = nvidia-smi ...` (or a `try:` around it) followed in the same block by an `if`
        or `try` that asks an AMD tool (rocm-smi, amdsmi, a function named for ROCm/AMD, such as
        `_rocm_state()`): the earlier statements that run an NVIDIA tool are the NVIDIA side of
        a fallback chain, like the `try: nvidia-smi ... except: rocm-smi` visit_try reads."""
        for j in range(1, len(statements)):
            if isinstance(statements[j], (ast.If, ast.Try)) and _asks_amd_side(statements[j]):
                for statement in statements[:j]:
                    text = "\n".join(
                        self.lines[statement.lineno - 1 : statement.end_lineno or statement.lineno]
                    )
                    if _NVIDIA_TOOL_TEXT.search(text):
                        self.gate_children.add(id(statement))
                return

    def visit_try(self, node: ast.Try) -> None:
        self.visit_body(node)
        if (
            self.vendor_possible
            and not self.gated
            and node.handlers
            and _AMD_TOOL_TEXT.search(
                "\n".join(
                    self.lines[node.handlers[0].lineno - 1 : node.handlers[-1].end_lineno or 0]
                )
            )
            and _falls_back_to_amd_tool(node)
        ):
            self.gate_children.update(id(s) for s in node.body)
        caught = set()
        for handler in node.handlers:
            if handler.type is None:
                caught.add("BaseException")
            for name in ast.walk(handler.type) if handler.type is not None else ():
                if isinstance(name, ast.Name):
                    caught.add(name.id)
        if not caught & _IMPORT_ERRORS:
            return
        if all(h.body and isinstance(h.body[-1], ast.Raise) for h in node.handlers):
            # `except ImportError as e: raise ImportError("install X") from e`: a better
            # message, no fallback; the import is as required as an unguarded one.
            return
        # Optional only if the fallback does without it (not `except ImportError: from x import
        # other_name`, which needs the same package; but a fallback to names another rule knows
        # does without the first: flash-attn 2.x's flash_attn_varlen_* for 1.x's names).
        fallback = {
            self._import_family(n)
            for h in node.handlers
            for n in ast.walk(h)
            if isinstance(n, (ast.Import, ast.ImportFrom))
        }
        for statement in node.body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                family = self._import_family(statement)
            elif module := _imported_by_call(statement):  # importlib.import_module("m")
                family = self._family(module, module.split(".")[0])
            else:
                continue
            if family not in fallback:
                self.optional.add(id(statement))

    def _import_family(self, node: ast.Import | ast.ImportFrom) -> str:
        """What an import stands for in a fallback: its package, or the rule that knows one of
        its names more precisely than the package (flash-attn-v1-api)."""
        if isinstance(node, ast.ImportFrom):
            module = self._imported_module(node.module, node.names) if node.module else ""
        else:
            module = node.names[0].name
        return self._family(module if not getattr(node, "level", 0) else "", _top_module(node))

    def _family_rule(self, node: ast.Import | ast.ImportFrom) -> Rule | None:
        """The rule of the most precise name an import statement brings in."""
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                return None
            return self._import_rule(self._imported_module(node.module, node.names))
        return self._import_rule(node.names[0].name)

    def _family(self, module: str, top: str) -> str:
        rule = self._import_rule(module) if module else None
        if rule is not None and rule is not self.rules.imports.get(top):
            return f"rule:{rule.id}"
        return top

    def _import_rule(self, module: str) -> Rule | None:
        """The rule of the most precise name a rule knows: a module's own, its package's, its
        top level's."""
        return (
            self.rules.imports.get(module)
            or self.rules.imports.get(".".join(module.split(".")[:2]))
            or self.rules.imports.get(module.split(".")[0])
        )

    _GATED = "  (gated: one side of a vendor switch)"

    def _gating(self, severity: Severity, evidence: str) -> tuple[Severity, str]:
        """On one side of a vendor switch a warning or error is info, and says so (the reason
        kept whole within the evidence's 160 characters)."""
        if not self.gated or severity == "info":
            return severity, evidence
        return "info", evidence[: 160 - len(self._GATED)] + self._GATED

    def add(self, node: ast.AST, rule_or_check: Rule | str, evidence: str) -> None:
        rule: Rule | None = None
        if isinstance(rule_or_check, str):  # a named check: absent from a trimmed rule set
            rule = self.rules.by_check.get(rule_or_check) or self.rules.by_id.get(rule_or_check)
        else:
            rule = rule_or_check
        if rule is None:
            return
        severity, evidence = self._gating(rule.severity, evidence)
        line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", -1) + 1
        self.hits.append(hit(line, column, rule, evidence, severity))

    # -- imports -------------------------------------------------------------------------------
    def visit_import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)

    def visit_import_from(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._import(node, self._imported_module(node.module, node.names))
            if node.module == "torch.version" and any(a.name == "cuda" for a in node.names):
                self.add(node, "torch-version-cuda", "from torch.version import cuda")

    def _imported_module(self, module: str, names: list[ast.alias]) -> str:
        """What a `from` import brings in, as precisely as a rule names it: `from cuda import
        cudart` imports the submodule cuda.cudart (cuda-python's own idiom), and `from
        flash_attn.flash_attn_interface import flash_attn_unpadded_func` a name 2.x renamed."""
        for alias in names:
            if f"{module}.{alias.name}" in self.rules.imports:
                return f"{module}.{alias.name}"
        return module

    def _import(self, node: ast.AST, module: str) -> None:
        top = module.split(".")[0]
        if top in self.own:
            return  # the project importing itself
        rule = self._import_rule(module)
        if rule is None:
            return
        if rule.severity != "info" and product_imports.imports_only_version(node):
            line, column = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
            evidence = f"from {module} import __version__  (a version report only)"
            self.hits.append(hit(line, column, rule, evidence, "info"))
            return
        if (
            id(node) in self.lazy
            and rule.lazy_import_note
            and (not self.gated or id(node) in self.product_imports)
        ):
            line, column = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
            if id(node) in self.optional:
                # A probe (try/except ImportError that does without it): only the feature a
                # user picks reaches it.
                evidence = f"import {module}  ({rule.lazy_import_note})"
                self.hits.append(hit(line, column, rule, evidence, "info"))
            else:
                # No fallback (or one that installs it and imports it again): the function's
                # feature needs the package, which has no ROCm build: that feature fails there.
                evidence = f"import {module}  (needed by the function that imports it: no fallback)"
                self.hits.append(hit(line, column, rule, evidence, "warn"))
            return
        if id(node) in self.optional and top in rule.installs_on_rocm:
            self.add(
                node, rule, f"import {module}  (an ImportError fallback: {rule.installs_note})"
            )
            return
        if id(node) in self.optional and rule.severity != "info":
            line, column = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
            evidence = f"import {module}  (optional: inside try/except ImportError)"
            if id(node) in self.found_by_spec:
                evidence = f"import {module}  (optional: only where find_spec finds it)"
            self.hits.append(hit(line, column, rule, evidence, "info"))
            return
        self.add(node, rule, f"import {module}")

    # -- strings: env vars, commands, index URLs, nvcc flags ----------------------------------
    def visit_expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            self.docstrings.add(id(node.value))  # bare string statements are documentation
        else:
            self._import_by_call(node)

    def _import_by_call(self, node: ast.Assign | ast.AnnAssign | ast.Expr) -> None:
        """`X = importlib.import_module("m")[.attr]` imports m as `import m` does (importlib's
        reference: import_module returns the module, importing its parents first); a statement a
        function's lazy product import already handles (import_calls) is left to that."""
        module = _imported_by_call(node)
        if module and id(node) not in self.lazy:
            self._import(node, module)

    def visit_constant(self, node: ast.Constant) -> None:
        value = node.value
        if not isinstance(value, str) or not value or id(node) in self.docstrings:
            return
        # the variable itself, or one setting of it as docker's `-e NAME=VALUE`, env(1) and
        # container env lists write it ("NVIDIA_VISIBLE_DEVICES=all")
        name = value.split("=", 1)[0] if _ENV_SETTING.match(value) else value
        if _ENV_NAME.match(name) and name[-1] != "_" and name.startswith(self.rules.env_prefixes):
            rule = self.rules.env_rule(name)
            if rule is not None:
                self.add(node, rule, repr(value))
        if value == container_gpus.NVIDIA_RESOURCE:
            self._nvidia_resource(node)
        elif value in container_gpus.NV_OPTIONS and container_gpus.names_apptainer(self.text):
            self._apptainer_nv(node, f"{value!r} (Apptainer's NVIDIA GPU binding)")
        elif id(node) not in self.compared_strings and (
            run := container_gpus.apptainer_run_in_string(value)
        ):
            self._apptainer_nv(node, f"{run!r} (Apptainer's NVIDIA GPU binding, in a command line)")
        elif container_gpus.names_nvidia_runtime(value) and id(node) not in self.in_message:
            self._nvidia_runtime(node)
        elif id(node) in self.docker_gpus and id(node) not in self.reported:
            self.reported.add(id(node))
            rule = self.rules.by_id.get("docker-gpus")
            if rule is not None and value == "--runtime":
                amd = container_gpus.names_amd_devices(self.text)
                evidence = "docker run argv: '--runtime', 'nvidia' (NVIDIA's container runtime)"
                self._one_side(node, rule, evidence, amd, "devices")
            elif rule is not None:
                self.add(node, rule, f"docker run argv: {value!r}")
        words = _command_words(value)
        # A command line ("nvidia-smi", "nvidia-smi -L ..."), not prose that mentions it.
        command = words[0].rsplit("/", 1)[-1] if words else ""
        if command in self.rules.commands and (len(words) == 1 or words[1].startswith("-")):
            rule = self.rules.command_rule(command)
            if rule is not None and id(node) in self.recorded_call:
                why = f"{value!r}  (what a mock recorded or a process error holds: nothing runs)"
                self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
            elif rule is not None:
                self.add(node, rule, repr(value))
        for rule in self.rules.text_rules:
            if "python" in rule.files and any(t in value for t in rule.triggers):
                assert rule.pattern is not None
                match = rule.pattern.search(value)
                if match:
                    self._string_match(node, rule, value, match)
        if self.builds_extension and _NVCC_FLAG.match(value):
            self.add(node, "nvcc-flags", repr(value))
        elif self.nvcc_direct and (node.lineno, value) in self.nvcc_direct:
            bad = build_flags.rejected_flags(value)
            if bad:
                self.add(node, "nvcc-flags", _nvcc_evidence(bad))

    def _nvidia_runtime(self, node: ast.Constant) -> None:
        """docker's `--runtime=nvidia` built in Python: NVIDIA's container runtime; a module that
        also passes AMD's devices (/dev/kfd) or runtime chooses between the two."""
        rule = self.rules.by_id.get("docker-gpus")
        if rule is None:
            return
        amd = container_gpus.names_amd_devices(self.text)
        self._one_side(node, rule, f"{node.value!r} (NVIDIA's container runtime)", amd, "devices")

    def _one_side(
        self, node: ast.Constant, rule: Rule, evidence: str, amd: bool, what: str
    ) -> None:
        """NVIDIA's container option, info where the module passes AMD's `what` too (a choice
        between the two)."""
        if amd:
            why = f"{evidence}  (AMD's {what} passed in this module too)"
            self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
        else:
            self.add(node, rule, evidence)

    def _apptainer_nv(self, node: ast.Constant, evidence: str) -> None:
        """`--nv` in an argv of a module that runs Apptainer/Singularity, or in a command line
        built in a string: NVIDIA's GPU binding; a module that also passes --rocm binds AMD's on
        the other side of a choice."""
        rule = self.rules.by_check.get("apptainer-nv")
        if rule is None or id(node) in self.in_message:
            return
        amd = container_gpus.names_rocm_flag(self.text)
        self._one_side(node, rule, evidence, amd, "binding (--rocm)")

    def _nvidia_resource(self, node: ast.Constant) -> None:
        """The Kubernetes resource of NVIDIA's device plugin; a module that also names AMD's
        (amd.com/gpu) chooses between the two: one side of a vendor switch; a module that names
        no field of a Kubernetes object uses it as a name of its own (speaks_kubernetes)."""
        if container_gpus.AMD_RESOURCE in self.text:
            why = f"{container_gpus.AMD_RESOURCE} is requested beside it in this module"
            self.add_at(node, "container-gpu-request", f"{node.value!r}  ({why})", "info")
        elif id(node) in self.in_message:
            return
        elif id(node) in self.gpu_keywords:
            # handed on as the GPU type a callee requests (the project's job or pod builder)
            why = f"the GPU resource {self.gpu_keywords[id(node)]} is given to request"
            self.add(node, "container-gpu-request", f"{node.value!r}  ({why})")
        elif not container_gpus.speaks_kubernetes(self.text):
            why = "no Kubernetes object is read or written in this module: a name of its own"
            self.add_at(node, "container-gpu-request", f"{node.value!r}  ({why})", "info")
        else:
            self.add(node, "container-gpu-request", f"{node.value!r} (Kubernetes resource)")

    def _string_match(
        self, node: ast.Constant, rule: Rule, value: str, match: re.Match[str]
    ) -> None:
        """A text rule matched inside a string literal. In a multi-line string (a Dockerfile or
        script the project writes out) the finding is at the matched line; an image of the
        NVIDIA variant is info when the same module also writes a ROCm image (rocm/...:tag,
        vllm/vllm-openai-rocm, a tag naming ROCm)."""
        if id(node) in self.in_message:
            # A message (an exception's, a print's, a log record's) is shown to the user, never
            # run: a command in it is advice.
            why = f"{value!r}  (in a message: shown, not run)"
            self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
            return
        if rule.id == "torch-cuda-index" and "\n" not in value and _ROCM_INDEX.search(self.text):
            # PyTorch names its wheel indexes by back end (whl/cu126, whl/rocm7.2): a module
            # naming both chooses between them (comfy-cli's DependencyCompiler).
            why = f"{value!r}  (the module names PyTorch's ROCm index too: one side of a choice)"
            self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
            return
        if rule.id == "llama-cpp-cuda-build" and "nvidia" in _line_at(value, match).lower():
            # "- NVIDIA GPU: CMAKE_ARGS=-DGGML_CUDA=on pip install ...": advice addressed to
            # NVIDIA users, the NVIDIA side of a choice the text offers.
            why = f"{value!r}  (advice addressed to NVIDIA users)"
            self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
            return
        if rule.id == "cdi-nvidia-device" and container_gpus.AMD_RESOURCE in self.text:
            why = f"{value!r}  ({container_gpus.AMD_RESOURCE} is named beside it in this module)"
            self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
            return
        if rule.id == "cuda-image" and id(node) in self.compared_strings:
            why = f"{value!r}  (a pattern the module tests strings against, not an image it runs)"
            self.hits.append(hit(node.lineno, node.col_offset + 1, rule, why, "info"))
            return
        # in a multi-line string the finding is at the matched line, shown alone
        one_line = "\n" not in value
        shown = repr(value) if one_line else _line_at(value, match).strip()
        line = node.lineno + value.count("\n", 0, match.start())
        if not one_line:
            line = _source_line(self.text, shown, line, node)
        if rule.id == "cuda-image" and self.rocm_image:
            why = "a ROCm image is written beside it in this module"
            column = node.col_offset + 1 if one_line else 1
            self.hits.append(hit(line, column, rule, f"{shown}  ({why})", "info"))
            return
        if one_line:
            self.add(node, rule, shown)
            return
        self.add(ast.Constant(value=shown, lineno=line, col_offset=0), rule, shown)

    # -- torch.version.cuda, cudnn settings, warp size ----------------------------------------
    def visit_assert(self, node: ast.Assert) -> None:
        """`assert torch.version.hip is None` / `assert not torch.version.hip`: the code path
        refuses every ROCm build (torch.version.hip is a version string there)."""
        attribute = _none_test_of_version(node.test, "hip")
        if attribute is not None:
            why = "assert torch.version.hip is None -> AssertionError on ROCm: rejects ROCm"
            self.add(node, "torch-version-cuda", why)

    def visit_attribute(self, node: ast.Attribute) -> None:
        if _made_text(node.value):
            self.text_tested.add(id(node.value))  # str(torch.version.cuda).startswith("12")
        is_version_cuda = node.attr == "cuda" and _dotted(node.value) == "torch.version"
        if not is_version_cuda or id(node) in self.displayed:
            return
        if not isinstance(node.ctx, ast.Load):
            # `torch.version.cuda = "11.7"` (an XPU shim making torch look like CUDA) or a `del`:
            # writes the attribute; what breaks on ROCm is reading it, where it is None.
            return
        if id(node) in self.rejects_version:
            why = "torch.version.cuda (None on ROCm) is not the version asked for -> exit: rejects ROCm"
            self.add(node, "torch-version-cuda", why)
        elif id(node) in self.rejects:
            self.add(node, "torch-version-cuda", "torch.version.cuda is None -> exit: rejects ROCm")
        elif id(node) in self.recorded:
            self.add_at(
                node, "torch-version-cuda", "torch.version.cuda recorded (None on ROCm)", "info"
            )
        elif id(node) not in self.tested and id(node) not in self.stored:
            # Used as a value (split, parsed, ordered, concatenated): None on ROCm.
            self.add(node, "torch-version-cuda", "torch.version.cuda used as a value")
        elif id(node) in self.tested and self._decides_extension_build():
            why = (
                "torch.version.cuda tested where a CUDAExtension is built: None on ROCm, whose"
                " torch builds CUDAExtension with hipcc, so the GPU build is dropped"
            )
            self.add(node, "torch-version-cuda", why)

    def _decides_extension_build(self) -> bool:
        """Whether the module builds a torch CUDAExtension and says nothing of ROCm's build:
        there a test of torch.version.cuda decides whether the GPU extension is built, and on a
        ROCm torch (torch.version.cuda None) it is not, although CUDAExtension builds it with
        hipcc there (torch.utils.cpp_extension: hipify, then hipcc, when torch.version.hip is
        set)."""
        return "CUDAExtension" in self.text and not self.hip_build_aware

    def visit_name(self, node: ast.Name) -> None:
        assignment = self.cuda_names.get(node.id)
        if assignment is None or not isinstance(node.ctx, ast.Load):
            return
        if id(node) in self.tested or id(node) in self.displayed or id(node) in self.recorded:
            return
        self.add(
            assignment,
            "torch-version-cuda",
            f"{node.id} = torch.version.cuda, used as a value at line {node.lineno}",
        )

    def visit_formatted_value(self, node: ast.FormattedValue) -> None:
        self.displayed.add(id(node.value))

    def visit_dict(self, node: ast.Dict) -> None:
        if (driver := container_gpus.compose_nvidia_driver(node)) is not None:
            why = "a compose device reservation asking for NVIDIA's container driver"
            self.add(driver, "container-gpu-request", f"{{'driver': 'nvidia', ...}}  ({why})")
        for value in node.values:
            # {"CUDA": torch.version.cuda if cuda else None}: still only recorded.
            while isinstance(value, ast.IfExp):
                self.recorded.add(id(value.orelse))
                value = value.body
            # {"driver": str(torch.version.cuda)}: "None" on ROCm, a label
            value = _text_of(value) or value
            self.recorded.add(id(value))

    def visit_raise(self, node: ast.Raise) -> None:
        if node.exc is not None:
            self.in_message.update(
                id(n)
                for n in ast.walk(node.exc)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )

    def visit_call(self, node: ast.Call) -> None:
        name = whole_tree.call_name(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_TESTS:
            # line.startswith("vllm/vllm-openai:"): a pattern strings are tested against
            self.compared_strings.update(
                id(n)
                for arg in node.args
                for n in ast.walk(arg)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        elif node.args and _dotted(node.func) in _REGEX_FUNCTIONS:
            # re.compile(r"^vllm/vllm-openai:.*$"): the pattern, never the string searched
            self.compared_strings.update(
                id(n)
                for n in ast.walk(node.args[0])
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        if _shows_text(node, name):
            self.in_message.update(
                id(n)
                for arg in (*node.args, *(k.value for k in node.keywords))
                for n in ast.walk(arg)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        for keyword in node.keywords:
            if keyword.arg and "gpu" in keyword.arg.lower():
                self.gpu_keywords[id(keyword.value)] = f"{name}({keyword.arg}=)"
        if name in _JAX_REGISTRATIONS:
            self._jax_platform(node)
        if name == "get_gencode_flags" and _dotted(node.func).endswith("cuda.get_gencode_flags"):
            # torch/cuda/__init__.py: each entry of get_arch_list() is split at "_" into (kind,
            # arch) (sm_90 -> -gencode ...); a ROCm build's entries are gfx names (gfx942),
            # which do not split, so the call raises ValueError wherever torch is a ROCm build
            raises = "torch.cuda.get_gencode_flags() raises ValueError on ROCm (gfx arch names)"
            self.add_at(node, "nvcc-flags", raises, "error")
        if name == "flags" and _is_cudnn_flags(node):
            # torch.backends.cudnn.flags(enabled=False, benchmark=False, ...): a context manager
            # that sets cudnn.enabled for its block; `enabled` defaults to False
            # (torch/backends/cudnn/__init__.py), so a call that does not pass it disables it too
            given = [k.value for k in node.keywords if k.arg == "enabled"] + node.args[:1]
            value = given[0] if given else ast.Constant(value=False)
            if id(node) in self.scoped_cudnn_off and _is_false(value):
                scoped = "cudnn.flags(enabled=False) around a block that runs no convolution"
                self.add_at(node, "cudnn-disabled", f"{scoped}: the same on NVIDIA", "info")
            else:
                self._cudnn(node, "enabled", value)
        if self.torch_cuda_home and node.args:
            for part in _cuda_home_paths(node, name):
                self._cuda_home_path(part)
        if name in _RECORDED_CALL:
            self.recorded_call.update(
                id(n)
                for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        if self.import_calls and id(node) in self.import_calls:
            self._import(*self.import_calls[id(node)])  # optional_import("tensorrt") in a function
        if node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            # An argv list (subprocess.run(["docker", "run", "--gpus", ...])): the command line
            # it stands for, so the text rules see "docker run ... --gpus" as in a script.
            argv = " ".join(str(c.value) for c in _string_constants(node.args[0].elts))
            for rule in self.rules.text_rules:
                if "python" in rule.files and any(t in argv for t in rule.triggers):
                    assert rule.pattern is not None
                    if rule.pattern.search(argv):
                        self.add(node.args[0], rule, repr(argv))
        if nvml_query.displays(name):
            self.displayed.update(id(arg) for arg in node.args)
        if (
            name in ("str", "repr")
            and isinstance(node.func, ast.Name)
            and id(node) not in self.text_tested
        ):
            # str(torch.version.cuda): the value becomes text, "None" on ROCm (Python's str of
            # None), never an error where it is made; shown unless the text itself is tested
            # (`str(torch.version.cuda).startswith("12")`, compared: marked by the parent, which
            # the breadth-first walk visits first)
            self.displayed.update(id(arg) for arg in node.args)
        if name == "format" and isinstance(node.func, ast.Attribute) and _is_text(node.func.value):
            # "... {}".format(torch.version.cuda): the value becomes text ("None" on ROCm)
            self.displayed.update(id(v) for v in (*node.args, *(k.value for k in node.keywords)))
        if name[:1].isupper() and name[1:2].islower():
            # TorchStatus(cuda_version=torch.version.cuda): a class given the value to hold (a
            # dataclass field, a model's attribute), recorded as a dict entry is
            self.recorded.update(id(k.value) for k in node.keywords)
        for arg in (*node.args, *(k.value for k in node.keywords)):
            if isinstance(arg, ast.Lambda) and _version_cuda_in(arg.body) is not None:
                # a report's entry (`_dict_append(out, "CUDA version", lambda: ...)`)
                self.recorded.add(id(arg.body))
        if name == "get_device_capability" and id(node) not in self.displayed:
            self.capability_calls.append((node, self.gated))
        elif name == "get_device_properties" and self.reads_capability:
            self.properties_calls.append((node, self.gated))
        elif name == "init" and _dotted(node.func) in _TAICHI_INIT:
            self._taichi_arch(node)
        elif name == "CUDAExtension":
            self.add(node, "cuda-extension", f"{_dotted(node.func)}(...)")
        elif name == "is_built_with_cuda" and id(node) not in self.displayed:
            # TensorFlow's tf.test.is_built_with_cuda(): False for a ROCm build of TensorFlow
            self.add(node, "tf-built-with-cuda", f"{_dotted(node.func)}()")
        elif self.nvcc_returned and (node.lineno, name) in self.nvcc_returned:
            flag = self.nvcc_returned[(node.lineno, name)]
            self.add(node, "nvcc-flags", _nvcc_evidence([flag]) + f" (returned by {name}())")
        elif name == "enable_tensorrt_engine" and isinstance(node.func, ast.Attribute):
            # Paddle Inference's Config: hands subgraphs to NVIDIA's TensorRT
            self.add(node, "paddle-tensorrt", f"{_dotted(node.func)}(...)")
        elif name == "DeviceRequest":
            why = container_gpus.device_request_verdict(node)
            if why:
                self.add(node, "container-gpu-request", why)
            elif (plain := container_gpus.plain_gpus_request(node)) is not None:
                self.add(node, "docker-gpus", plain)
        elif self.loads_cuda and (load := cuda_libraries.constant_load(node)) is not None:
            self._library_load(node, *load)
        elif self.dask_nvml and (entry := nvml_wrappers.entry_call(node, self.dask_nvml)):
            # dask's wrapper initialises NVML itself and answers 0 devices on AMD (nvml_wrappers)
            self.add(node, "nvml-call", f"{_dotted(node.func)}()  (NVML through dask: {entry})")
        elif name == "GpuInfo" and nvml_wrappers.constructs_gpu_info(
            node, self.gpu_info, self.text
        ):
            why = "(Ignite's GPU metric initialises NVML: NVMLError_LibraryNotFound on AMD)"
            self.add(node, "nvml-call", f"{_dotted(node.func)}()  {why}")
        elif name.startswith("nvmlInit") and not _on_returned_value(node.func):
            # NVML must be initialised before any query (NVML API reference, nvmlInit_v2): the
            # call is where an AMD machine loses the feature, whether or not the import was
            # optional (pynvml installs on ROCm; nvmlInit raises NVMLError_LibraryNotFound).
            self.add(node, "nvml-call", f"{_dotted(node.func) or name}()  (NVML sees no AMD GPU)")
        for keyword in node.keywords:
            if keyword.arg == "runtime" and container_gpus.nvidia_runtime(keyword.value):
                self._docker_runtime(keyword.value)
            if keyword.arg and _WARP_NAME.match(keyword.arg) and _is_32(keyword.value):
                self.add(keyword.value, "warp-size-32", f"{keyword.arg}=32")
            if self.is_setup and keyword.arg in _REQUIREMENT_KEYWORDS:
                for group, constants in _requirement_groups(keyword.value):
                    placed = [(str(c.value), c.lineno) for c in constants]
                    offered = offers_rocm_build(self.text)
                    self.hits.extend(
                        group_hits(group, placed, self.rules, rocm_build_offered=offered)
                    )

    def _docker_runtime(self, value: ast.expr) -> None:
        """`containers.run(..., runtime="nvidia")` or `kwargs["runtime"] = "nvidia"`: the NVIDIA
        Container Toolkit's runtime; a module that also names AMD's ("amd", /dev/kfd) chooses."""
        if not container_gpus.speaks_docker(self.text):
            return
        evidence = "runtime='nvidia' (docker SDK): the NVIDIA Container Toolkit's runtime"
        if "/dev/kfd" in self.text or re.search(r"""['"]amd['"]""", self.text):
            why = "AMD's runtime or devices are named beside it in this module"
            self.add_at(value, "container-gpu-request", f"{evidence}  ({why})", "info")
            return
        self.add(value, "container-gpu-request", evidence)

    def _taichi_arch(self, node: ast.Call) -> None:
        """`ti.init(ti.cuda)` / `ti.init(arch=ti.cuda)`: Taichi's CUDA back end, NVIDIA only."""
        given = [k.value for k in node.keywords if k.arg == "arch"] or node.args[:1]
        if given and _dotted(given[0]) in _TAICHI_CUDA:
            self.add(given[0], "taichi-cuda-arch", f"{_dotted(node.func)}({_dotted(given[0])})")

    def _library_load(self, node: ast.Call, kind: str, library: str) -> None:
        if id(node) in self.reported:
            return
        self.reported.add(id(node))
        shown = library if library.startswith("find_library(") else f"ctypes load of {library!r}"
        if kind == "nvml":  # NVML's own library: the binding's load is its init
            self.add(node, "nvml", f"{shown}  (NVML sees no AMD GPU)")
        elif kind == "driver":  # the CUDA driver: loaded to find CUDA devices
            self.add(node, "cuda-library-load", f"{shown} (the CUDA driver)")
        else:
            why = "check what it is loaded for: absent on ROCm, the load raises OSError"
            self.add_at(node, "cuda-library-load", f"ctypes load of {library!r}  ({why})", "info")

    def _function_wide(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Checks that follow a value through a function: a docker argv built in a name, a
        library file name tried from a list."""
        if self.argv_gpus:  # reported when the walk reaches the item (it knows the gating)
            self.docker_gpus.update(id(i) for i in container_gpus.docker_argv_gpus(node))
            if container_gpus.names_docker(self.text):
                self.docker_gpus.update(id(i) for i in container_gpus.docker_option_gpus(node))
        if self.loads_cuda:
            for call, kind, library in cuda_libraries.loads_by_name(node):
                self._library_load(call, kind, library)
        if self.blanks_before_nvml:
            self._blanked_for_nvml(node)

    def _blanked_for_nvml(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """`os.environ["CUDA_VISIBLE_DEVICES"] = ""` in a function that then picks GPUs through
        NVML: the HIP runtime honours CUDA_VISIBLE_DEVICES too (ROCm's GPU isolation page), and
        NVML finds no AMD GPU to put back, so the blank hides every AMD GPU from the process."""
        rule = self.rules.by_id.get("cuda-visible-devices")
        calls = (n for n in ast.walk(node) if isinstance(n, ast.Call))
        if rule is None or not any(
            whole_tree.call_name(c.func).startswith("nvmlInit") for c in calls
        ):
            return
        for statement in ast.walk(node):
            if (
                isinstance(statement, ast.Assign)
                and isinstance(statement.value, ast.Constant)
                and statement.value.value == ""
                and any(_names_visible_devices(t) for t in statement.targets)
                and id(statement) not in self.reported
            ):
                self.reported.add(id(statement))
                why = "set to '' before NVML picks GPUs: on ROCm NVML finds none, the blank stays"
                severity: Severity = "info" if self.gated else "error"
                line, column = statement.lineno, statement.col_offset + 1
                self.hits.append(
                    hit(line, column, rule, f"CUDA_VISIBLE_DEVICES = ''  ({why})", severity)
                )

    def visit_assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        self._import_by_call(node)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        key = targets[0].slice if isinstance(targets[0], ast.Subscript) else None
        if (
            isinstance(key, ast.Constant)
            and key.value == "runtime"
            and container_gpus.nvidia_runtime(node.value)
        ):
            assert node.value is not None
            self._docker_runtime(node.value)  # run_kwargs["runtime"] = "nvidia"
        if self.vendor_possible and node.value is not None and isinstance(targets[0], ast.Name):
            if _reads_env(node.value):
                self.env_names.add(targets[0].id)
            elif self.is_vendor_test(node.value):
                self.vendor_names.add(targets[0].id)
        version = _version_cuda_in(node.value)
        if (
            version is not None
            and isinstance(targets[0], ast.Subscript)
            and not _dotted(targets[0].value).endswith("environ")  # os.environ[...] = None raises
        ):
            self.recorded.add(id(version))  # info["cuda_version"] = torch.version.cuda
        elif version is not None and len(targets) == 1 and isinstance(targets[0], ast.Name):
            # `v = torch.version.cuda` (or `... if available else "n/a"`): judged where v is used
            self.stored.add(id(version))
            self.cuda_names[targets[0].id] = node
        elif isinstance(targets[0], ast.Name) and targets[0].id in self.cuda_names:
            del self.cuda_names[targets[0].id]  # reassigned: no longer the version
        if (
            self.reads_capability
            and isinstance(targets[0], ast.Name)
            and node.value is not None
            and _capability_value(node.value)
        ):
            self.thresholds[targets[0].id] = node.value  # `min_cc: Final = 89`
        call = _stored_capability(node.value) if self.reads_capability and node.value else None
        if call is not None:
            self.stored_as[id(call)] = [n for t in targets for n in _capability_names(t)]
        elif (
            self.reads_capability
            and isinstance(node.value, ast.Call)
            and whole_tree.call_name(node.value.func) == "get_device_properties"
        ):
            # `props = get_device_properties(d)`: judged where `props.major` is compared
            self.stored_as[id(node.value)] = [t.id for t in targets if isinstance(t, ast.Name)]
        elif (
            self.reads_capability
            and self.stored_as
            and node.value is not None
            and not any(isinstance(n, ast.Call) for n in ast.walk(node.value))
            and len(targets) == 1
            and isinstance(targets[0], ast.Name)
        ):
            # `cc = cap[0] * 10 + cap[1]`: a number made from a stored capability is judged where
            # it is compared (89: major * 10 + minor, see _capability_value)
            read = _capability_reads(node.value) - self.capability_aliases  # one step only
            for names in self.stored_as.values():
                if read & set(names) and targets[0].id not in names:
                    names.append(targets[0].id)
                    self.capability_aliases.add(targets[0].id)
        if self.reads_capability and node.value is not None:
            stored = [_dotted(t) for t in targets]
            for compare in ast.walk(node.value):
                if isinstance(compare, ast.Compare):
                    self.compare_words.setdefault(id(compare), []).extend(stored)
        for target in targets:
            dotted = _dotted(target)
            if ".cudnn." in f".{dotted}" and isinstance(target, ast.Attribute):
                self._cudnn(node, target.attr, node.value)
            name = target.attr if isinstance(target, ast.Attribute) else dotted
            if _WARP_NAME.match(name) and node.value is not None and _is_32(node.value):
                self.add(node, "warp-size-32", f"{name} = 32")

    def _with_thresholds(self, compare: ast.Compare) -> ast.Compare:
        """The comparison with each side that names a constant threshold of this module
        (`cc >= min_fp8_capability`, `min_fp8_capability: Final = 89`) read as that constant;
        a new node where one is replaced (the original keeps its bookkeeping)."""
        sides = [compare.left, *compare.comparators]
        if not self.thresholds or not any(
            isinstance(s, ast.Name) and s.id in self.thresholds for s in sides
        ):
            return compare
        resolved = [
            self.thresholds[s.id] if isinstance(s, ast.Name) and s.id in self.thresholds else s
            for s in sides
        ]
        copy = ast.Compare(left=resolved[0], ops=compare.ops, comparators=resolved[1:])
        return ast.copy_location(copy, compare)

    def _capability(self, node: ast.Call) -> None:
        """A capability read is a hazard only where it is compared with an Ada-or-later threshold
        or equated with a 9.x SM (see _CAPABILITY_SAFE_BELOW); the comparisons are those around
        the call or, when it is stored in a name, those that read the name in this module."""
        shown = f"{_dotted(node.func)}()"
        compares = list(self.parents_compares.get(id(node), ()))
        first, last = self._scope(node.lineno)
        for name in self.stored_as.get(id(node), ()):
            compares += [c for c in self.compares.get(name, ()) if first <= c.lineno <= last]
        read = {id(c): self._with_thresholds(c) for c in compares}  # named thresholds, read
        verdicts = [
            "safe" if id(c) in self.disabling else _capability_verdict(read[id(c)])
            for c in compares
        ]
        # An equality whose branch imports something loads that chip's code on an AMD GPU.
        verdicts = [
            "warn" if v == "unsure" and id(c) in self.importing else v
            for v, c in zip(verdicts, compares, strict=True)
        ]
        before = len(self.hits)
        self._judge_capability(node, shown, compares, verdicts, read)
        reported = self.hits[before:]
        if reported and reported[-1].severity != "info":
            # The comparisons that decide it are places of the same finding: where the code
            # takes NVIDIA's branch (the read may be lines or functions away from them).
            for compare, verdict in zip(compares, verdicts, strict=True):
                if verdict in ("warn", "unsure") and compare.lineno != node.lineno:
                    where = f"{shown} compared here (read at line {node.lineno})"
                    self.hits.append(
                        reported[-1]._replace(line=compare.lineno, column=1, evidence=where)
                    )

    def _judge_capability(
        self,
        node: ast.Call,
        shown: str,
        compares: list[ast.Compare],
        verdicts: list[str],
        read: dict[int, ast.Compare],
    ) -> None:
        """The finding for one capability read, from the verdicts on its comparisons."""
        if not compares and (sm := self._sm_number_compared(node)):
            function, line = sm
            # `return major * 10 + minor` compared with 89 (NVIDIA's FP8 line) by its callers
            self.add_at(
                node,
                "device-capability",
                shown + f"  (as an SM number: {function}() >= 89, NVIDIA's FP8 line, at line"
                f" {line}: MI200 reports 90 and has no FP8, MI300 94 with the fnuz format)",
                "warn",
            )
        elif not compares:
            self.add_at(node, "device-capability", shown + "  (read, never compared)", "info")
        elif any(
            v == "warn" and id(c) in self.importing for v, c in zip(verdicts, compares, strict=True)
        ):
            # What the branch does is known: it loads code built for that NVIDIA chip.
            self.add_at(
                node,
                "device-capability",
                shown + "  (an Ada/Hopper threshold decides what is imported)",
                "warn",
            )
        elif any(
            v == "warn" and _fp8_line(read[id(c)]) for v, c in zip(verdicts, compares, strict=True)
        ):
            # (8, 9) is NVIDIA's FP8 line (Ada): the answer to "has FP8?" is wrong on AMD.
            self.add_at(
                node,
                "device-capability",
                shown + "  (compared with (8, 9), NVIDIA's FP8 line: MI200 reports (9, 0) and has"
                " no FP8; MI300's FP8 is the fnuz format, not e4m3fn)",
                "warn",
            )
        elif (taken := self._feature_taken(compares, verdicts)) is not None:
            feature, severity = taken
            self.add_at(node, "device-capability", shown + f"  ({feature})", severity)
        elif (flash := self._sdpa_flash_withheld(compares)) is not None:
            self.add_at(node, "device-capability", shown + f"  ({flash})", "warn")
        elif any(v == "warn" for v in verdicts):
            self.add_at(
                node,
                "device-capability",
                shown + "  (compared with an Ada/Hopper threshold: check what it gates)",
                "info",
            )
        elif any(v == "unsure" for v in verdicts):
            self.add_at(
                node,
                "device-capability",
                shown + "  (equated with a Hopper SM: MI200 reports (9, 0) too; check what the"
                " branch picks)",
                "info",
            )
        else:
            self.add_at(
                node,
                "device-capability",
                shown + "  (every ROCm GPU takes the right branch)",
                "info",
            )

    def _asserted_capability(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """`assert get_device_capability()[0] == 9, "... requires SM90"` in a function: the
        function's rest is what the assert lets through, so its message, the function's name
        and the names it is registered under (`@register_backend("fa3")`) say what that is."""
        asserts = [n for n in node.body if isinstance(n, ast.Assert)]
        if not asserts:
            return
        words = [node.name] + [
            c.value
            for d in node.decorator_list
            for c in ast.walk(d)
            if isinstance(c, ast.Constant) and isinstance(c.value, str)
        ]
        for statement in asserts:
            said = [*words, *_branch_words([ast.Expr(statement.msg)] if statement.msg else [])]
            for compare in ast.walk(statement.test):
                if isinstance(compare, ast.Compare):
                    self.asserted.add(id(compare))
                    self.branch_words.setdefault(id(compare), []).extend(said)

    def _feature_taken(
        self, compares: list[ast.Compare], verdicts: list[str]
    ) -> tuple[str, Severity] | None:
        """Why an AMD GPU takes a branch meant for an NVIDIA feature it lacks, and how bad that
        is: the comparison is evaluated for every AMD target (capability_features.
        AMD_CAPABILITIES), the words around it name the feature; None where the threshold is not
        a constant or nothing is named. Code built for NVIDIA GPUs only (a feature no AMD GPU
        has) does not run on the AMD GPU that takes the branch, and nothing else in the module
        handles ROCm (vendor_aware): error."""
        if "pytest" in self.text or "unittest" in self.text:
            return None  # a test picks which tests run: a wrong pick fails a test, not a user
        if vendor_aware(self.text):
            return None  # the module already asks which vendor's torch runs it (as tables do)
        for verdict, compare in zip(verdicts, compares, strict=True):
            # safe for every AMD GPU, or an equality: a per-chip choice (but an assert equating
            # the capability with Hopper's 9 lets every gfx9 GPU into what it guards, and so does
            # an `if` whose branch runs code built for NVIDIA GPUs only)
            if verdict not in ("warn", "unsure"):
                continue
            threshold = _threshold(compare)
            if threshold is None:
                continue
            # the branch's words and the values of the names it reads (`allowed += DTYPE_F8`)
            branch = self.branch_words.get(id(compare), []) + capability_branches.followed(
                self.text, self.branch_bodies.get(id(compare), [])
            )
            feature = capability_features.named_feature(
                self.compare_words.get(id(compare), []), branch
            )
            if feature is None:
                continue
            if (
                verdict == "unsure"
                and id(compare) not in self.asserted
                and (
                    feature.severity != "error" or not any(feature.words.search(w) for w in branch)
                )
            ):
                continue
            taken = capability_features.passing(*threshold)
            lacking = capability_features.lacking(feature, taken)
            if lacking:
                why = f"{feature.name} branch, taken without it by {capability_features.shown(lacking)}"
                return why, feature.severity
        return None

    def _sdpa_flash_withheld(self, compares: list[ast.Compare]) -> str | None:
        """Why AMD GPUs that have PyTorch's flash SDPA backend never get it: a branch that
        turns it on behind a capability test (every conjunct of an `and`) that none of them
        passes (`major == 8 and minor == 0`: A100 only)."""
        gated = [c for c in compares if id(c) in self.sdpa_flash]
        if not gated or "pytest" in self.text or vendor_aware(self.text):
            return None
        gated = [
            c
            for c in gated
            if capability_features.turns_on_sdpa_flash(self.sdpa_flash[id(c)], self.text)
        ]
        for compare in gated:
            threshold = _threshold(compare)
            taken = capability_branches.membership_taken(compare)  # `major in {7, 8}`
            if threshold is not None:
                taken = capability_features.passing(*threshold)
            if taken is not None and not set(taken) & capability_features.SDPA_FLASH_TARGETS:
                return (
                    "turns on SDPA's flash backend only for NVIDIA chips: AMD GPUs that have it"
                    f" ({', '.join(sorted(capability_features.SDPA_FLASH_TARGETS))}) never take"
                    " the branch and run the slower kernels"
                )
        return None

    def _jax_platform(self, node: ast.Call) -> None:
        """A JAX lowering or an XLA custom-call/FFI target registered for the `cuda` platform
        (`CUDA` for targets): JAX names AMD GPUs' platform `rocm` (`ROCM`), where the primitive
        then has no lowering. A module that registers for rocm too is one side of a choice;
        `gpu` (both) is not a CUDA registration."""
        given = [k.value for k in node.keywords if k.arg == "platform"]
        if len(node.args) >= 3:
            given.append(node.args[2])
        named = next(
            (g for g in given if isinstance(g, ast.Constant) and isinstance(g.value, str)), None
        )
        if named is None or str(named.value).lower() != "cuda":
            return
        platform = str(named.value)
        shown = f"{whole_tree.call_name(node.func)}(..., platform={platform!r})"
        if _ROCM_PLATFORM.search(self.text):
            why = "the module registers the rocm platform too"
            self.add_at(named, "jax-cuda-platform", f"{shown}  ({why})", "info")
        else:  # at the platform's name: the value a maintainer edits
            why = "JAX's platform on AMD GPUs is 'rocm': no lowering there"
            self.add_at(named, "jax-cuda-platform", f"{shown}  ({why})", "error")

    def visit_binop(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Mod) and _is_text(node.left):
            # "... %s" % torch.version.cuda: text, as str.format makes it
            values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            self.displayed.update(id(v) for v in values)
        if self.torch_cuda_home and isinstance(node.op, ast.Add) and _is_cuda_home(node.left):
            self._cuda_home_path(node)  # CUDA_HOME + "/bin/nvcc"

    def _cuda_home_path(self, node: ast.expr) -> None:
        """A path made from torch.utils.cpp_extension.CUDA_HOME, None on every ROCm torch
        (`CUDA_HOME = _find_cuda_home() if ... torch.version.cuda else None`): os.path.join and
        `+` raise TypeError there. Behind a test of CUDA_HOME in its function it is that test's
        side; in a module that builds for ROCm too (ROCM_HOME, IS_HIP_EXTENSION, hipcc) the
        ROCm build has its own path."""
        shown = ast.unparse(node)[:80]
        first, _ = self._scope(node.lineno)
        lines = self.text.splitlines()
        before = "\n".join(lines[max(first - 1, 0) : node.lineno - 1])
        # `os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else "nvcc"`: the conditional
        # expression's test follows the path on its own line
        end = node.end_lineno or node.lineno
        after = lines[end - 1][node.end_col_offset or 0 :] if end <= len(lines) else ""
        if _CUDA_HOME_TEST.search(before) or _CUDA_HOME_TEST.search(after):
            why = "behind a test of CUDA_HOME"
            self.add_at(node, "cuda-home-none", f"{shown}  ({why})", "info")
        elif self.hip_build_aware:
            why = "the module builds for ROCm too"
            self.add_at(node, "cuda-home-none", f"{shown}  ({why})", "info")
        else:
            why = "CUDA_HOME is None on every ROCm torch: TypeError"
            self.add_at(node, "cuda-home-none", f"{shown}  ({why})", "error")

    def _sm_number_compared(self, node: ast.Call) -> tuple[str, int] | None:
        """(function, line) where the function holding the read returns the capability as an
        SM number (`return major * 10 + minor`) and the module compares a call of it with 89,
        NVIDIA's FP8 line (`get_gpu_arch() >= 89`), or None."""
        names = self.stored_as.get(id(node), ())
        if not names:
            return None
        first, last = self._scope(node.lineno)
        lines = self.text.splitlines()
        body = "\n".join(lines[max(first - 1, 0) : last])
        major = re.escape(names[0])  # the name the major part is stored in
        if not re.search(rf"\breturn\s+\(?\s*{major}\s*\*\s*10\s*\+\s*\w+", body):
            return None
        header = re.match(r"\s*(?:async\s+)?def\s+(\w+)", lines[first - 1] if first else "")
        if header is None:
            return None
        function = header.group(1)
        compared = re.compile(rf"\b{function}\(\)\s*>=\s*89\b")
        return next(
            ((function, n) for n, text in enumerate(lines, 1) if compared.search(text)), None
        )

    def _scope(self, line: int) -> tuple[int, int]:
        """Lines of the innermost function holding `line` (the whole module if none)."""
        inner = (0, 1 << 30)
        for first, last in self.functions:
            if first <= line <= last and last - first < inner[1] - inner[0]:
                inner = (first, last)
        return inner

    def add_at(self, node: ast.AST, check: str, evidence: str, severity: Severity) -> None:
        rule = self.rules.by_check.get(check)
        if rule is not None:
            severity, evidence = self._gating(severity, evidence)
            line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", -1) + 1
            self.hits.append(hit(line, column, rule, evidence, severity))

    def _cudnn(self, node: ast.AST, setting: str, value: ast.expr | None) -> None:
        shown = ast.unparse(value) if value is not None else "?"
        if setting == "enabled" and isinstance(value, ast.Constant) and value.value is False:
            first, last = self._scope(getattr(node, "lineno", 1))
            scope = self.text.splitlines()[max(first - 1, 0) : last]  # rare: split here
            if any("determinis" in line for line in scope):
                # Turned off for reproducible runs (the scope asks for determinism): cuDNN on
                # NVIDIA and MIOpen on AMD are both off, the same trade-off on every vendor.
                why = f"cudnn.enabled = {shown}  (for determinism: the same trade-off on NVIDIA)"
                self.add_at(node, "cudnn-disabled", why, "info")
            else:
                self.add(node, "cudnn-disabled", f"cudnn.enabled = {shown}")
        elif setting in ("benchmark", "deterministic", "allow_tf32", "enabled"):
            self.add(node, "cudnn-setting", f"cudnn.{setting} = {shown}")

    def visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        lazy = _registered_lazily(node)
        if lazy is not None:
            # dask's Dispatch.register_lazy("cudf"): called only once cudf has been imported
            self.optional.update(
                id(n)
                for n in ast.walk(node)
                if isinstance(n, (ast.Import, ast.ImportFrom)) and _top_module(n) == lazy
            )
        self.functions.append((node.lineno, node.end_lineno or node.lineno))
        if self.reads_capability:
            self._asserted_capability(node)
            # a `return` is a statement: the statements hold every one ast.walk finds
            for returned in pieces.statement_nodes(node):
                if isinstance(returned, ast.Return) and returned.value is not None:
                    for compare in ast.walk(returned.value):
                        if isinstance(compare, ast.Compare):
                            self.compare_words.setdefault(id(compare), []).append(node.name)
        self.visit_body(node)
        if (
            _FEATURE_PREDICATE.search(node.name)
            and not _NVIDIA_NAME_WORDS & set(node.name.lower().split("_"))
            and "version.cuda" in self.text
        ):
            self._feature_denied_by_version_cuda(node)
        if self.argv_gpus or self.loads_cuda or self.blanks_before_nvml:
            self._function_wide(node)
        if (
            (_NVIDIA_FUNCTION.search(node.name) and self.other_vendor_side)
            or _NVIDIA_PRODUCT_FUNCTION.search(node.name)
            or (  # the name first: rocm_functions reads the whole text once asked
                any(w in _NVIDIA_WORDS for w in node.name.lower().split("_"))
                and self.rocm_functions
                and _without_vendor(node.name) in self.rocm_functions
            )
        ):
            self.gate_children.update(id(s) for s in node.body)
            if self.lazy_modules and _NVIDIA_PRODUCT_FUNCTION.search(node.name):
                # convert_to_tensorrt() is the product's opt-in feature: the gate keeps its
                # other findings quiet, but its own unguarded import of the product is the hazard.
                self.product_imports.update(
                    id(n) for n in pieces.statement_nodes(node) if _imports_in_function(n)
                )
        if self.lazy_modules:  # an import is a statement: no expression need be walked
            for n in pieces.statement_nodes(node):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    self.lazy.add(id(n))
                elif (module := product_imports.import_call_module(n)) is not None and (
                    (rule := self.rules.imports.get(module.split(".")[0])) is not None
                    and rule.lazy_import_note
                ):
                    self.lazy.add(id(n))
                    self.import_calls[id(n.value)] = (n, module)  # type: ignore[attr-defined]
        for arg, default in whole_tree.argument_defaults(node.args):
            if _WARP_NAME.match(arg.arg) and _is_32(default):
                self.add(default, "warp-size-32", f"{arg.arg}=32 (default of {node.name})")


_HANDLERS: dict[type, Callable[[_Visitor, Any], None]] = {
    ast.Import: _Visitor.visit_import,
    ast.ImportFrom: _Visitor.visit_import_from,
    ast.Expr: _Visitor.visit_expr,
    ast.Constant: _Visitor.visit_constant,
    ast.Attribute: _Visitor.visit_attribute,
    ast.Call: _Visitor.visit_call,
    ast.Raise: _Visitor.visit_raise,
    ast.Assert: _Visitor.visit_assert,
    ast.FormattedValue: _Visitor.visit_formatted_value,
    ast.Dict: _Visitor.visit_dict,
    ast.Name: _Visitor.visit_name,
    ast.Assign: _Visitor.visit_assign,
    ast.AnnAssign: _Visitor.visit_assign,
    ast.BinOp: _Visitor.visit_binop,
    ast.FunctionDef: _Visitor.visit_function,
    ast.AsyncFunctionDef: _Visitor.visit_function,
    ast.If: _Visitor.visit_if_statement,
    ast.IfExp: _Visitor.visit_if,
    ast.While: _Visitor.visit_if,
    ast.BoolOp: _Visitor.visit_bool_op,
    ast.UnaryOp: _Visitor.visit_unary,
    ast.Compare: _Visitor.visit_compare,
    ast.Try: _Visitor.visit_try,
    ast.Module: _Visitor.visit_body,
    ast.For: _Visitor.visit_body,
    ast.With: _Visitor.visit_body,
}


# Fields that never hold a node the walk handles, by the grammar (Python's Parser/Python.asdl):
# names and other identifiers, ints, type comments, and `ctx` (Load/Store/Del: one shared
# instance per kind, with no children and no handler). The walk used to push every Name's ctx.
_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "name", "asname", "module", "level", "rest", "kind"}
    | {"type_comment", "is_async", "conversion", "simple"}
)
_WALKED_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}  # a constant's value: no node


# Names of predicates that answer "can this feature be used?" (`check_bloat16_supported`,
# `has_bfloat_support`, `is_fp8_available`, `can_use_flash`).
_FEATURE_PREDICATE = re.compile(r"(?i)support|availab|capable|can_use|^can_")
# A predicate named for the vendor (`cuda_available`, `is_nvidia_supported`) asks which vendor's
# stack is there, not whether a feature can run: False on ROCm is its answer.
_NVIDIA_NAME_WORDS = frozenset({"cuda", "nvidia", "nv", "cu"})


def _tested_for_none(node: ast.expr) -> ast.expr:
    """`x` of `x is not None` (what the test asks about), else the node itself."""
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.IsNot)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    ):
        return node.left
    return node


def _version_cuda_truth(node: ast.expr) -> bool:
    """`torch.version.cuda`, `torch.version.cuda is not None` or `bool(torch.version.cuda)`."""
    if isinstance(node, ast.Call) and _dotted(node.func) == "bool" and len(node.args) == 1:
        node = node.args[0]
    node = _tested_for_none(node)
    return _dotted(node) == "torch.version.cuda"


def _is_cudnn_flags(call: ast.Call) -> bool:
    """`torch.backends.cudnn.flags(...)` (or `cudnn.flags(...)` after importing cudnn)."""
    return f".{_dotted(call.func)}".endswith(".cudnn.flags")


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _names_visible_devices(target: ast.AST) -> bool:
    """os.environ["CUDA_VISIBLE_DEVICES"] as an assignment target."""
    return (
        isinstance(target, ast.Subscript)
        and isinstance(target.slice, ast.Constant)
        and target.slice.value == "CUDA_VISIBLE_DEVICES"
    )


def _walked_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f for f in getattr(node_type, "_fields", ()) if f not in _LEAF_FIELDS)


def _nodes(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes ast.walk(root) gives but for the contexts (Load, Store), depth first: for the
    tests that only ask whether some node is there (ast.walk runs two generators per node and
    costs about twice as much; every name and attribute also brings its context)."""
    walked, node_type = _WALKED_FIELDS, ast.AST
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        kind = type(node)
        fields = walked.get(kind)
        if fields is None:
            fields = walked[kind] = _walked_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, node_type))
            elif isinstance(value, node_type):
                stack.append(value)


_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _spans(node: Any, lines: list[int]) -> bool:
    """Whether `node` covers one of the sorted `lines` (nodes without positions: yes); a decorated
    def or class covers its decorators' lines too."""
    first = getattr(node, "lineno", None)
    if first is None:
        return True
    start = (
        node.decorator_list[0].lineno if type(node) in _DECORATED and node.decorator_list else first
    )
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= (node.end_lineno or first)


def _children(node: ast.AST) -> Iterator[ast.AST]:
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            yield from (v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            yield value


def _is_text(node: ast.AST) -> bool:
    """A string literal or an f-string."""
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _text_of(node: ast.AST) -> ast.expr | None:
    """The x of `str(x)` or `repr(x)` (its text, which cannot raise on None), else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("str", "repr")
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def _shows_text(call: ast.Call, name: str) -> bool:
    """A call whose string arguments are text shown to the user, never run: print and the
    logging methods (nvml_query.displays), warnings.warn, click's and typer's echo. Not a
    stream's write nor a print into a file (`print(..., file=f)`): those may write a script."""
    if name == "write" or not (nvml_query.displays(name) or name in ("echo", "secho")):
        return False
    target = next((k.value for k in call.keywords if k.arg == "file"), None)
    return target is None or (
        isinstance(target, ast.Attribute) and target.attr in ("stdout", "stderr")
    )


def _version_cuda_in(value: ast.AST | None) -> ast.Attribute | None:
    """The torch.version.cuda of `torch.version.cuda` or of a branch of `a if test else b`."""
    while isinstance(value, ast.IfExp):
        body, orelse = value.body, value.orelse
        value = body if _version_cuda_in(body) is not None else orelse
    if (
        isinstance(value, ast.Attribute)
        and value.attr == "cuda"
        and _dotted(value.value) == "torch.version"
    ):
        return value
    return None


def _none_test_of_version_cuda(test: ast.AST) -> ast.Attribute | None:
    """The torch.version.cuda of `torch.version.cuda is None` / `not torch.version.cuda`."""
    return _none_test_of_version(test, "cuda")


def _rejecting_version_cuda(test: ast.AST) -> ast.Attribute | None:
    """The torch.version.cuda of a test that is True on every ROCm build, where it is None:
    `torch.version.cuda is None`, `not torch.version.cuda`, `torch.version.cuda != "12.8"`,
    `torch.version.cuda not in ("12.1", "12.4")`, or any of them as one operand of an `or`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return next(filter(None, map(_rejecting_version_cuda, test.values)), None)
    if (found := _none_test_of_version_cuda(test)) is not None:
        return found
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(test.ops[0], ast.NotEq):
        sides = [(left, right), (right, left)]
    elif isinstance(test.ops[0], ast.NotIn):
        sides = [(left, right)] if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else []
    else:
        return None
    for attribute, other in sides:
        values = other.elts if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else [other]
        if (
            (found := _version_cuda_in(attribute)) is attribute
            and values
            # a version string: `!= None` would not be True on ROCm
            and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values)
        ):
            return found
    return None


def _none_test_of_version(test: ast.AST, vendor: str) -> ast.Attribute | None:
    """The torch.version.<vendor> of `torch.version.<vendor> is None` / `not ...`."""
    operand: ast.AST | None = None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = test.operand
    elif (
        isinstance(test, ast.Compare)
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        operand = test.left
    if (
        isinstance(operand, ast.Attribute)
        and operand.attr == vendor
        and _dotted(operand.value) == "torch.version"
    ):
        return operand
    return None


def _none_tested(test: ast.AST) -> ast.AST | None:
    """The `v` of `not v` / `v is None` / `v == None`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.ops[0], (ast.Is, ast.Eq))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left
    return None


def _none_test_of_name(test: ast.AST) -> str | None:
    """The name of `not v` / `v is None` / `v == None`."""
    operand = _none_tested(test)
    return operand.id if isinstance(operand, ast.Name) else None


def _none_test_of_cpp_extension_cuda_home(test: ast.AST) -> bool:
    """`cpp_extension.CUDA_HOME is None` / `not torch.utils.cpp_extension.CUDA_HOME`: the
    module attribute, read where the module is imported whole."""
    operand = _none_tested(test)
    return (
        isinstance(operand, ast.Attribute)
        and operand.attr == "CUDA_HOME"
        and _dotted(operand.value).split(".")[-1] == "cpp_extension"
    )


def _assigns(statements: list[ast.stmt], name: str) -> bool:
    return any(
        isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
        for s in statements
    )


# torch.utils.cpp_extension's CUDA_HOME in a module: imported by name, or read as an attribute.
_TORCH_CUDA_HOME = re.compile(
    r"from[ \t]+torch\.utils\.cpp_extension[ \t]+import[ \t]*\(?[^)]*?\bCUDA_HOME\b"
    r"|cpp_extension\.CUDA_HOME\b"
)
# `if CUDA_HOME`, `if not CUDA_HOME`, `CUDA_HOME is None`, `CUDA_HOME == ...`: a test of it.
_CUDA_HOME_TEST = re.compile(
    r"\bif[ \t(]+(?:not[ \t]+)?(?:\w+\.)?CUDA_HOME\b|\bCUDA_HOME[ \t]+is\b|\bCUDA_HOME[ \t]*[!=]="
)


# jax.interpreters.mlir.register_lowering(prim, rule, platform=...), jax.ffi.register_ffi_target
# and xla_client.register_custom_call_target(name, fn, platform=...): platforms by name.
_JAX_REGISTRATIONS = frozenset(
    {"register_lowering", "register_ffi_target", "register_custom_call_target"}
)
_ROCM_PLATFORM = re.compile(r"""["'](?:rocm|ROCM)["']""")


def _is_cuda_home(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "CUDA_HOME") or (
        isinstance(node, ast.Attribute)
        and node.attr == "CUDA_HOME"
        and _dotted(node.value).endswith("cpp_extension")
    )


def _cuda_home_paths(call: ast.Call, name: str) -> list[ast.expr]:
    """The path a call makes from CUDA_HOME: `os.path.join(CUDA_HOME, ...)`, `Path(CUDA_HOME)`
    (`CUDA_HOME + "/bin/nvcc"` is a BinOp: _Visitor.visit_binop)."""
    return [call] if name in ("join", "Path") and _is_cuda_home(call.args[0]) else []


def _find_spec_module(test: ast.expr) -> str | None:
    """The top module `m` of `find_spec("m")` / `find_spec("m") is not None` (any qualifier:
    importlib.util.find_spec, util.find_spec)."""
    test = _tested_for_none(test)
    if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Constant)):
        return None
    func = test.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    value = test.args[0].value
    return value.split(".")[0] if name == "find_spec" and isinstance(value, str) else None


# `def is_bnb_available():\n    return importlib.util.find_spec("bitsandbytes") is not None`
_SPEC_FUNCTION = re.compile(
    r"^[ \t]*def[ \t]+(\w+)[ \t]*\(\)[^:\n]*:[ \t]*\n[ \t]+return[ \t]+(?:[\w.]+\.)?find_spec"
    r"\([ \t]*[\"']([\w.]+)[\"'][ \t]*\)(?:[ \t]+is[ \t]+not[ \t]+None)?[ \t]*$",
    re.MULTILINE,
)


@functools.lru_cache(maxsize=4)
def _spec_functions(text: str) -> dict[str, str]:
    """Functions of a module whose whole body returns a find_spec test -> the module tested."""
    return {m.group(1): m.group(2).split(".")[0] for m in _SPEC_FUNCTION.finditer(text)}


def _availability_test(test: ast.expr) -> str | None:
    """`m` of `if m:` / `if m is not None:` (a module name bound to None where it is missing),
    or the key of `if env_info["has_flash_attn_4"]:` (a table of availability flags)."""
    if isinstance(test, ast.Name):
        return test.id
    if (
        isinstance(test, ast.Subscript)
        and isinstance(test.slice, ast.Constant)
        and isinstance(test.slice.value, str)
        and _AVAILABILITY_FLAG.match(test.slice.value)
    ):
        return test.slice.value
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left.id
    return None


# Hugging Face's libraries define `is_<package>_available()` as "is the package installed"
# (transformers.utils.import_utils: `_is_package_available("apex")` behind `is_apex_available`;
# accelerate.utils.imports and diffusers.utils.import_utils likewise), and projects that copy their
# Trainer import them from there: `if is_apex_available(): from apex import amp` imports apex only
# where it is installed.
_LIBRARY_CHECKS = re.compile(
    r"^[ \t]*from[ \t]+(?:transformers|accelerate|diffusers|peft|optimum)(?:\.[\w.]+)?[ \t]+"
    r"import[ \t]+(\([^)]*\)|[^\n]*)",
    re.MULTILINE,
)


@functools.lru_cache(maxsize=4)
def _library_checks(text: str) -> frozenset[str]:
    """The `is_*_available` names this module imports from a Hugging Face library."""
    return frozenset(
        name
        for m in _LIBRARY_CHECKS.finditer(text)
        for name in re.findall(r"\b(is_\w+_available)\b(?![ \t]+as\b)", m.group(1))
    )


def _library_availability_call(test: ast.expr, text: str) -> str | None:
    """`is_apex_available` of `if is_apex_available():` where that name is imported from a Hugging
    Face library (see _LIBRARY_CHECKS); the flag's name then names the module it guards."""
    if (
        isinstance(test, ast.Call)
        and not test.args
        and isinstance(test.func, ast.Name)
        and test.func.id.startswith("is_")
        and "_available" in text
        and test.func.id in _library_checks(text)
    ):
        return test.func.id
    return None


# `IS_TORCHSPARSE_AVAILABLE`, `HAS_FLASH_ATTN`, `_minkowski_engine_available`: a flag a
# module sets from its own try/except ImportError, named after the module it guards.
_AVAILABILITY_FLAG = re.compile(
    r"(?i)^_*(?:is_|has_)?([a-z0-9_]+?)_available$|^_*has_([a-z0-9_]+)$"
)


def _flagged_module(name: str, rules: RuleSet) -> str | None:
    """The rule-table module an availability flag is named after (underscores and case aside)."""
    match = _AVAILABILITY_FLAG.match(name)
    if match is None:
        return None
    key = (match.group(1) or match.group(2)).replace("_", "").lower()
    module = next((m for m in rules.imports if m.replace("_", "").lower() == key), None)
    if module is not None:
        return module
    # `has_flash_attn_4`: named after the distribution (flash-attn-4), not its module
    # (flash_attn.cute): the first module of the rule that names that distribution.
    return next(
        (
            rule.imports[0]
            for rule in rules.rules
            if rule.imports
            and any(p.replace("-", "").replace("_", "").lower() == key for p in rule.packages)
        ),
        None,
    )


def _registered_lazily(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """`m` of a `@<dispatch>.register_lazy("m")` decorator (dask.utils.Dispatch: the function
    runs only once module m has been imported)."""
    for decorator in node.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "register_lazy"
            and decorator.args
            and isinstance(decorator.args[0], ast.Constant)
            and isinstance(decorator.args[0].value, str)
        ):
            return decorator.args[0].value
    return None


def _conjuncts(test: ast.expr) -> list[ast.Compare]:
    """The comparisons a branch needs all of: the test itself or each operand of an `and`
    (an `or` or a `not` is left alone: any one operand could open it)."""
    if isinstance(test, ast.Compare):
        return [test]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [v for v in test.values if isinstance(v, ast.Compare)]
    return []


def _returns_off(statements: list[ast.stmt]) -> bool:
    """A branch that only returns False/None: the test can only switch something off."""
    return (
        len(statements) == 1
        and isinstance(statements[0], ast.Return)
        and (
            statements[0].value is None
            or (
                isinstance(statements[0].value, ast.Constant)
                and statements[0].value.value in (False, None)
            )
        )
    )


def _falls_back_to_amd_tool(node: ast.Try) -> bool:
    """Whether an `except` of this `try` runs or imports an AMD tool (rocm-smi, amd-smi, amdsmi):
    the `try` body is then the NVIDIA side of a vendor switch by trial."""
    for handler in node.handlers:
        for n in ast.walk(handler):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                words = n.value.split()
                if words and os.path.basename(words[0]) in _AMD_TOOLS:
                    return True
            elif isinstance(n, (ast.Import, ast.ImportFrom)) and _top_module(n) in _AMD_TOOLS:
                return True
    return False


def _asks_amd_side(statement: ast.AST) -> bool:
    """Whether a statement runs or imports an AMD tool (rocm-smi, amd-smi, amdsmi) or calls or
    imports a function named for ROCm/AMD (`_rocm_state()`, `from .detect import amd_gpus`)."""
    for n in ast.walk(statement):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            words = n.value.split()
            if words and os.path.basename(words[0]) in _AMD_TOOLS:
                return True
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            if _top_module(n) in _AMD_TOOLS or any(
                _ROCM_WORDS.intersection(a.name.lower().split("_")) for a in n.names
            ):
                return True
        elif isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if _ROCM_WORDS.intersection(name.lower().split("_")):
                return True
    return False


def _imported_by_call(statement: ast.AST) -> str:
    """The module a statement imports through importlib.import_module("m") (an absolute name,
    given as a constant; the call's result, an attribute of it or a method called on it, such as
    `import_module("m").load_library()`, assigned or discarded), or ''."""
    value = getattr(statement, "value", None) if isinstance(statement, _CALL_STATEMENTS) else None
    while True:
        if isinstance(value, ast.Attribute):
            value = value.value
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr != "import_module"
        ):
            value = value.func.value  # a method of what the call returned
        else:
            break
    if not isinstance(value, ast.Call) or not value.args or value.keywords:
        return ""
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    first = value.args[0]
    if name != "import_module" or not isinstance(first, ast.Constant):
        return ""
    module = first.value
    return module if isinstance(module, str) and module and module[0] != "." else ""


_CALL_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.Expr)


def _top_module(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0]
    return node.names[0].name.split(".")[0]


def _reads_env(value: ast.AST) -> bool:
    for node in _nodes(value):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
            return True
        if isinstance(node, ast.Name) and node.id in ("getenv", "environ"):
            return True
    return False


def _capability_names(target: ast.AST) -> list[str]:
    """Names a capability is stored in whose comparisons carry the verdict: in `major, minor =
    ...` only the major (the minor alone decides nothing: AMD's minor sits beside a gfx major)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        first = target.elts[0] if target.elts else None
        return [first.id] if isinstance(first, ast.Name) else []
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _capability_call(node: ast.AST) -> ast.Call | None:
    """The get_device_capability() call of `call`, `call[0]` or `call()[0] * 10 + ...`, or the
    get_device_properties() call of `get_device_properties(d).major` (hipDeviceProp_t.major)."""
    major = False
    while isinstance(node, (ast.Subscript, ast.BinOp, ast.Attribute)):
        if isinstance(node, ast.Attribute):
            if node.attr != "major" or not isinstance(node.value, ast.Call):
                return None
            major = True
        node = node.left if isinstance(node, ast.BinOp) else node.value
    if isinstance(node, ast.Call):
        name = whole_tree.call_name(node.func)
        if name == "get_device_capability" or (major and name == "get_device_properties"):
            return node
    return None


def _stored_capability(value: ast.AST) -> ast.Call | None:
    """The capability call an assignment stores: `cap = get_device_capability()`, or either arm
    of a conditional expression (`major, _ = get_device_capability() if available else (0, 0)`:
    Python binds the arm it evaluates, so the names hold the capability wherever a GPU is)."""
    if isinstance(value, ast.IfExp):
        return _capability_call(value.body) or _capability_call(value.orelse)
    return _capability_call(value)


def _capability_value(node: ast.AST) -> list[float]:
    """Capability thresholds a constant stands for: (8, 9) -> 8.9, 9 -> 9.0, [(8, 0), (9, 0)]."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        if isinstance(node.value, bool):
            return []
        value = float(node.value)
        return [value / 10 if value >= 20 else value]  # 89 = major * 10 + minor
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
        if len(items) == 2 and all(
            isinstance(i, ast.Constant) and type(i.value) is int for i in items
        ):
            major, minor = (int(i.value) for i in items)  # type: ignore[attr-defined]
            return [major + minor / 10]
        return [v for item in items for v in _capability_value(item)]
    return []


def _branch_words(statements: list[ast.stmt]) -> list[str]:
    """What a branch says it is for: its string constants (messages), the names it calls or
    assigns, the modules it imports."""
    words: list[str] = []
    for statement in statements:
        for node in whole_tree.walk_from([statement]):  # ast.walk's order, less the contexts
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                words.append(node.value)
            elif isinstance(node, ast.Call):
                words.append(_dotted(node.func))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                words.extend(a.name for a in node.names)
                if isinstance(node, ast.ImportFrom) and node.module:
                    words.append(node.module)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                words.append(node.id)
    return words


# A module that already asks which vendor's torch runs it (torch.version.hip, is_rocm(),
# DEVICE_TYPE == "hip", torch.version.cuda as a gate): its capability test is not the only gate.
_VENDOR_AWARE = re.compile(
    r"(?i)version\.(?:hip|cuda)|is_?hip\b|is_?rocm|rocm|[\"']hip[\"']|is_cuda\s*\("
)
# Each alternative holds one of these words, at these offsets from where its match starts.
_VENDOR_AWARE_ANCHORS = (("rocm", (0,)), ("hip", (8, 3, 2, 1)), ("cuda", (8, 3)))
_ASCII_LETTER = re.compile(r"(?i)[a-z]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def vendor_aware(text: str) -> bool:
    """Whether _VENDOR_AWARE matches `text`: tried only where one of its words is in the
    lower-cased text (a case-insensitive pattern with no literal to skip to tries every
    character of a large module). Exact where lower-casing keeps every place and every character
    `re` folds to an ASCII letter lower-cases to it; the pattern itself elsewhere."""
    low = text.lower()
    if len(low) != len(text) or (
        not text.isascii() and any(_ASCII_LETTER.match(c) for c in set(_NON_ASCII.findall(text)))
    ):
        return _VENDOR_AWARE.search(text) is not None
    for word, offsets in _VENDOR_AWARE_ANCHORS:
        at = low.find(word)
        while at >= 0:
            if any(at >= k and _VENDOR_AWARE.match(text, at - k) for k in offsets):
                return True
            at = low.find(word, at + 1)
    return False


def _only_displays(statements: list[ast.stmt]) -> bool:
    """A branch that only prints or logs (`log.info_once(...)`): whichever way it goes, the
    program does the same thing."""
    return all(
        isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and nvml_query.displays(whole_tree.call_name(s.value.func).split("_")[0])
        for s in statements
    )


_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _threshold(compare: ast.Compare) -> tuple[str, float, bool, bool] | None:
    """(operator, threshold, constant on the left, major only) of `cap OP constant`: a bare
    integer below 20 is a major (`major >= 9`), a pair a (major, minor), 89 major * 10 + minor."""
    if len(compare.ops) != 1 or type(compare.ops[0]) not in _OPS:
        return None
    left, right = compare.left, compare.comparators[0]
    constant_left = bool(_capability_value(left))
    constant = left if constant_left else right
    values = _capability_value(constant)
    if len(values) != 1 or _capability_value(right if constant_left else left):
        return None
    major_only = (
        isinstance(constant, ast.Constant)
        and isinstance(constant.value, int)
        and constant.value < 20
    )
    return _OPS[type(compare.ops[0])], values[0], constant_left, major_only


def _fp8_line(compare: ast.Compare) -> bool:
    """The comparison's threshold is 8.9, where NVIDIA's FP8 starts (Ada, sm_89)."""
    sides = [compare.left, *compare.comparators]
    return any(abs(v - 8.9) < 1e-9 for side in sides for v in _capability_value(side))


def _capability_verdict(compare: ast.Compare) -> str:
    """'warn' when an AMD GPU's gfx number decides this comparison by accident, else 'safe'.

    NVIDIA's feature levels (CUDA C++ Programming Guide, compute capabilities): 8.0 Ampere
    (bf16, the sm80 kernels: Marlin, FlashAttention-2), 8.9 Ada (fp8), 9.0 Hopper (TMA, wgmma).
    ROCm reports the gfx number: (9, 0) for MI100/MI200, (9, 4) for MI300, (10..12, x) for RDNA.
    Every AMD GPU is above an exclusion threshold up to 8.6 (`cap < (8, 0)`: fall back) and
    unequal to an SM below 9; a threshold that turns something on (`cap >= (8, 0)`: use the
    sm80 kernel) or any threshold from 8.9 up is decided by the gfx number by accident."""
    sides = [compare.left, *compare.comparators]
    values = [v for side in sides for v in _capability_value(side)]
    if not values:
        return "warn"  # compared with something computed: cannot tell
    constant_left = bool(_capability_value(compare.left))
    for op in compare.ops:
        if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
            if any(v >= 9 for v in values):
                # One chip's SM (Hopper's (9, 0)), which MI200 also reports: usually a per-chip
                # tuning choice (a tile size, a heuristic); what the branch picks decides.
                return "unsure"
            continue
        below = isinstance(op, (ast.Lt, ast.LtE)) != constant_left  # capability < threshold
        if not below or any(v >= _CAPABILITY_SAFE_BELOW for v in values):
            return "warn"
    return "safe"


def _nvcc_evidence(flags: list[str]) -> str:
    return (
        f"{' '.join(flags)} reaches nvcc's arguments: on ROCm hipcc passes it to clang, which"
        " rejects it"
    )


def _made_text(node: ast.AST) -> bool:
    """`str(...)` or `repr(...)`: a call that makes its argument text."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("str", "repr")
    )


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


def _on_returned_value(func: ast.expr) -> bool:
    """A method called on what another call returned (`when(N).nvmlInit()`, a mock's stub
    builder), not on a module or object the code holds by name."""
    while isinstance(func, ast.Attribute):
        func = func.value
        if isinstance(func, ast.Call):
            return True
    return False


def _imports_in_function(node: ast.AST) -> bool:
    return isinstance(node, (ast.Import, ast.ImportFrom)) or (
        product_imports.import_call_module(node) is not None
    )


# Calls whose string arguments describe a command rather than run it: unittest.mock's assertions
# compare them with the calls a mock recorded (a test that patched subprocess), and subprocess's
# errors hold the command they report (TimeoutExpired(cmd, timeout), CalledProcessError(rc, cmd)).
_RECORDED_CALL = frozenset(
    {"assert_called_with", "assert_called_once_with", "assert_any_call", "assert_has_calls"}
    | {"TimeoutExpired", "CalledProcessError"}
)


def _is_32(node: ast.AST) -> bool:
    """32 written down (also as the string "32", a value passed on as a -D flag)."""
    return (
        isinstance(node, ast.Constant) and node.value in (32, "32") and type(node.value) is not bool
    )


def _requirement_groups(node: ast.AST) -> Iterator[tuple[str | None, list[ast.Constant]]]:
    """(extra name or None, string constants) of a list/tuple or a dict of lists in setup(...)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        yield None, _requirement_constants(node.elts)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(value, (ast.List, ast.Tuple)):
                name = key.value if isinstance(key, ast.Constant) else None
                # An extra whose name is computed is still opt-in.
                yield (str(name) if name is not None else "?"), _requirement_constants(value.elts)
            elif isinstance(value, ast.Constant) and isinstance(value.value, str):
                # setuptools takes one requirement string per extra too (optimum's setup.py)
                name = key.value if isinstance(key, ast.Constant) else None
                yield (str(name) if name is not None else "?"), [value]


def _spliced_names(node: ast.expr) -> set[str]:
    """Names a requirement list splices in: `[..., *extra]`, `base + extra`."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return {
            e.value.id
            for e in node.elts
            if isinstance(e, ast.Starred) and isinstance(e.value, ast.Name)
        }
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (
            {side.id for side in (node.left, node.right) if isinstance(side, ast.Name)}
            | _spliced_names(node.left)
            | _spliced_names(node.right)
        )
    return set()


def _appended_requirements(tree: ast.Module, names: set[str]) -> list[ast.Constant]:
    """The string constants a module puts into the named lists, at module level or inside its
    top-level `if`s: `X = [...]`, `X += [...]`, `X.append("pkg")`, `X.extend([...])`."""
    found: list[ast.Constant] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, ast.If):
            pending[:0] = [*statement.body, *statement.orelse]
            continue
        node = statement.value if isinstance(statement, ast.Expr) else statement
        target: str | None
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            target, values = node.targets[0].id, [node.value]
        else:  # `X += [...]`, X.append / extend / insert
            target, values = container_gpus.list_additions(node)
        if target not in names:
            continue
        for value in values:
            found += _requirement_constants(
                value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            )
    return found


_BUILT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?)\s*(?:[=<>!~]=?|\Z)")


def _requirement_constants(values: list[ast.expr]) -> list[ast.Constant]:
    """The string requirements of a list, and of one built from a literal and a value
    (`"keopscore==" + version`, `f"pkg=={version}"`) the package name its literal part holds
    (the version is unknown: judged as the bare name)."""
    found: list[ast.Constant] = []
    for value in values:
        first: ast.expr | None = value
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            first = value.left
        elif isinstance(value, ast.JoinedStr) and value.values:
            first = value.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if first is value:
                found.append(first)
                continue
            match = _BUILT_NAME.match(first.value)
            if match:
                found.append(
                    ast.Constant(
                        value=match.group(1), lineno=value.lineno, col_offset=value.col_offset
                    )
                )
    return found


def _source_line(text: str, shown: str, counted: int, node: ast.Constant) -> int:
    """The source line of `shown`, one line of a multi-line string constant: `counted` (the
    constant's first line plus the newlines before the match) unless that source line does not
    hold it. A constant part of an f-string carries the whole f-string's first line on Python
    3.11 (its own position is not recorded), so the lines counted from there fall short by the
    lines of the parts before it; then the first line from the node's that holds `shown` is it."""
    lines = text.splitlines()
    if not shown or (0 < counted <= len(lines) and shown in lines[counted - 1]):
        return counted
    last = min(getattr(node, "end_lineno", None) or len(lines), len(lines))
    return next((n for n in range(node.lineno, last + 1) if shown in lines[n - 1]), counted)


def _line_at(value: str, match: re.Match[str]) -> str:
    """The line of a (multi-line) string that holds `match`."""
    start = value.rfind("\n", 0, match.start()) + 1
    end = value.find("\n", match.end())
    return value[start : end if end >= 0 else len(value)]


def _string_constants(values: list[ast.expr]) -> list[ast.Constant]:
    return [v for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]

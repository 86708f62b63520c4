"""What port knows about a project before it reads a line: its own packages, and the vendor
structure it already has (ROCm and NVIDIA variants of the same file, NVIDIA-only folders).

A finding in the NVIDIA variant of a file that has a ROCm counterpart (docker/Dockerfile beside
docker/Dockerfile.rocm, requirements/cuda.txt beside requirements/rocm.txt) is the project's
NVIDIA path, not a porting hazard: it is kept at info with "has a ROCm counterpart: X".
"""

from __future__ import annotations

import ast
import bisect
import functools
import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from rocmkit.port import pieces
from rocmkit.port.declared import DeclaredVersions
from rocmkit.port.setup_static import root_packages
from rocmkit.port.text_scan import read_head
from rocmkit.port.unbuilt_sources import source_verdicts
from rocmkit.port.vendor_loading import CudaLoading

# Name tokens (split on - _ . and path separators) that mark a vendor variant of a file.
# With the two vendors' graph inference engines: NVIDIA's TensorRT (`trt`, its plan files' usual
# extension) and AMD's MIGraphX (`mxr`, the extension of the programs it compiles; AMD's MIGraphX
# docs, and ONNX Runtime's MIGraphX execution provider, the AMD counterpart of its TensorRT one):
# predict_trt.py beside predict_mxr.py, an extra `tensorrt` beside an extra `migraphx`.
ROCM_TOKENS = frozenset(
    {"rocm", "hip", "amd", "mi300", "mi300x", "mi250", "mi200", "mi355", "migraphx", "mxr"}
)
NVIDIA_TOKENS = frozenset({"cuda", "nvidia", "cu", "gpu", "nv", "tensorrt", "trt"})
# Folder names that hold only NVIDIA-specific code by definition of the product they name: NVIDIA
# architectures, TensorRT, and NVIDIA's kernel DSLs (CUTLASS and its CuTe DSL, cuTile), which
# compile for NVIDIA GPUs only (docs.nvidia.com/cutlass pythonDSL overview; NVIDIA cuda-tile).
# A leading underscore (a private backend package, _cutedsl/) does not change what it names.
NVIDIA_ONLY_DIRS = frozenset(
    {"nvidia", "hopper", "blackwell", "sm90", "sm100", "tensorrt", "trtllm"}
)
# ... also as one word of a folder's name (runtime/triton_trtllm/, tensorrt_llm/, hopper-kernels/):
# the product or architecture still names what the folder is for. The vendor's name alone
# (ops_nvidia/) does not: with no ROCm variant beside it, it may be the only path there is.
NVIDIA_PRODUCT_TOKENS = NVIDIA_ONLY_DIRS - {"nvidia"}
# A folder named for one of NVIDIA's kernel DSLs is an implementation written in it; it is the
# NVIDIA path of a run-time choice only when nothing outside it imports it at module level (a
# backend registry, importlib, or a lazy import in a function picks it); imported at module
# level it is what every user gets, so its findings stand.
NVIDIA_DSL_DIRS = frozenset({"cutlass", "cute", "cutedsl", "cute_dsl", "cutile", "cuda_tile"})
# File-name tokens that name NVIDIA-only hardware (Dockerfile-cloud-blackwell-uv, gemm_sm90.py):
# the file is built for those GPUs by its own name.
NVIDIA_HARDWARE_TOKENS = frozenset(
    {"hopper", "blackwell", "sm90", "sm90a", "sm100", "sm100a", "h100", "h200", "b200", "gb200"}
)
# Tokens that name another accelerator (Ascend NPU, Intel XPU/Gaudi HPU, TPU, Apple MPS, AWS
# Neuron, Moore Threads MUSA, Cambricon MLU): requirements/npu.txt or platforms/tpu.py are for
# that accelerator; a ROCm user does not install or run them.
OTHER_ACCELERATOR_TOKENS = frozenset(
    {"npu", "xpu", "hpu", "tpu", "mps", "neuron", "gaudi", "ascend", "musa", "mlu", "habana"}
)
# Also the "2" of a converter's name between two words (onnx2trt.py beside onnx2mxr.py: ONNX to
# TensorRT, ONNX to MIGraphX).
_TOKEN = re.compile(r"[-_.]+|(?<=[a-z])2(?=[a-z])")
_SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp")
# A whole source file, read without the scan's size limit (read_head stops at the file's size).
_WHOLE_FILE = 1 << 30
# cu128, cuda118; also a CUDA major series as CuPy names its wheels (cupy-cuda11x, cupy-cuda12x)
_CU_TAG = re.compile(r"^cu\d+x?$|^cuda\d+x?$")


@dataclass(frozen=True, kw_only=True)
class ProjectContext:
    """Facts about the scanned tree that change what a finding means."""

    own_packages: frozenset[str] = frozenset()
    counterparts: dict[str, str] = field(default_factory=dict)  # rel path -> ROCm variant
    cuda_only_sources: dict[str, str] = field(default_factory=dict)  # rel path -> where decided
    dispatched_dirs: frozenset[str] = frozenset()  # NVIDIA DSL folders reached only at run time
    # Modules imported only under `if torch.version.cuda:` (asked lazily, per file with findings)
    cuda_loading: CudaLoading | None = field(default=None, compare=False)
    # The project's own requirement on a package whose ROCm support starts at a release (asked
    # lazily, when a Python file imports one)
    declared: DeclaredVersions | None = field(default=None, compare=False)
    unbuilt_sources: str = ""  # why the tree's CUDA sources are never compiled ('' : they may be)
    # .cu files a run-time build never reads (unbuilt_sources.source_verdicts): rel -> why
    unloaded_sources: dict[str, str] = field(default_factory=dict)
    outer: tuple[str, ...] = ()  # the folder of a file scanned alone
    root: str = ""  # the scanned folder (or file)

    def builds_cuda_extension(self, rel: str) -> bool:
        """Whether the setup.py beside `rel` (a pyproject.toml) makes a CUDAExtension."""
        base = self.root if os.path.isdir(self.root) else os.path.dirname(self.root)
        return _makes_cuda_extension(os.path.join(base, os.path.dirname(rel), "setup.py"))

    def note_for(self, rel: str) -> str:
        """Why every finding of this file is info, or '' when it is not."""
        counterpart = self.counterparts.get(rel)
        if counterpart:
            return f"has a ROCm counterpart: {counterpart}"
        built = self.cuda_only_sources.get(rel)
        if built:
            return f"built only for CUDA ({built}: the ROCm build leaves it out)"
        if self.unbuilt_sources and rel.endswith(_SOURCE_SUFFIXES):
            return self.unbuilt_sources
        if rel in self.unloaded_sources:
            return self.unloaded_sources[rel]
        # One file scanned alone (port hopper/setup.py): its folder still says what it is for.
        parts = [*self.outer, *rel.split("/")]
        fixture = _test_fixture_dir(parts)
        if fixture and not rel.endswith(".py"):
            return f"test data of the project's tests ({fixture}/): not what it installs or runs"
        for i, part in enumerate(parts[:-1]):
            if part.lower() in NVIDIA_ONLY_DIRS or any(
                t in NVIDIA_PRODUCT_TOKENS for t in _tokens(part)
            ):
                return f"NVIDIA-only part of the project ({part}/)"
            if "/".join(parts[: i + 1]) in self.dispatched_dirs:
                return (
                    f"NVIDIA-only backend ({part}/, written in an NVIDIA kernel DSL) that the"
                    " project picks at run time: nothing outside it imports it at module level"
                )
        for part in parts:
            tokens = _tokens(part)
            if any(t in ROCM_TOKENS for t in tokens):
                return f"ROCm-specific by its name ({part})"
            other = next((t for t in tokens if t in OTHER_ACCELERATOR_TOKENS), "")
            if other == "mps" and self._names_nvidia_mps(rel):
                other = ""  # NVIDIA's Multi-Process Service, not Apple's Metal backend
            if other:
                return f"for another accelerator by its name ({part}: {other})"
        hardware = next((t for t in _tokens(parts[-1]) if t in NVIDIA_HARDWARE_TOKENS), "")
        if hardware:
            return f"built for NVIDIA {hardware} GPUs by its name ({parts[-1]})"
        return self.cuda_loading.note_for(rel) if self.cuda_loading is not None else ""

    def _names_nvidia_mps(self, rel: str) -> bool:
        """Whether the file drives NVIDIA's MPS (its daemon or CUDA_MPS_* settings): "mps" in
        such a name is the Multi-Process Service, a part of NVIDIA's driver, not Apple's MPS."""
        base = self.root if os.path.isdir(self.root) else os.path.dirname(self.root)
        return bool(_NVIDIA_MPS.search(read_head(os.path.join(base, rel), _WHOLE_FILE)))


# NVIDIA MPS by its documented names: the control daemon/server and the CUDA_MPS_* variables.
_NVIDIA_MPS = re.compile(rb"nvidia-cuda-mps-(?:control|server)|\bCUDA_MPS_[A-Z_]+")


# Folders of inputs to a project's own tests (pytest's and the wider convention's fixture and
# test-data folders) below a tests folder, or named as test data themselves.
_TEST_DIRS = frozenset({"test", "tests", "testing"})
_FIXTURE_DIRS = frozenset({"fixtures", "fixture", "testdata", "test_data"})


def _test_fixture_dir(parts: list[str]) -> str:
    """The fixture folder a path lies in ('' when none): `tests/**/fixtures/`, `testdata/`."""
    folders = [p.lower() for p in parts[:-1]]
    for i, folder in enumerate(folders):
        if folder in ("testdata", "test_data") or (
            folder in _FIXTURE_DIRS and any(f in _TEST_DIRS for f in folders[:i])
        ):
            return parts[i]
    return ""


def build_context(root: str, files: Iterable[tuple[str, str, str]]) -> ProjectContext:
    """The context of a scan over `files` ((path, rel, kind) from iter_files) under `root`."""
    files = list(files)
    own: set[str] = set()
    counterparts: dict[str, str] = {}
    for path, rel, kind in files:
        if kind == "python":
            top = rel.split("/")
            if len(top) > 1 and top[0] == "src":
                top = top[1:]
            if len(top) > 1:
                # One stat per package, not per module: a known package needs no look.
                if top[0] not in own and os.path.exists(
                    os.path.join(os.path.dirname(path), "__init__.py")
                ):
                    own.add(top[0])
            elif top[0] != "setup.py":
                own.add(top[0][:-3])  # a top-level module
        # A Python module is a vendor variant only if its own name says so (ops_cuda.py beside
        # ops_rocm.py); configuration files also pair a plain name with a ROCm one.
        if kind == "python" and not any(t in NVIDIA_TOKENS for t in _tokens(os.path.basename(rel))):
            continue
        counterpart = rocm_counterpart(path)
        if counterpart:
            rel_dir = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
            counterparts[rel] = rel_dir + counterpart
    folder_variants = _FolderVariants(root)
    for _, rel, _ in files:
        if rel not in counterparts:
            variant = folder_variants.of(rel)
            if variant:
                counterparts[rel] = variant
    own |= enclosing_packages(root)
    if os.path.isdir(root):
        own |= root_packages(root)  # package-dir mapping a package onto the project folder
    cuda_only: dict[str, str] = {}
    has_sources = any(kind in ("cuda", "header") for _, _, kind in files)
    for path, rel, kind in files:
        if has_sources and kind == "python" and os.path.basename(rel) == "setup.py":
            prefix = rel[: -len("setup.py")]
            for source, line in cuda_only_sources(path).items():
                cuda_only[prefix + source] = f"{rel}:{line}"
    # Round fourteen (a): CUDA sources nothing compiles (unbuilt_sources.py)
    # and (session eleven) the sources a run-time build never reads
    unbuilt, unloaded = (
        source_verdicts(root, files) if has_sources and os.path.isdir(root) else ("", {})
    )
    context = ProjectContext(
        own_packages=frozenset(own),
        counterparts=counterparts,
        cuda_only_sources=cuda_only,
        unbuilt_sources=unbuilt,
        unloaded_sources=unloaded,
        dispatched_dirs=dispatched_dsl_dirs(files),
        cuda_loading=CudaLoading(files),
        outer=(os.path.basename(os.path.dirname(os.path.abspath(root))),)
        if os.path.isfile(root)
        else (),
        root=root,
    )
    return replace(context, declared=DeclaredVersions(files, context.note_for, root))


# CUDAExtension used anywhere but the line that imports it: called, or bound to a name first
# (`Extension = CUDAExtension if WITH_CUDA else CppExtension`, then `Extension(...)`).
_CUDA_EXTENSION_USE = re.compile(r"(?m)^(?![ \t]*(?:from|import)\b).*\bCUDAExtension\b")


@functools.lru_cache(maxsize=256)
def _makes_cuda_extension(setup_py: str) -> bool:
    text = read_head(setup_py, 1 << 20).decode("utf-8", "replace")
    return "CUDAExtension" in text and bool(_CUDA_EXTENSION_USE.search(text))


# A module-level import: at column 0, or one indent deep under a top-level try/if/with.
_IMPORT_LINE = re.compile(
    r"(?m)^([ \t]*)(?:from[ \t]+(\.*[\w.]*)[ \t]+import|import[ \t]+([\w., \t]+))"
)
_TOP_BLOCK = re.compile(r"(?:try|if|elif|else|except|with)\b")


def dispatched_dsl_dirs(files: Iterable[tuple[str, str, str]]) -> frozenset[str]:
    """Folders (relative paths) named for an NVIDIA kernel DSL (NVIDIA_DSL_DIRS) that no Python
    file outside them imports at module level: a registry, importlib or a lazy import picks them."""
    files = list(files)
    dsl_dirs: dict[str, str] = {}  # rel folder -> dotted module prefix
    for _, rel, kind in files:
        if kind != "python":
            continue
        parts = rel.split("/")[:-1]
        for i, part in enumerate(parts):
            if part.lower().lstrip("_") in NVIDIA_DSL_DIRS:
                dotted = parts[1 : i + 1] if parts[0] == "src" else parts[: i + 1]
                dsl_dirs.setdefault("/".join(parts[: i + 1]), ".".join(dotted))
                break
    if not dsl_dirs:
        return frozenset()
    reached: set[str] = set()
    names = tuple({p.rsplit(".", 1)[-1] for p in dsl_dirs.values()})
    for path, rel, kind in files:
        if kind != "python":
            continue
        text = read_head(path, _WHOLE_FILE).decode("utf-8", "replace")
        if not any(n in text for n in names):
            continue
        for module in _module_level_imports(text, rel):
            for folder, prefix in dsl_dirs.items():
                if not rel.startswith(folder + "/") and (
                    module == prefix or module.startswith(prefix + ".")
                ):
                    reached.add(folder)
    return frozenset(dsl_dirs) - reached


def _module_level_imports(text: str, rel: str) -> Iterator[str]:
    """Dotted modules a file imports at module level (relative imports resolved against `rel`)."""
    package = rel.split("/")[:-1]
    if package and package[0] == "src":
        package = package[1:]
    lines = text.splitlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for match in _IMPORT_LINE.finditer(text):
        if match.group(1):
            # Indented: counts only one level under a top-level try/if/with (not in a def).
            number = bisect.bisect_right(offsets, match.start()) - 1
            opener = next(
                (
                    lines[k]
                    for k in range(number - 1, -1, -1)
                    if lines[k][:1] not in ("", " ", "\t", "#")
                ),
                "",
            )
            if not _TOP_BLOCK.match(opener):
                continue
        source = match.group(2)
        if source is not None:
            dots = len(source) - len(source.lstrip("."))
            if dots:
                base = package[: len(package) - dots + 1] if dots <= len(package) else []
                rest = source[dots:]
                source = ".".join([*base, rest] if rest else base)
            yield source
        else:
            for name in match.group(3).split(","):
                name = name.strip().split(" ")[0]
                if name:
                    yield name


_ROCM_NAME = re.compile(r"(?i)(?:^|_)(?:is_?)?(?:hip|rocm)(?:_|$)")
_SOURCE = re.compile(r"\.(?:cu|cuh|cpp|cc)$")


def cuda_only_sources(setup_py: str) -> dict[str, str | int]:
    """Extension sources a setup.py compiles only on the CUDA side of its ROCm switch
    (`if not ROCM_VERSION: CUDAExtension(..., ["marlin.cu"])`), with the line of the switch. Here
    an environment variable counts: it is what the build itself branches on."""
    try:
        text = read_head(setup_py, _WHOLE_FILE).decode("utf-8")
        if ".cu" not in text or not any(t in text for t in ("ROCM", "rocm", "HIP", "hip")):
            return {}
        tree = pieces.parse(text)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}
    cuda_side: dict[str, int] = {}
    rocm_side: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        polarity = _rocm_polarity(node.test)
        if polarity is None:
            continue
        cuda_body, rocm_body = (
            (node.body, node.orelse) if polarity < 0 else (node.orelse, node.body)
        )
        for source in _sources(cuda_body):
            cuda_side.setdefault(source, node.lineno)
        rocm_side.update(_sources(rocm_body))
    return {s: line for s, line in cuda_side.items() if s not in rocm_side}


def _rocm_polarity(test: ast.AST) -> int | None:
    """+1 when the test is true on ROCm (`if IS_ROCM`), -1 when false (`if not ROCM_VERSION`)."""
    parts: list[ast.AST] = (
        list(test.values)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
        else [test]
    )
    for part in parts:
        negated = isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not)
        operand = part.operand if negated else part  # type: ignore[attr-defined]
        names = [
            n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(operand)
            if isinstance(n, (ast.Name, ast.Attribute))
        ]
        if any(_ROCM_NAME.search(name) for name in names):
            return -1 if negated else 1
    return None


def _sources(statements: list[ast.stmt]) -> set[str]:
    found = set()
    for statement in statements:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SOURCE.search(node.value)
            ):
                found.add(node.value.lstrip("./"))
    return found


def enclosing_packages(root: str) -> set[str]:
    """Packages a scanned folder or file sits inside (scanning xformers/ops/ alone still knows it
    is xformers): the top-most folder above it that holds an __init__.py."""
    directory = os.path.abspath(root if os.path.isdir(root) else os.path.dirname(root))
    top = ""
    while os.path.exists(os.path.join(directory, "__init__.py")):
        top = os.path.basename(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return {top} if top else set()


def name_vendor(name: str) -> str:
    """'rocm' or 'nvidia' when a name (an extra, an index, a folder) says which vendor it is for
    by one of its tokens (cuda, cu128, nvidia / rocm, hip, amd); '' when neither or both."""
    tokens = _tokens(name)
    rocm = any(t in ROCM_TOKENS or t.startswith("rocm") for t in tokens)
    # "gpu" alone marks the default (CUDA) variant; beside a ROCm word it names no vendor
    # (`gpu-rocm`, `rocm_gpu`: the ROCm variant)
    nvidia = any(
        (t in NVIDIA_TOKENS and (t != "gpu" or not rocm)) or _CU_TAG.match(t) for t in tokens
    )
    return "rocm" if rocm and not nvidia else "nvidia" if nvidia and not rocm else ""


def _tokens(name: str) -> list[str]:
    return [t for t in _TOKEN.split(name.lower()) if t]


def _strip(tokens: list[str], vendor: frozenset[str]) -> tuple[str, ...]:
    return tuple(t for t in tokens if t not in vendor and not _CU_TAG.match(t))


@functools.lru_cache(maxsize=4096)
def _listdir(directory: str) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(directory)))
    except OSError:
        return ()


# "gpu" names no vendor: on the NVIDIA side it marks the default (CUDA) variant, so it is one of
# NVIDIA_TOKENS; on the ROCm side it is taken out as well, so that amd_gpu.py pairs with
# nvidia_gpu.py as requirements-rocm.txt pairs with requirements-gpu.txt.
_ROCM_SIDE = ROCM_TOKENS | {"gpu"}


@functools.lru_cache(maxsize=4096)
def _rocm_siblings(directory: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """The entries of a folder whose names hold a ROCm token, each with its extension and its
    tokens less the ROCm ones: the only siblings that can be a ROCm variant. Most folders have
    none, so a file's look for its counterpart costs one cached listing, not a pass over them."""
    found = []
    for sibling in _listdir(directory):
        tokens = _tokens(sibling)
        if any(t in ROCM_TOKENS for t in tokens):
            found.append((sibling, os.path.splitext(sibling)[1], _strip(tokens, _ROCM_SIDE)))
    return tuple(found)


def rocm_counterpart(path: str) -> str:
    """The sibling that is this file's ROCm variant ('' if none): same name once the vendor
    tokens are taken out, the sibling's name holding a ROCm token and this one's none."""
    directory, name = os.path.split(path)
    tokens = _tokens(name)
    if any(t in ROCM_TOKENS for t in tokens):
        return ""
    # A folder variant: .../cuda/x.txt beside .../rocm/x.txt
    mine = _strip(tokens, NVIDIA_TOKENS)
    extension = os.path.splitext(name)[1]
    for sibling, their_extension, theirs in _rocm_siblings(directory or "."):
        # Same extension, except Dockerfile / Dockerfile.rocm, whose "extension" is the variant.
        same_kind = their_extension == extension or "ockerfile" in name
        if same_kind and theirs == mine:
            return sibling
    parent, folder = os.path.split(directory)
    if folder.lower() in NVIDIA_TOKENS:
        for sibling in _listdir(parent or "."):
            if sibling.lower() in ROCM_TOKENS and os.path.exists(
                os.path.join(parent, sibling, name)
            ):
                return f"../{sibling}/{name}"
    return _variant_folder(parent, folder)


class _FolderVariants:
    """The ROCm variant of a file's enclosing folder at any depth: every file under
    `extensions/cuda/` (also `extensions/cuda/marlin/x.cu`) has a counterpart when
    `extensions/hip/` sits beside `extensions/cuda/`. The folder pair is the project's vendor
    structure; which files each side holds is the project's choice (a kernel with no HIP port is
    a feature the ROCm side lacks, not code a ROCm build compiles). One answer per folder."""

    def __init__(self, root: str) -> None:
        self.root = root if os.path.isdir(root) else os.path.dirname(root)
        self.cache: dict[str, str] = {}

    def of(self, rel: str) -> str:
        """'<ancestor>/../<sibling>/' for the nearest NVIDIA folder with a ROCm sibling, or ''."""
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        return self._folder(folder) if folder else ""

    def _folder(self, folder: str) -> str:
        if folder not in self.cache:
            parent, _, name = folder.rpartition("/")
            sibling = _variant_folder(os.path.join(self.root, parent), name)
            if sibling:
                self.cache[folder] = posixpath.normpath(f"{folder}/{sibling}") + "/"
            else:
                self.cache[folder] = self._folder(parent) if parent else ""
        return self.cache[folder]


def _variant_folder(parent: str, folder: str) -> str:
    """'../<sibling>/' when `folder` is the NVIDIA variant of a sibling folder (docker-cuda beside
    docker-rocm, nvidia_configs beside amd_configs): same name once the vendor tokens are out."""
    tokens = _tokens(folder)
    if not any(t in NVIDIA_TOKENS for t in tokens) or any(t in ROCM_TOKENS for t in tokens):
        return ""
    mine = _strip(tokens, NVIDIA_TOKENS)
    for sibling, _, theirs in _rocm_siblings(parent or "."):
        if theirs == mine and os.path.isdir(os.path.join(parent, sibling)):
            return f"../{sibling}/"
    return ""

"""Issue 26, thirteenth round (b): mechanisms read from the emitters' own definitions (NVIDIA's
CUDA library files, nvcc's flags in non-Python build scripts, install lines of the README,
capability tests through version parsing), each with a case where it applies and one where it
must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- NVIDIA libraries loaded through ctypes when a module is imported ------------------------------

_SOLVER = """import ctypes
from ctypes.util import find_library

libcublas = ctypes.CDLL("libcublas.so.12")
name = find_library("cusolver")
try:
    libcufft = ctypes.cdll.LoadLibrary("libcufft.so.11")
except OSError:
    libcufft = None


def eigh(a):
    return libcublas, name, libcufft, a
"""

_WITH_ROCM = """import ctypes
import torch

if torch.version.hip:
    blas = ctypes.CDLL("libhipblas.so")
else:
    blas = ctypes.CDLL("libcublas.so.12")
"""

_IN_FUNCTION = """import ctypes


def version():
    lib = ctypes.CDLL("libcublas.so")
    return lib
"""


def test_an_nvidia_math_library_loaded_at_import_is_an_error(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/solver.py": _SOLVER})
    finding = next(f for f in report.findings if f.rule_id == "nvidia-library-load")
    assert finding.severity == "error"
    assert set(finding.lines) == {4, 5}
    assert "hipBLAS" in finding.evidence
    assert ("pkg/solver.py", 7, "nvidia-library-load", "warn") in _shown(report)


def test_a_load_behind_a_fallback_is_a_warning(tmp_path: Path) -> None:
    only_fallback = "import ctypes\ntry:\n    fft = ctypes.CDLL('libcufft.so')\nexcept OSError:\n    fft = None\n"
    report = _scan(tmp_path, {"pkg/fft.py": only_fallback})
    assert ("pkg/fft.py", 3, "nvidia-library-load", "warn") in _shown(report)


def test_a_module_that_also_loads_the_rocm_library_or_loads_in_a_function_is_not_warned(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"pkg/blas.py": _WITH_ROCM, "pkg/info.py": _IN_FUNCTION})
    assert not {s for s in _shown(report) if s[2] == "nvidia-library-load" and s[3] != "info"}
    assert not {s for s in _shown(report) if s[3] in ("warn", "error")}


# -- Rust build scripts: the cc crate's cuda(true) compiles with nvcc -------------------------------

_BUILD_RS = """fn main() {
    let nvcc = which::which("nvcc").expect("Cannot find nvcc");
    let mut build = cc::Build::new();
    build.cuda(true).flag("-std=c++14");
    for sm in ["70", "80"] {
        build.flag("-gencode").flag(format!("arch=compute_{},code=sm_{}", sm, sm).as_str());
    }
    build.file("kernels/ops.cu").compile("libops.a");
}
"""

_BUILD_RS_WITH_HIP = """fn main() {
    let mut build = cc::Build::new();
    if std::env::var("ROCM_PATH").is_ok() {
        build.compiler("hipcc").flag("--offload-arch=gfx942");
    } else {
        build.cuda(true).flag("-gencode").flag("arch=compute_80,code=sm_80");
    }
    build.file("kernels/ops.cu").compile("libops.a");
}
"""


def test_a_build_rs_that_compiles_cuda_with_nvcc_is_an_error_and_its_gencode_flags_warn(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"rust/core/build.rs": _BUILD_RS})
    shown = _shown(report)
    assert ("rust/core/build.rs", 2, "cuda-extension", "error") in shown
    assert ("rust/core/build.rs", 6, "nvcc-only-flags", "warn") in shown


def test_a_build_rs_with_a_hip_path_or_no_cuda_is_not_reported(tmp_path: Path) -> None:
    plain = 'fn main() {\n    cc::Build::new().file("src/fast.c").compile("fast");\n}\n'
    report = _scan(tmp_path, {"a/build.rs": _BUILD_RS_WITH_HIP, "b/build.rs": plain})
    assert _shown(report) == set()


# -- The project's README: install commands that fetch PyTorch's CUDA build -------------------------

_README = """# voice

For Windows:
```bash
pip install torch==2.1.1+cu118 --index-url https://download.pytorch.org/whl/cu118
```

For Linux:
```bash
pip install voice
pip install torch==2.1.1+cu118 torchaudio==2.1.1+cu118 \\
    --index-url https://download.pytorch.org/whl/cu118
```

The old release asked for `pip install torch==1.13.1+cu117` in prose: not a command line.
"""


def test_a_readme_whose_only_install_is_cuda_torch_is_warned(
    tmp_path: Path,
) -> None:
    # Session thirty: the README's only install gives an AMD user a torch without GPU support:
    # warn (info from session fourteen to twenty-nine), never the error of the same line in a
    # requirements file or script.
    report = _scan(tmp_path, {"README.md": _README, "voice/__init__.py": "import torch\n"})
    found = {
        (f.rule_id, line, f.severity)
        for f in report.findings
        if f.path == "README.md"
        for line in f.lines
    }
    assert {("cuda-local-version", 11, "warn"), ("torch-cuda-index", 12, "warn")} <= found
    assert not {line for _, line, _ in found if line == 15}  # prose is no command
    evidence = " ".join(f.evidence for f in report.findings if f.path == "README.md")
    assert "add the ROCm command" in evidence


def test_a_readme_with_a_rocm_install_or_below_the_top_is_not_warned(tmp_path: Path) -> None:
    rocm = (
        _README
        + "\nOn AMD GPUs:\n```bash\npip install torch --index-url https://download.pytorch.org/whl/rocm6.4\n```\n"
    )
    report = _scan(tmp_path, {"README.md": rocm, "docs/README.md": _README})
    assert _shown(report) == set()
    assert any(f.path == "README.md" and f.severity == "info" for f in report.findings)


# -- Capabilities compared as version numbers -------------------------------------------------------

_ATTEND = """import torch
from packaging import version
from torch.nn.attention import SDPBackend


def backends():
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    device_version = version.parse(f"{props.major}.{props.minor}")
    if device_version > version.parse("8.0"):
        return [SDPBackend.FLASH_ATTENTION]
    return [SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION]
"""

_BF16 = """import torch


def dtype():
    major, minor = torch.cuda.get_device_capability()
    if float(f"{major}.{minor}") >= 8.0:
        return torch.bfloat16
    return torch.float16
"""

_TORCH_VERSION = """import torch
from packaging import version


def compiled():
    if version.parse(f"{torch.__version__}") >= version.parse("2.0"):
        return torch.compile
    return None
"""


def test_a_capability_parsed_as_a_version_that_forces_flash_sdpa_is_a_warning(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"attend.py": _ATTEND})
    finding = next(f for f in report.findings if f.line == 9)
    assert (finding.rule_id, finding.severity) == ("device-capability", "warn")
    assert "gfx1100" in finding.evidence and "gfx942" not in finding.evidence
    assert not any("never compared" in f.evidence for f in report.findings)


def test_a_generic_capability_version_branch_or_a_torch_version_is_not_warned(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"bf16.py": _BF16, "compile.py": _TORCH_VERSION})
    assert _shown(report) == set()
    info = [f for f in report.findings if f.path == "bf16.py" and f.line == 6]
    assert info and info[0].severity == "info"
    assert not any(f.path == "compile.py" for f in report.findings)


def test_only_a_major_dot_minor_text_is_read_as_a_capability_version(tmp_path: Path) -> None:
    # "8" "0" joined without the dot is not a version: the comparison is not a capability's, and
    # the scanner's text pre-check ("}.{") may skip the module without parsing it
    joined = _ATTEND.replace('f"{props.major}.{props.minor}"', 'f"{props.major}{props.minor}"')
    report = _scan(tmp_path, {"attend.py": joined})
    assert not any("a capability as a version" in f.evidence for f in report.findings)
    spaced = _ATTEND.replace('f"{props.major}.{props.minor}"', 'f"{props.major:d}.{props.minor:d}"')
    report = _scan(tmp_path / "spec", {"attend.py": spaced})
    assert any(
        f.line == 9 and f.severity == "warn" and "a capability as a version" in f.evidence
        for f in report.findings
    )

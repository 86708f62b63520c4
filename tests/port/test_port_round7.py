"""Issue 26, seventh round: mechanisms read from the emitters' own definitions (C++'s conversion
rules for HIP's 64-bit lane masks, torch.utils.cpp_extension's CUDA_HOME, nvcc's option table,
NVML's bindings, ONNX Runtime's and TensorRT's install docs), each with a case where it applies
and one where it must not, on small synthetic trees (shapes written for these tests, not copied
from the corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port.warp_mask import narrow_masks

# -- a warp mask's type is evaluated, whatever its spelling -------------------------------------


@pytest.mark.parametrize(
    ("mask", "narrow"),
    [
        ("uint32_t(-1)", True),  # a functional cast: the type named
        ("std::uint32_t{0xffffffff}", True),
        ("(unsigned)-1", True),
        ("static_cast<unsigned int>(-1)", True),
        ("-1", True),  # int
        ("HALF | 1u", True),  # the common type of two 32-bit operands
        ("uint64_t(-1)", False),
        ("static_cast<unsigned long long>(-1)", False),
        ("(unsigned long long)-1", False),
        ("-1ll", False),
        ("WIDE | 1u", False),  # converted to the 64-bit operand's type
        ("lane_mask_t(-1)", False),  # an unknown type: undecided, left alone
        ("HALF | __activemask()", False),  # a call: undecided
    ],
)
def test_a_mask_expression_is_typed_by_cpp_conversion_rules(mask: str, narrow: bool) -> None:
    text = (
        "#include <cstdint>\nconstexpr unsigned HALF = 0xffffu;\nconstexpr uint64_t WIDE = ~0ull;\n"
        f"__device__ int f(int v) {{\n  return __any_sync({mask}, v);\n}}\n"
    )
    assert bool(narrow_masks(text)) is narrow


_MACRO_KERNEL = """#include <cstdint>
const unsigned int kLanes = 0xffffffff;
const uint64_t kWideLanes = 0xffffffffffffffffull;

#define SHFL_STEP(MASK, V, D) \\
  V += __shfl_xor_sync(MASK, V, D)

#define REDUCE(MASK, V)                    \\
  for (int d = 16; d > 0; d >>= 1) {       \\
    SHFL_STEP(MASK, V, d);                 \\
  }

__device__ float narrow_sum(float v) {
  REDUCE(kLanes, v);
  return v;
}
"""


def test_a_mask_passed_through_macro_parameters_is_typed_at_the_macro_uses(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"ops/reduce.cuh": _MACRO_KERNEL})
    assert _shown(report) == {
        ("ops/reduce.cuh", 6, "cuda-warp-mask-32", "error"),  # the call, in the macro
        ("ops/reduce.cuh", 2, "cuda-warp-mask-32", "error"),  # the declaration: the fix
    }


def test_a_macro_whose_uses_pass_64_bit_or_unknown_masks_is_not_reported() -> None:
    wide = _MACRO_KERNEL.replace("REDUCE(kLanes, v)", "REDUCE(kWideLanes, v)")
    assert narrow_masks(wide) == []
    mixed = wide.replace("  return v;\n}\n", "  REDUCE(mask_of(v), v);\n  return v;\n}\n", 1)
    assert narrow_masks(mixed) == []


# -- a setup.py's build condition, evaluated as a ROCm build runs it ----------------------------

_GATED_SETUP = """import os
import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension


def extensions():
    extension = CppExtension
    args = {{"cxx": ["-O2"]}}
    forced = os.getenv("FORCE_GPU", "{default}") == "1"
    if (torch.cuda.is_available() and CUDA_HOME is not None) or forced:
        extension = CUDAExtension
        nvcc = ["-O2"]
        host = os.environ.get("CC")
        if host is not None:
            nvcc.append("{flag}".format(host))
        args["nvcc"] = nvcc
    return [extension("pkg._C", ["pkg/ext.cpp"], extra_compile_args=args)]


setup(name="pkg", ext_modules=extensions(), cmdclass={{"build_ext": BuildExtension}})
"""


def test_a_gpu_build_decided_by_cuda_home_in_a_boolean_expression_is_an_error(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"setup.py": _GATED_SETUP.format(default="0", flag="-ccbin={}")})
    assert _shown(report) == {
        ("setup.py", 11, "cuda-extension", "error"),
        ("setup.py", 16, "nvcc-only-flags", "warn"),  # "-ccbin={}".format(host): the template
    }
    gate = next(f for f in report.findings if f.rule_id == "cuda-extension" and f.line == 11)
    assert "unless FORCE_GPU is set" in gate.evidence


def test_a_build_condition_true_on_rocm_and_clang_flags_are_not_reported(tmp_path: Path) -> None:
    # FORCE_GPU defaults to "1": the GPU extension is built; -std=c++{} is clang's own flag.
    report = _scan(tmp_path, {"setup.py": _GATED_SETUP.format(default="1", flag="-std=c++{}")})
    assert _shown(report) == set()


@pytest.mark.parametrize(
    ("gate", "reported"),
    [
        # Reassigned at module level under an env test whose default is off: still off on ROCm.
        (
            "WITH_GPU = CUDA_HOME is not None\nif os.getenv('FORCE_GPU', '0') == '1':\n"
            "    WITH_GPU = True\n",
            True,
        ),
        # ... under a test a ROCm build cannot decide: unknown, left alone.
        (
            "WITH_GPU = CUDA_HOME is not None\nif sys.argv[-1] == 'gpu':\n    WITH_GPU = True\n",
            False,
        ),
        # The project's HIP path.
        ("WITH_GPU = CUDA_HOME is not None or torch.version.hip is not None\n", False),
    ],
)
def test_a_build_flag_name_follows_the_module_flow(
    tmp_path: Path, gate: str, reported: bool
) -> None:
    text = (
        "import os\nimport sys\nimport torch\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import CUDA_HOME, CUDAExtension\n"
        + gate
        + "ext = []\nif WITH_GPU:\n    ext.append(CUDAExtension('p._C', ['p/k.cu']))\n"
        "setup(name='p', ext_modules=ext)\n"
    )
    report = _scan(tmp_path, {"setup.py": text})
    assert (
        any(f.rule_id == "cuda-extension" and f.severity == "error" for f in report.findings)
        is reported
    )


# -- GPU queries reported where they run ----------------------------------------------------------

_SMI = """import shutil
import subprocess
import sys


def gpu_names():
    if sys.platform == "win32":
        smi = shutil.which("nvidia-smi") or "C:/NVSMI/nvidia-smi.exe"
    else:
        smi = "nvidia-smi"
    return subprocess.check_output([smi, "--query-gpu=name", "--format=csv"]).decode()
"""


def test_nvidia_smi_named_in_a_variable_is_reported_where_the_process_starts(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"gpus.py": _SMI})
    # the launch, and (session twenty-one) the lines that name the tool: places of one finding
    assert _shown(report) == {
        ("gpus.py", 8, "nvidia-smi", "warn"),
        ("gpus.py", 10, "nvidia-smi", "warn"),
        ("gpus.py", 11, "nvidia-smi", "warn"),
    }


def test_nvidia_smi_named_but_never_started_stays_where_it_is_named(tmp_path: Path) -> None:
    text = _SMI.replace("subprocess.check_output([smi, ", "print([smi, ").replace(
        "]).decode()", "])"
    )
    report = _scan(tmp_path, {"gpus.py": text})
    assert _shown(report) == {
        ("gpus.py", 8, "nvidia-smi", "warn"),
        ("gpus.py", 10, "nvidia-smi", "warn"),
    }


def test_an_nvml_wrapper_without_nvmlinit_leaves_the_finding_to_the_init(tmp_path: Path) -> None:
    wrapper = "import pynvml\n\n\ndef memory(handle):\n    return pynvml.nvmlDeviceGetMemoryInfo(handle)\n"
    user = (
        "from tool import nvml\n\n\ndef query():\n    nvml.pynvml.nvmlInit()\n"
        "    return nvml.memory(0)\n"
    )
    report = _scan(tmp_path, {"tool/nvml.py": wrapper, "tool/cli.py": user, "tool/__init__.py": ""})
    assert _shown(report) == {("tool/cli.py", 5, "nvml", "warn")}
    assert any(f.path == "tool/nvml.py" and f.severity == "info" for f in report.findings)


def test_a_module_that_initialises_nvml_is_reported_at_the_init(tmp_path: Path) -> None:
    text = (
        "import pynvml\n\n\ndef count():\n    pynvml.nvmlInit()\n"
        "    return pynvml.nvmlDeviceGetCount()\n"
    )
    report = _scan(tmp_path, {"count.py": text})
    # round nine: the import too, where the module's only GPU API is bound; session twelve: the
    # query is a place of the same finding
    assert _shown(report) == {
        ("count.py", 5, "nvml", "warn"),
        ("count.py", 1, "nvml", "warn"),
        ("count.py", 6, "nvml", "warn"),
    }


def test_a_star_import_of_pynvml_is_reported_at_its_init_only(tmp_path: Path) -> None:
    text = (
        "from pynvml import *\n\n\ndef count():\n    nvmlInit()\n    return nvmlDeviceGetCount()\n"
    )
    report = _scan(tmp_path, {"count.py": text})
    assert _shown(report) == {
        ("count.py", 5, "nvml", "warn"),
        ("count.py", 1, "nvml", "warn"),
        ("count.py", 6, "nvml", "warn"),  # session twelve: the query joins the init's finding
    }
    no_init = text.replace("    nvmlInit()\n", "")
    report = _scan(tmp_path, {"count.py": no_init})
    assert _shown(report) == {("count.py", 1, "nvml", "warn")}  # round six: stays at the import


def test_a_mock_stub_of_nvmlinit_is_not_an_nvml_call(tmp_path: Path) -> None:
    text = (
        "import pynvml as N\nfrom mockito import when\n\n\ndef setup_mock():\n"
        "    when(N).nvmlInit().thenReturn()\n"
    )
    report = _scan(tmp_path, {"test_tool.py": text})
    assert not any(line == 6 for _, line, _, _ in _shown(report))
    real = text.replace("when(N).nvmlInit().thenReturn()", "N.nvmlInit()")
    report = _scan(tmp_path, {"test_tool.py": real})
    assert ("test_tool.py", 6, "nvml", "warn") in _shown(report)


@pytest.mark.parametrize(
    ("requires", "severity"),
    [
        ('["nvidia-ml-py>=12", "psutil"]', "warn"),  # the project's only GPU telemetry
        ('["nvidia-ml-py>=12", "torch>=2.4"]', "warn"),  # a helper beside a framework
        ('["nvidia-ml-py>=12", "amdsmi"]', "info"),  # the project has AMD's bindings too
    ],
)
def test_an_nvml_binding_the_project_calls_is_warned_where_it_is_required(
    tmp_path: Path, requires: str, severity: str
) -> None:
    # Session nine made every NVML requirement info (it installs and imports on ROCm; nvmlInit()
    # is where it fails); session thirty warns it where the project's own code calls NVML: the
    # requirement is its NVIDIA-only telemetry, the place amdsmi goes beside it.
    setup = f"from setuptools import setup\n\nsetup(name='mon', install_requires={requires})\n"
    code = "import pynvml\n\n\ndef count():\n    pynvml.nvmlInit()\n"
    report = _scan(tmp_path, {"setup.py": setup, "mon/query.py": code})
    assert {f.severity for f in report.findings if f.path == "setup.py"} == {severity}
    assert ("mon/query.py", 5, "nvml", "warn") in _shown(report)
    uncalled = _scan(tmp_path / "uncalled", {"setup.py": setup, "mon/query.py": "import os\n"})
    assert {f.severity for f in uncalled.findings if f.path == "setup.py"} == {"info"}


# -- TensorRT: a feature path that needs it vs an optional probe ------------------------------------

_TRT = """import subprocess


def export_engine(onnx_path):
    try:
        import tensorrt as trt
    except ImportError:
        subprocess.run(["pip", "install", "nvidia-tensorrt"])
        import tensorrt as trt
    return trt.Builder(trt.Logger())


def tensorrt_version():
    try:
        import tensorrt
    except ImportError:
        return None
    return tensorrt.__version__
"""


def test_tensorrt_needed_by_a_function_is_a_warning_and_a_probe_is_information(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"export.py": _TRT})
    assert _shown(report) == {
        ("export.py", 6, "tensorrt", "warn"),  # no fallback: the export needs it
        ("export.py", 8, "tensorrt", "warn"),  # pip-installed at run time (by exact name)
        ("export.py", 9, "tensorrt", "warn"),
    }
    assert any(f.line == 15 and f.severity == "info" for f in report.findings)


# -- requirement strings handed to an installer at run time -----------------------------------------

_INSTALLS = """import os
import subprocess
import sys

import torch


def check_requirements(requirements):
    ...


def run_onnx(path):
    cuda = torch.cuda.is_available() and path.endswith(".onnx")
    check_requirements(("onnx", "onnxruntime-gpu" if cuda else "onnxruntime"))


def run_rocm(path):
    check_requirements("onnxruntime-gpu" if torch.version.cuda else "onnxruntime-rocm")


def install_tools():
    subprocess.check_call([sys.executable, "-m", "pip", "install", "onnxruntime-gpu>=1.17"])
    os.system("pip install -U pycuda cupy-cuda12x")
    check_requirements(("nvidia-modelopt", "opencv-python>=4.5"))
    check_requirements(["onnx", ("onnxruntime", "onnxruntime-gpu")])  # alternatives: left alone
    if torch.version.cuda:
        check_requirements("onnxruntime-gpu")  # the CUDA side of a vendor switch
    is_onnxruntime_installed("onnxruntime-gpu")  # a check, not an installer
"""


def test_requirement_strings_handed_to_an_installer_are_judged_like_requirement_files(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"tools.py": _INSTALLS})
    assert _shown(report) == {
        ("tools.py", 14, "onnxruntime-gpu", "warn"),  # the branch a ROCm torch takes
        ("tools.py", 22, "onnxruntime-gpu", "warn"),  # an argv list running pip
        ("tools.py", 23, "pycuda", "warn"),  # a command string (error, inside a function)
    }
    # Not: the CUDA branch of torch.version.cuda (line 18, 27), a package no rule names exactly
    # (nvidia-modelopt, cupy-cuda12x: only matched by a pattern), packages with no rule.


def test_nvcc_flags_behind_a_gate_only_nvcc_opens_are_left_to_the_gate(tmp_path: Path) -> None:
    text = (
        "import subprocess\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import CUDAExtension\n\n\n"
        "def has_nvcc():\n    try:\n        subprocess.call(['nvcc'])\n        return True\n"
        "    except FileNotFoundError:\n        return False\n\n\n"
        "ext = []\nif has_nvcc():\n"
        "    ext.append(CUDAExtension('p._C', ['p/k.cu'], extra_compile_args=['-arch=compute_70']))\n"
        "setup(name='p', ext_modules=ext)\n"
    )
    report = _scan(tmp_path, {"setup.py": text})
    assert _shown(report) == {("setup.py", 15, "cuda-extension", "warn")}  # the gate
    flags = [f for f in report.findings if f.rule_id == "nvcc-only-flags"]
    assert [(f.line, f.severity) for f in flags] == [(16, "info")]
    assert "the gate at line 15" in flags[0].evidence


@pytest.mark.parametrize(("before", "reported"), [("", True), ("gpu_sources = []\n", False)])
def test_a_name_bound_only_under_an_evaluated_cuda_home_test_is_a_name_error(
    tmp_path: Path, before: str, reported: bool
) -> None:
    text = (
        "import torch\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import CUDA_HOME, CppExtension\n"
        + before
        + "WITH_GPU = torch.cuda.is_available() and CUDA_HOME is not None\n"
        "if WITH_GPU:\n    gpu_sources = ['p/k.cu']\n"
        "setup(name='p', ext_modules=[CppExtension('p._C', ['p/k.cpp'] + gpu_sources)])\n"
    )
    report = _scan(tmp_path, {"setup.py": text})
    errors = {(f.line, f.rule_id) for f in report.findings if f.severity == "error"}
    line = 7 + bool(before)  # the read in setup(...)
    assert ((line, "cuda-extension") in errors) is reported


@pytest.mark.parametrize(("tool", "reported"), [("nvcc", True), ("ninja", False)])
def test_a_jit_build_behind_which_nvcc_is_never_built_on_rocm(
    tmp_path: Path, tool: str, reported: bool
) -> None:
    text = (
        "import shutil\nfrom torch.utils.cpp_extension import load\n\n"
        f"if shutil.which({tool!r}):\n    ops = load(name='ops', sources=['ops.cu'])\n"
    )
    report = _scan(tmp_path, {"ops.py": text})
    assert (("ops.py", 4, "cuda-extension", "warn") in _shown(report)) is reported


@pytest.mark.parametrize(
    ("condition", "never"),
    [
        ("os.getenv('FORCE_GPU', '0').lower() in ('1', 'true')", True),
        ("os.getenv('FORCE_GPU', 'TRUE').lower() in ('1', 'true')", False),
        ("bool(int(os.environ.get('FORCE_GPU', '0')))", True),
        ("cuda.is_available() and CUDA_HOME is not None", True),
        ("cuda.is_available() and sys.argv[-1] == 'gpu'", False),  # CUDA_HOME does not decide
    ],
)
def test_the_build_evaluator_reads_common_spellings(condition: str, never: bool) -> None:
    import ast

    from rocmkit.port.cuda_build import RocmBuild

    if "CUDA_HOME" not in condition:
        condition = f"({condition}) or CUDA_HOME is not None" if "FORCE" in condition else condition
    tree = ast.parse(f"import os\nfrom torch import cuda\nif {condition}:\n    pass\n")
    test = tree.body[-1].test  # type: ignore[attr-defined]
    assert (RocmBuild(tree).never_taken(test, True) is not None) is never

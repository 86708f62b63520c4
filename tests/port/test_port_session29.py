"""Issue 26, session twenty-nine: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import severities as _found

from rocmkit.port import cuda_extras
from rocmkit.port.rules import load_rules

REPO = Path(__file__).resolve().parents[2]

# -- a workspace member inheriting a CUDA-only crate (TOML's dotted keys)


def test_a_member_inheriting_cudarc_from_its_workspace_is_a_cuda_crate(tmp_path: Path) -> None:
    workspace = (
        '[workspace]\nmembers = ["crates/core"]\n\n[workspace.dependencies]\n'
        'cudarc = { version = "0.19", features = ["driver", "nvrtc"] }\n'
    )
    member = (
        '[package]\nname = "core"\nversion = "0.1.0"\n\n[dependencies]\n'
        "cudarc.workspace = true\nthiserror.workspace = true\n"
    )
    report = _scan(tmp_path, {"Cargo.toml": workspace, "crates/core/Cargo.toml": member})
    # the workspace's table only declares the version; the member is where it is built
    assert _found(report, "cargo-cuda-crate") == {("crates/core/Cargo.toml", 6): "error"}


def test_a_dotted_key_of_another_crate_is_not_a_cuda_crate(tmp_path: Path) -> None:
    member = (
        '[package]\nname = "core"\nversion = "0.1.0"\n\n[dependencies]\n'
        'serde.version = "1"\n# cuda kernels are built elsewhere\n'
    )
    report = _scan(tmp_path, {"Cargo.toml": member})
    assert _found(report, "cargo-cuda-crate") == {}


# -- an image named in a regular expression is a pattern, not an image that runs


def test_vllms_cuda_image_in_a_regular_expression_is_info(tmp_path: Path) -> None:
    discovery = (
        "import re\n"
        "VLLM_IMAGES = [\n"
        '    re.compile(r"^vllm/vllm-openai:.*$", re.IGNORECASE),\n'
        "]\n"
        "def is_vllm(image):\n"
        '    return re.match(r"vllm/vllm-openai:v\\d+", image) is not None\n'
    )
    launcher = 'IMAGE = "vllm/vllm-openai:v0.9.0"\n'
    report = _scan(tmp_path, {"pkg/discovery.py": discovery, "pkg/launch.py": launcher})
    assert _found(report, "cuda-image") == {
        ("pkg/discovery.py", 3): "info",
        ("pkg/discovery.py", 6): "info",
        ("pkg/launch.py", 1): "error",
    }


# -- Numba's CUDA kernels beside CuPy (which has ROCm builds) or cuDF (which has none)


_KERNEL = (
    "from numba import cuda\n"
    "@cuda.jit\n"
    "def scale(x, k):\n"
    "    i = cuda.grid(1)\n"
    "    if i < x.size:\n"
    "        x[i] *= k\n"
)


def test_numba_cuda_kernels_beside_cupy_are_an_error(tmp_path: Path) -> None:
    # cupy-rocm gives CuPy arrays on an AMD machine; Numba's CUDA target still cannot run there
    report = _scan(tmp_path, {"pkg/gpu.py": "import cupy as cp\n" + _KERNEL})
    assert _found(report, "numba-cuda") == {("pkg/gpu.py", 2): "error"}


def test_numba_cuda_kernels_beside_cudf_stay_info(tmp_path: Path) -> None:
    # cuDF (RAPIDS) has no ROCm build: its own rule is the finding, the kernels never get data
    report = _scan(tmp_path, {"pkg/gpu.py": "import cudf\n" + _KERNEL})
    assert _found(report, "numba-cuda") == {("pkg/gpu.py", 2): "info"}


# -- extras that pull a CUDA-only package, by the packages' own PyPI metadata


def _first_row(pulled_rule: str) -> tuple[str, str, str]:
    """(package, extra, pulls) of the shipped table's first row whose finding is the given rule's
    (the table is generated from PyPI; the test reads what it holds)."""
    for (name, extra), row in sorted(cuda_extras.table().items()):
        if row.rule == pulled_rule:
            return name, extra, row.pulls
    raise AssertionError(
        f"the shipped cuda_extras.toml has no extra that pulls a {pulled_rule} package"
    )


def test_an_extra_that_pulls_onnxruntime_gpu_gets_onnxruntime_gpus_finding(tmp_path: Path) -> None:
    name, extra, pulls = _first_row("onnxruntime-gpu")
    pyproject = f'[project]\nname = "app"\nversion = "1.0"\ndependencies = [\n    "{name}[{extra}]>=0.1",\n]\n'
    report = _scan(tmp_path, {"pyproject.toml": pyproject, "requirements.txt": f"{name}\n"})
    assert _found(report, "onnxruntime-gpu") == {("pyproject.toml", 5): "warn"}
    (finding,) = [f for f in report.findings if f.rule_id == "onnxruntime-gpu"]
    assert f"[{extra}] pulls {pulls}" in finding.evidence


def test_the_projects_own_extra_and_a_plain_requirement_are_not_flagged(tmp_path: Path) -> None:
    name, extra, _ = _first_row("onnxruntime-gpu")
    # the package's own pyproject asking for its own extra: pip resolves it to the project
    own = (
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
        f'[project.optional-dependencies]\nall = ["{name}[{extra}]"]\n'
    )
    report = _scan(tmp_path, {"pyproject.toml": own})
    assert _found(report, "onnxruntime-gpu") == {}
    report = _scan(tmp_path / "plain", {"requirements.txt": f"{name}>=0.1\n"})
    assert _found(report, "onnxruntime-gpu") == {}


def test_the_generator_reads_only_what_an_extra_alone_pulls() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import port_cuda_extras

    meta = {
        "info": {
            "name": "Sep-Audio",
            "version": "0.5.0",
            "requires_dist": [
                "numpy>=1.23",
                'onnxruntime>=1.17; extra == "cpu"',
                'onnxruntime-gpu>=1.17; extra == "gpu"',
                'cupy-cuda12x>=13; extra == "cuda12" and sys_platform == "linux"',
                'cupy-cuda12x>=13; extra == "mac" and sys_platform == "darwin"',
                'pynvml>=11; extra == "monitor"',
                'sep-audio[gpu]; extra == "all"',
            ],
        }
    }
    rows = port_cuda_extras.extras_of(meta, load_rules())
    got = {(r["name"], r["extra"]): r["pulls"] for r in rows}
    # the CPU build, a darwin-only line, NVML's bindings (judged where called) and the package's
    # own other extra are left out
    assert got == {
        ("sep-audio", "gpu"): "onnxruntime-gpu>=1.17",
        ("sep-audio", "cuda12"): "cupy-cuda12x>=13",
    }


def test_an_extra_that_pulls_the_project_itself_is_not_flagged(tmp_path: Path) -> None:
    # vLLM's setup.py asks for smg-grpc-servicer[vllm]: the extra pulls vLLM, the project being
    # installed, which pip satisfies with it
    row = cuda_extras.table().get(("smg-grpc-servicer", "vllm"))
    if row is None:
        pytest.skip("the shipped table has no smg-grpc-servicer[vllm] row")
    setup = (
        "from setuptools import setup\n"
        "setup(name='vllm', version='0.1',\n"
        "      extras_require={'grpc': ['smg-grpc-servicer[vllm] >= 0.5.2']})\n"
    )
    report = _scan(tmp_path, {"setup.py": setup})
    assert _found(report, row.rule) == {}
    other = setup.replace("name='vllm'", "name='router'")
    report = _scan(tmp_path / "other", {"setup.py": other})
    # (at warn: an optional extra of the project, which port reports a level lower)
    assert _found(report, row.rule) == {("setup.py", 3): "warn"}


def test_an_extra_that_pulls_a_cuda_build_is_judged_as_that_build_also_in_a_gpu_extra(
    tmp_path: Path,
) -> None:
    name, extra, _ = _first_row("onnxruntime-gpu")
    pyproject = (
        '[project]\nname = "asr"\nversion = "1"\n'
        'dependencies = ["numpy"]\n\n'
        f'[project.optional-dependencies]\nonnx-gpu = ["{name}[{extra}]"]\n'
    )
    required = f'[project]\nname = "app"\nversion = "1"\ndependencies = ["{name}[{extra}]"]\n'
    report = _scan(tmp_path, {"pyproject.toml": pyproject, "app/pyproject.toml": required})
    # as `onnxruntime-gpu` itself is, in the dependencies and in an extra named for the GPU (an
    # AMD user who picks that extra gets the CUDA build: the extra needs a ROCm side)
    assert _found(report, "onnxruntime-gpu") == {
        ("app/pyproject.toml", 4): "warn",
        ("pyproject.toml", 7): "warn",
    }


# -- torch.version.cuda made text (str(None) is "None") is shown, not used as a version


def test_torch_version_cuda_made_text_is_not_used_as_a_value(tmp_path: Path) -> None:
    report_py = (
        "import torch\n"
        "rows = [('torch build CUDA', str(torch.version.cuda))]\n"
        "major = torch.version.cuda.split('.')[0]\n"
    )
    report = _scan(tmp_path, {"pkg/env.py": report_py})
    assert _found(report, "torch-version-cuda") == {("pkg/env.py", 3): "warn"}


# -- a CUDA header HIP lacks: the finding holds the lines that use what it declares


def test_the_uses_of_a_header_hip_lacks_are_places_of_its_finding(tmp_path: Path) -> None:
    kernel = (
        "#include <cooperative_groups.h>\n"
        "#include <cooperative_groups/reduce.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(float* out, const float* in) {\n"
        "  auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  float v = cg::reduce(tile, in[threadIdx.x], cg::plus<float>());\n"
        "  // cg::reduce(tile, v, cg::greater<float>()) in an older version\n"
        "  out[blockIdx.x] = v + myreduce(v);\n"
        "}\n"
    )
    report = _scan(tmp_path, {"csrc/k.cu": kernel})
    (finding,) = [f for f in report.findings if f.rule_id == "cuda-header-no-hip"]
    # the include and the call of cg::reduce; not the comment, not another function's name
    assert finding.path == "csrc/k.cu" and finding.lines == (2, 6)
    assert finding.severity == "error"


def test_at_cuda_is_not_libcuxx_and_a_header_hip_has_adds_no_places(tmp_path: Path) -> None:
    kernel = (
        "#include <cuda/std/array>\n"
        "#include <ATen/cuda/CUDAContext.h>\n"
        "void f() {\n"
        "  auto s = at::cuda::getCurrentCUDAStream();\n"
        "  cuda::std::array<int, 2> a{};\n"
        "}\n"
    )
    report = _scan(
        tmp_path, {"csrc/f.cu": kernel, "csrc/g.cu": "#include <cuda_fp16.h>\n__half h;\n"}
    )
    found = {(f.path, f.lines) for f in report.findings if f.rule_id == "cuda-header-no-hip"}
    assert found == {("csrc/f.cu", (1, 5))}


def test_torch_version_cuda_made_text_and_then_tested_is_still_a_version_test(
    tmp_path: Path,
) -> None:
    code = (
        "import torch\n"
        "def pick():\n"
        '    if str(torch.version.cuda).startswith("12"):\n'
        '        return "cu12"\n'
        '    return {"cuda": str(torch.version.cuda)}\n'
    )
    found = _found(_scan(tmp_path, {"pick.py": code}), "torch-version-cuda")
    # the text tested is a version test (as session twenty-six's test has it); the text kept in
    # a record is not
    assert found == {("pick.py", 3): "warn"}

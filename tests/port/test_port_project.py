"""Project-aware scanning (issue 26): vendor structure, own packages, grouping, severities,
suppressions and the misses of the first version. One test per kind of false positive or miss."""

from __future__ import annotations

import json
from pathlib import Path

from rocmkit.port import PortConfig, scan_project


def _write(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def _scan(root: Path, files: dict[str, str], **config: object):  # type: ignore[no-untyped-def]
    _write(root, files)
    return scan_project(PortConfig(path=root, **config))  # type: ignore[arg-type]


def _rows(report) -> list[tuple[str, int, str, str]]:  # type: ignore[no-untyped-def]
    return [(f.path, f.line, f.rule_id, f.severity) for f in report.findings]


# -- false positives of the first version ----------------------------------------------------


def test_nvidia_dockerfile_beside_a_rocm_one_is_info_with_its_counterpart(tmp_path: Path) -> None:
    files = {
        "docker/Dockerfile": "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n",
        "docker/Dockerfile.rocm": "FROM rocm/pytorch:latest\n",
        "other/Dockerfile": "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n",
    }
    report = _scan(tmp_path, files, show_info=True)
    assert _rows(report) == [
        ("docker/Dockerfile", 1, "cuda-base-image", "info"),
        ("other/Dockerfile", 1, "cuda-base-image", "error"),
    ]
    assert report.findings[0].note == "has a ROCm counterpart: docker/Dockerfile.rocm"


def test_cuda_requirements_beside_rocm_requirements_are_info(tmp_path: Path) -> None:
    files = {
        "requirements/cuda.txt": "torch==2.5.1\nnvidia-cudnn-frontend\n",
        "requirements/rocm.txt": "--extra-index-url https://download.pytorch.org/whl/rocm6.2\n",
    }
    report = _scan(tmp_path, files)
    assert report.findings == ()
    assert report.num_below_floor == 2


def test_a_package_importing_itself_is_not_a_finding(tmp_path: Path) -> None:
    files = {
        "xformers/__init__.py": "",
        "xformers/ops/__init__.py": "from xformers.ops import fmha\nimport xformers\n",
        "tools/bench.py": "import xformers\n",
    }
    report = _scan(tmp_path, files)
    assert _rows(report) == []  # tools/ is part of the project that *is* xformers


def test_scanning_a_subfolder_still_knows_the_enclosing_package(tmp_path: Path) -> None:
    _write(tmp_path, {"apex/__init__.py": "", "apex/ops/__init__.py": "import apex.amp\n"})
    assert scan_project(PortConfig(path=tmp_path / "apex" / "ops")).findings == ()


def test_a_rocm_specific_module_and_nvidia_only_folders_are_info(tmp_path: Path) -> None:
    files = {
        "pkg/platforms/rocm.py": "import pynvml\n",
        "hopper/setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
        "flags = ['-gencode', 'arch=compute_90a,code=sm_90a']\n",
        "tests/nvidia/test_smi.py": "import subprocess\nsubprocess.run(['nvidia-smi', '-L'])\n",
    }
    report = _scan(tmp_path, files, show_info=True)
    assert {f.severity for f in report.findings} == {"info"}
    assert len(report.findings) == 3


def test_repeats_are_one_finding_per_rule_and_file_with_every_line(tmp_path: Path) -> None:
    script = "nvidia-smi -L\necho\nnvidia-smi topo -m\nnvidia-smi -q\n"
    report = _scan(tmp_path, {"run.sh": script})
    [finding] = report.findings
    assert (finding.line, finding.lines, finding.count) == (1, (1, 3, 4), 3)
    [row] = report.summary()
    assert (row["rule_id"], row["files"], row["places"]) == ("nvidia-smi", 1, 3)


def test_info_is_hidden_by_default_and_never_fails(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"a.sh": "export NCCL_DEBUG=INFO\n"})
    assert (report.findings, report.num_below_floor, report.exit_code("info")) == ((), 1, 0)
    shown = scan_project(PortConfig(path=tmp_path, show_info=True))
    assert [f.severity for f in shown.findings] == ["info"] and shown.exit_code("info") == 0


# -- misses of the first version --------------------------------------------------------------


def test_a_wheel_url_followed_by_an_environment_marker_is_read(tmp_path: Path) -> None:
    url = "https://download.pytorch.org/whl/cu121/torch-2.3.0%2Bcu121-cp311-cp311-linux_x86_64.whl"
    report = _scan(tmp_path, {"requirements.txt": f"{url} ; platform_system == 'Linux'\n"})
    assert "cuda-local-version" in {f.rule_id for f in report.findings}


def test_dockerfile_variants_by_name_are_scanned(tmp_path: Path) -> None:
    image = "FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n"
    names = ["Dockerfile_train", "Dockerfile-serve", "gpu.Dockerfile", "base.dockerfile"]
    report = _scan(tmp_path, dict.fromkeys(names, image))
    assert sorted(f.path for f in report.findings) == sorted(names)


def test_pip_install_in_a_dockerfile_is_checked_against_the_package_rules(tmp_path: Path) -> None:
    dockerfile = "FROM rocm/pytorch:latest\nRUN pip install -U pip && pip install \\\n"
    dockerfile += "    -r requirements.txt bitsandbytes==0.41.1 cupy-cuda12x\n"
    report = _scan(tmp_path, {"Dockerfile": dockerfile})
    assert _rows(report) == [
        ("Dockerfile", 3, "bitsandbytes-old", "error"),
        ("Dockerfile", 3, "cupy-cuda", "error"),
    ]


def test_an_exact_torch_pin_is_the_cuda_build_unless_an_index_decides(tmp_path: Path) -> None:
    files = {
        "a/requirements.txt": "torch==2.5.1\n",
        "b/requirements.txt": "--index-url https://download.pytorch.org/whl/rocm6.2\ntorch==2.5.1\n",
    }
    report = _scan(tmp_path, files)
    assert _rows(report) == [("a/requirements.txt", 1, "torch-pypi-pin", "warn")]


def test_tensorrt_llm_imports_are_found(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"serve.py": "from tensorrt_llm import LLM\n"})
    assert _rows(report) == [("serve.py", 1, "tensorrt", "error")]


def test_cuda_images_in_ci_scripts_are_found(tmp_path: Path) -> None:
    script = "docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvcc --version\n"
    report = _scan(tmp_path, {"ci/build.sh": script})
    assert _rows(report) == [("ci/build.sh", 1, "cuda-image", "error")]


def test_a_cmake_build_with_cuda_and_no_hip_option_is_found(tmp_path: Path) -> None:
    cuda_only = "project(k LANGUAGES CXX)\nenable_language(CUDA)\n"
    with_hip = cuda_only + "if(USE_ROCM)\n  enable_language(HIP)\nendif()\n"
    report = _scan(tmp_path, {"a/CMakeLists.txt": cuda_only, "b/CMakeLists.txt": with_hip})
    assert _rows(report) == [("a/CMakeLists.txt", 2, "cmake-cuda-only", "warn")]


def test_nvidia_smi_in_a_makefile_is_found(tmp_path: Path) -> None:
    makefile = "gpus:\n\tnvidia-smi --query-gpu=name --format=csv\n"
    report = _scan(tmp_path, {"Makefile": makefile, "rules.mk": makefile})
    assert [f.path for f in report.findings] == ["Makefile", "rules.mk"]


# -- suppressions -------------------------------------------------------------------------------


def test_inline_ignore_comments_in_every_format(tmp_path: Path) -> None:
    files = {
        "a.py": "import pynvml  # rocmkit: ignore[nvml]\nimport pycuda  # rocmkit: ignore[nvml]\n",
        "b.sh": "nvidia-smi  # rocmkit: ignore\n",
        "Dockerfile": "# rocmkit: ignore[cuda-base-image]\nFROM nvidia/cuda:12.1.0-base\n",
        "requirements.txt": "cupy-cuda12x  # rocmkit: ignore[cupy-cuda]\n",
        "k.cu": '// rocmkit: ignore[cuda-inline-ptx]\n__device__ void f() { asm("trap;"); }\n',
    }
    report = _scan(tmp_path, files)
    assert _rows(report) == [("a.py", 2, "pycuda", "error")]  # ignoring another rule keeps it
    assert report.num_suppressed == 5


def test_a_baseline_accepts_todays_findings_and_reports_new_ones(tmp_path: Path) -> None:
    project, baseline = tmp_path / "p", tmp_path / "port-baseline.json"
    _write(project, {"run.sh": "nvidia-smi -L\n", "b.py": "import pynvml\n"})
    first = scan_project(PortConfig(path=project, write_baseline=baseline))
    assert len(first.findings) == 2
    assert json.loads(baseline.read_text())["schema"] == "rocmkit.port-baseline"
    again = scan_project(PortConfig(path=project, baseline=baseline, fail_on="warn"))
    assert (again.findings, again.num_suppressed, again.exit_code("warn")) == ((), 2, 0)
    _write(project, {"run.sh": "nvidia-smi -L\nnvidia-smi -q\n", "c.sh": "nvidia-smi\n"})
    later = scan_project(PortConfig(path=project, baseline=baseline))
    assert [(f.path, f.note) for f in later.findings] == [
        ("c.sh", ""),
        ("run.sh", "1 new since the baseline (1 accepted)"),
    ]

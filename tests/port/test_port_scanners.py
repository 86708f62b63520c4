"""Scanner behaviour a user relies on: version-aware requirement checks, ROCm-aware files, setup.py
lists, unreadable files reported instead of crashing, the walker's skips."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmkit.errors import UserError
from rocmkit.port import PortConfig, load_rules, scan_project
from rocmkit.port.python_scan import scan_python
from rocmkit.port.requirements import parse_requirement, scan_requirements_txt


def _scan(tmp_path: Path, files: dict[str, str | bytes], **config) -> object:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return scan_project(PortConfig(path=tmp_path, **{"show_info": True, **config}))


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ("bitsandbytes==0.41.1", "error"),
        ("bitsandbytes<0.45", "error"),
        ("bitsandbytes==0.40.1.post1", "error"),
        ("bitsandbytes>=0.41", "info"),  # admits the ROCm-capable releases
        ("bitsandbytes~=0.48.2", "error"),  # 0.48.*: no ROCm library in those wheels
        ("bitsandbytes==0.48.2", "error"),
        ("bitsandbytes==0.49.1", "warn"),  # a ROCm library, QLoRA 4-bit partial (its README)
        ("bitsandbytes~=0.49.0", "warn"),
        ("bitsandbytes>=0.45,<0.50", "warn"),
        ("bitsandbytes>=0.50", "info"),
        ("bitsandbytes==0.41.1; sys_platform == 'darwin'", "info"),  # not installed on Linux
        ("bitsandbytes==0.41.1; sys_platform == 'linux'", "error"),
        ("bitsandbytes==0.41.1; python_version >= '3.12'", "error"),  # not the scanner's Python
        ("bitsandbytes==0.41.1; extra == 'quant'", "error"),
        ("bitsandbytes==0.41.1; python_version < '3.8'", "info"),  # no ROCm torch there
        ("bitsandbytes", "info"),
    ],
)
def test_bitsandbytes_is_an_error_only_when_the_pin_excludes_rocm_releases(
    line: str, severity: str
) -> None:
    hits = scan_requirements_txt(line + "\n", load_rules())
    assert [(h.rule.id, h.severity) for h in hits] == [("bitsandbytes-old", severity)]


def test_requirement_lines_with_continuations_options_and_markers() -> None:
    text = "-r base.txt\n--hash=sha256:0\nflash-attn==2.6.3 \\\n  --hash=sha256:abc\n"
    text += "xformers ; platform_system == 'Linux'  # attention\n-e git+https://x/y.git#egg=apex\n"
    hits = scan_requirements_txt(text, load_rules())
    assert [(h.line, h.rule.id) for h in hits] == [
        (3, "flash-attn"),
        (5, "xformers-pypi"),
        (6, "apex"),
    ]


def test_wheel_urls_and_vcs_urls_give_their_package_name() -> None:
    url = "https://h/flash_attn-2.6.3+cu123torch2.4-cp311-cp311-linux_x86_64.whl"
    assert parse_requirement(url).name == "flash_attn"
    assert parse_requirement("git+https://github.com/NVIDIA/apex#egg=apex").name == "apex"
    assert parse_requirement("git+https://github.com/huggingface/peft.git") is None
    assert parse_requirement("torch @ https://h/torch-2.4.1%2Bcu121-cp311-none.whl").name == "torch"


def test_without_packaging_names_and_extras_still_match(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmkit.port import requirements

    monkeypatch.setattr(requirements, "Requirement", None)
    text = "Flash_Attn>=2.5\njax[cuda12]==0.4.35\nbitsandbytes==0.41.1\n"
    hits = scan_requirements_txt(text, load_rules())
    # The version analysis needs packaging: without it a pin is never guessed to be old.
    assert [(h.rule.id, h.severity) for h in hits] == [
        ("flash-attn", "info"),
        ("jax-cuda-extra", "warn"),
        ("bitsandbytes-old", "info"),
    ]


def test_code_on_one_side_of_a_vendor_switch_is_info_and_the_rest_of_the_file_is_not() -> None:
    # False positive kind: the CUDA branch of an explicit `if torch.version.hip:` switch.
    text = "import torch\nif torch.version.hip:\n    OLD = False\nelse:\n"
    text += "    OLD = torch.version.cuda < '12'\nNEW = torch.version.cuda.split('.')\n"
    hits, _ = scan_python(text, load_rules())
    assert sorted((h.line, h.severity) for h in hits) == [(5, "info"), (6, "warn")]
    hits.sort(key=lambda h: h.line)
    assert "vendor switch" in hits[0].evidence


def test_after_an_early_exit_on_hip_the_rest_of_the_block_is_gated() -> None:
    text = "import torch\ndef f():\n    if torch.version.hip:\n        raise ValueError('no')\n"
    text += "    return torch.cuda.get_device_capability() == (9, 0)\n"
    [found_hit], _ = scan_python(text, load_rules())
    assert (found_hit.line, found_hit.severity) == (5, "info")


def test_a_rocm_switch_read_from_the_environment_does_not_gate() -> None:
    # ROCM_VERSION = os.environ.get(...) says what the user asked for, not which torch is there.
    text = "import os, torch\nROCM_VERSION = os.environ.get('ROCM_VERSION')\n"
    text += "if not ROCM_VERSION:\n    v = torch.version.cuda.split('.')\n"
    [found_hit], _ = scan_python(text, load_rules())
    assert (found_hit.line, found_hit.severity) == (4, "warn")


def test_torch_version_cuda_as_a_truth_value_is_a_switch_unless_it_exits() -> None:
    text = "import torch\nif torch.version.cuda:\n    x = 1\nok = torch.version.cuda is not None\n"
    text += "if torch.version.cuda is None:\n    raise SystemExit('CUDA only')\n"
    hits, _ = scan_python(text, load_rules())
    assert [(h.line, h.rule.id) for h in hits] == [(5, "torch-version-cuda")]


def test_capability_checks_are_hazards_only_where_an_amd_gfx_number_decides_them() -> None:
    def severities(code: str) -> list[str]:
        hits, _ = scan_python("import torch\n" + code, load_rules())
        return [h.severity for h in hits]

    assert severities("ok = torch.cuda.get_device_capability() < (8, 0)\n") == ["info"]
    assert severities("fp8 = torch.cuda.get_device_capability() >= (8, 9)\n") == ["warn"]
    # A floor that is not the FP8 line: what it turns on decides; info, check what it gates.
    assert severities("use = torch.cuda.get_device_capability()[0] >= 8\n") == ["info"]
    # An equality with Hopper's SM (MI200 reports (9, 0) too) is info unless its branch imports.
    assert severities("h100 = torch.cuda.get_device_capability() == (9, 0)\n") == ["info"]
    # ... that imports a module a rule calls CUDA-only (TensorRT).
    fa3 = "if torch.cuda.get_device_capability() == (9, 0):\n    import tensorrt\n"
    hits, _ = scan_python("import torch\n" + fa3, load_rules())
    assert [(h.rule.id, h.severity) for h in hits if h.line == 2] == [("device-capability", "warn")]
    assert severities("a100 = torch.cuda.get_device_capability() == (8, 0)\n") == ["info"]
    stored = "cap = torch.cuda.get_device_capability()\nif cap[0] < 8:\n    pass\n"
    assert severities(stored) == ["info"]
    assert severities("shown = '.'.join(map(str, torch.cuda.get_device_capability()))\n") == [
        "info"
    ]


def test_a_vendor_switch_with_an_amd_branch_is_info() -> None:
    text = "import subprocess\n\n\ndef smi(vendor):\n"
    text += "    tool = ['amd-smi', 'list'] if vendor == 'amd' else ['nvidia-smi', '-L']\n"
    text += "    return subprocess.run(tool)\n"
    [found_hit], _ = scan_python(text, load_rules())
    assert (found_hit.line, found_hit.rule.id, found_hit.severity) == (5, "nvidia-smi", "info")


def test_code_in_comments_docstrings_and_prose_is_not_reported() -> None:
    text = '"""Calls nvidia-smi -L and reads torch.version.cuda."""\n# torch.version.cuda\n'
    text += 'print("install xformers and run nvidia-smi")\nx = "CUDA_VISIBLE_DEVICES is set"\n'
    hits, parsed = scan_python(text, load_rules())
    assert parsed and hits == []


def test_showing_the_cuda_version_or_capability_is_not_a_finding() -> None:
    text = "import logging, torch\nprint('CUDA', torch.version.cuda)\n"
    text += "logging.info('capability %s', torch.cuda.get_device_capability())\n"
    text += "banner = f'torch {torch.__version__} cuda {torch.version.cuda}'\n"
    text += "ok = float(torch.version.cuda)\n"
    hits, _ = scan_python(text, load_rules())
    assert [(h.line, h.rule.id) for h in hits] == [(5, "torch-version-cuda")]


def test_files_without_a_trigger_are_not_parsed() -> None:
    hits, parsed = scan_python("import torch\nprint(torch.cuda.is_available())\n", load_rules())
    assert (hits, parsed) == ([], False)


def test_setup_py_install_requires_and_extras_are_checked(tmp_path: Path) -> None:
    setup = 'from setuptools import setup\nsetup(\n    install_requires=["torch"],\n'
    setup += '    extras_require={"gpu": [\n        "cupy-cuda12x",\n    ]},\n)\n'
    report = _scan(tmp_path, {"setup.py": setup})
    assert [(f.line, f.rule_id) for f in report.findings] == [(5, "cupy-cuda")]


def test_unreadable_files_are_reported_and_the_rest_still_scanned(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "broken.py": "import pynvml\ndef f(:\n",
            "binary.py": b"\x00\x01import pynvml",
            "latin1.py": "# caf\xe9\nimport pynvml\n".encode("latin-1"),
            "big.py": "import pynvml\n" + "x = 1\n" * 100,
            "ok.py": "import pynvml\n",
        },
        max_bytes=200,
    )
    assert [(f.path, f.rule_id) for f in report.findings] == [("ok.py", "nvml")]
    reasons = {i.path: i.reason for i in report.issues}
    assert "syntax error at line 2" in reasons["broken.py"]
    assert "binary" in reasons["binary.py"]
    assert "not UTF-8" in reasons["latin1.py"]
    assert "larger than 200 bytes" in reasons["big.py"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_a_fifo_named_like_source_is_reported_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "ok.py").write_text("import pynvml\n")
    report = scan_project(PortConfig(path=tmp_path))
    assert [f.path for f in report.findings] == ["ok.py"]
    assert [(i.path, i.reason) for i in report.issues] == [
        ("pipe.py", "not a regular file; skipped")
    ]


def test_virtualenvs_vcs_folders_and_excluded_globs_are_skipped(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            ".venv/lib/site.py": "import pynvml\n",
            "env2/pyvenv.cfg": "home = /usr\n",
            "env2/lib/x.py": "import pynvml\n",
            ".git/hooks/h.sh": "nvidia-smi\n",
            "third_party/vendored.py": "import pynvml\n",
            "src/app.py": "import pynvml\n",
        },
        exclude=("third_party/*",),
    )
    assert [f.path for f in report.findings] == ["src/app.py"]


def test_one_file_can_be_scanned_on_its_own(tmp_path: Path) -> None:
    script = tmp_path / "job.slurm.txt"
    script.write_text("export NCCL_NVLS_ENABLE=0\n")
    report = scan_project(PortConfig(path=script))
    assert [(f.path, f.line, f.rule_id) for f in report.findings] == [
        ("job.slurm.txt", 1, "nccl-nvlink-env")
    ]


def test_min_severity_leaves_out_lower_findings(tmp_path: Path) -> None:
    files = {"a.sh": "export NCCL_DEBUG=INFO\nnvidia-smi\n"}
    report = _scan(tmp_path, files, show_info=False)  # the default: info is not shown
    assert [f.rule_id for f in report.findings] == ["nvidia-smi"]
    assert report.num_below_floor == 1


def test_bad_config_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        PortConfig(path=tmp_path / "missing")
    with pytest.raises(UserError, match="--fail-on"):
        PortConfig(path=tmp_path, fail_on="warning")


def test_cuda_hazards_inside_a_hip_preprocessor_switch_are_info(tmp_path: Path) -> None:
    # False positive kind: code already gated to a vendor, in C++.
    kernel = '#ifndef USE_ROCM\n__device__ void f() { asm volatile("fence;"); }\n#endif\n'
    kernel += '__device__ void g() { asm volatile("bar.sync 0;"); }\n'
    report = _scan(tmp_path, {"k.cu": kernel})
    assert [(f.line, f.severity) for f in report.findings] == [(2, "info"), (4, "error")]


def test_cuda_arch_guard_in_a_header_is_a_warning(tmp_path: Path) -> None:
    # Miss kind: `#if __CUDA_ARCH__ >= 800` compiles to nothing under HIP.
    header = "#pragma once\n#if __CUDA_ARCH__ >= 800\n__device__ int f();\n#endif\n"
    plain = "#pragma once\nint host_only();\n"
    report = _scan(tmp_path, {"common.h": header, "plain.h": plain})
    assert [(f.path, f.line, f.rule_id, f.severity) for f in report.findings] == [
        ("common.h", 2, "cuda-arch-guard", "warn")
    ]


def test_lane_arithmetic_with_32_in_a_file_with_a_hip_path_is_info(tmp_path: Path) -> None:
    # False positive kind: a loop over 32 "threads" that is a tile width, not a warp.
    body = "__global__ void k(float* x) { int col = threadIdx.x % 32; x[col] = 0; }\n"
    report = _scan(tmp_path, {"a.cu": body, "b.cu": "#ifdef USE_ROCM\n#endif\n" + body})
    assert [(f.path, f.severity) for f in report.findings] == [("a.cu", "warn"), ("b.cu", "info")]


def test_requirement_lists_given_to_setup_by_name_are_scanned() -> None:
    text = (
        "from setuptools import setup\n"
        "install_requires = ['torch>=2.7.0,<2.7.1', 'numpy']\n"
        "extra_deps = {}\n"
        "extra_deps['moe'] = ['grouped-gemm==0.3.0']\n"
        "unused = ['grouped-gemm']\n"
        "setup(name='x', install_requires=install_requires, extras_require=extra_deps)\n"
    )
    hits, _ = scan_python(text, load_rules(), is_setup=True)
    # The list setup() never receives (`unused`) is not what pip installs.
    assert sorted((h.line, h.rule.id, h.severity) for h in hits) == [
        (2, "torch-pypi-pin", "warn"),
        (4, "grouped-gemm", "warn"),  # an opt-in extra: at most a warning
    ]
    assert scan_python(text, load_rules(), is_setup=False)[0] == []


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("torch>=2.2.0,<=2.5.1", True),  # excludes every release with ROCm 6.4 wheels
        ("torch<2.8", True),
        ("torch>=2.2,<3", False),
        ("torch>=2.4", False),
        ("torch==2.4.1+rocm6.1", False),  # a local version names its build
    ],
)
def test_a_torch_range_that_excludes_current_rocm_releases_is_a_pin(line: str, found: bool) -> None:
    hits = scan_requirements_txt(line + "\n", load_rules())
    assert any(h.rule.id == "torch-pypi-pin" for h in hits) is found


def test_gpus_is_a_docker_hazard_only_as_an_option_of_docker_run() -> None:
    rules = load_rules()
    argparse_flag = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--gpus')\n"
    assert scan_python(argparse_flag, rules)[0] == []
    argv = "import subprocess\nsubprocess.run(['docker', 'run', '--gpus', 'all', 'img'])\n"
    assert [h.rule.id for h in scan_python(argv, rules)[0]] == ["docker-gpus"]
    wrapped = "import os\nos.system('docker run -it \\\\\\n  --gpus all img')\n"
    assert [h.rule.id for h in scan_python(wrapped, rules)[0]] == ["docker-gpus"]


def test_refusing_to_build_without_cuda_home_is_an_error_only_with_no_rocm_path() -> None:
    # torch.utils.cpp_extension: CUDA_HOME = ... if torch.version.cuda else None.
    refuse = (
        "from torch.utils.cpp_extension import CUDA_HOME\n"
        "def check():\n"
        "    if CUDA_HOME is None:\n"
        "        raise RuntimeError('install CUDA')\n"
    )
    hits, _ = scan_python(refuse, load_rules())
    assert [(h.line, h.rule.id, h.severity) for h in hits] == [(3, "cuda-extension", "error")]
    with_rocm = refuse.replace("import CUDA_HOME", "import CUDA_HOME, ROCM_HOME")
    assert scan_python(with_rocm, load_rules())[0] == []
    chooses = refuse.replace("raise RuntimeError('install CUDA')", "home = '/usr/local/cuda'")
    assert scan_python(chooses, load_rules())[0] == []


def test_a_command_inside_an_error_message_is_advice_not_a_hazard() -> None:
    cuda_index = "pip install torch --index-url https://download.pytorch.org/whl/cu121"
    told = f"def check():\n    raise RuntimeError('torch too old; run `{cuda_index}`')\n"
    hits, _ = scan_python(told, load_rules())
    assert [(h.rule.id, h.severity) for h in hits] == [("torch-cuda-index", "info")]
    run = f"import os\nos.system('{cuda_index}')\n"
    hits, _ = scan_python(run, load_rules())
    assert [(h.rule.id, h.severity) for h in hits] == [("torch-cuda-index", "error")]


def test_a_capability_branch_importing_a_package_with_a_rocm_build_is_not_established() -> None:
    def severities(code: str) -> list[str]:
        hits, _ = scan_python("import torch\n" + code, load_rules())
        return [h.severity for h in hits if h.rule.id == "device-capability"]

    # flash_attn builds for ROCm (its rule is info): what the branch loads exists there too.
    rocm_built = "if torch.cuda.get_device_capability()[0] >= 8:\n    import flash_attn\n"
    assert severities(rocm_built) == ["info"]
    unknown = "if torch.cuda.get_device_capability()[0] >= 8:\n    import fused_kernels\n"
    assert severities(unknown) == ["info"]  # no rule knows it: not established
    # ...unless its name says what it is: Marlin's kernels are CUDA-built (capability_features),
    # which no AMD GPU runs (error since round sixteen (a))
    marlin = "if torch.cuda.get_device_capability()[0] >= 8:\n    import marlin_kernels\n"
    assert severities(marlin) == ["error"]
    chip_only = "if torch.cuda.get_device_capability()[0] >= 8:\n    import pycuda.autoinit\n"
    assert severities(chip_only) == ["warn"]

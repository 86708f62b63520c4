"""Issue 26, session twenty-six: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- a command inside printed or logged text is advice shown to the user, not an install

_INDEX = "https://download.pytorch.org/whl/cu118"


def test_a_cuda_index_in_printed_or_logged_advice_is_info(tmp_path: Path) -> None:
    code = (
        "import logging\n"
        "import sys\n"
        "import warnings\n\n"
        "log = logging.getLogger(__name__)\n\n"
        "def hint():\n"
        f'    print("Install with: pip install torch --index-url {_INDEX}")\n'  # line 8
        f'    log.warning("no GPU; try pip install torch --index-url {_INDEX}")\n'  # line 9
        f'    warnings.warn(f"reinstall torch from {_INDEX} ({{sys.version}})")\n'  # line 10
        f'    print("pip install torch --index-url {_INDEX}", file=sys.stderr)\n'  # line 11
    )
    found = _found(_scan(tmp_path, {"hint.py": code}), "torch-cuda-index")
    assert found == {("hint.py", n): "info" for n in (8, 9, 10, 11)}


def test_a_cuda_index_that_is_run_or_written_into_a_file_is_still_reported(
    tmp_path: Path,
) -> None:
    code = (
        "import subprocess\n\n"
        "def install(out):\n"
        f'    cmd = "pip install torch --index-url {_INDEX}"\n'  # line 4: run below
        "    subprocess.run(cmd, shell=True, check=True)\n"
        "    with open(out, 'w') as f:\n"
        f'        f.write("RUN pip install torch --index-url {_INDEX}\\n")\n'  # line 7
        f'        print("pip install torch --index-url {_INDEX}", file=f)\n'  # line 8
    )
    found = _found(_scan(tmp_path, {"setup_env.py": code}), "torch-cuda-index")
    assert set(found) == {("setup_env.py", 4), ("setup_env.py", 7), ("setup_env.py", 8)}
    assert "info" not in found.values()


# -- a uv index that only a source for another platform uses

_UV = (
    '[project]\nname = "demo"\nversion = "1.0"\ndependencies = ["torch>=2.4"]\n\n'
    "[tool.uv.sources]\n"
    "torch = [\n"
    '    {{ index = "pytorch-cu124", marker = "{marker}" }},\n'
    '    {{ index = "pytorch-cpu", marker = "sys_platform == \'darwin\'" }},\n'
    "]\n\n"
    "[[tool.uv.index]]\n"
    'name = "pytorch-cu124"\n'
    'url = "https://download.pytorch.org/whl/cu124"\n'  # line 14
    "explicit = true\n\n"
    "[[tool.uv.index]]\n"
    'name = "pytorch-cpu"\n'
    'url = "https://download.pytorch.org/whl/cpu"\n'
    "explicit = true\n"
)


def test_a_cuda_index_that_uv_uses_only_on_windows_is_info(tmp_path: Path) -> None:
    text = _UV.format(marker="sys_platform == 'win32'")
    found = _found(_scan(tmp_path, {"pyproject.toml": text}), "torch-cuda-index")
    assert found == {("pyproject.toml", 14): "info"}


def test_a_cuda_index_that_uv_uses_on_linux_is_still_reported(tmp_path: Path) -> None:
    text = _UV.format(marker="sys_platform == 'linux'")
    found = _found(_scan(tmp_path, {"pyproject.toml": text}), "torch-cuda-index")
    assert found[("pyproject.toml", 14)] in ("warn", "error")


def test_a_marker_packaging_cannot_read_does_not_lower_the_index(tmp_path: Path) -> None:
    text = _UV.format(marker="sys_platform is 'win32'")  # not PEP 508: pip's answer unknown
    found = _found(_scan(tmp_path, {"pyproject.toml": text}), "torch-cuda-index")
    assert found[("pyproject.toml", 14)] in ("warn", "error")


# -- str(torch.version.cuda) as the value of a dict entry: a label ("None" on ROCm)


def test_torch_version_cuda_as_text_in_a_dict_is_recorded_not_tested(tmp_path: Path) -> None:
    code = (
        "import torch\n\n"
        "def info():\n"
        '    return {"driver_version": str(torch.version.cuda), "n": 1}\n'  # line 4
        "\n"
        "def pick():\n"
        '    if str(torch.version.cuda).startswith("12"):\n'  # line 7: a test
        '        return "cu12"\n'
    )
    found = _found(_scan(tmp_path, {"caps.py": code}), "torch-version-cuda")
    assert found.get(("caps.py", 4), "info") == "info"
    assert found[("caps.py", 7)] in ("warn", "error")


# -- a conda environment file known by its content, whatever its name

_ENV = (
    "name: demo\n"
    "channels:\n"
    "  - rapidsai\n"
    "  - conda-forge\n"
    "dependencies:\n"
    "  - rapids=26.08\n"  # line 6
    "  - python=3.12\n"
)


def test_a_conda_environment_file_under_any_name_is_read(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"conda/rsc_rapids_26.08_cuda12.yml": _ENV})
    found = _found(report, "rapids-cuda")
    assert found == {("conda/rsc_rapids_26.08_cuda12.yml", 6): "error"}


def test_a_yaml_file_with_dependencies_but_no_channels_is_not_a_conda_file(
    tmp_path: Path,
) -> None:
    chart = "apiVersion: v2\nname: demo\ndependencies:\n  - name: rapids\n    version: 26.08\n"
    assert _found(_scan(tmp_path, {"charts/Chart.yaml": chart}), "rapids-cuda") == {}


# -- torch.version.cuda tested where a CUDAExtension is built

_SETUP = (
    "import torch\n"
    "from setuptools import setup\n"
    "from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension\n\n"
    "WITH_CUDA = torch.version.cuda is not None\n"  # line 5
    "Ext = CUDAExtension if WITH_CUDA else CppExtension\n"
    "setup(name='demo', ext_modules=[Ext('demo._C', ['csrc/a.cpp'])],\n"
    "      cmdclass={'build_ext': BuildExtension})\n"
)


def test_torch_version_cuda_deciding_a_cuda_extension_build_is_reported(tmp_path: Path) -> None:
    found = _found(_scan(tmp_path, {"setup.py": _SETUP}), "torch-version-cuda")
    assert found == {("setup.py", 5): "warn"}


def test_the_same_test_in_a_build_that_knows_rocm_or_builds_no_extension_is_not(
    tmp_path: Path,
) -> None:
    rocm = _SETUP.replace(
        "WITH_CUDA = torch.version.cuda is not None",
        "WITH_CUDA = torch.version.cuda is not None or torch.version.hip is not None",
    )
    plain = "import torch\nHAS_CUDA = torch.version.cuda is not None\n"
    assert _found(_scan(tmp_path / "a", {"setup.py": rocm}), "torch-version-cuda") == {}
    assert _found(_scan(tmp_path / "b", {"info.py": plain}), "torch-version-cuda") == {}

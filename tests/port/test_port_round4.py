"""Issue 26, fourth round: the mechanisms behind test5's misses, each with a case where it applies
and one where it must not, on small synthetic trees (shapes from setuptools' declarative config,
bitsandbytes' release files and torch.utils.cpp_extension's arguments, not from the corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan

from rocmkit.port import PortConfig, scan_project

_SETUP_CFG = """[metadata]
name = demo

[options]
packages = find:
install_requires =
    torch>=2.4
    bitsandbytes{spec}  # quantised layers
    numpy

[options.extras_require]
serve =
    vllm>=0.6
dev =
    bitsandbytes==0.41.1
"""


def _rows(report) -> set[tuple[str, int, str, str]]:  # type: ignore[no-untyped-def]
    return {(f.path, line, f.rule_id, f.severity) for f in report.findings for line in f.lines}


# -- setup.cfg goes through the requirement rules -------------------------------------------------


def test_setup_cfg_install_requires_and_extras_are_read_with_their_lines(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.cfg": _SETUP_CFG.format(spec="==0.41.1")})
    assert _rows(report) == {
        ("setup.cfg", 8, "bitsandbytes-old", "error"),  # what every install pulls
        ("setup.cfg", 13, "vllm-pypi", "warn"),  # an opt-in extra: the base install works
        ("setup.cfg", 15, "bitsandbytes-old", "info"),  # a contributors' group
    }
    assert not report.issues


def test_setup_cfg_requirements_that_allow_rocm_releases_are_not_hazards(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.cfg": _SETUP_CFG.format(spec=">=0.43")})
    rows = _rows(report)
    assert ("setup.cfg", 8, "bitsandbytes-old", "info") in rows
    assert not [r for r in rows if r[1] == 8 and r[3] != "info"]


def test_setup_cfg_file_directives_and_bad_files(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.cfg": "[options]\ninstall_requires = file: requirements.in\n",
            "bad/setup.cfg": "install_requires = bitsandbytes==0.41.1\n",  # no section header
        },
    )
    assert not report.findings
    assert [(i.path, i.reason.split(" (")[0]) for i in report.issues] == [
        ("bad/setup.cfg", "invalid setup.cfg")
    ]


# -- an import of a version-aware package follows the project's declared requirement --------------

_QUANTIZE = "def quantize(layer):\n    import bitsandbytes as bnb\n    return bnb.nn.Linear4bit\n"


def test_an_import_is_an_error_when_the_project_pins_a_release_without_rocm(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.cfg": _SETUP_CFG.format(spec="==0.41.1"),
            "src/demo/__init__.py": "",
            "src/demo/quant.py": _QUANTIZE,
            "src/demo/peft.py": "import bitsandbytes\n",
        },
    )
    rows = _rows(report)
    assert ("src/demo/quant.py", 2, "bitsandbytes-old", "error") in rows
    assert ("src/demo/peft.py", 1, "bitsandbytes-old", "error") in rows
    (finding,) = [f for f in report.findings if f.path == "src/demo/peft.py"]
    assert "bitsandbytes==0.41.1 at setup.cfg:8" in finding.evidence


def test_an_import_is_info_when_the_declaration_allows_rocm_releases_or_is_absent(
    tmp_path: Path,
) -> None:
    allowed = _scan(
        tmp_path / "allowed",
        {"requirements.txt": "bitsandbytes>=0.45\n", "quant.py": _QUANTIZE},
    )
    undeclared = _scan(tmp_path / "undeclared", {"quant.py": _QUANTIZE})
    for report, why in ((allowed, "declares bitsandbytes>=0.45"), (undeclared, "no version")):
        (finding,) = [f for f in report.findings if f.path == "quant.py"]
        assert finding.severity == "info" and why in finding.evidence


def test_a_sub_folder_scan_follows_the_enclosing_projects_declaration(tmp_path: Path) -> None:
    _scan(
        tmp_path, {"setup.cfg": _SETUP_CFG.format(spec="==0.41.1"), "src/demo/quant.py": _QUANTIZE}
    )
    report = scan_project(PortConfig(path=tmp_path / "src" / "demo", show_info=True))
    (finding,) = report.findings
    assert finding.severity == "error" and "setup.cfg:8" in finding.evidence


def test_an_optional_or_vendor_gated_import_stays_info_under_an_old_pin(tmp_path: Path) -> None:
    optional = "try:\n    import bitsandbytes\nexcept ImportError:\n    bitsandbytes = None\n"
    gated = "import torch\nif torch.version.cuda:\n    import bitsandbytes\n"
    report = _scan(
        tmp_path,
        {"requirements.txt": "bitsandbytes==0.41.1\n", "opt.py": optional, "gated.py": gated},
    )
    rows = _rows(report)
    assert ("opt.py", 2, "bitsandbytes-old", "info") in rows
    assert ("gated.py", 3, "bitsandbytes-old", "info") in rows
    assert ("requirements.txt", 1, "bitsandbytes-old", "error") in rows


def test_the_nvidia_variant_of_a_requirements_file_does_not_decide_the_import(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "requirements-cuda.txt": "bitsandbytes==0.41.1\n",
            "requirements-rocm.txt": "bitsandbytes>=0.49\n",
            "quant.py": _QUANTIZE,
        },
    )
    (finding,) = [f for f in report.findings if f.path == "quant.py"]
    assert finding.severity == "info"


# -- nvcc-only flags followed through names and local functions ----------------------------------

_BUILD = """import torch
from torch.utils.cpp_extension import CUDAExtension

def nvcc_threads():
    extra = ["--threads", "4"]
    return extra

def get_extensions():
    flags = ["-O3", "-std=c++17", "-use_fast_math"]
    args = {"cxx": ["-O3"]}
{body}
    return [CUDAExtension("demo._C", ["demo.cu"], extra_compile_args=args)]
"""


def test_nvcc_only_flags_are_followed_into_the_build_arguments(tmp_path: Path) -> None:
    body = '    flags += ["-diag-suppress", "20012"]\n    args["nvcc"] = flags + nvcc_threads()\n'
    report = _scan(tmp_path, {"setup.py": _BUILD.replace("{body}", body)})
    rows = {r for r in _rows(report) if r[2] == "nvcc-only-flags"}
    # the list extended by name, and the flag a local function returns, at the call and where
    # the function writes it (session thirteen)
    assert rows == {
        ("setup.py", 5, "nvcc-only-flags", "warn"),
        ("setup.py", 11, "nvcc-only-flags", "warn"),
        ("setup.py", 12, "nvcc-only-flags", "warn"),
    }
    (finding,) = [f for f in report.findings if f.rule_id == "nvcc-only-flags"]
    assert finding.lines == (5, 11, 12)
    assert "--threads written here: nvcc_threads() returns it" in finding.evidence


def test_nvcc_only_flags_on_the_cuda_side_or_never_passed_are_not_hazards(tmp_path: Path) -> None:
    gated = (
        "    if torch.version.hip:\n"
        '        args["nvcc"] = flags\n'
        "    else:\n"
        '        flags += ["--expt-relaxed-constexpr", "-diag-suppress", "186"]\n'
        '        args["nvcc"] = flags\n'
    )
    report = _scan(tmp_path / "gated", {"setup.py": _BUILD.replace("{body}", gated)})
    assert {r[3] for r in _rows(report) if r[2] == "nvcc-only-flags"} == {"info"}
    # setuptools.setup() takes no extra_compile_args: the dict never reaches nvcc
    unused = (
        "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
        'setup(ext_modules=[CUDAExtension("a", ["a.cu"])],\n'
        '      extra_compile_args={"nvcc": ["-O3", "--use_fast_math"]})\n'
    )
    report = _scan(tmp_path / "unused", {"setup.py": unused})
    assert not [r for r in _rows(report) if r[2] == "nvcc-only-flags"]


# -- a JIT build that only nvcc can start ---------------------------------------------------------

_JIT = """import os
from torch.utils.cpp_extension import _find_cuda_home, load
{extra}
def toolkit_available():
    home = _find_cuda_home()
    return bool(home) and os.path.isfile(os.path.join(home, "bin", "nvcc"))

_C = None
if toolkit_available():
    _C = load(name="ext", sources=["ext.cu"])
"""


def test_a_jit_build_gated_on_finding_nvcc_is_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"backend.py": _JIT.replace("{extra}", "")})
    assert ("backend.py", 9, "cuda-extension", "warn") in _rows(report)


def test_a_jit_build_that_looks_at_rocm_or_a_gate_with_no_build_is_not(tmp_path: Path) -> None:
    rocm_aware = _JIT.replace("{extra}", "from torch.utils.cpp_extension import ROCM_HOME\n")
    rocm_aware = rocm_aware.replace("bool(home)", "bool(home or ROCM_HOME)")
    no_build = _JIT.replace("{extra}", "import torch\n").replace(
        '_C = load(name="ext", sources=["ext.cu"])', '_C = torch.load("weights.pt")'
    )
    for name, text in (("aware", rocm_aware), ("nobuild", no_build)):
        report = _scan(tmp_path / name, {"backend.py": text})
        assert not [r for r in _rows(report) if r[3] != "info"], name


def test_the_nvcc_only_list_holds_nvcc_options_clang_rejects_and_none_it_accepts() -> None:
    from rocmkit.port.build_flags import nvcc_only, rejected_flags

    alone, joined = nvcc_only()
    assert {"-gencode", "-diag-suppress", "--expt-relaxed-constexpr", "--use_fast_math"} <= alone
    assert {"-maxrregcount", "-rdc"} <= joined
    # clang's own options and what clang takes otherwise (-use_fast_math is its -u <symbol>)
    assert rejected_flags("-O3 -std=c++17 -use_fast_math -lineinfo -DFOO -Ifoo") == []
    assert rejected_flags("-diag-suppress 20012") == ["-diag-suppress"]


@pytest.mark.slow
def test_the_nvcc_only_list_is_what_the_installed_compilers_say() -> None:
    """Re-derives the list where the same nvcc and clang are installed (a newer pair would
    legitimately differ: then regenerate it with derive_nvcc_flags.py --write)."""
    import shutil
    import subprocess
    import sys

    # clang 19: ROCm 6.2+ compilers are clang 18+, which reject target-specific options (-arch)
    # that clang 15 only warned about.
    nvcc, clang = shutil.which("nvcc"), shutil.which("clang++-19") or "/usr/lib/llvm-19/bin/clang++"
    committed = (Path(__file__).parents[2] / "src/rocmkit/port/nvcc_only_flags.toml").read_text()
    if nvcc is None or not Path(clang).exists():
        pytest.skip("needs nvcc and clang 19")
    versions = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    if versions.strip().splitlines()[-1] not in committed:
        pytest.skip("another nvcc than the one the list was derived with")
    sys.path.insert(0, str(Path(__file__).parent))
    from derive_nvcc_flags import derive

    assert derive(nvcc, clang) == committed

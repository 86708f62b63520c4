"""Issue 26, fifteenth round (b): package metadata as knowledge. An sdist's PKG-INFO Requires-Dist
read as a requirement source (each requirement reported once across the sources that repeat it),
and the table of CUDA-only PyPI packages derived from the packages' own published metadata. Each
mechanism with a case where it applies and one where it must not, on small synthetic trees."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import ModuleType

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- PKG-INFO Requires-Dist ------------------------------------------------------------------------

_PKG_INFO = """Metadata-Version: 2.4
Name: foldkit
Version: 1.0.0
Summary: a protein folding toolkit
Requires-Python: >=3.10
Provides-Extra: serve
Provides-Extra: mac
Requires-Dist: torch==2.7.1
Requires-Dist: numpy>=1.26
Requires-Dist: vllm==0.8.0; extra == "serve"
Requires-Dist: pycuda; extra == "mac" and sys_platform == "darwin"
Requires-Dist: eetq; sys_platform == "win32"

# foldkit

Requires-Dist: vllm==0.1.0
"""

_SETUP_READS_MISSING_FILE = """from setuptools import setup

with open("requirements.txt") as f:
    requirements = f.read().splitlines()

setup(name="foldkit", install_requires=requirements)
"""


def test_pkg_info_requires_dist_is_a_requirement_source(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"PKG-INFO": _PKG_INFO, "setup.py": _SETUP_READS_MISSING_FILE})
    shown = _shown(report)
    # what every install pulls: PyPI's torch 2.7.1 is the CUDA build
    assert ("PKG-INFO", 8, "torch-pypi-pin", "warn") in shown
    # an extra's requirement (`extra == "serve"`) is opt-in: vLLM from PyPI there is a warning
    assert ("PKG-INFO", 10, "vllm-pypi", "warn") in shown


def test_pkg_info_markers_and_description_are_read_as_pip_would(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"PKG-INFO": _PKG_INFO, "setup.py": _SETUP_READS_MISSING_FILE})
    rows = {(p, line): sev for p, line, _, sev in _shown(report)}
    # an extra for macOS only and a Windows-only requirement are never installed where ROCm runs
    assert rows.get(("PKG-INFO", 11), "info") == "info"
    assert rows.get(("PKG-INFO", 12), "info") == "info"
    # the description after the header is prose, not metadata
    assert ("PKG-INFO", 16) not in rows


def test_pkg_info_defers_to_the_source_a_maintainer_edits(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "PKG-INFO": _PKG_INFO,
            "pyproject.toml": '[project]\nname = "foldkit"\ndependencies = ["torch==2.7.1"]\n',
        },
    )
    rows = {(p, line, rule) for p, line, rule, _ in _shown(report)}
    assert ("pyproject.toml", 3, "torch-pypi-pin") in rows
    assert not any(p == "PKG-INFO" and rule == "torch-pypi-pin" for p, _, rule in rows)
    assert ("PKG-INFO", 10, "vllm-pypi") in rows  # pyproject names no vllm: PKG-INFO's


def test_requires_txt_comes_before_pkg_info_and_names_it(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "PKG-INFO": _PKG_INFO,
            "setup.py": _SETUP_READS_MISSING_FILE,
            "foldkit.egg-info/requires.txt": "torch==2.7.1\nnumpy>=1.26\n",
        },
    )
    found = [f for f in report.findings if f.rule_id == "torch-pypi-pin"]
    assert [(f.path, f.line) for f in found] == [("foldkit.egg-info/requires.txt", 1)]
    assert "also PKG-INFO:8" in found[0].evidence
    # what requires.txt lacks stays PKG-INFO's
    assert ("PKG-INFO", 10, "vllm-pypi", "warn") in _shown(report)


def test_the_egg_info_copy_is_read_when_the_sdist_has_no_top_level_pkg_info(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {"setup.py": _SETUP_READS_MISSING_FILE, "src/foldkit.egg-info/PKG-INFO": _PKG_INFO},
    )
    assert ("src/foldkit.egg-info/PKG-INFO", 8, "torch-pypi-pin", "warn") in _shown(report)


def test_a_pkg_info_without_requirements_or_with_harmless_ones_is_quiet(tmp_path: Path) -> None:
    quiet = "Metadata-Version: 2.1\nName: foldkit\nRequires-Dist: numpy\nRequires-Dist: torch>=2\n"
    report = _scan(tmp_path, {"PKG-INFO": quiet}, show_info=False)
    assert not report.findings


def test_a_fifo_named_pkg_info_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "PKG-INFO")
    done: list[object] = []
    files = {"foldkit.egg-info/requires.txt": "torch==2.7.1\n", "setup.py": "setup()\n"}
    worker = threading.Thread(target=lambda: done.append(_scan(tmp_path, files)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done, "the scan waited on a FIFO"


# -- CUDA-only packages by their own PyPI metadata ---------------------------------------------------


def _table_package(*kinds: str) -> str:
    """A package of the shipped table of one of those classes whose name carries no CUDA build
    tag (a tagged name is the cuda-build-package rule's)."""
    from rocmkit.port.cuda_build_tags import cuda_tag
    from rocmkit.port.cuda_packages import table

    return next(p.name for p in table().values() if p.kind in kinds and not cuda_tag(p.name))


def test_a_package_cuda_only_by_its_metadata_is_an_error_in_every_reader(tmp_path: Path) -> None:
    name = _table_package("cuda-runtime", "pulls-cuda-only")
    report = _scan(
        tmp_path,
        {
            "requirements.txt": f"numpy\n{name}>=0.1\n",
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["numpy"]\n'
            f'[project.optional-dependencies]\nfast = ["{name}"]\n',
            "PKG-INFO": f"Metadata-Version: 2.1\nName: y\nRequires-Dist: {name}\n",
        },
    )
    shown = _shown(report)
    assert ("requirements.txt", 2, "cuda-only-pypi", "error") in shown
    # an opt-in extra: the base install works
    assert ("pyproject.toml", 5, "cuda-only-pypi", "warn") in shown
    # PKG-INFO repeats a package the requirements file declares: reported there only
    assert not any(p == "PKG-INFO" for p, *_ in shown)
    finding = next(f for f in report.findings if f.path == "requirements.txt")
    assert f"no ROCm build of {name}" in finding.evidence and "requires" in finding.evidence


def test_packages_outside_the_table_and_hand_rules_are_not_reported(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"requirements.txt": "numba>=0.60\nnumpy\ncupy-rocm-5-0\n"})
    assert not any(f.rule_id == "cuda-only-pypi" for f in report.findings)


def test_hand_rules_win_over_the_table(tmp_path: Path) -> None:
    from rocmkit.port.cuda_packages import table
    from rocmkit.port.rules import load_rules

    rules = load_rules()
    assert not [n for n in table() if rules.package_rule(n) is not None and "-cu" not in n]
    report = _scan(tmp_path, {"requirements.txt": "vllm==0.4.2\n"})
    assert {f.rule_id for f in report.findings} == {"vllm-pypi"}


def test_an_nvml_only_package_follows_the_nvml_rule(tmp_path: Path) -> None:
    name = _table_package("nvml")
    project = '[project]\nname = "x"\ndependencies = [{}]\n'
    alone = _scan(tmp_path / "a", {"pyproject.toml": project.format(f'"{name}"')})
    beside = _scan(tmp_path / "b", {"pyproject.toml": project.format(f'"torch", "{name}"')})
    # a monitoring package installs on ROCm: info, alone or beside torch (NVML fails at its calls)
    for report in (alone, beside):
        nvml = [f for f in report.findings if f.rule_id == "nvml"]
        assert nvml and all(f.severity == "info" for f in nvml)
        assert any("NVML bindings only" in f.evidence for f in nvml)


# -- the generator's classification (pure: canned JSON metadata) ----------------------------------


def _generator() -> ModuleType:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "port_cuda_packages.py"
    spec = importlib.util.spec_from_file_location("port_cuda_packages", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _meta(name: str, requires: list[str], files: tuple[str, ...] = (), text: str = "") -> dict:  # type: ignore[type-arg]
    info = {"name": name, "version": "1.0", "summary": text, "requires_dist": requires}
    return {"info": {**info, "description": ""}, "urls": [{"filename": f} for f in files]}


def test_the_generator_classifies_from_requires_dist() -> None:
    gen = _generator()
    none: frozenset[str] = frozenset()
    row = gen.classify(_meta("kernelpack-cuda", ["numpy", "nvidia-cublas-cu12>=12.1"]), none)
    assert row["class"] == "cuda-runtime" and "nvidia-cublas-cu12" in row["evidence"]
    monitor = gen.classify(_meta("gpumon", ["nvidia-ml-py>=12"]), none)
    assert monitor["class"] == "nvml"
    assert gen.classify(_meta("servekit-gpu", ["vllm>=0.6"]), none)["class"] == "pulls-cuda-only"
    # a name that says nothing of CUDA: the requirement is one CUDA path of it, not the package
    assert gen.classify(_meta("kernelpack", ["numpy", "nvidia-cublas-cu12>=12.1"]), none) is None
    assert gen.classify(_meta("servekit", ["vllm>=0.6"]), none) is None
    tagged = gen.classify(_meta("fastort-gpu", ["numpy"]), frozenset({"fastort-rocm"}))
    assert tagged["class"] == "gpu-build" and "fastort-rocm" in tagged["evidence"]


def test_the_generator_leaves_out_what_is_not_cuda_only() -> None:
    gen = _generator()
    none: frozenset[str] = frozenset()
    # only in an extra, only on Windows, a ROCm wheel, ROCm in the summary, torch itself
    assert gen.classify(_meta("a", ['nvidia-cublas-cu12; extra == "cuda"']), none) is None
    assert gen.classify(_meta("b", ['cupy-cuda12x; sys_platform == "win32"']), none) is None
    rocm_wheel = _meta("c", ["cuda-python"], files=("c-1.0+rocm6.2-py3-none-any.whl",))
    assert gen.classify(rocm_wheel, none) is None
    assert gen.classify(_meta("d", ["cuda-python"], text="CUDA and ROCm kernels"), none) is None
    assert gen.classify(_meta("torch", ["nvidia-cublas-cu12"]), none) is None
    assert gen.classify(_meta("fastort-gpu", ["numpy"]), none) is None  # no ROCm name known
    assert gen.vendor_named("gpustat") and gen.vendor_named("nvidia-ml-py")
    assert not gen.vendor_named("asyncclick") and not gen.vendor_named("requests")


def test_setup_py_and_pip_install_lines_consult_the_table(tmp_path: Path) -> None:
    name = _table_package("cuda-runtime", "pulls-cuda-only")
    setup = f'from setuptools import setup\nsetup(name="x", install_requires=["{name}"])\n'
    report = _scan(
        tmp_path,
        {"setup.py": setup, "Dockerfile": f"FROM python:3.12\nRUN pip install {name}\n"},
    )
    shown = _shown(report)
    assert ("setup.py", 2, "cuda-only-pypi", "error") in shown
    assert ("Dockerfile", 2, "cuda-only-pypi", "error") in shown


# -- the NVIDIA CUDA trove classifier (session nine) ----------------------------------------------


def _classified(name: str, classifiers: list[str], text: str = "") -> dict:  # type: ignore[type-arg]
    meta = _meta(name, ["numpy"], text=text)
    meta["info"]["classifiers"] = classifiers
    return meta


def test_the_generator_reads_the_nvidia_cuda_classifier() -> None:
    gen = _generator()
    none: frozenset[str] = frozenset()
    cuda = ["Environment :: GPU :: NVIDIA CUDA :: 12", "Environment :: GPU :: NVIDIA CUDA"]
    row = gen.classify(_classified("kernelkit", cuda), none)  # pure Python, no framework under it
    assert row["class"] == "nvidia-gpu-env"
    assert "'Environment :: GPU :: NVIDIA CUDA'" in row["evidence"]  # the shortest one is shown
    # a GPU with no vendor, ROCm named in the metadata, TensorFlow's builds: none
    assert gen.classify(_classified("anygpu", ["Environment :: GPU"]), none) is None
    assert gen.classify(_classified("both", cuda, text="CUDA and ROCm wheels"), none) is None
    for build in ("tensorflow", "tensorflow-cpu", "tf-nightly-cpu"):
        assert gen.classify(_classified(build, cuda), none) is None
    # pure Python on torch runs on torch's GPU (a ROCm build exists); compiled code is its own
    on_torch = _classified("loralib", cuda)
    on_torch["info"]["requires_dist"] = ["torch", "einops"]
    assert gen.classify(on_torch, none) is None
    on_torch["urls"] = [{"filename": "loralib-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"}]
    assert gen.classify(on_torch, none)["class"] == "nvidia-gpu-env"
    # for a package named for CUDA a CUDA runtime requirement is the stronger evidence
    meta = _classified("kernelkit-cu12", cuda)
    meta["info"]["requires_dist"] = ["nvidia-cublas-cu12"]
    assert gen.classify(meta, none)["class"] == "cuda-runtime"


def test_the_generator_weighs_nccl_and_nvml_by_what_else_the_package_is() -> None:
    gen = _generator()
    none: frozenset[str] = frozenset()
    # NCCL installs anywhere and fails only when called: CUDA-only for a package named for CUDA
    assert gen.classify(_meta("boostlib", ["numpy", "nvidia-nccl-cu13"]), none) is None
    assert gen.classify(_meta("cuda-collectives", ["nvidia-nccl-cu13"]), none)["class"] == (
        "cuda-runtime"
    )
    # NVML beside a framework the package pulls is a helper, not the package's GPU
    assert gen.classify(_meta("detectkit", ["torch>=2", "nvidia-ml-py"]), none) is None
    assert gen.classify(_meta("gpumon", ["nvidia-ml-py"]), none)["class"] == "nvml"


def test_every_name_widens_the_universe_beyond_vendor_names(tmp_path: Path) -> None:
    gen = _generator()
    names = tmp_path / "names.tsv"
    rows = ["name\tversion\tmonth\trank\tsummary", "cpm-kernels\t1\t2022\t5\tx",
            "nvitop\t1\t2026\t7\tx", "requests\t1\t2026\t1\tx", "rarely-used\t1\t2020\t\tx",
            "fastort-rocm\t1\t2025\t\tx"]  # fmt: skip
    names.write_text("\n".join(rows) + "\n")
    vendor, rocm = gen.universe_from_names(names, 10)
    every, _ = gen.universe_from_names(names, 10, every_name=True)
    assert "cpm-kernels" not in vendor and {"cpm-kernels", "requests", "nvitop"} <= set(every)
    assert "rarely-used" not in every and rocm == frozenset({"fastort-rocm"})


def test_a_package_declaring_nvidia_cuda_only_is_a_warning(tmp_path: Path) -> None:
    name = _table_package("nvidia-gpu-env")
    report = _scan(tmp_path, {"requirements.txt": f"numpy\n{name}\n"})
    assert ("requirements.txt", 2, "nvidia-gpu-pypi", "warn") in _shown(report)
    finding = next(f for f in report.findings if f.rule_id == "nvidia-gpu-pypi")
    assert "Environment :: GPU :: NVIDIA CUDA" in finding.evidence and "no ROCm" in finding.evidence
    assert finding.source == "https://pypi.org/classifiers/"

"""Issue 26, thirteenth round (c): TensorRT reached through a product-named function or an import
call, and requirements that install a CUDA build by definition (a CUDA build tag in the name, an
extra another package's metadata ties to onnxruntime-gpu, TensorFlow in an extra named for the
GPU). Each mechanism with a case where it applies and one where it must not, on small synthetic
trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- TensorRT: the opt-in conversion's own unguarded import ----------------------------------------

_CONVERSION = """import os


def convert_pipeline_to_tensorrt(pipeline, out_dir):
    if not os.path.exists(out_dir):
        return
    import tensorrt as trt

    return trt.Builder(trt.Logger(trt.Logger.INFO))
"""

_CONVERSION_PROBE = """def convert_pipeline_to_tensorrt(pipeline):
    try:
        import tensorrt as trt
    except ImportError:
        return pipeline
    return trt.Builder(trt.Logger(trt.Logger.INFO))
"""


def test_an_unguarded_import_in_a_tensorrt_conversion_is_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"sd/convert.py": _CONVERSION})
    assert ("sd/convert.py", 7, "tensorrt", "warn") in _shown(report)


def test_a_tensorrt_conversion_that_falls_back_stays_quiet(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"sd/convert.py": _CONVERSION_PROBE})
    assert _shown(report) == set()


# -- TensorRT: an import call (importlib.import_module, optional_import) in a function -------------

_IMPORT_CALL = """from mylib.utils import optional_import


def export_engine(model, shapes):
    trt, _ = optional_import("tensorrt", "8.5.3")
    return trt.Builder(trt.Logger())
"""

_IMPORT_CALL_OTHER = """import importlib


def load_backend(name):
    return importlib.import_module("onnxruntime")
"""


def test_an_import_call_of_tensorrt_in_a_function_is_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"mylib/export.py": _IMPORT_CALL})
    assert ("mylib/export.py", 5, "tensorrt", "warn") in _shown(report)


def test_an_import_call_of_a_portable_module_is_not_reported(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"mylib/backend.py": _IMPORT_CALL_OTHER})
    assert _shown(report) == set()


# -- TensorRT: a version report is not a use -------------------------------------------------------

_ENV_REPORT = """import platform

from tensorrt import __version__ as trt_version


def report():
    return {"platform": platform.platform(), "tensorrt": trt_version}
"""

_MAIN_PATH = """from tensorrt import Builder, Logger

BUILDER = Builder(Logger())
"""


def test_importing_only_tensorrts_version_is_not_a_finding(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"tool/env.py": _ENV_REPORT})
    assert _shown(report) == set()


def test_a_module_level_tensorrt_import_stays_an_error(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"tool/engine.py": _MAIN_PATH})
    assert ("tool/engine.py", 1, "tensorrt", "error") in _shown(report)


# -- a CUDA build tag in a distribution's name -----------------------------------------------------


def _pyproject(extras: str) -> str:
    return (
        '[project]\nname = "bench"\nversion = "1"\ndependencies = ["numpy"]\n\n'
        f"[project.optional-dependencies]\n{extras}"
    )


def test_a_package_named_with_a_cuda_build_tag_is_reported(tmp_path: Path) -> None:
    pyproject = _pyproject('bench = [\n  "matplotlib",\n  "spconv-cu120",\n]\n')
    report = _scan(tmp_path, {"pyproject.toml": pyproject})
    assert ("pyproject.toml", 9, "cuda-build-package", "warn") in _shown(report)


def test_a_cu_word_that_is_not_a_build_tag_is_not_reported(tmp_path: Path) -> None:
    pyproject = _pyproject('bench = [\n  "matplotlib",\n  "cucumber-cu",\n  "cuda-python-doc"\n]\n')
    report = _scan(tmp_path, {"pyproject.toml": pyproject})
    assert _shown(report) == set()


# -- an extra of another package that pulls onnxruntime-gpu: judged as onnxruntime-gpu is --------

_SETUP = """from setuptools import setup

setup(
    name="stt",
    install_requires=["numpy"],
    extras_require={
        "vad-onnx-gpu": ["silero-vad[onnx-gpu]>=6.2.1"],
        "vad-onnx-cpu": ["silero-vad[onnx-cpu]>=6.2.1"],
        "onnxruntime-gpu": "optimum-onnx[onnxruntime-gpu]",
    },
)
"""


def test_an_extra_that_pulls_onnxruntime_gpu_is_noted_with_what_it_pulls(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _SETUP})
    noted = {(line, f.rule_id, f.severity) for f in report.findings for line in f.lines}
    # (info until session twenty-nine; since then what the extra pulls is read from the package's
    # metadata and judged as onnxruntime-gpu itself is in that extra: a warning)
    assert (7, "onnxruntime-gpu", "warn") in noted
    assert (9, "onnxruntime-gpu", "warn") in noted  # an extra given as one string, not a list
    assert not any(line == 8 for line, _, _ in noted)  # the CPU extra
    assert all("pulls onnxruntime-gpu" in f.evidence for f in report.findings)


# -- TensorFlow in an extra named for the GPU ------------------------------------------------------

_TF_SETUP = """from setuptools import setup

setup(
    name="recs",
    install_requires=["numpy"],
    extras_require={
        "gpu": ["tensorflow>=2.8.4,<2.16", "torch>=2.0.1"],
        "tf": ["tensorflow>=2.8.4,<2.16"],
    },
)
"""


def test_tensorflow_in_a_gpu_extra_is_reported_and_elsewhere_not(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"setup.py": _TF_SETUP}))
    assert shown == {("setup.py", 7, "cuda-gpu-framework", "warn")}


# -- NVML through dask's wrapper (distributed.diagnostics.nvml) ------------------------------------

_DASK_COUNT = """import os

from dask.distributed.diagnostics import nvml


def gpu_count():
    count = nvml.device_get_count()
    return count if count else 0


HAS_GPU = gpu_count() > 0
"""

_OTHER_NVML = """from mytool import nvml
from distributed.diagnostics import nvml as dask_nvml


def gpu_count():
    ready = dask_nvml.is_initialized()
    return nvml.device_get_count() if ready else 0
"""


def test_a_device_count_through_dasks_nvml_wrapper_is_an_nvml_call(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"core/has_gpu.py": _DASK_COUNT})
    assert ("core/has_gpu.py", 7, "nvml", "warn") in _shown(report)


def test_another_modules_device_count_and_a_state_query_are_not(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"core/has_gpu.py": _OTHER_NVML})
    assert _shown(report) == set()

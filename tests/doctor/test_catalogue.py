"""The error catalogue (src/rocmkit/doctor/catalogue/): complete by construction against the
emitters' own definitions, every curated entry recognises its example, near misses change the
answer, abstentions name what decides, and the first failure is the causal line."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rocmkit.doctor.catalogue import entries, files
from rocmkit.doctor.explain import explain

SITE = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
)

# emitter -> (installed headers to try, enum regex). The regexes are the ones emitters.md records.
HEADERS = {
    "cuda_runtime": (
        [
            Path("/usr/local/cuda/include/driver_types.h"),
            SITE / "nvidia/cu13/include/driver_types.h",
        ],
        r"^\s+(cudaError[A-Za-z0-9]+)\s*=\s*(\d+)",
    ),
    "cuda_driver": (
        [Path("/usr/local/cuda/include/cuda.h")],
        r"^\s+(CUDA_ERROR_[A-Z0-9_]+)\s*=\s*(\d+)",
    ),
    "hip": (
        [
            SITE / "triton/backends/amd/include/hip/hip_runtime_api.h",
            Path("/usr/include/hip/hip_runtime_api.h"),
        ],
        r"^\s+(hipError[A-Za-z0-9]+)\s*=\s*(\d+)",
    ),
    "hsa": (
        [SITE / "triton/backends/amd/include/hsa/hsa.h", Path("/usr/include/hsa/hsa.h")],
        r"^\s+(HSA_STATUS_[A-Z_]+)\s*=\s*(0x[0-9A-Fa-f]+)",
    ),
    "nccl": (
        [SITE / "nvidia/nccl/include/nccl.h"],
        r"^\s+(nccl[A-Z][A-Za-z]*(?:Error|Usage|Argument|Timeout|Progress))\s*=\s*(\d+)",
    ),
    "nvml": (
        [Path("/usr/include/nvml.h"), Path("/usr/local/cuda/include/nvml.h")],
        r"^\s+(NVML_ERROR_[A-Z_]+)\s*=\s*(\d+)",
    ),
    "cublas": (
        [SITE / "nvidia/cu13/include/cublas_api.h"],
        r"^\s+(CUBLAS_STATUS_[A-Z_]+)\s*=\s*(\d+)",
    ),
    "cudnn": (
        [SITE / "nvidia/cudnn/include/cudnn_graph.h"],
        r"^\s+(CUDNN_STATUS_[A-Z0-9_]+)\s*=\s*(\d+)",
    ),
}


@pytest.mark.parametrize("emitter", sorted(HEADERS))
def test_every_code_of_the_installed_header_has_an_entry(emitter):
    paths, pattern = HEADERS[emitter]
    header = next((p for p in paths if p.exists()), None)
    if header is None:
        pytest.skip(f"no {emitter} header installed ({', '.join(map(str, paths))})")
    codes = {
        m.group(1): int(m.group(2), 0)
        for m in re.finditer(pattern, header.read_text(encoding="utf-8", errors="replace"), re.M)
    }
    known = {e["name"]: e["value"] for e in files()[emitter]["entry"] if "name" in e}
    missing = {n: v for n, v in codes.items() if known.get(n) != v}
    assert not missing, f"{emitter}: codes in {header} without a catalogue entry: {missing}"


def test_every_file_names_its_source_and_every_pinned_list_is_data():
    for emitter, data in files().items():
        head = data["emitter"]
        assert head.get("source") or head.get("header"), emitter
        for e in data.get("entry", []):
            assert "name" in e or ("id" in e and "pattern" in e), (emitter, e)
    assert len(files()["nvml"]["entry"]) >= 30  # pinned: nvml.h is not installed everywhere


def test_every_curated_entry_recognises_its_example():
    curated = [e for e in entries() if e.get("fix")]
    assert len(curated) >= 30
    for e in curated:
        assert e.get("example"), e["id"]
        assert e.get("source"), e["id"]
        found = {m.family for m in explain(e["example"])}
        assert e["family"] in found, (e["id"], found)


def test_enumerated_codes_match_on_name_and_on_their_own_text_and_abstain():
    (m,) = explain("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert m.code == "cudaErrorIllegalAddress (700)" and m.abstain and m.confidence == "unknown"
    assert m.fix == "" and m.ask
    (m,) = explain("> hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")
    assert m.family == "no-binary-for-gpu"  # the curated signature wins over the bare code
    (m,) = explain("\x1b[31mHSA_STATUS_ERROR_INVALID_ISA\x1b[0m")
    assert m.id == "hsa-invalid-isa"
    assert explain("invalid argument") == []  # a short text needs its emitter's prefix


# -- near misses: the same message with another deciding fact changes the answer ---------------

NEAR_MISSES = [
    (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "cuda-no-kernel-image",
        "RuntimeError: HIP error: no kernel image is available for execution on the device",
        "no-binary-for-gpu",
    ),
    # (log, expected id, log with another deciding fact, expected id)
    (
        "Failed to initialize NVML: Unknown Error",
        "nvml-unknown-error",
        "(container) $ nvidia-smi\nFailed to initialize NVML: Unknown Error",
        "nvml-unknown-error-container",
    ),
    (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.",
        "vllm-bf16-needs-sm80",
        "Bfloat16 is only supported on GPUs with compute capability of at least 8.0.\nRuntimeError: GPUs with compute capability below 7.0 are not supported.",
        "vllm-bf16-needs-sm80-pascal",
    ),
    (
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
        "flash-attn-ampere",
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer. on A800",
        "flash-attn-ampere-on-ampere",
    ),
    (
        "UserWarning: flash_attn was requested, but nvcc was not found.",
        "flash-attn-no-nvcc",
        "torch.__version__ = 2.7.0+rocm6.3\nUserWarning: flash_attn was requested, but nvcc was not found.",
        "flash-attn-no-nvcc-rocm",
    ),
    (
        "amdgpu/raven_rlc.bin: could not load firmware image, error 2",
        "amdgpu-firmware-missing-undecided",
        "amdgpu/raven_rlc.bin: could not load firmware image, error 2\nsuccessfully loaded firmware image with name: amdgpu/raven_rlc.bin",
        "amdgpu-firmware-optional",
    ),
    (
        # the deciding fact: GPU init failed after the missing file (amdgpu_device.c's messages)
        "amdgpu 0000:01:00.0: Direct firmware load for amdgpu/polaris12_mc.bin failed with error -2",
        "amdgpu-firmware-missing-undecided",
        "amdgpu 0000:01:00.0: Direct firmware load for amdgpu/polaris12_mc.bin failed with error -2\namdgpu 0000:01:00.0: amdgpu: Fatal error during GPU init",
        "amdgpu-firmware-missing",
    ),
    (
        # an iGPU target without a discrete GPU in the log: abstain; with one listed: hide the iGPU
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036",
        "tensile-igpu-undecided",
        "  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no\n  Device 1: AMD Radeon Graphics, gfx1036 (0x1036), VMM: no\nrocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036",
        "tensile-igpu",
    ),
    (
        # a missing CUDA library: torch's own import decides; another package leaves it open
        "from onnxruntime_genai.onnxruntime_genai import *\nImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
        "cuda-library-missing-undecided",
        "    from torch._C import *  # noqa: F403\nImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
        "cuda-library-missing",
    ),
    (
        "CUDA SETUP: Setup Failed!",
        "bitsandbytes-setup",
        "CUDA SETUP: Setup Failed!\nCould not find the bitsandbytes CUDA binary at libbitsandbytes_hip_nohipblaslt.so",
        "bitsandbytes-rocm",
    ),
    (
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031",
        "tensile-gfx-override",
        "rocBLAS error: Could not load /opt/rocm-6.0.0/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat",
        "tensile-shipped-target",
    ),
    (
        "rocBLAS error: Could not load /opt/rocm-6.0.0/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat",
        "tensile-shipped-target",
        "torch 2.4.0+rocm6.1\nrocBLAS error: Could not load /opt/rocm-6.0.0/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat",
        "tensile-mixed-rocm",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 24.00 GiB of which 1.00 GiB is free. Of the allocated memory 20 GiB is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.",
        "out-of-memory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB. GPU 0 has a total capacity of 24.00 GiB of which 1.00 GiB is free.",
        "out-of-memory-exceeds-gpu",
    ),
    (
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:410, unhandled system error",
        "nccl-system-error",
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:410, unhandled system error\nconnection reset by peer",
        "nccl-system-error-network",
    ),
    (
        'msg="amdgpu is not supported (supported types:[gfx1030 gfx1100])"',
        "ollama-amdgpu-not-supported",
        'msg="amdgpu is not supported (supported types:[gfx1030 gfx1100])" gpu_type=gfx1031',
        "ollama-amdgpu-not-supported-override",
    ),
    (
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)",
        "xformers-cant-load",
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.2.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)",
        "xformers-cant-load-same-versions",
    ),
]


@pytest.mark.parametrize("log, expect, other, other_expect", NEAR_MISSES)
def test_near_miss_changes_the_answer(log, expect, other, other_expect):
    def first(text):
        found = explain(text)
        return next((m for m in found if m.first_failure), found[0])

    a, b = first(log), first(other)
    assert (a.id, b.id) == (expect, other_expect)
    assert (a.cause, a.fix) != (b.cause, b.fix)


def test_abstentions_name_candidates_and_the_command_that_decides():
    (m,) = explain("RuntimeError: HIP error: invalid device function")
    assert m.abstain and m.confidence == "candidates" and m.candidates
    assert "rocminfo" in m.ask and "HSA_OVERRIDE_GFX_VERSION" in m.fix
    (m,) = explain(
        "RuntimeError: HIP error: invalid device function\n  Device 0: AMD Radeon RX 6700 XT, gfx1031 (0x1031)"
    )
    assert (
        not m.abstain
        and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in m.fix
        and m.deciding["gfx"] == "gfx1031"
    )


def test_confidence_is_certain_only_when_message_and_facts_decide():
    (m,) = explain("Failed to initialize NVML: Driver/library version mismatch")
    assert m.confidence == "certain"
    (m,) = explain("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    assert m.confidence == "candidates" and "lsmod" in m.ask


def test_first_failure_is_the_cause_not_its_consequences():
    log = "\n".join(
        [
            "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied",
            "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-0 (size 4460544)",
            "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:784, unhandled system error, NCCL version 2.7.8",
        ]
    )
    found = explain(log)
    first = [m for m in found if m.first_failure]
    assert [m.id for m in first] == ["nccl-shm-open-permission"]
    assert not any("shm-size" in m.fix for m in found)  # the size advice does not apply here
    log = "RuntimeError: CUDA error: device-side assert triggered\nLoss.cu:257: nll_loss_forward: Assertion `t >= 0 && t < n_classes` failed."
    first = [m for m in explain(log) if m.first_failure]
    assert [m.id for m in first] == ["torch-label-out-of-range"]


def test_wheel_tags_and_library_paths_become_facts():
    from rocmkit.doctor.evidence import log_facts

    lines = ["torch 2.4.0+rocm6.1 loaded /opt/rocm-6.0.0/lib/librocblas.so", "torch 2.1.0+cu121"]
    facts = log_facts(lines, 0, {})
    assert facts.values["rocm_wheel"] == "6.1" and facts.values["rocm_libs"] == "6.0"
    assert facts.values["mixed_rocm"] == "6.1 vs 6.0" and facts.values["cuda_wheel_tag"] == "12.1"


def test_console_view_shows_confidence_first_failure_facts_and_the_command(tmp_path):
    from rich.console import Console

    from rocmkit.doctor.diagnose import explain_log
    from rocmkit.doctor.findings import to_run_result
    from rocmkit.report.view_doctor import render

    log = tmp_path / "job.log"
    log.write_text(
        "NCCL WARN Call to shm_open failed : Permission denied\n"
        "RuntimeError: HIP error: invalid device function\n"
    )
    report = explain_log(str(log))
    doc = report.to_dict()
    assert doc["schema_version"] == 3 and doc["first_failure"] == 1
    console = Console(record=True, width=200)
    render(to_run_result(report, config={}), console, None)  # type: ignore[arg-type]
    out = console.export_text()
    assert "[certain] first failure" in out and "candidates:" in out and "run:   rocminfo" in out


def test_a_message_wrapped_over_two_lines_is_recognised_once():
    log = (
        "RuntimeError: The detected CUDA version (12.2) mismatches the version that was used to\n"
        "    compile PyTorch (11.3). Please make sure to use the same CUDA versions."
    )
    assert [(m.id, m.line_number) for m in explain(log)] == [("torch-extension-cuda-mismatch", 1)]
    log = "nvidia-container-cli: requirement error: unsatisfied condition:\n  cuda>=12.8, please update your driver"
    assert [m.id for m in explain(log)] == ["container-cuda-requirement"]


def test_a_shared_message_is_attributed_to_the_emitter_the_line_names():
    (hip,) = explain("RuntimeError: HIP error: an illegal memory access was encountered")
    (cuda,) = explain("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert (hip.code, hip.emitter) == ("hipErrorIllegalAddress (700)", "hip")
    assert (cuda.code, cuda.emitter) == ("cudaErrorIllegalAddress (700)", "cuda_runtime")
    assert "AMD_SERIALIZE_KERNEL" in hip.ask and "CUDA_LAUNCH_BLOCKING" in cuda.ask

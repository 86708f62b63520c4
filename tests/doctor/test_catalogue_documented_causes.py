"""Enumerated codes whose own documentation names several causes (catalogue `doc` + `candidates`):
they abstain, name the candidates and the command that decides, never state a fix; a code that is
a consequence gives way to the line that caused it. Each family is tested on a real log line from
the field corpus' development part and on a near miss that must not be read as it."""

from __future__ import annotations

import pytest

from rocmkit.doctor.catalogue import entries
from rocmkit.doctor.explain import explain

# (family, real line from tests/fixtures/explain_field dev logs, a command the answer must name)
DOCUMENTED = [
    (
        "cuda_runtime:cudaErrorLaunchFailure",  # cuda-unknown-after-suspend--cupy-7774
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure",
        "CUDA_LAUNCH_BLOCKING=1",
    ),
    (
        "cuda_runtime:cudaErrorInitializationError",  # cuda-no-device-detected--llama3-215
        "Upon checking the logs, I discovered an error message: 'ggml_cuda_init: failed to initialize CUDA: initialization error'.",
        "nvidia-smi",
    ),
    (
        "nccl:ncclInternalError",  # nccl-socket-interface--nccl-tests-219
        "Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '",
        "NCCL_DEBUG=INFO",
    ),
    (
        "cuda_runtime:cudaErrorAssert",  # label-out-of-range-device-assert--person_reid_baseline_pytorch-372
        "RuntimeError: CUDA error: device-side assert triggered",
        "CUDA_LAUNCH_BLOCKING=1",
    ),
]


@pytest.mark.parametrize("family, line, command", DOCUMENTED)
def test_a_documented_code_abstains_naming_candidates_and_the_deciding_command(
    family: str, line: str, command: str
) -> None:
    (m,) = [m for m in explain(line) if m.family == family]
    assert m.abstain and m.confidence == "candidates"
    assert len(m.candidates) >= 2
    assert command in m.ask and command in m.fix
    assert m.first_failure  # nothing else in the line explains it


@pytest.mark.parametrize(
    "near_miss, family",
    [
        # another launch error of the same enum: its own meaning, not the launch-failure candidates
        (
            "RuntimeError: CUDA error: the launch timed out and was terminated",
            "cudaErrorLaunchFailure",
        ),
        # torch's own "no GPU" wording is a different failure than a failed initialisation
        ("RuntimeError: No CUDA GPUs are available", "cudaErrorInitializationError"),
        # an NCCL warning line that only mentions an error, without the result code's text
        ("NCCL WARN internal check on peer 3 passed after retry", "ncclInternalError"),
        # a host-side Python assert is not a device-side assert
        ("AssertionError: assert t < n_classes", "cudaErrorAssert"),
    ],
)
def test_near_miss_is_not_read_as_the_documented_code(near_miss: str, family: str) -> None:
    assert all(not m.family.endswith(":" + family) for m in explain(near_miss))


def test_documented_codes_carry_the_emitters_own_description() -> None:
    documented = [e for e in entries() if e.get("candidates") and e.get("doc")]
    assert {e["id"] for e in documented} >= {
        "cudaErrorLaunchFailure",
        "cudaErrorInitializationError",
        "cudaErrorAssert",
        "hipErrorAssert",
        "CUDA_ERROR_LAUNCH_FAILED",
        "ncclInternalError",
    }
    for e in documented:
        assert e["abstain"] and e["ask"] and e["ask"] in e["fix"], e["id"]


def test_a_device_assert_gives_way_to_the_assertion_that_caused_it() -> None:
    # person_reid_baseline_pytorch-372 (dev): the kernel's Assertion lines come before the error
    log = (
        "/pytorch/aten/src/THCUNN/ClassNLLCriterion.cu:108: cunn_ClassNLLCriterion_updateOutput_kernel:"
        " block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
        "RuntimeError: CUDA error: device-side assert triggered"
    )
    first = [m for m in explain(log) if m.first_failure]
    assert [m.id for m in first] == ["torch-label-out-of-range"]


def test_an_nccl_internal_error_gives_way_to_the_warn_line_before_it() -> None:
    log = (
        "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed :"
        " Address family not supported by protocol\n"
        "Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '"
    )
    first = [m for m in explain(log) if m.first_failure]
    assert [m.id for m in first] == ["nccl-socket-interface"]


def test_a_crash_inside_the_hip_fat_binary_loader_asks_for_the_targets() -> None:
    # hip-no-code-object-for-target--legacy-rocm-build-2270 (dev), gdb backtrace
    log = (
        'hread 27 "python3" received signal SIGSEGV, Segmentation fault.\n'
        "0x00007fffae2b40a7 in hip::FatBinaryInfo::AddDevProgram(int) () from "
        "/home/xx/anaconda3/envs/sd1/lib/python3.10/site-packages/torch/lib/libamdhip64.so"
    )
    (m,) = [m for m in explain(log) if m.id == "hip-fatbin-crash"]
    assert m.abstain and "rocminfo" in m.ask and "HSA_OVERRIDE_GFX_VERSION" in m.ask
    # near miss: the same frame in a backtrace of a process that did not crash there
    quiet = "#3 0x00007fffae2b4300 in hip::FatBinaryInfo::BuildProgram(int) ()"
    assert all(m.id != "hip-fatbin-crash" for m in explain(quiet))

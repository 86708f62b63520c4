"""--explain: every signature is recognised in a realistic line, real logs are explained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rocmkit.doctor.explain import explain, signatures

# A line each signature must recognise, as the tools print it.
EXAMPLES = {
    "invalid-device-function": "RuntimeError: HIP error: invalid device function",
    "no-binary-for-gpu": '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
    "tensile-library-missing": "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031",
    "tensile-igpu": "  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no\n  Device 1: AMD Radeon Graphics, gfx1036 (0x1036), VMM: no\nrocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036",
    "tensile-gfx-override": "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1032",
    "kfd-permission-denied": "hsakmt: Unable to open /dev/kfd read-write: Permission denied",
    "kfd-missing": "open /dev/kfd: No such file or directory",
    "rock-module-not-loaded": "\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m",
    "hsa-out-of-resources": "hsa api call failure at: hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)",
    "incompatible-kernel-userspace": "hsaKmtOpenKFD: KFD ioctl version mismatch: kernel 1.12 not supported",
    "pcie-atomics-rejected": "kfd kfd: amdgpu: skipped device 1002:73bf, PCI rejects atomics 730<0",
    "wsl-dxg": "Failed to open /dev/dxg: librocdxg not loaded",
    "dataloader-bus-error": "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.",
    "cuda-wheel-on-amd": "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU",
    "not-compiled-with-cuda": "AssertionError: Torch not compiled with CUDA enabled",
    "not-compiled-with-cuda-nvidia": "NVIDIA-SMI 475.14  Driver Version: 475.14\n"
    "AssertionError: Torch not compiled with CUDA enabled",
    "invalid-kernel-image": "RuntimeError: HIP error: invalid kernel image",
    "cuda-no-kernel-image": "CUDA error: no kernel image is available for execution on the device",
    "cuda-driver-too-old": "CUDA driver version is insufficient for CUDA runtime version",
    "gpu-memory-access-fault": "Memory access fault by GPU node-2 (Agent handle: 0x55d2) on address 0x7f. Reason: Page not present",
    "out-of-memory": "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB",
    "allocator-conf-unknown": "RuntimeError: Unrecognized CachingAllocator option: expandable_segment",
    "collective-timeout": "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)",
    "nccl-system-error": "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
    "hip-library-missing": "OSError: libamdhip64.so.6: cannot open shared object file: No such file or directory",
    "cuda-library-missing": "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    "extension-abi-mismatch": "ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
    "bf16-unsupported": "RuntimeError: \"addmm_cuda\" not implemented for 'BFloat16'",
    "gpu-hang-reset": "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
    "miopen-db": "MIOpen(HIP): Warning [SQLiteBase] Missing system database file: gfx1030_30.kdb",
    "out-of-memory-exceeds-gpu": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a total capacity of 12.00 GiB of which 9.02 GiB is free.",
    "out-of-memory-no-fragmentation": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is free. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated.",
    "out-of-memory-fits-free": "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 MiB. GPU 7 has a total capacity of 287.98 GiB of which 203.49 GiB is free.",
    "out-of-memory-fragmented": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 24.00 GiB of which 1.00 GiB is free. Of the allocated memory 12.00 GiB is allocated by PyTorch, and 9.00 GiB is reserved by PyTorch but unallocated.",
    "tensile-mixed-rocm": "torch 2.3.0+rocm6.2\nrocBLAS error: Could not load /opt/rocm-6.0.0/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat",
    "tensile-shipped-target": "rocBLAS error: Could not load /opt/rocm-6.0.0/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat",
    "nccl-system-error-network": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:410, unhandled system error\nconnection reset by peer",
}


def test_every_signature_has_an_example_or_real_logs_and_matches_it() -> None:
    from test_explain_corpus import LOGS

    by_id = {s.id: s for s in signatures()}
    assert len(by_id) == len(signatures())
    # Catalogue entries (emitter set) have their own examples: tests/doctor/test_catalogue.py.
    ids = [s.id for s in signatures() if not s.emitter]
    with_real_logs = {log.get("expect") for _, log in LOGS}
    assert set(ids) <= set(EXAMPLES) | with_real_logs, set(ids) - set(EXAMPLES) - with_real_logs
    for sig_id, line in EXAMPLES.items():
        # A one-line example fires its family; a variant may be chosen when the line says more.
        found = explain(line)
        assert by_id[sig_id].family in [e.family for e in found], sig_id
        for e in found:  # every template filled, whatever facts the line lacks
            assert not re.search(r"\{\w+\}", e.cause + e.fix), (sig_id, e.cause, e.fix)


def test_explanations_come_in_log_order_with_counts_and_clean_lines() -> None:
    log = "\n".join(
        [
            "starting training",
            EXAMPLES["rock-module-not-loaded"],
            EXAMPLES["invalid-device-function"],
            EXAMPLES["invalid-device-function"],
        ]
    )
    found = explain(log)
    assert [(e.id, e.line_number, e.count) for e in found] == [
        ("rock-module-not-loaded", 2, 1),
        ("invalid-device-function", 3, 2),
    ]
    assert "\x1b" not in found[0].line


@pytest.mark.parametrize("text", ["", "all good\nloss 0.1\n", "\x00\x01"])
def test_nothing_known_gives_nothing(text: str) -> None:
    assert explain(text) == []


def test_real_no_gpu_outputs(shared_fixtures: Path) -> None:
    rocminfo = explain((shared_fixtures / "nogpu/rocminfo.txt").read_text())
    assert [e.id for e in rocminfo] == ["rock-module-not-loaded"]
    smi = explain((shared_fixtures / "nogpu/rocm-smi.txt").read_text())
    assert [e.id for e in smi] == ["rock-module-not-loaded"]

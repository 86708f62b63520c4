"""dtypes, sdpa and smoke checks from fake probe reports; and the real probe on this CPU."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from doctor_fakes import MI300X, RX6700, platform, probe_report

from rocmkit.doctor.checks_compute import check_dtypes, check_sdpa, check_smoke
from rocmkit.doctor.context import TorchFacts
from rocmkit.doctor.probe import ProbeReport, run_probe

TIMED_OUT = ProbeReport(error="timed out after 60s (a GPU kernel or driver call hung)")


def test_smoke_ok_on_gpu_and_on_cpu(make_ctx):
    gpu = check_smoke(make_ctx(platform("rocm", [MI300X]), probe=probe_report("cuda:0")))
    assert gpu.status == "ok" and "cuda:0" in gpu.summary
    cpu = check_smoke(make_ctx(platform("cuda"), probe=probe_report("cpu")))
    assert cpu.status == "ok" and "no GPU: ran on the CPU only" in cpu.summary


def test_smoke_warns_when_gpus_exist_but_only_the_cpu_was_tested(make_ctx):
    hidden = replace(MI300X, visible_to_torch=False)
    finding = check_smoke(make_ctx(platform("cuda", [hidden]), probe=probe_report("cpu")))
    assert finding.status == "warn" and "cannot use them" in finding.summary


def test_smoke_fails_on_wrong_numbers_and_on_a_hung_probe(make_ctx):
    wrong = check_smoke(
        make_ctx(platform("rocm", [MI300X]), probe=probe_report("cuda:0", smoke_matmul="wrong"))
    )
    assert wrong.status == "fail" and "matmul" in wrong.summary
    hung = check_smoke(make_ctx(platform("rocm", [MI300X]), probe=TIMED_OUT))
    assert hung.status == "fail" and "timed out" in hung.summary


def test_sdpa_states(make_ctx):
    rocm = platform("rocm", [MI300X])
    ok = check_sdpa(make_ctx(rocm))
    assert ok.status == "ok" and "flash, efficient, math work" in ok.summary
    only_math = probe_report("cuda:0", sdpa_flash="unsupported", sdpa_efficient="unsupported")
    assert check_sdpa(make_ctx(rocm, probe=only_math)).status == "warn"
    assert (
        check_sdpa(make_ctx(rocm, probe=probe_report("cuda:0", sdpa_math="error"))).status == "fail"
    )
    assert (
        check_sdpa(make_ctx(rocm, probe=probe_report("cuda:0", sdpa_flash="wrong"))).status
        == "fail"
    )
    # The CPU has no fused "efficient" kernel; that is not a problem there.
    cpu = probe_report("cpu", sdpa_efficient="unsupported")
    assert check_sdpa(make_ctx(platform("cuda"), probe=cpu)).status == "ok"


def test_dtypes_cpu_and_cdna3(make_ctx):
    cpu = check_dtypes(make_ctx(platform("cuda"), probe=probe_report("cpu")))
    assert cpu.status == "ok" and "avx512_bf16" in cpu.summary
    mi300 = check_dtypes(make_ctx(platform("rocm", [MI300X])))
    assert mi300.status == "ok" and "torch.float8_e4m3fnuz" in mi300.summary


def test_dtypes_rdna2_bf16_is_not_trusted(make_ctx):
    finding = check_dtypes(make_ctx(platform("rocm", [RX6700])))
    assert (
        finding.status == "warn" and "no bf16 hardware" in finding.summary and "fp16" in finding.fix
    )


def test_dtypes_fp8_flavour_missing_from_torch_warns(make_ctx):
    facts = TorchFacts(importable=True, dtypes=("float8_e4m3fn",))
    finding = check_dtypes(make_ctx(platform("rocm", [MI300X]), facts=facts))
    assert finding.status == "warn" and "float8_e4m3fnuz" in finding.summary


def test_dtypes_failed_bf16_kernel_fails(make_ctx):
    finding = check_dtypes(
        make_ctx(platform("rocm", [MI300X]), probe=probe_report("cuda:0", dtype_bf16="error"))
    )
    assert finding.status == "fail" and "bf16" in finding.fix


@pytest.mark.slow
def test_real_probe_on_this_machine_runs_and_compares():
    import torch

    report = run_probe(os.environ, timeout_s=120)
    assert report.error is None
    assert report.gpu == torch.cuda.is_available()
    first = report.devices[0]
    for key in ("smoke.matmul", "sdpa.math"):  # the probe's own words when it is not ok
        outcome = first.outcomes[key]
        assert outcome.status == "ok", f"{key}: {outcome.status} {outcome.detail}"


def test_probe_timeout_is_reported_not_raised():
    report = run_probe(os.environ, timeout_s=0.05)
    assert report.devices == () and "timed out" in report.error


@pytest.mark.gpu
def test_real_probe_on_a_gpu_uses_every_visible_gpu():
    import torch

    report = run_probe(os.environ, timeout_s=300)
    assert report.error is None and report.gpu
    assert [p.device for p in report.devices] == [
        f"cuda:{i}" for i in range(torch.cuda.device_count())
    ]
    assert all(p.outcomes["smoke.matmul"].status == "ok" for p in report.devices)

"""Platform detection basics that hold on any machine."""

from __future__ import annotations

from rocmkit.platform import detect
from rocmkit.platform.cpu import parse_cpuinfo
from rocmkit.platform.versions import read_rocm_version


def test_detect_on_this_machine_agrees_with_torch():
    import torch

    platform = detect()
    assert platform.torch_version == torch.__version__
    assert platform.gpu_available == torch.cuda.is_available()
    if not torch.cuda.is_available():
        assert platform.devices == () and platform.torch_device == "cpu"
    assert platform.record()["torch_device"] == platform.torch_device


def test_parse_cpuinfo_counts_cores_and_flags():
    text = (
        "processor\t: 0\nmodel name\t: AMD EPYC 9654\nphysical id\t: 0\ncore id\t: 0\n"
        "flags\t\t: fpu avx avx2 avx512f avx512_bf16 sse\n\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 9654\nphysical id\t: 0\ncore id\t: 0\n"
        "flags\t\t: fpu avx avx2 avx512f avx512_bf16 sse\n"
    )
    info = parse_cpuinfo(text)
    assert info.model == "AMD EPYC 9654"
    assert (info.num_logical_cores, info.num_physical_cores) == (2, 1)
    assert info.flags == ("avx", "avx2", "avx512f", "avx512_bf16")


def test_rocm_version_read_from_injected_root(tmp_path):
    assert read_rocm_version(tmp_path) is None
    (tmp_path / "opt/rocm/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm/.info/version").write_text("6.2.4-120\n")
    assert read_rocm_version(tmp_path) == "6.2.4"


def test_platform_public_api_is_pinned():
    import rocmkit.platform

    assert rocmkit.platform.__all__ == sorted(rocmkit.platform.__all__)
    assert set(rocmkit.platform.__all__) == {
        "ArchFacts",
        "ArchSpec",
        "CpuInfo",
        "DeviceInfo",
        "Platform",
        "arch_facts",
        "detect",
        "lookup_spec",
    }


def test_detect_survives_a_torch_that_fails_to_import(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def broken_import(name, *args, **kwargs):
        if name == "torch":
            raise OSError("libamdhip64.so.6: cannot open shared object file")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken_import)
    platform = detect()
    assert (
        platform.torch_version is None and platform.backend == "cpu" and not platform.gpu_available
    )

"""`rocmkit doctor --from` with several outputs of one machine: one GPU list, everything known
per GPU (real pastes; sources in tests/fixtures/smi_text/SOURCES.md)."""

from __future__ import annotations

import json

from rocmkit.cli.main import main
from rocmkit.doctor.diagnose import diagnose_from
from rocmkit.doctor.pasted import diagnose_pasted

STRIX_HALO = ("amd-smi_table_strix-halo_rocm7.1.txt", "rocminfo_strix-halo_gfx1151_rocm7.1.txt")


def test_two_files_of_one_machine_give_one_gpu_list(local_fixtures):
    """ROCm/ROCm#5643: the amd-smi table names the GPU and its bus; rocminfo gives the gfx
    target, CUs and memory. Joined by PCI bus id into one row."""
    paths = tuple(str(local_fixtures / "smi_text" / name) for name in STRIX_HALO)
    (finding,) = diagnose_from(paths).findings
    assert finding.id == "from:" + "+".join(STRIX_HALO) and finding.status == "ok"
    assert finding.summary.startswith("amd-smi (table) + rocminfo: 1 GPU(s)")
    gpu_line, joined = finding.detail.splitlines()
    assert gpu_line.startswith(
        "GPU 0: AMD Radeon Graphics, gfx1151 (RDNA3.5, iGPU), 40 CUs, 120.0 GiB"
    )
    assert joined.startswith("joined amd-smi (table) and rocminfo by PCI bus id")


def test_cli_from_two_files_of_one_machine(local_fixtures, capsys):
    paths = [str(local_fixtures / "smi_text" / name) for name in STRIX_HALO]
    assert main(["doctor", "--from", *paths, "--json"]) == 0
    (finding,) = json.loads(capsys.readouterr().out)["data"]["findings"]
    assert "gfx1151" in finding["summary"] and "40 CUs" in finding["summary"]


def test_list_and_product_names_of_one_machine_join_and_answer_the_paste_static_note(
    local_fixtures,
):
    names = ("amd-smi_list_mi210_x2.txt", "rocm-smi_showproductname_mi210_x2.txt")
    texts = {n: (local_fixtures / "smi_text" / n).read_text() for n in names}
    (finding,) = diagnose_pasted(texts).findings
    assert finding.status == "ok" and "paste `amd-smi static`" not in finding.detail
    assert finding.detail.count("Instinct MI210, gfx90a (CDNA2), peak bf16 181 TFLOPS") == 2


def test_outputs_of_two_machines_stay_two_findings(local_fixtures, shared_fixtures):
    texts = {
        "l.txt": (local_fixtures / "smi_text/nvidia-smi_-L_a100_80gb_x4_mig.txt").read_text(),
        "q.txt": (shared_fixtures / "nvidia-smi/nvidia-smi_-q_a100_sxm4_80gb_x4.txt").read_text(),
    }
    assert [f.id for f in diagnose_pasted(texts).findings] == ["from:l.txt", "from:q.txt"]


def test_derived_gfx_target_and_cus_are_shown(local_fixtures, shared_fixtures):
    texts = {
        "list.txt": (local_fixtures / "smi_text/amd-smi_list_mi210_x2_dup-uuid.txt").read_text(),
        "rocminfo.txt": (
            shared_fixtures / "rocminfo/rocminfo_mi300x_x4_gfx942_rocm6.2.txt"
        ).read_text(),
    }
    listed, rocminfo = diagnose_pasted(texts).findings
    assert (
        "GPU 1: unnamed (PCI device 0x740f), gfx90a (CDNA2, derived from PCI id 0x740f)"
        in listed.detail
    )
    assert "AMD Instinct MI300X, gfx942 (CDNA3), 304 CUs, 192.0 GiB" in rocminfo.detail


def test_a_log_that_quotes_an_nvidia_smi_list_line_stays_a_log():
    log = (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)\n"
        "Traceback (most recent call last):\n"
    )
    (finding,) = diagnose_pasted({"run.log": log}).findings
    assert finding.id == "from:run.log:cuda-no-kernel-image" and finding.status == "fail"

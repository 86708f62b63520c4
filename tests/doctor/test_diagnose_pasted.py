"""diagnose_pasted on real pastes of another machine (tests/fixtures/smi_text, SOURCES.md)."""

from __future__ import annotations

from rocmkit.doctor.pasted import diagnose_pasted


def _paste(local_fixtures, *names):
    return {name: (local_fixtures / "smi_text" / name).read_text() for name in names}


def test_amd_smi_list_shows_each_gpu_by_its_device_id_and_asks_for_static(local_fixtures):
    report = diagnose_pasted(_paste(local_fixtures, "amd-smi_list_mi210_x2_dup-uuid.txt"))
    (finding,) = report.findings
    assert finding.status == "warn" and finding.summary.startswith("amd-smi: 2 GPU(s)")
    assert "GPU 1: unnamed (PCI device 0x740f)" in finding.detail
    assert "paste `amd-smi static`" in finding.detail and "apart by BDF" in finding.detail


def test_rocm_smi_product_name_of_the_same_machine_gives_the_mi210_figures(local_fixtures):
    report = diagnose_pasted(_paste(local_fixtures, "rocm-smi_showproductname_mi210_x2.txt"))
    (finding,) = report.findings
    assert finding.status == "ok"
    assert (
        finding.detail.count("gfx90a (CDNA2), peak bf16 181 TFLOPS dense (AMD Instinct MI210)") == 2
    )


def test_a_figure_not_rechecked_against_the_vendor_table_says_so():
    text = "index, name, memory.total [MiB]\n0, NVIDIA L40S, 46068 MiB\n1, NVIDIA H100 NVL, 95830 MiB\n"
    (finding,) = diagnose_pasted({"smi.csv": text}).findings
    l40s, nvl = finding.detail.splitlines()
    assert "peak bf16 362.05 TFLOPS dense (NVIDIA L40S)" in l40s
    assert "peak bf16 835.5 TFLOPS dense (NVIDIA H100 NVL, not re-checked" in nvl

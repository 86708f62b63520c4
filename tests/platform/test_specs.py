"""The hardware-facts table: every product resolvable by its real device names, no guessing."""

from __future__ import annotations

import csv

import pytest

from rocmkit.platform.specs import all_arch_facts, all_specs, arch_facts, lookup_spec

REQUIRED_PRODUCTS = {
    ("gfx90a", "AMD Instinct MI250X"): "mi250x",
    ("gfx90a", "AMD INSTINCT MI250 (MCM) OAM AC MBA"): "mi250",  # rocm-smi's spelling
    ("gfx90a", "AMD Instinct MI210"): "mi210",
    ("gfx942", "AMD Instinct MI300X"): "mi300x",
    ("gfx942:sramecc+:xnack-", "AMD Instinct MI300X"): "mi300x",  # torch's gcnArchName
    ("gfx942", "AMD Instinct MI300A"): "mi300a",
    ("gfx942", "AMD Instinct MI325X"): "mi325x",
    ("gfx950", "AMD Instinct MI355X"): "mi355x",
    ("gfx1100", "Radeon RX 7900 XTX"): "rx7900xtx",
    ("gfx1100", "AMD Radeon PRO W7900"): "w7900",
    ("gfx1201", "AMD Radeon RX 9070 XT"): "rx9070xt",
    ("sm_80", "NVIDIA A100-SXM4-80GB"): "a100-sxm4-80gb",
    ("sm_80", "NVIDIA A100-SXM4-40GB"): "a100-sxm4-40gb",
    ("sm_80", "NVIDIA A100 80GB PCIe"): "a100-pcie-80gb",
    ("sm_90", "NVIDIA H100 80GB HBM3"): "h100-sxm",  # what an H100 SXM calls itself
    ("sm_90", "NVIDIA H100 PCIe"): "h100-pcie",
    ("sm_90", "NVIDIA H200"): "h200",
}


@pytest.mark.parametrize(("arch", "name"), list(REQUIRED_PRODUCTS))
def test_required_products_resolve_from_real_device_names(arch, name):
    spec = lookup_spec(arch, name)
    assert spec is not None and spec.key == REQUIRED_PRODUCTS[(arch, name)]


@pytest.mark.parametrize(
    ("arch", "name"),
    [
        ("gfx942", None),  # MI300X, MI300A and MI325X share it
        ("gfx950", None),
        ("sm_90", "NVIDIA H800 PCIe"),  # a different product: no row, no borrowed figures
        ("gfx90a", "AMD Instinct MI250X / MI250"),  # ambiguous marketing name
        ("gfx1100", "AMD Radeon RX 7900 XT"),  # not the XTX
        ("gfx942", "NVIDIA H100 80GB HBM3"),  # name from another arch
        ("sm_89", "NVIDIA GeForce RTX 4080"),
        ("gfx1100", "Navi 31 [Radeon RX 7900 XT/7900 XTX]"),  # lists two: never the bigger one
        ("gfx1201", "Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]"),
        ("gfx9999", "Mystery GPU"),
        (None, "AMD Instinct MI300X"),
    ],
)
def test_unknown_or_ambiguous_devices_get_no_figures(arch, name):
    assert lookup_spec(arch, name) is None


def test_every_product_row_is_sourced_and_consistent():
    """Figures a source does not state are absent (n/a), never guessed; those present agree."""
    for spec in all_specs():
        assert spec.source and spec.match and spec.peak_tflops, spec.key
        bandwidth = spec.memory_bandwidth_gbps
        assert bandwidth is None or bandwidth > 100, spec.key
        assert all(v > 0 for v in spec.peak_tflops.values()), spec.key
        fp32, fp16, fp8 = (spec.peak_for(d) for d in ("fp32", "fp16", "fp8"))
        # Lower precision never has a lower peak than a higher one on any of these chips.
        assert fp32 is None or fp16 is None or fp16 >= fp32, spec.key
        assert fp8 is None or fp16 is None or fp8 >= fp16, spec.key
    with_all = [s for s in all_specs() if all(s.peak_for(d) for d in ("fp32", "fp16", "bf16"))]
    assert len(with_all) >= 20


def test_peak_for_accepts_aliases_and_reports_missing_dtypes_as_none():
    mi300x = lookup_spec("gfx942", "AMD Instinct MI300X")
    assert mi300x.peak_for("xf32") == mi300x.peak_for("tf32") > mi300x.peak_for("fp32")
    assert mi300x.peak_for("torch.bfloat16") == mi300x.peak_for("bf16")
    mi250x = lookup_spec("gfx90a", "AMD Instinct MI250X")
    assert mi250x.peak_for("fp8") is None and mi250x.peak_for("tf32") is None


def test_h200_shares_h100_compute_but_not_its_bandwidth():
    h100 = lookup_spec("sm_90", "NVIDIA H100 80GB HBM3")
    h200 = lookup_spec("sm_90", "NVIDIA H200")
    assert h100.peak_for("bf16") == h200.peak_for("bf16")
    assert h200.memory_bandwidth_gbps > h100.memory_bandwidth_gbps


@pytest.mark.parametrize(
    ("arch", "family", "wave", "sizes"),
    [
        ("gfx1100", "RDNA3", 32, (32, 64)),
        ("gfx1151", "RDNA3.5", 32, (32, 64)),
        ("gfx1030", "RDNA2", 32, (32, 64)),
        ("gfx90a", "CDNA2", 64, (64,)),
        ("gfx942:sramecc+:xnack-", "CDNA3", 64, (64,)),
        ("gfx950", "CDNA4", 64, (64,)),
        ("sm_90", "Hopper", 32, (32,)),
        ("SM90", "Hopper", 32, (32,)),
    ],
)
def test_arch_facts_without_a_product_row(arch, family, wave, sizes):
    facts = arch_facts(arch)
    assert (facts.family, facts.wavefront_size, facts.wavefront_sizes) == (family, wave, sizes)


def test_fp8_flavour_and_bf16_truth_per_arch():
    assert arch_facts("gfx942").fp8_flavour == "e4m3fnuz"  # MI300 uses the fnuz variant
    assert arch_facts("gfx950").fp8_flavour == "e4m3fn"
    assert arch_facts("gfx1100").fp8_flavour is None
    assert not arch_facts("gfx1030").bf16_hardware  # RDNA2: torch says yes, kernels crash
    assert arch_facts("gfx1100").bf16_hardware
    assert arch_facts("gfx77") is None


def test_families_agree_with_amds_spec_page(shared_fixtures):
    with open(shared_fixtures / "gfx_targets_rocm_docs.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    facts = all_arch_facts()
    checked = 0
    for row in rows:
        ours = facts.get(row["gfx_target"])
        if ours is None or row["architecture"].startswith("GCN"):
            continue  # AMD's page splits GCN finer than the table needs
        assert ours.family == row["architecture"], row["gfx_target"]
        assert ours.wavefront_size == int(row["wavefront_size"]), row["gfx_target"]
        checked += 1
    assert checked >= 20


def test_peaks_agree_with_amds_pages_where_they_state_them(shared_fixtures):
    with open(shared_fixtures / "gfx_targets_rocm_docs.csv", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["peak_matrix_fp16_tflops"]]
    assert rows
    for row in rows:
        spec = lookup_spec(row["gfx_target"], "AMD Instinct " + row["model"])
        assert spec is not None, row["model"]
        assert spec.peak_for("fp16") == pytest.approx(float(row["peak_matrix_fp16_tflops"]))
        assert spec.peak_for("bf16") == pytest.approx(float(row["peak_matrix_bf16_tflops"]))
        tb_s = float(row["peak_mem_bandwidth_tb_s"])
        assert spec.memory_bandwidth_gbps / 1000 == pytest.approx(tb_s, rel=0.05)


@pytest.mark.parametrize(
    ("arch", "name", "key", "bf16"),
    [
        ("gfx1201", "AMD Radeon AI PRO R9700", "r9700", 191.3),
        ("gfx1201", "AMD Radeon RX 9070", "rx9070", None),  # the source gives no matrix figure
        ("gfx1201", "AMD Radeon RX 9070 XT", "rx9070xt", 194.6),
        ("sm_89", "NVIDIA L4", "l4", 121),
        ("sm_89", "NVIDIA L40S", "l40s", 362.05),
        ("sm_89", "NVIDIA GeForce RTX 4090", "rtx4090", 165.2),
        ("sm_120", "NVIDIA GeForce RTX 5090", "rtx5090", None),
        ("sm_120", "NVIDIA GeForce RTX 5060 Ti", "rtx5060ti", None),
        ("sm_90", "NVIDIA H100 NVL", "h100-nvl", 835.5),
        ("sm_90", "NVIDIA H200 NVL", "h200-nvl", 835.5),
        ("sm_90", "NVIDIA GH200 480GB", "gh200", 989.4),
        ("sm_100", "NVIDIA B200", "b200", 2250),
    ],
)
def test_products_added_for_issue_12_resolve_with_a_source(arch, name, key, bf16):
    spec = lookup_spec(arch, name)
    assert spec is not None and spec.key == key and spec.source
    assert spec.peak_for("bf16") == bf16


@pytest.mark.parametrize("arch", ["gfx90c", "gfx902", "gfx1013", "gfx1033", "gfx1037", "gfx1153"])
def test_igpu_archs_are_flagged_integrated(arch):
    facts = arch_facts(arch)
    assert facts is not None and facts.integrated and facts.vendor == "amd"


def test_ambiguous_names_say_why():
    from rocmkit.platform.specs import find_spec_by_name, spec_ambiguity

    assert "several products" in spec_ambiguity("Navi 31 [Radeon RX 7900 XT/7900 XTX]")
    assert spec_ambiguity("AMD Radeon RX 7900 XTX") is None
    assert find_spec_by_name("AMD Radeon RX 7900 XTX").key == "rx7900xtx"
    assert find_spec_by_name("Navi 31 [Radeon RX 7900 XT/7900 XTX]") is None


@pytest.mark.parametrize(
    ("arch", "mib"),
    [("gfx942", 256), ("gfx950", 256), ("gfx1100", 96), ("gfx1201", 64), ("gfx1151", 32),
     ("gfx1030", 128), ("gfx90a", 0), ("gfx1103", 0), ("sm_90", 0), ("gfx9999", 0), (None, 0)],
)  # fmt: skip
def test_last_level_cache_per_arch_and_the_flush_buffer_that_evicts_it(arch, mib):
    from rocmkit.measure.timing import flush_bytes_for
    from rocmkit.platform.specs import last_level_cache_bytes

    assert last_level_cache_bytes(arch) == mib * 2**20
    # The timing flush overwrites twice the largest cache in front of memory (at least 64 MiB).
    assert flush_bytes_for(arch, 4 * 2**20) == max(64 * 2**20, 2 * mib * 2**20)


def test_every_last_level_cache_figure_cites_amds_spec_page():
    sized = {a: f for a, f in all_arch_facts().items() if f.last_level_cache_mib is not None}
    assert len(sized) >= 10
    for arch, facts in sized.items():
        assert facts.vendor == "amd" and facts.last_level_cache_mib > 0, arch
        assert facts.last_level_cache_source.startswith("https://github.com/ROCm/"), arch
        assert "gpu-specs.rst" in facts.last_level_cache_source or (
            "gpu-arch-specs.rst" in facts.last_level_cache_source
        ), arch


def test_last_level_caches_agree_with_amds_spec_page(shared_fixtures):
    """The largest L3/Infinity Cache of each arch on the ROCm spec page (shared CSV copy)."""
    largest: dict[str, int] = {}
    with (shared_fixtures / "gfx_targets_rocm_docs.csv").open() as f:
        for row in csv.DictReader(f):
            cache = row["l3_or_infinity_cache_mib"]
            if cache.isdigit():
                arch = row["gfx_target"]
                largest[arch] = max(largest.get(arch, 0), int(cache))
    known = {arch: mib for arch, mib in largest.items() if arch_facts(arch) is not None}
    assert known  # the copy lists caches of archs we know; an empty loop would check nothing
    for arch, mib in known.items():
        # A missing figure fails too: the page gives one, so the timing flush must evict it.
        assert arch_facts(arch).last_level_cache_mib == mib, arch


ISSUE_12_ROWS = {"r9700", "rx9070", "rx9070xt", "l4", "l40s", "rtx4090", "rtx5090", "rtx5060ti",
                 "h100-nvl", "h200-nvl", "gh200", "b200"}  # fmt: skip
FIGURES = {"peak_tflops", "memory_bandwidth_gbps", "memory_gib"}


def test_issue_12_rows_say_dense_or_halved_sparse_and_what_was_not_rechecked():
    rows = {s.key: s for s in all_specs() if s.key in ISSUE_12_ROWS}
    assert set(rows) == ISSUE_12_ROWS
    for key, spec in rows.items():
        assert spec.peaks in ("dense as printed", "sparse figures halved"), key
        assert set(spec.unverified) <= FIGURES | set(spec.peak_tflops), key
        if not spec.source_url:  # nothing was read here: every figure present is flagged
            present = {"peak_tflops"} | (
                {"memory_bandwidth_gbps"} if spec.memory_bandwidth_gbps else set()
            )
            assert present <= set(spec.unverified), key
    assert rows["l40s"].checked("bf16") and not rows["r9700"].checked("bf16")
    assert rows["rx9070xt"].checked("fp32") and not rows["rx9070xt"].checked("fp8")
    # A dtype as torch names it is the same figure as its short name (peak_for reads both).
    assert not rows["rx9070xt"].checked("torch.bfloat16") and rows["l40s"].checked("bfloat16")
    assert not rows["rtx4090"].checked("memory_bandwidth_gbps")


def test_hopper_fp64_is_the_tensor_core_rate_on_every_row():
    """fp64 means the best fp64 GEMM rate (FP64 Tensor Core): the vector rate (half of it) on an
    NVL row would halve the fp64 MFU denominator against the SXM/PCIe rows."""
    hopper = [s for s in all_specs() if s.arch == "sm_90"]
    assert len(hopper) >= 6
    for spec in hopper:
        assert spec.peak_for("fp64") == spec.peak_for("fp32"), spec.key


def test_gddr6_bandwidth_is_the_vendors_20_gbps_figure_not_a_tools_reading():
    """RX 9070 family and R9700: 20 Gbps x 256 bit / 8 = 640 GB/s (GPU-Z's 20.1 Gbps: 644.6)."""
    for key in ("r9700", "rx9070", "rx9070xt"):
        (spec,) = [s for s in all_specs() if s.key == key]
        assert spec.memory_bandwidth_gbps == 20 * 256 / 8 and spec.compute_units in (56, 64)


def test_b200_per_gpu_figures_of_the_current_hgx_table():
    spec = lookup_spec("sm_100", "NVIDIA B200")
    assert spec.memory_bandwidth_gbps == 7700 and spec.peak_for("fp32") == 75
    assert spec.peak_for("bf16") == 2250 and spec.peaks == "sparse figures halved"

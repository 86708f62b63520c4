"""Text outputs people paste (nvidia-smi -q, rocm-smi, amd-smi), read from real pastes in
tests/fixtures/smi_text (sources in its SOURCES.md) and ../shared/fixtures when present."""

from __future__ import annotations

import pytest

from rocmkit.platform.smi import (
    SmiParseError,
    parse_amd_smi_json,
    parse_nvidia_smi_csv,
    parse_nvidia_smi_xml,
    parse_rocm_smi_json,
    parse_rocminfo,
)
from rocmkit.platform.smi_text import (
    amd_smi_uuid_device_id,
    memory_bytes,
    parse_amd_smi_table,
    parse_amd_smi_text,
    parse_nvidia_smi_list,
    parse_nvidia_smi_q,
    parse_rocm_smi_text,
)


@pytest.fixture
def paste(local_fixtures):
    return lambda name: (local_fixtures / "smi_text" / name).read_text()


def test_rocm_smi_showproductname_text_and_csv(paste):
    (fury,) = parse_rocm_smi_text(paste("rocm-smi_showproductname_r9-fury.txt")).gpus
    assert fury.name == "Fiji [Radeon R9 FURY / NANO Series]"
    mi100 = parse_rocm_smi_text(paste("rocm-smi_showproductname_csv_mi100_x2.txt")).gpus
    assert [(g.index, g.name) for g in mi100] == [
        (0, "Arcturus GL-XL [AMD Instinct MI100]")
    ] * 1 + [(1, "Arcturus GL-XL [AMD Instinct MI100]")]


def test_rocm_smi_4_pci_ids_are_not_taken_for_names(paste):
    (gpu,) = parse_rocm_smi_text(paste("rocm-smi_showproductname_mi100_rocm4.0.txt")).gpus
    assert gpu.index == 0 and gpu.name is None


def test_rocm_smi_concise_table_is_refused_with_the_command_to_paste(paste):
    with pytest.raises(SmiParseError, match="--showproductname"):
        parse_rocm_smi_text(paste("rocm-smi_concise_r9700.txt"))


def test_amd_smi_static_text(paste):
    (gpu,) = parse_amd_smi_text(paste("amd-smi_static_mi350x.txt")).gpus
    assert (gpu.name, gpu.arch, gpu.num_compute_units) == ("AMD Instinct MI350X", "gfx950", 128)
    assert gpu.pci_bus_id == "0000:05:00.0" and gpu.driver_version == "6.18.3"


def test_amd_smi_metric_text_gives_the_gpu_without_inventing_a_name(paste):
    (gpu,) = parse_amd_smi_text(paste("amd-smi_metric_excerpt.txt")).gpus
    assert gpu.index == 0 and gpu.name is None and gpu.arch is None


def test_amd_smi_list_text_gives_bdf_uuid_and_the_device_id_inside_the_uuid(paste):
    report = parse_amd_smi_text(paste("amd-smi_list_mi210_x2.txt"))
    assert [(g.index, g.pci_bus_id, g.device_id) for g in report.gpus] == [
        (0, "0000:03:00.0", "0x740f"),
        (1, "0000:83:00.0", "0x740f"),
    ]
    assert report.gpus[1].uuid == "95ff740f-0000-1000-80a1-ca7691e7c391"
    assert report.gpus[0].name is None and report.gpus[0].arch is None
    assert report.notes == (
        "this output names no product or gfx target: paste `amd-smi static` for them",
    )


def test_amd_smi_list_with_duplicate_serial_less_uuids_says_to_use_the_bdf(paste):
    report = parse_amd_smi_text(paste("amd-smi_list_mi210_x2_dup-uuid.txt"))
    assert [g.pci_bus_id for g in report.gpus] == ["0000:03:00.0", "0000:83:00.0"]
    assert any("tell the GPUs apart by BDF" in note for note in report.notes)


def test_amd_smi_list_ai_nic_block_is_no_gpu(paste):
    (gpu,) = parse_amd_smi_text(paste("amd-smi_list_mi210_with_ai-nic.txt")).gpus
    assert (gpu.pci_bus_id, gpu.device_id) == ("0000:23:00.0", "0x740f")


def test_amd_smi_list_and_static_of_an_igpu_rocm6(paste):
    """ROCm 6 `list` printed only BDF and UUID; that `static` had no gfx target or CU count."""
    (listed,) = parse_amd_smi_text(paste("amd-smi_list_780m_phoenix3.txt")).gpus
    (static,) = parse_amd_smi_text(paste("amd-smi_static_780m_phoenix3_excerpt.txt")).gpus
    assert listed.pci_bus_id == static.pci_bus_id == "0000:65:00.0"
    assert listed.device_id == static.device_id == "0x1900"
    assert (static.name, static.arch, static.driver_version) == ("Phoenix3", None, "7.0.14-17-pve")


@pytest.mark.parametrize(
    ("uuid", "device_id"),
    [
        ("67ff74a1-0000-1000-8081-b5b9fd6edd00", "0x74a1"),
        ("670074a1-0000-1000-8081-b5b9fd6edd00", "0x74a1"),  # a VF: function index 00
        ("00ffffff-0000-1000-8000-000000000000", None),  # WSL: device id unknown
        ("GPU-67c63ac3c3c637f9", None),  # rocminfo's Uuid is another thing
        (None, None),
    ],
)
def test_device_id_from_an_amd_smi_uuid(uuid, device_id):
    assert amd_smi_uuid_device_id(uuid) == device_id


def test_rocm_smi_showproductname_mi210_keeps_the_pci_id_as_device_id(paste):
    gpus = parse_rocm_smi_text(paste("rocm-smi_showproductname_mi210_x2.txt")).gpus
    assert [(g.name, g.arch, g.device_id) for g in gpus] == [
        ("Instinct MI210", "gfx90a", "0x740f")
    ] * 2


def test_nvidia_smi_q_text(paste):
    report = parse_nvidia_smi_q(paste("nvidia-smi_-q_gtx1080_excerpt.txt"))
    (gpu,) = report.gpus
    assert gpu.name == "GeForce GTX 1080" and gpu.pci_bus_id == "00000000:01:00.0"
    assert report.versions == {"Driver Version": "396.54"} and report.notes == ()


def test_nvidia_smi_q_of_one_gpu_among_four_says_so(paste):
    report = parse_nvidia_smi_q(paste("nvidia-smi_-q_i0_of_4_gtx1080ti_excerpt.txt"))
    assert [g.name for g in report.gpus] == ["GeForce GTX 1080 Ti"]
    assert report.notes == ("1 of 4 attached GPUs shown (an `-i` query or a cut paste)",)


@pytest.mark.parametrize("parser", [parse_rocm_smi_text, parse_amd_smi_text, parse_nvidia_smi_q])
@pytest.mark.parametrize(
    "name",
    ["amd-smi_static_mi350x.txt", "nvidia-smi_-q_gtx1080_excerpt.txt", "rocm-smi_showproductname_r9-fury.txt"],
)  # fmt: skip
def test_every_parser_refuses_the_other_formats(parser, name, paste):
    own = {
        parse_rocm_smi_text: "rocm-smi",
        parse_amd_smi_text: "amd-smi",
        parse_nvidia_smi_q: "nvidia-smi",
    }[parser]
    if name.startswith(own):
        assert parser(paste(name)).gpus
    else:
        with pytest.raises(SmiParseError, match="not "):
            parser(paste(name))


def test_nvidia_smi_csv_with_units_in_the_values():
    """`--format=csv` (without nounits) repeats the unit: "16311 MiB" is a number, not missing."""
    rows = parse_nvidia_smi_csv(
        "name, memory.total [MiB], power.limit [W]\nNVIDIA GeForce RTX 4080, 16311 MiB, [N/A]\n"
    )
    assert rows == [
        {"name": "NVIDIA GeForce RTX 4080", "memory.total": "16311", "power.limit": None}
    ]


def test_rocminfo_with_edited_agent_headers_is_an_error_not_zero_agents(local_fixtures):
    text = (local_fixtures / "platform/rocminfo_mi250x_x1.txt").read_text()
    assert parse_rocminfo(text).gpus
    unframed = text.replace("*******", "")  # the asterisk rows lost in a paste: still read
    assert len(parse_rocminfo(unframed).agents) == len(parse_rocminfo(text).agents)
    edited = text.replace("Agent ", "Device ")
    with pytest.raises(SmiParseError, match="unedited"):
        parse_rocminfo(edited)


@pytest.mark.parametrize(
    "text, size", [("81559 MiB", 81559 * 2**20), ("196592 MB", 196592 * 2**20), ("N/A", None)]
)
def test_memory_sizes(text, size):
    assert memory_bytes(text) == size


def test_shared_real_outputs(shared_fixtures):
    h100 = parse_nvidia_smi_q(
        (shared_fixtures / "nvidia-smi/nvidia-smi_-q_h100_sxm_x8.txt").read_text()
    )
    assert len(h100.gpus) == 8 and h100.gpus[0].memory_total_bytes == 81559 * 2**20
    assert h100.gpus[0].architecture_name == "Hopper"
    mi300 = parse_rocm_smi_text(
        (shared_fixtures / "rocm-smi/rocm-smi_-a_showallinfo_mi300x_x4.txt").read_text()
    )
    assert [g.name for g in mi300.gpus] == ["AMD Instinct MI300X OAM"] * 4
    assert mi300.versions == {"Driver version": "6.7.0"}
    mi308 = parse_amd_smi_text(
        (shared_fixtures / "amd-smi/amd-smi_static_--asic_mi308x_changelog.txt").read_text()
    )
    assert [(g.name, g.arch) for g in mi308.gpus] == [("MI308X", "gfx942")]
    with pytest.raises(SmiParseError):
        parse_rocm_smi_text(
            (shared_fixtures / "rocm-smi/rocm-smi_concise_mi300x_x4.txt").read_text()
        )


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (parse_nvidia_smi_csv, "name, memory.total [MiB]\n"),
        (parse_rocm_smi_json, '{"system": {"Driver version": "6.7.0"}}'),
        (parse_amd_smi_json, '{"gpu_data": []}'),
        (parse_nvidia_smi_xml, "<nvidia_smi_log><driver_version>550</driver_version></nvidia_smi_log>"),
    ],
)  # fmt: skip
def test_an_output_without_gpus_is_an_error_not_an_empty_success(parser, text):
    with pytest.raises(SmiParseError):
        parser(text)


def test_nvidia_smi_q_numbers_gpus_in_bus_order_not_by_minor_number(paste, shared_fixtures):
    """nvidia-smi's index is the bus order of its sections; "Minor Number" is /dev/nvidiaN."""
    (single,) = parse_nvidia_smi_q(paste("nvidia-smi_-a_a100_80gb_single_minor4_excerpt.txt")).gpus
    assert single.index == 0 and single.pci_bus_id == "00000000:94:00.0"  # Minor Number: 4
    a100 = parse_nvidia_smi_q(
        (shared_fixtures / "nvidia-smi/nvidia-smi_-q_a100_sxm4_80gb_x4.txt").read_text()
    )
    assert [(g.index, g.pci_bus_id[-7:]) for g in a100.gpus] == [
        (0, "68:00.0"),
        (1, "9E:00.0"),
        (2, "C2:00.0"),
        (3, "D4:00.0"),
    ]  # fmt: skip  (minor numbers 3, 4, 5, 6)


def test_nvidia_smi_q_of_some_gpus_takes_the_numbers_from_the_echoed_command(paste):
    text = paste("nvidia-smi_-q_i0_of_4_gtx1080ti_excerpt.txt")  # starts "nvidia-smi.exe -q -i 0"
    assert [g.index for g in parse_nvidia_smi_q(text.replace("-i 0", "-i 2")).gpus] == [2]
    by_bus = parse_nvidia_smi_q(text.replace("-i 0", "-i 00000000:18:00.0"))
    assert [g.index for g in by_bus.gpus] == [0] and "not nvidia-smi's indices" in by_bus.notes[-1]
    unechoed = parse_nvidia_smi_q(text.split("\n", 1)[1])
    assert [g.index for g in unechoed.gpus] == [0]
    assert "not nvidia-smi's indices" in unechoed.notes[-1]


def test_nvidia_smi_list(paste):
    mig = parse_nvidia_smi_list(paste("nvidia-smi_-L_a100_80gb_x4_mig.txt"))
    assert [(g.index, g.name) for g in mig.gpus] == [(i, "NVIDIA A100-SXM4-80GB") for i in range(4)]
    assert mig.gpus[3].uuid == "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11"
    assert mig.notes == ("4 MIG device(s) listed under the GPUs",)
    quadro = parse_nvidia_smi_list(paste("nvidia-smi_-L_quadro-rtx4000_x2.txt"))
    assert [g.name for g in quadro.gpus] == ["Quadro RTX 4000"] * 2 and quadro.notes == ()
    with pytest.raises(SmiParseError, match="not `nvidia-smi -L`"):
        parse_nvidia_smi_list(paste("nvidia-smi_-q_gtx1080_excerpt.txt"))


@pytest.mark.parametrize(
    ("name", "bdf", "gpu_name", "total_mib", "rocm"),
    [
        ("amd-smi_table_mi325x_rocm7.0.1.txt", "0000:09:00.0", "AMD Instinct MI325X", 262128, "7.0.1"),
        ("amd-smi_table_rx7900xtx_builtin-amdgpu.txt", "0000:2f:00.0", "AMD Radeon RX 7900 XTX", 24560, "N/A"),
        ("amd-smi_table_strix-halo_rocm7.1.txt", "0000:c5:00.0", "AMD Radeon Graphics", 512, "7.1.0"),
        ("amd-smi_table_r9700_cut-name_excerpt.txt", "0000:03:00.0", "...Radeon AI PRO R9700", 32624, "7.2.2"),
    ],
)  # fmt: skip
def test_amd_smi_default_table_rocm7(paste, name, bdf, gpu_name, total_mib, rocm):
    report = parse_amd_smi_table(paste(name))
    (gpu,) = report.gpus
    assert (gpu.index, gpu.pci_bus_id, gpu.name) == (0, bdf, gpu_name)
    assert gpu.memory_total_bytes == total_mib * 2**20 and report.versions["ROCm version"] == rocm
    assert bool(report.notes) == gpu_name.startswith("...")  # a cut name asks for `static`


def test_amd_smi_table_refuses_other_outputs(paste):
    with pytest.raises(SmiParseError, match="not the `amd-smi` table"):
        parse_amd_smi_table(paste("amd-smi_list_mi210_x2.txt"))


def test_rocminfo_gives_memory_compute_units_device_id_and_bus(paste, shared_fixtures):
    """Memory is the GPU agent's "GLOBAL; FLAGS: COARSE GRAINED" pool, never the CPU's."""
    (xtx,) = parse_rocminfo(
        (shared_fixtures / "rocminfo/rocminfo_rx7900xtx_gfx1100_rocm6.3.txt").read_text()
    ).gpus
    assert (xtx.memory_bytes, xtx.compute_units) == (25149440 * 1024, 96)
    assert (xtx.device_id, xtx.pci_bus_id) == ("0x744c", "0000:2d:00.0")
    halo = parse_rocminfo(paste("rocminfo_strix-halo_gfx1151_rocm7.1.txt"))
    (igpu,) = halo.gpus  # the aie2 NPU agent is Device Type DSP: no GPU
    assert (igpu.gfx_target, igpu.compute_units, igpu.memory_bytes) == ("gfx1151", 40, 120 * 2**30)
    assert (igpu.device_id, igpu.pci_bus_id) == ("0x1586", "0000:c5:00.0")
    assert [a.device_type for a in halo.agents] == ["CPU", "GPU", "DSP"]

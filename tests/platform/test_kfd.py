"""KFD sysfs topology: gfx_target_version decoding and the reader on fake trees."""

from __future__ import annotations

import pytest

from rocmkit.platform.kfd import (
    decode_gfx_target_version,
    parse_node,
    parse_pasted_nodes,
    read_kfd_gpus,
    read_kfd_nodes,
)


@pytest.mark.parametrize(
    ("value", "target"),
    [
        (90010, "gfx90a"),
        (90402, "gfx942"),
        (90500, "gfx950"),
        (90008, "gfx908"),
        (110000, "gfx1100"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
        (100300, "gfx1030"),
        ("90010", "gfx90a"),
        (0, None),  # CPU node
        (91600, None),  # minor 16 cannot be one hex digit
        ("garbage", None),
        (None, None),
    ],
)
def test_decode_gfx_target_version(value, target):
    assert decode_gfx_target_version(value) == target


def write_node(root, node_id, text, mem_bytes=None):
    node = root / "sys/class/kfd/kfd/topology/nodes" / str(node_id)
    node.mkdir(parents=True)
    (node / "properties").write_text(text)
    if mem_bytes is not None:
        (node / "mem_banks/0").mkdir(parents=True)
        (node / "mem_banks/0/properties").write_text(f"heap_type 1\nsize_in_bytes {mem_bytes}\n")


GPU_90A = (
    "simd_count 440\nsimd_per_cu 4\nwave_front_size 64\ngfx_target_version 90010\n"
    "vendor_id 4098\ndevice_id 29704\nlocation_id 49408\ndomain 0\ndrm_render_minor 128\n"
)


def test_reader_finds_gpu_nodes_in_numeric_order_and_skips_cpus(tmp_path):
    write_node(tmp_path, 0, "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n")
    for node_id in (1, 2, 10):
        write_node(tmp_path, node_id, GPU_90A.replace("128", str(127 + node_id)), 64 * 2**30)
    (tmp_path / "sys/class/kfd/kfd/topology/nodes/11").mkdir()  # no properties file: skipped
    assert [n.node_id for n in read_kfd_nodes(tmp_path)] == [0, 1, 2, 10]
    gpus = read_kfd_gpus(tmp_path)
    assert [g.node_id for g in gpus] == [1, 2, 10]
    first = gpus[0]
    assert (first.gfx_target, first.num_compute_units, first.wavefront_size) == ("gfx90a", 110, 64)
    assert first.pci_bus_id == "0000:c1:00.0"  # location_id 49408 = 0xc100
    assert first.render_minor == 128 and first.memory_bytes == 64 * 2**30


def test_no_kfd_means_no_nodes(tmp_path):
    assert read_kfd_nodes(tmp_path) == [] and read_kfd_gpus(tmp_path) == []


def test_real_kfd_properties(shared_fixtures):
    folder = shared_fixtures / "kfd_sysfs"
    mi300x = parse_node(1, (folder / "mi300x_gfx942_gpu_node_properties.txt").read_text())
    assert mi300x.is_gpu and mi300x.gfx_target == "gfx942"
    assert mi300x.num_compute_units == 304 and mi300x.wavefront_size == 64
    assert mi300x.pci_bus_id == "0000:47:00.0"
    rx = parse_node(1, (folder / "rx7900xtx_gfx1100_node_properties.txt").read_text())
    assert (rx.gfx_target, rx.num_compute_units, rx.wavefront_size) == ("gfx1100", 96, 32)
    cpu = parse_node(0, (folder / "mi300x_host_cpu_node_properties.txt").read_text())
    assert not cpu.is_gpu and cpu.gfx_target is None


def test_pasted_properties_of_several_nodes(shared_fixtures):
    """`cat nodes/*/properties` (the CPU node, then the GPU node) and `grep . nodes/*/properties`."""
    kfd = shared_fixtures / "kfd_sysfs"
    cpu = (kfd / "mi300x_host_cpu_node_properties.txt").read_text()
    gpu = (kfd / "mi300x_gfx942_gpu_node_properties.txt").read_text()
    cat = parse_pasted_nodes(cpu + gpu)
    assert [(n.node_id, n.is_gpu) for n in cat] == [(0, False), (1, True)]
    assert (cat[1].gfx_target, cat[1].device_id, cat[1].num_compute_units) == (
        "gfx942",
        "0x74a1",
        304,
    )
    assert cat[1].pci_bus_id == "0000:47:00.0"
    prefix = "/sys/class/kfd/kfd/topology/nodes/{}/properties:"
    grepped = "".join(
        prefix.format(i) + line + "\n"
        for i, text in ((0, cpu), (4, gpu))
        for line in text.splitlines()
    )
    assert [(n.node_id, n.is_gpu) for n in parse_pasted_nodes(grepped)] == [(0, False), (4, True)]

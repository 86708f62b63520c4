"""Host links: the PCIe expectation maths, sysfs link reading (a fake tree), the GPU-to-GPU matrix
and its flags from fake measurements; on a CPU-only machine the suite says it skipped."""

from __future__ import annotations

import pytest

from rocmkit.bench.links import (
    LinksConfig,
    PcieLink,
    expected_gbps,
    host_rows,
    pair_matrix,
    parse_link_speed,
    parse_link_width,
    peer_rows,
    read_link,
    run_links,
    slow_pairs,
    theoretical_gbps,
)
from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.platform import Platform
from rocmkit.results import load_result


@pytest.mark.parametrize(
    ("gts", "width", "gbps"),
    [
        (2.5, 16, 4.0),  # gen 1 x16: 8b/10b
        (8.0, 16, 15.754),  # gen 3 x16: 128b/130b
        (16.0, 16, 31.508),  # gen 4 x16 (A100, MI250)
        (32.0, 16, 63.015),  # gen 5 x16 (H100, MI300X)
        (16.0, 8, 15.754),  # a gen 4 link trained at x8: half
    ],
)
def test_theoretical_rate_per_direction(gts, width, gbps):
    assert theoretical_gbps(gts, width) == pytest.approx(gbps, abs=1e-3)


def test_expectation_uses_what_both_ends_can_do_not_the_idle_current_link():
    # an idle gen 5 GPU sits at 2.5 GT/s; its slot is gen 4: expect gen 4 x16
    link = PcieLink(current_gts=2.5, current_width=16, max_gts=32.0, max_width=16,
                    upstream_max_gts=16.0, upstream_max_width=16)  # fmt: skip
    assert expected_gbps(link, 0.6) == pytest.approx(0.6 * 31.508, abs=1e-2)
    assert expected_gbps(PcieLink(), 0.6) is None
    with pytest.raises(UserError):
        LinksConfig(fraction=0)


def test_sysfs_speed_and_width_formats():
    assert parse_link_speed("16.0 GT/s PCIe\n") == 16.0
    assert parse_link_speed("8 GT/s") == 8.0
    assert parse_link_speed("Unknown") is None
    assert parse_link_width("16\n") == 16 and parse_link_width("0") is None


def test_read_link_reads_the_device_and_its_upstream_bridge(tmp_path):
    bridge = tmp_path / "devices" / "pci0000:40" / "0000:40:01.1"
    gpu = bridge / "0000:41:00.0"
    gpu.mkdir(parents=True)
    for where, speed, width in [(gpu, "32.0 GT/s PCIe", "16"), (bridge, "16.0 GT/s PCIe", "16")]:
        (where / "max_link_speed").write_text(speed + "\n")
        (where / "max_link_width").write_text(width + "\n")
    (gpu / "current_link_speed").write_text("2.5 GT/s PCIe\n")
    (gpu / "current_link_width").write_text("8\n")
    devices = tmp_path / "bus" / "pci" / "devices"
    devices.mkdir(parents=True)
    (devices / "0000:41:00.0").symlink_to(gpu)
    link = read_link("0000:41:00.0", root=tmp_path)
    assert link == PcieLink(current_gts=2.5, current_width=8, max_gts=32.0, max_width=16,
                            upstream_max_gts=16.0, upstream_max_width=16)  # fmt: skip
    assert link.capable_gts == 16.0 and link.capable_width == 16
    assert read_link("0000:99:00.0", root=tmp_path) is None


def test_a_host_link_under_its_expected_speed_fails_and_a_healthy_one_passes():
    link = PcieLink(max_gts=16.0, max_width=16, upstream_max_gts=16.0, upstream_max_width=16)
    rows = host_rows(0, {"h2d": (24.9, True), "d2h": (12.1, True)}, link, 0.6)
    h2d, d2h = rows
    assert h2d.name == "gpu0 h2d (pinned)" and not h2d.extra["below_floor"]
    assert d2h.extra["below_floor"] and d2h.extra["floor"] == pytest.approx(18.9, abs=0.01)
    unknown = host_rows(1, {"h2d": (5.0, False)}, None, 0.6)[0]
    assert "below_floor" not in unknown.extra and "not judged" in unknown.extra["note"]
    assert unknown.extra["correct"] is False


def test_pair_matrix_and_the_slow_pair():
    bandwidth = {(0, 1): 300.0, (1, 0): 310.0, (0, 2): 295.0, (2, 0): 40.0, (1, 2): 305.0,
                 (2, 1): 302.0}  # fmt: skip
    assert pair_matrix(bandwidth, 3) == [
        [None, 300.0, 295.0],
        [310.0, None, 305.0],
        [40.0, 302.0, None],
    ]
    assert slow_pairs(bandwidth) == {(2, 0): pytest.approx(0.5 * 301.0)}
    assert slow_pairs({(0, 1): 1.0}) == {}  # one pair: nothing to compare with
    found = {pair: (gbps, 2.5, True) for pair, gbps in bandwidth.items()}
    rows = peer_rows(found, 3)
    flagged = [m.name for m in rows if m.extra.get("below_floor")]
    assert flagged == ["gpu2 -> gpu0"]
    assert rows[0].extra["bandwidth_matrix_gbps"][2][0] == 40.0
    assert rows[0].extra["latency_matrix_us"][0][1] == 2.5


def test_cpu_only_run_says_no_gpu_skipped(tmp_path):
    (row,) = run_links(LinksConfig(), Platform(backend="cpu", torch_version=None))
    assert row.extra["skipped"] == "no GPU: skipped"
    out = tmp_path / "run"
    assert main(["bench", "--device", "cpu", "--suite", "links", "--out", str(out)]) == 0
    (saved,) = [m for m in load_result(out).measurements if m.suite == "links"]
    assert saved.extra["skipped"] == "no GPU: skipped"

"""MemoryMonitor: a sampler thread that records a timeline and its peak."""

from __future__ import annotations

import json
import time

import pytest

from rocmkit.errors import UserError
from rocmkit.measure.memory import MemoryMonitor


def test_cpu_monitor_records_an_rss_timeline_that_sees_a_big_allocation(tmp_path):
    with MemoryMonitor(device="cpu", interval_s=0.01) as monitor:
        block = bytearray(64 * 2**20)  # touch 64 MiB so RSS really grows
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(0.1)
        base = monitor.timeline.samples[0].allocated_bytes
    timeline = monitor.timeline
    assert len(timeline.samples) >= 3
    assert timeline.source == "psutil rss" and timeline.peak_reserved_bytes is None
    assert timeline.peak_allocated_bytes - base >= 48 * 2**20
    saved = json.loads(timeline.save(tmp_path / "memory.json").read_text())
    assert saved["peak_allocated_bytes"] == timeline.peak_allocated_bytes
    del block


def test_peak_is_the_highest_sample_of_the_reader():
    values = iter([(10, 20), (50, 60), (30, 60)] + [(5, 60)] * 1000)
    monitor = MemoryMonitor(device="fake", interval_s=0.001, reader=lambda: next(values))
    with monitor:
        time.sleep(0.02)
    assert monitor.timeline.peak_allocated_bytes == 50
    assert monitor.timeline.peak_reserved_bytes == 60


def test_unwritable_timeline_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monitor = MemoryMonitor(device="fake", reader=lambda: (1, None))
    with monitor:
        pass
    with pytest.raises(UserError, match="cannot write"):
        monitor.timeline.save(blocker / "memory.json")


def test_bad_interval_is_a_user_error():
    with pytest.raises(UserError):
        MemoryMonitor(interval_s=0)


@pytest.mark.gpu
def test_gpu_monitor_sees_an_allocation_and_exports_a_snapshot(tmp_path):
    import torch

    with MemoryMonitor(device="cuda", interval_s=0.01, record_history=True) as monitor:
        tensor = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
        time.sleep(0.05)
        path = monitor.export_snapshot(tmp_path / "snapshot.pickle")
    assert monitor.timeline.peak_allocated_bytes >= 256 * 2**20
    assert path is not None and path.stat().st_size > 0
    del tensor


def test_monitor_run_writes_the_timeline_even_when_the_run_fails(tmp_path):
    from rocmkit.measure.memory import monitor_run, timeline_measurements

    with pytest.raises(RuntimeError), monitor_run(tmp_path / "run", device="cpu") as monitor:
        time.sleep(0.12)
        raise RuntimeError("out of memory")
    saved = json.loads((tmp_path / "run" / "memory.json").read_text())
    assert saved["peak_allocated_bytes"] == monitor.timeline.peak_allocated_bytes > 0
    assert len(saved["samples"]) >= 2
    (row,) = timeline_measurements(monitor.timeline, name="x")
    assert (row.suite, row.metric, row.unit) == ("memory", "peak_rss", "MiB")


@pytest.mark.gpu
def test_gpu_peak_survives_a_reset_inside_the_monitored_run(tmp_path):
    # bench's train-precision resets the allocator's peak before each run it measures.
    import torch

    from rocmkit.measure.memory import monitor_run

    with monitor_run(tmp_path, device="cuda") as monitor:
        tensor = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
        time.sleep(0.2)
        del tensor
        torch.cuda.reset_peak_memory_stats()
    assert monitor.timeline.peak_allocated_bytes >= 256 * 2**20
    assert (tmp_path / "memory_snapshot.pickle").stat().st_size > 0
    assert json.loads((tmp_path / "memory.json").read_text())["snapshot_path"]

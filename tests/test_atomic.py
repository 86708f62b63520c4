"""The one atomic writer: a failed or killed write leaves the old file, modes follow the umask."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rocmkit.atomic import (
    atomic_open,
    atomic_path,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
)


def test_old_file_is_intact_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_text("old")

    def disk_full(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_an_exception_mid_stream_leaves_the_old_file_and_no_leftovers(tmp_path):
    target = tmp_path / "tokens.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="tokenizer"), atomic_open(target) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("tokenizer crashed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["tokens.bin"]


_KILLED_WRITER = """
import sys, time
from rocmkit.atomic import atomic_open
with atomic_open(sys.argv[1]) as handle:
    handle.write(b"new, but only half")
    handle.flush()
    print("writing", flush=True)
    time.sleep(60)
"""


def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "result.json"
    target.write_text('{"complete": true}\n')
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    assert target.read_text() == '{"complete": true}\n'


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_respect_the_umask(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "result.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "result.json").stat().st_mode & 0o777 == expected


def test_a_rewrite_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "shared.md"
    target.write_text("old")
    target.chmod(0o664)
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o664


def test_an_explicit_mode_wins(tmp_path):
    atomic_write_bytes(tmp_path / "run.sh", b"#!/bin/sh\n", mode=0o755)
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize("fsync, expected_calls", [(True, 1), (False, 0)])
def test_fsync_false_skips_the_flush_to_disk(tmp_path, monkeypatch, fsync, expected_calls):
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    atomic_write_bytes(tmp_path / "metrics.json", b"{}", fsync=fsync)
    assert len(calls) == expected_calls
    assert (tmp_path / "metrics.json").read_bytes() == b"{}"


def test_a_library_that_writes_by_name_gets_the_same_guarantees(tmp_path):
    target = tmp_path / "trace.json.gz"
    target.write_text("old trace")
    with atomic_path(target) as partial:
        assert partial.name.endswith(".trace.json.gz")  # suffix-sensitive writers still work
        replacement = partial.with_name("elsewhere")
        replacement.write_text("new trace")
        os.replace(replacement, partial)  # a library that renames its own temp over the name
    assert target.read_text() == "new trace"
    with pytest.raises(ValueError), atomic_path(target) as partial:
        partial.write_text("torn")
        raise ValueError("export failed")
    assert target.read_text() == "new trace"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json.gz"]


def test_threads_writing_one_file_never_tear_it(tmp_path):
    target = tmp_path / "latest"
    payloads = [bytes([65 + n]) * 4096 for n in range(8)]

    def write_many(payload: bytes) -> None:
        for _ in range(25):
            atomic_write_bytes(target, payload, fsync=False)

    threads = [threading.Thread(target=write_many, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert target.read_bytes() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["latest"]


def test_json_that_json_cannot_hold_is_refused_not_written(tmp_path):
    target = tmp_path / "result.json"
    atomic_write_json(target, {"loss": 1.5})
    with pytest.raises(ValueError):
        atomic_write_json(target, {"loss": float("nan")})
    assert target.read_text() == '{\n  "loss": 1.5\n}\n'

"""`rocmkit port pkg-1.0.tar.gz` / `pkg-1.0-py3-none-any.whl`: a downloaded sdist or wheel is
scanned as the project it holds, paths relative to its top folder, the unpacked copy removed; a
damaged or unsafe archive is a one-line error (exit 2), never a scan of nothing."""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.port import PortConfig, archive, scan_project

FILES = {
    "requirements.txt": "torch==2.1.0+cu118\n",
    "pkg/__init__.py": "import pynvml\npynvml.nvmlInit()\n",
    "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
}


def _sdist(path: Path, files: dict[str, str] = FILES, top: str = "pkg-1.0") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(f"{top}/{name}" if top else name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return path


def _wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("pkg/__init__.py", FILES["pkg/__init__.py"])
        whl.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\nVersion: 1.0\n")
    return path


def _folder(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / "folder" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "folder" / name).write_text(text)
    return tmp_path / "folder"


def _findings(report: object) -> list[tuple[str, int, str, str]]:
    return [(f.path, f.line, f.rule_id, f.severity) for f in report.findings]  # type: ignore[attr-defined]


def test_an_sdist_finds_what_the_same_files_in_a_folder_find(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "pkg-1.0.tar.gz")
    from_archive = scan_project(PortConfig(path=sdist, show_info=True))
    from_folder = scan_project(PortConfig(path=_folder(tmp_path), show_info=True))
    assert _findings(from_archive) == _findings(from_folder)
    assert {f.path for f in from_archive.findings} >= {"requirements.txt", "pkg/__init__.py"}
    assert from_archive.root == str(sdist)  # the report names what the user gave
    assert sum(from_archive.num_files.values()) == 3


def test_a_wheel_is_scanned_and_its_unpacked_copy_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    report = scan_project(PortConfig(path=_wheel(tmp_path / "pkg-1.0-py3-none-any.whl")))
    assert [f.path for f in report.findings] == ["pkg/__init__.py"]  # no top folder: paths as is
    assert list((tmp_path / "scratch").iterdir()) == []


def test_cli_scans_an_archive_and_fails_on_its_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sdist = _sdist(tmp_path / "pkg-1.0.tar.gz")
    assert main(["port", str(sdist), "--json"]) == 1  # the CUDA torch pin is an error
    document = json.loads(capsys.readouterr().out)
    assert any(f["path"] == "requirements.txt" for f in document["data"]["findings"])


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("broken.tar.gz", b"not an archive", "cannot unpack"),
        ("broken.whl", b"PK\x03\x04 truncated", "cannot unpack"),
    ],
)
def test_a_damaged_archive_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, says: str
) -> None:
    (tmp_path / name).write_bytes(content)
    assert main(["port", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and "scan the folder" in err


def test_members_that_climb_out_are_refused_and_nothing_is_written_outside(tmp_path: Path) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("pkg/ok.py", "x = 1\n")
        z.writestr("../../escaped.py", "import pynvml\n")
    with pytest.raises(UserError, match="outside its folder"):
        scan_project(PortConfig(path=evil))
    assert not (tmp_path.parent / "escaped.py").exists()
    tar = _sdist(tmp_path / "evil.tar.gz", {"../escaped.py": "x = 1\n"}, top="")
    with pytest.raises(UserError, match=r"cannot unpack|outside its folder"):
        scan_project(PortConfig(path=tar))
    assert not (tmp_path / "escaped.py").exists()


def test_an_archive_bomb_is_refused_before_unpacking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 10)
    with pytest.raises(UserError, match="over port's limits"):
        scan_project(PortConfig(path=_sdist(tmp_path / "pkg-1.0.tar.gz")))


def test_only_archive_names_are_unpacked(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nvidia-smi\n")
    assert not archive.is_archive(tmp_path / "notes.txt")
    assert not archive.is_archive(tmp_path)  # a folder named like one is a folder
    assert archive.is_archive(_sdist(tmp_path / "Pkg-1.0.TAR.GZ"))

"""An sdist or a wheel scanned as it is downloaded: `rocmkit port pkg-1.0.tar.gz`.

Vetting a dependency for ROCm starts from what pip would install (`pip download --no-deps
--no-binary :all: pkg==1.0` gives the sdist, `pip download --no-deps pkg==1.0` a wheel). An archive
named as PATH is unpacked into a temporary folder, scanned like a project, and the folder is removed;
findings' paths are relative to the archive's one top folder when it has one (an sdist's
`pkg-1.0/`), so a baseline written for one release applies to the next.

Unpacking follows the archive formats' own safety rules: tar members through Python's `data`
extraction filter (PEP 706: no absolute paths, no `..`, no links leaving the folder, no devices),
zip members (wheels are zip files, PEP 427) refused when their name is absolute or climbs out. A
member count and an unpacked-size cap stop archive bombs. Anything unreadable is a UserError that
says what to do (exit 2), never a scan of nothing.
"""

from __future__ import annotations

import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from rocmkit.errors import UserError

TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")
ZIP_SUFFIXES = (".zip", ".whl")
MAX_MEMBERS = 200_000
MAX_UNPACKED_BYTES = 4 * 1024**3  # the largest sdists on PyPI are a few hundred MB unpacked


def is_archive(path: Path) -> bool:
    """Whether `path` is a file whose name says tar or zip archive (sdist, wheel, zip)."""
    return path.is_file() and path.name.lower().endswith(TAR_SUFFIXES + ZIP_SUFFIXES)


@contextmanager
def unpacked(path: Path) -> Iterator[Path]:
    """The archive's contents in a temporary folder (its one top folder when it has exactly one),
    removed on exit."""
    with tempfile.TemporaryDirectory(prefix="rocmkit-port-") as scratch:
        target = Path(scratch)
        try:
            if path.name.lower().endswith(ZIP_SUFFIXES):
                _unzip(path, target)
            else:
                _untar(path, target)
        except UserError:
            raise
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__  # one line
            raise UserError(
                f"cannot unpack {path}: {reason}; check the download "
                "(pip download again) or unpack it yourself and scan the folder"
            ) from exc
        entries = list(target.iterdir())
        yield entries[0] if len(entries) == 1 and entries[0].is_dir() else target


def _untar(path: Path, target: Path) -> None:
    with tarfile.open(path) as archive:
        members = archive.getmembers()
        _check_size(path, len(members), sum(m.size for m in members if m.isfile()))
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 (PEP 706)
            archive.extractall(target, members=members, filter="data")
            return
        for member in members:  # older Pythons: the parts of the data filter that matter here
            if not (member.isfile() or member.isdir()):
                continue  # links and devices: nothing port reads
            _check_name(path, member.name)
            archive.extract(member, target)


def _unzip(path: Path, target: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        _check_size(path, len(members), sum(m.file_size for m in members))
        for member in members:
            _check_name(path, member.filename)
        archive.extractall(target)


def _check_name(path: Path, name: str) -> None:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise UserError(
            f"{path} holds a member outside its folder ({name!r}): not unpacked; "
            "unpack it yourself if you trust it and scan the folder"
        )


def _check_size(path: Path, members: int, size: int) -> None:
    if members > MAX_MEMBERS or size > MAX_UNPACKED_BYTES:
        raise UserError(
            f"{path} unpacks to {members:,} files and {size / 1024**3:.1f} GiB, over port's limits "
            f"({MAX_MEMBERS:,} files, {MAX_UNPACKED_BYTES // 1024**3} GiB): unpack it yourself and "
            "scan the folder"
        )

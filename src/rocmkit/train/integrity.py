"""Is a checkpoint whole? A manifest written last at save time, checked before any resume.

Every checkpoint directory holds `manifest.json`: the size and sha256 of each of its files (DCP's
`.metadata` and `.distcp` shards, the per-rank extras, meta.json), written atomically after all
of them. A checkpoint whose files disagree with its manifest (truncated, emptied, missing or
flipped bytes) is damaged: `choose` then falls back to the newest older checkpoint that is whole.
Checkpoints saved before manifests existed are checked for their metadata only.

Nothing here imports torch: `rocmkit train --resume auto` chooses its run before torch loads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.atomic import atomic_write_json
from rocmkit.errors import UserError

MANIFEST = "manifest.json"
META = "meta.json"
DCP_METADATA = ".metadata"
STEP_PREFIX = "step_"
# Config keys that must match between a checkpoint and the run that loads it (shapes, dtypes).
MATCHING_SECTIONS = ("model",)
MATCHING_KEYS = (("precision", "dtype"),)

# A checkpoint's files (name, size, mtime) -> its damage: the sha256 pass runs once per process.
_verified: dict[tuple[object, ...], str | None] = {}


@dataclass(kw_only=True)
class Choice:
    """The checkpoint to resume from (None: none is whole) and the damaged ones passed over."""

    path: Path | None = None
    damaged: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def step(self) -> int | None:
        return None if self.path is None else checkpoint_step(self.path)


def write_manifest(directory: Path) -> None:
    """Record every file's size and sha256 in `directory/manifest.json` (atomic, written last)."""
    files = {
        path.relative_to(directory).as_posix(): {"bytes": path.stat().st_size, "sha256": _sha(path)}
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }
    atomic_write_json(directory / MANIFEST, {"version": 1, "files": files})


def damage(path: Path) -> str | None:
    """What is wrong with the checkpoint at `path`, in a few words; None when it is whole."""
    if not (path / MANIFEST).is_file():
        return _legacy_damage(path)
    try:
        stats = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.rglob("*"))]
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    key = (str(path.resolve()), *stats)
    if key not in _verified:
        _verified[key] = _manifest_damage(path)
    return _verified[key]


def choose(directory: Path) -> Choice:
    """The newest whole checkpoint in a checkpoints directory, and the damaged newer ones."""
    choice = Choice()
    for path in checkpoints_newest_first(directory):
        problem = damage(path)
        if problem is None:
            choice.path = path
            return choice
        choice.damaged.append((path, problem))
    return choice


def resolve(spec: str | None, directory: Path) -> Choice:
    """What `checkpoint.resume` names: "auto" (the newest whole checkpoint in the run's
    `directory`; none at all: an empty Choice, start fresh), a checkpoints directory (its newest
    whole one) or one checkpoint (refused when damaged). Nothing whole where some exist, or a
    path that is no checkpoint, is a UserError."""
    if spec is None:
        return Choice()
    if spec != "auto":
        path = Path(spec)
        if (path / META).is_file() or (path / MANIFEST).is_file():
            problem = damage(path)
            if problem is not None:
                raise UserError(f"checkpoint {path} is damaged ({problem})")
            return Choice(path=path)
        if not path.is_dir():
            raise UserError(f"checkpoint not found: {path}")
        directory = path
    choice = choose(directory)
    if choice.path is None and choice.damaged:
        raise none_whole_error(directory, choice)
    if choice.path is None and spec != "auto":
        raise UserError(f"no complete checkpoint in {directory}")
    return choice


def checkpoints_newest_first(directory: Path) -> list[Path]:
    """Published checkpoint directories (`step_N`; never a `.tmp-` one), newest first."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.glob(f"{STEP_PREFIX}*") if p.is_dir() and p.name[5:].isdigit()]
    return sorted(found, key=checkpoint_step, reverse=True)


def checkpoint_step(path: Path) -> int:
    return int(path.name.removeprefix(STEP_PREFIX))


def damaged_note(choice: Choice) -> list[str]:
    """One line per damaged checkpoint passed over."""
    after = f"; using {choice.path.name}" if choice.path is not None else ""
    return [f"checkpoint {path} is damaged ({problem}){after}" for path, problem in choice.damaged]


def none_whole_error(directory: Path, choice: Choice) -> UserError:
    problems = "; ".join(f"{p.name}: {why}" for p, why in choice.damaged[:3])
    return UserError(f"no valid checkpoint in {directory} ({problems}); start without --resume")


def config_mismatch(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The differing shape/precision keys between a checkpoint's config and this run's, as
    `key: saved -> current` (the first few, sorted)."""
    pairs: list[tuple[str, Any, Any]] = []
    for section in MATCHING_SECTIONS:
        old, new = saved.get(section) or {}, current.get(section) or {}
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                pairs.append((f"{section}.{key}", old.get(key), new.get(key)))
    for section, key in MATCHING_KEYS:
        old_value = (saved.get(section) or {}).get(key)
        new_value = (current.get(section) or {}).get(key)
        if old_value != new_value:
            pairs.append((f"{section}.{key}", old_value, new_value))
    return [f"{name} {old!r} -> {new!r}" for name, old, new in pairs]


def check_config(path: Path, current: Mapping[str, Any]) -> None:
    """Refuse a checkpoint saved with another model shape or precision (one line, exit 2)."""
    try:
        saved = json.loads((path / META).read_text(encoding="utf-8")).get("config") or {}
    except (OSError, json.JSONDecodeError, AttributeError):
        return  # damage() speaks about unreadable metadata
    differences = config_mismatch(saved, current)
    if differences:
        shown = ", ".join(differences[:4]) + (", ..." if len(differences) > 4 else "")
        raise UserError(
            f"checkpoint {path} was saved with a different model or precision ({shown}); "
            "resume with the same settings or start a new run"
        )


def _manifest_damage(path: Path) -> str | None:
    try:
        files = json.loads((path / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"unreadable {MANIFEST}"
    for name, expected in files.items():
        file = path / name
        if not file.is_file():
            return f"{name} is missing"
        size = file.stat().st_size
        if size != expected["bytes"]:
            return f"{name} is {size} bytes, {expected['bytes']} were saved"
        if _sha(file) != expected["sha256"]:
            return f"{name} does not match its checksum"
    return None


def _legacy_damage(path: Path) -> str | None:
    """A checkpoint without a manifest (saved by an older rocmkit): metadata only."""
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"no readable {META}"
    if not isinstance(meta, dict) or "step" not in meta:
        return f"{META} is not checkpoint metadata"
    dcp = path / DCP_METADATA
    if not dcp.is_file() or dcp.stat().st_size == 0:
        return f"{DCP_METADATA} is missing or empty"
    return None


def _sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

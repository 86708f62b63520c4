"""The error catalogue, built from the emitters: one TOML file per component that prints errors
users paste (CUDA runtime and driver API, HIP, HSA, NVML, NCCL/RCCL, cuBLAS, cuDNN, the container
stack, kernel drivers and the frameworks). Each file has an `[emitter]` table (name, `source`: the
header, library or source file and version the list comes from) and `[[entry]]` rows.

An entry is either an enumerated code (`name`, `value`, `message`: the enum name and the
emitter's own text, see benchmarks/doctor_catalogue_enumerate.py) or a fixed message of a
framework (`pattern`). Curated entries add `cause`, `fix`, the facts that decide between causes
(`when_fact`/`unless_fact`/`when`/`unless`, as in signatures.toml), `ask` (the command that
prints a missing deciding fact), `candidates`, `confidence` and `presumes` (machine facts the fix
takes for granted, defined in signatures.toml's `[precondition.*]`: without them in the log the
entry abstains with the command that decides). An entry without a `fix` only says
what the code means and abstains: the catalogue never guesses a fix it has no evidence for. An
enumerated code whose documentation (`doc`) names several causes carries them as `candidates` with
an `ask`: it abstains naming them and the command that decides.

Loaded lazily, once (`entries()` is cached); the patterns are compiled once by explain.py.
"""

from __future__ import annotations

import functools
import re
import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# How each emitter's text is introduced in a log, so a short generic message ("invalid argument")
# is matched only after its emitter's prefix; messages of 40+ characters match anywhere.
CONTEXT: dict[str, str] = {
    "cuda_runtime": r"(CUDA|cuda|Cuda)\w*( runtime)?( error| Error| failure| API error)?[^\n]{0,80}?",
    "hip": r"(HIP|hip|ROCm)\w*( error| Error| failure)?[^\n]{0,80}?",
    "hsa": r"(HSA|hsa)\w*[^\n]{0,80}?",
    "nccl": r"(NCCL|nccl|RCCL|rccl)[^\n]{0,120}?",
}
LONG_MESSAGE = 40


@functools.cache
def files() -> dict[str, dict[str, Any]]:
    """Every catalogue file, by emitter id (the file's stem)."""
    out: dict[str, dict[str, Any]] = {}
    for item in sorted(resources.files(__name__).iterdir(), key=lambda p: p.name):
        if item.name.endswith(".toml"):
            out[item.name[: -len(".toml")]] = tomllib.loads(item.read_text(encoding="utf-8"))
    return out


def _message_pattern(emitter: str, message: str) -> str:
    words = [re.escape(w) for w in message.split()]
    body = r"\s+".join(words)
    if len(message) >= LONG_MESSAGE or emitter not in CONTEXT:
        return body if len(message) >= LONG_MESSAGE else ""
    return CONTEXT[emitter] + body


def entry_pattern(emitter: str, entry: dict[str, Any]) -> str:
    """The regex an entry matches: its own `pattern`, else its enum name (as a word) and, unless
    `match_text = false`, the emitter's message text after the emitter's prefix."""
    if entry.get("pattern"):
        return str(entry["pattern"])
    name = entry.get("name", "")
    if not name or entry.get("value") == 0 or name.endswith(("NumResults", "_SUCCESS")):
        return ""  # success values and counters are not failures
    parts = [r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])"]
    message = entry.get("message", "")
    if message and entry.get("match_text", True):
        text = _message_pattern(emitter, message)
        if text:
            parts.append(text)
    return "|".join(parts)


@functools.cache
def entries() -> tuple[dict[str, Any], ...]:
    """Catalogue entries as signature rows (id, family, pattern, cause, fix, ...), curated ones
    (with a fix) first, then the enumerated codes that only name their meaning."""
    curated: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    for emitter, data in files().items():
        head = data.get("emitter", {})
        label = head.get("label", head.get("name", emitter))
        for entry in data.get("entry", []):
            pattern = entry_pattern(emitter, entry)
            if not pattern:
                continue
            name = entry.get("name") or entry["id"]
            code = f"{name} ({entry['value']})" if "value" in entry else entry.get("code", "")
            meaning = entry.get("message") or entry.get("meaning") or ""
            row = {
                **{k: v for k, v in entry.items() if k not in ("name", "value", "message")},
                "id": entry.get("id", name),
                "family": entry.get("family", f"{emitter}:{name}"),
                "pattern": pattern,
                "emitter": emitter,
                "code": code,
                "source": entry.get("source", head.get("source", head.get("header", ""))),
            }
            row["text"] = meaning if entry.get("message") and entry.get("match_text", True) else ""
            if "cause" not in row:
                said = f': "{meaning}"' if meaning else ""
                row["cause"] = f"{label} reported {code or name}{said}."
            if row.get("fix"):
                curated.append(row)
            elif row.get("candidates"):
                # The emitter's documentation names several causes: abstain, name them and the
                # command that tells them apart (matched like a curated entry).
                row["abstain"] = True
                row.setdefault("ask", head.get("ask", "rerun with the emitter's debug logging on"))
                row["fix"] = (
                    f"Not decided by this log; to tell the candidates apart run: {row['ask']}"
                )
                curated.append(row)
            else:
                row["fix"] = ""
                row["abstain"] = True
                row.setdefault("ask", head.get("ask", "rerun with the emitter's debug logging on"))
                plain.append(row)
    return tuple(curated + plain)

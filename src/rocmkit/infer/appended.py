"""`--append-results FILE.jsonl`: the points of many runs (a sweep driven by a shell loop, or
several servers) gathered in one file, one JSON line per point, in the spirit of vLLM's
`--append-result`.

Each line holds the run's label and metadata, when it ran, the point's parameters, whether the
run failed and why, and every figure of the point (`{metric: value}`). A run's lines go to the
file in one `write()` on a file opened with O_APPEND, so runs appending to the same file at once
never interleave or overwrite each other's lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rocmkit.results import RunResult, jsonable


def point_lines(result: RunResult) -> list[dict[str, Any]]:
    """One JSON-ready dict per measured point (measurement name) of a serve result."""
    points: dict[str, dict[str, Any]] = {}
    for m in result.measurements:
        line = points.get(m.name)
        if line is None:
            line = points[m.name] = {
                "label": result.label,
                "metadata": result.data.get("metadata", {}),
                "created_at": result.created_at,
                "kind": result.kind,
                "name": m.name,
                "params": dict(m.params),
                "outcome": result.outcome,
                "failure": result.data.get("failure"),
                "partial": result.partial,
                "figures": {},
                "units": {},
            }
        line["figures"][m.metric] = m.value
        line["units"][m.metric] = m.unit
    return list(points.values())


def append_points(path: Path, result: RunResult) -> Path:
    """Append one line per point of `result` to `path` in a single O_APPEND write."""
    text = "".join(json.dumps(jsonable(line)) + "\n" for line in point_lines(result))
    if not text:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        data = text.encode()
        written = os.write(fd, data)
        while written < len(data):  # a short write (a full disk, a signal): finish the lines
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    return path

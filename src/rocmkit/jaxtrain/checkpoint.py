"""Checkpoints of the JAX backend with Orbax: the whole training state plus a JSON record.

Orbax writes each step into a temporary directory and renames it when complete, so a kill never
leaves a half-written checkpoint in charge; `max_to_keep` prunes old ones. Saving is asynchronous
(the state is copied to host memory, then written while training goes on). Restoring into the
live state's shapes, dtypes and shardings gives back bit-identical arrays, so a resumed run
continues exactly where it stopped; data needs no saved state (rocmkit.train.data is a pure
function of the step).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from rocmkit.errors import UserError

__all__ = ["Checkpoints", "resolve_resume"]

# The JAX backend's checkpoints live beside the torch ones, in their own folder, so neither
# backend ever tries to read the other's format.
SUBDIR = "jax"


class Checkpoints:
    """An Orbax CheckpointManager over one directory (created on first save)."""

    def __init__(self, directory: Path, *, keep: int) -> None:
        self.directory = directory.expanduser().absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True)
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def save(self, step: int, state: Any, record: dict[str, Any]) -> Path:
        """Start saving `state` as checkpoint `step`; returns the directory it will have."""
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(state), record=ocp.args.JsonSave(record)
        )
        self.manager.save(step, args=args, force=True)
        return self.directory / str(step)

    def record(self, step: int) -> dict[str, Any]:
        """The JSON record saved with checkpoint `step` (config, step, backend)."""
        restored = self.manager.restore(
            step, args=ocp.args.Composite(record=ocp.args.JsonRestore())
        )
        return dict(restored["record"])

    def restore(self, step: int, like: Any) -> Any:
        """The state saved at `step`, placed like `like` (same shapes, dtypes, shardings)."""
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        args = ocp.args.Composite(state=ocp.args.StandardRestore(abstract))
        try:
            return self.manager.restore(step, args=args)["state"]
        except (ValueError, KeyError, FileNotFoundError) as exc:
            raise UserError(
                f"checkpoint {self.directory / str(step)} does not fit this model or run: "
                f"{str(exc).splitlines()[0][:200]}"
            ) from None

    def latest_step(self) -> int | None:
        return self.manager.latest_step()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Wait for any save in flight to be complete on disk."""
        self.manager.wait_until_finished()
        self.manager.close()


def resolve_resume(spec: str | None, default_dir: Path) -> tuple[Path, int] | None:
    """(checkpoints directory, step) to resume from: `auto` = the newest in `default_dir`
    (None when there is none yet), or a path to a checkpoints directory or one step in it."""
    if spec is None:
        return None
    if spec == "auto":
        step = _latest_step(default_dir)
        return None if step is None else (default_dir, step)
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise UserError(f"checkpoint not found: {path}")
    if path.name.isdigit() and (path / "state").is_dir():
        return path.parent, int(path.name)
    for candidate in (path, path / SUBDIR):
        step = _latest_step(candidate)
        if step is not None:
            return candidate, step
    raise UserError(f"no complete JAX (Orbax) checkpoint in {path}")


def _latest_step(directory: Path) -> int | None:
    if not directory.is_dir():
        return None
    steps = [int(p.name) for p in directory.iterdir() if p.name.isdigit() and p.is_dir()]
    return max(steps) if steps else None

"""Checkpoints with torch.distributed.checkpoint (DCP): sharded, resharding, never torn.

Layout of a checkpoint directory:

    checkpoints/
      step_00000020/      DCP shards of {"model", "optim"}, extra_rank<R>.pt, meta.json,
                          manifest.json (every file's size and sha256, written last)
      step_00000030/
      latest              the name of the newest complete checkpoint (written atomically)

A checkpoint is written into `.tmp-step_N/`, renamed to `step_N/` once every rank has finished,
and only then named in `latest`; a kill at any moment leaves the previous checkpoint in charge.
DCP stores global tensor metadata, so a checkpoint saved by N ranks loads on M ranks, or into a
single process for export. Before a resume each checkpoint is checked against its manifest
(`rocmkit.train.integrity`): a damaged one is passed over for the newest whole one before it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from rocmkit.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from rocmkit.errors import UserError, require_extra
from rocmkit.train import integrity
from rocmkit.train.parallel import DistEnv, barrier
from rocmkit.train.precision import PrecisionPolicy

LATEST = "latest"
META = "meta.json"
_PREFIX = "step_"
_TMP_PREFIX = ".tmp-"


@dataclass(kw_only=True)
class TrainingState:
    """What the loop carries across a restart besides the weights."""

    step: int = 0  # optimizer steps completed
    num_skipped_steps: int = 0


def checkpoint_name(step: int) -> str:
    return f"{_PREFIX}{step:08d}"


def save_checkpoint(
    directory: Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    precision: PrecisionPolicy,
    state: TrainingState,
    env: DistEnv,
    config: dict[str, Any],
    keep: int,
) -> Path:
    """Save on every rank; publish as latest once complete; keep the newest `keep`."""
    name = checkpoint_name(state.step)
    tmp, final = directory / f"{_TMP_PREFIX}{name}", directory / name
    if env.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    barrier(env)
    model_state, optim_state = get_state_dict(model, optimizer)
    with _single_process_is_intended():
        dcp.save(
            {"model": model_state, "optim": optim_state},
            checkpoint_id=tmp,
            no_dist=not env.distributed,
        )
    extra = {"rng": _rng_state(), "precision": precision.state_dict()}
    atomic_write_bytes(tmp / f"extra_rank{env.rank}.pt", _to_bytes(extra))
    barrier(env)
    if env.is_main:
        meta = {
            "step": state.step,
            "num_skipped_steps": state.num_skipped_steps,
            "world_size": env.world_size,
            "config": config,
        }
        atomic_write_json(tmp / META, meta)
        integrity.write_manifest(tmp)
        if final.exists():  # a complete copy of the same step (re-saved after a resume)
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync_dir(directory)
        atomic_write_text(directory / LATEST, name + "\n")
        _prune(directory, keep)
    barrier(env)
    return final


def load_checkpoint(
    path: Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    precision: PrecisionPolicy,
    env: DistEnv,
    config: dict[str, Any] | None = None,
) -> TrainingState:
    """Load weights, optimizer, scaler and RNG into the (possibly wrapped) live objects.

    With `config` (this run's, as a dict), a checkpoint of another model shape or precision is
    a one-line UserError naming the differing keys."""
    meta = read_meta(path)
    if config is not None:
        integrity.check_config(path, config)
    model_state, optim_state = get_state_dict(model, optimizer)
    state: dict[str, Any] = {"model": model_state, "optim": optim_state}
    try:
        with _single_process_is_intended():
            dcp.load(state, checkpoint_id=path, no_dist=not env.distributed)
    except Exception as exc:  # DCP's errors are tracebacks dozens of lines long
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"cannot load checkpoint {path}: {first[:300]}") from exc
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    own = path / f"extra_rank{env.rank}.pt"
    # Loaded on more ranks than saved it: new ranks borrow rank 0's scaler and RNG states.
    extra = torch.load(own if own.exists() else path / "extra_rank0.pt", weights_only=False)
    precision.load_state_dict(extra["precision"])
    if meta["world_size"] == env.world_size:
        _set_rng_state(extra["rng"])
    return TrainingState(step=int(meta["step"]), num_skipped_steps=int(meta["num_skipped_steps"]))


def read_meta(path: Path) -> dict[str, Any]:
    try:
        data = json.loads((path / META).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path} is not a complete rocmkit checkpoint (no {META})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read checkpoint metadata {path / META}: {exc}") from None
    if not isinstance(data, dict) or "step" not in data:
        raise UserError(f"{path / META} is not rocmkit checkpoint metadata")
    return data


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest whole checkpoint in `directory` (see `integrity.choose`), or None when there
    is none yet; every checkpoint there damaged is a UserError."""
    return integrity.resolve("auto", directory).path


def resolve_resume(spec: str | None, directory: Path) -> Path | None:
    """`auto`: the newest whole checkpoint in the run's checkpoint dir (None to start fresh);
    else a checkpoint or checkpoints directory (see `integrity.resolve`)."""
    return integrity.resolve(spec, directory).path


def resolve_checkpoint(path: Path) -> Path:
    """A checkpoint directory itself (refused when damaged), or a checkpoints directory (then
    its newest whole checkpoint)."""
    found = integrity.resolve(str(path), path).path
    assert found is not None, "resolve refuses a path without a checkpoint"
    return found


def clean_partial(directory: Path) -> None:
    """Remove checkpoints a killed run left half-written (never named in `latest`)."""
    if directory.is_dir():
        for tmp in directory.glob(f"{_TMP_PREFIX}{_PREFIX}*"):
            shutil.rmtree(tmp, ignore_errors=True)


def export_checkpoint(checkpoint: str | Path, out: str | Path) -> Path:
    """Write the model weights of a checkpoint (any number of saving ranks) to one file.

    `.safetensors` (the `llm` extra provides safetensors) or `.pt` (a torch state dict).
    """
    from rocmkit.config import from_dict
    from rocmkit.train.models import ModelConfig, build_model

    target = Path(out)
    if target.suffix not in (".safetensors", ".pt"):
        raise UserError(f"export target must end in .safetensors or .pt (got {target.name})")
    path = resolve_checkpoint(Path(checkpoint))
    model_config = from_dict(ModelConfig, read_meta(path)["config"]["model"], prefix="model.")
    built = build_model(model_config)
    state = {"model": built.module.state_dict()}
    with _single_process_is_intended():
        dcp.load(state, checkpoint_id=path, no_dist=True)
    tensors = {k: v.detach().contiguous().clone() for k, v in state["model"].items()}
    if target.suffix == ".pt":
        atomic_write_bytes(target, _to_bytes(tensors))
    else:
        safetensors_torch = require_extra("safetensors.torch", "llm")
        atomic_write_bytes(target, safetensors_torch.save(tensors))
    return target


@contextlib.contextmanager
def _single_process_is_intended() -> Iterator[None]:
    # DCP warns that it "assumes" one process when there is no process group: here it is meant.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def _prune(directory: Path, keep: int) -> None:
    complete = sorted(p for p in directory.glob(f"{_PREFIX}*") if (p / META).is_file())
    for old in complete[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def _rng_state() -> dict[str, Any]:
    import numpy as np

    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np

    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def _to_bytes(obj: object) -> bytes:
    import io

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

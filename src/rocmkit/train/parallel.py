"""Data parallelism through torch.distributed: DDP and FSDP2, launched by torchrun.

rocmkit starts no processes and speaks no protocol of its own: torchrun (or any launcher that
sets RANK, WORLD_SIZE, LOCAL_RANK and MASTER_ADDR/PORT) starts the ranks, and the process group
uses nccl on GPUs (RCCL on ROCm builds, under the same name) and gloo on CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist

from rocmkit.errors import UserError
from rocmkit.train.config import ParallelConfig, PrecisionConfig
from rocmkit.train.precision import fsdp_param_dtype


@dataclass(frozen=True, kw_only=True)
class DistEnv:
    """Where this process sits among the ranks."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    launched: bool = False  # started by a launcher that set RANK/WORLD_SIZE
    owns_group: bool = False  # this module created the process group and must destroy it

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return dist.is_available() and dist.is_initialized()


def env_from(environ: Mapping[str, str]) -> DistEnv:
    """Read the launcher's variables (pure; torchrun's names)."""
    if "RANK" not in environ or "WORLD_SIZE" not in environ:
        return DistEnv()
    try:
        return DistEnv(
            rank=int(environ["RANK"]),
            world_size=int(environ["WORLD_SIZE"]),
            local_rank=int(environ.get("LOCAL_RANK", "0")),
            launched=True,
        )
    except ValueError:
        raise UserError("RANK, WORLD_SIZE and LOCAL_RANK must be integers") from None


def backend_for(config: ParallelConfig, device_type: str) -> str:
    if config.backend != "auto":
        return config.backend
    return "nccl" if device_type == "cuda" else "gloo"


def init_distributed(config: ParallelConfig, device_type: str) -> DistEnv:
    """Join the launcher's process group, or make a 1-rank group for ddp/fsdp without a launcher."""
    env = env_from(os.environ)
    if dist.is_available() and dist.is_initialized():
        return DistEnv(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            local_rank=env.local_rank,
            launched=True,
        )
    backend = backend_for(config, device_type)
    if env.launched and env.world_size > 1:
        if "MASTER_ADDR" not in os.environ:
            raise UserError("RANK/WORLD_SIZE are set but MASTER_ADDR is not: launch with torchrun")
        if device_type == "cuda":
            check_local_rank_has_gpu(env.local_rank, torch.cuda.device_count())
            torch.cuda.set_device(env.local_rank)
        dist.init_process_group(backend=backend)
        return dataclasses.replace(env, owns_group=True)
    if config.mode != "none":
        # One rank, but the same code path as N ranks (DTensor parameters, DCP sharding).
        store = dist.HashStore()
        dist.init_process_group(backend=backend, store=store, rank=0, world_size=1)
        return DistEnv(owns_group=True)
    return env


def check_local_rank_has_gpu(local_rank: int, num_gpus: int) -> None:
    """More ranks on a node than GPUs is a launch mistake: say how to launch instead."""
    if local_rank < num_gpus:
        return
    raise UserError(
        f"rank with LOCAL_RANK {local_rank} has no GPU: torch sees {num_gpus} GPU(s) on this "
        f"node; start at most {num_gpus} process(es) per node (torchrun --nproc-per-node "
        f"{max(1, num_gpus)}) or train on the CPU with --train.device cpu"
    )


def shutdown(env: DistEnv) -> None:
    if env.owns_group and dist.is_initialized():
        dist.destroy_process_group()


def wrap_model(
    module: torch.nn.Module,
    blocks: list[torch.nn.Module],
    config: ParallelConfig,
    precision: PrecisionConfig,
    device: torch.device,
) -> torch.nn.Module:
    """DDP around the whole model, or FSDP2 `fully_shard` on every block and then the root."""
    if config.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(module, device_ids=device_ids)
    if config.mode == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        # Parameters may be gathered in bf16 while the sharded fp32 copy stays the master
        # weights the optimizer updates; gradients are reduced in fp32 for accuracy.
        policy = MixedPrecisionPolicy(
            param_dtype=fsdp_param_dtype(precision), reduce_dtype=torch.float32
        )
        # The mesh is named on the training device: fully_shard's default mesh is on the
        # accelerator whenever one exists, which moves a CPU run's parameters to the GPU.
        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        for block in blocks:
            fully_shard(block, mesh=mesh, mp_policy=policy)
        fully_shard(module, mesh=mesh, mp_policy=policy)
    return module


_NO_CONTEXT = contextlib.nullcontext()


def sync_context(module: torch.nn.Module, *, sync: bool) -> contextlib.AbstractContextManager[None]:
    """Skip the gradient all-reduce on accumulation micro-steps (DDP no_sync / FSDP2 flag)."""
    no_sync = getattr(module, "no_sync", None)  # DDP
    if no_sync is not None:
        return _NO_CONTEXT if sync else no_sync()
    set_sync = getattr(module, "set_requires_gradient_sync", None)  # FSDP2
    if set_sync is not None:
        set_sync(sync)
    return _NO_CONTEXT


def barrier(env: DistEnv) -> None:
    if env.distributed and dist.get_world_size() > 1:
        dist.barrier()


def agree_on(value: str, env: DistEnv) -> str:
    """Rank 0's `value` on every rank: a default run directory is named from the clock, which
    ranks started a moment apart may read differently, and they must write one directory."""
    if not (env.distributed and dist.get_world_size() > 1):
        return value
    chosen = [value]
    dist.broadcast_object_list(chosen, src=0)
    return str(chosen[0])


@contextlib.contextmanager
def on_main_first(env: DistEnv) -> Iterator[None]:
    """Let rank 0 do a filesystem job (e.g. tokenizing a corpus) before the others read it.

    Rank 0 reaches the barrier even when its job fails, so the others run into the same error
    themselves instead of waiting for a collective that never comes.
    """
    if not env.is_main:
        barrier(env)
    try:
        yield
    finally:
        if env.is_main:
            barrier(env)

"""The `--workload` registry of `rocmkit infer serve`: each kind makes its prompts from the settings.

The built-in kinds (random, jsonl, sharegpt, shared-prefix, trace) register at the end of this
module; a package adds one with `register_workload(WorkloadKind(...))` in a module named by the
`rocmkit.infer_workloads` entry point group (or the entry names the WorkloadKind object itself),
read on the first look up. The prompt sets themselves are in `rocmkit.infer.workloads`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.errors import UserError
from rocmkit.extensions import INFER_WORKLOADS, load_group
from rocmkit.infer.workloads import (
    Tokenizer,
    Workload,
    jsonl_workload,
    random_workload,
    shared_prefix_workload,
    sharegpt_workload,
)

if TYPE_CHECKING:
    from rocmkit.infer.settings import ServeSettings


# (the run's settings, the tokenizer or None) -> its prompts; a bad input is a UserError
WorkloadMaker = Callable[["ServeSettings", Tokenizer | None], Workload]
# Settings only some kinds read; another kind given one refuses it (see `check_options`).
KIND_OPTIONS = {"prefix_groups": "--prefix-groups", "prefix_len": "--prefix-len"}


@dataclass(frozen=True, kw_only=True)
class WorkloadKind:
    """A registered `--workload`: how to make its prompts from the serve settings.

    `needs_prompts`: it reads the `--prompts FILE`; `options`: which of `KIND_OPTIONS` it reads
    (the others given with it are refused rather than silently ignored)."""

    name: str
    description: str
    make: WorkloadMaker
    needs_prompts: bool = False
    options: frozenset[str] = frozenset()


WORKLOADS: dict[str, WorkloadKind] = {}
_ENTRY_POINTS_LOADED: list[bool] = []


def register_workload(kind: WorkloadKind) -> WorkloadKind:
    """Register (or replace) a `--workload` kind."""
    WORKLOADS[kind.name] = kind
    return kind


def workload_kinds() -> dict[str, WorkloadKind]:
    """Every known kind: the built-in ones, then other packages' (entry point group
    `rocmkit.infer_workloads`: a module that registers its kinds, or a WorkloadKind object)."""
    if not _ENTRY_POINTS_LOADED:
        for _name, loaded in load_group(INFER_WORKLOADS):
            if isinstance(loaded, WorkloadKind):
                WORKLOADS.setdefault(loaded.name, loaded)
        _ENTRY_POINTS_LOADED.append(True)
    return WORKLOADS


def get_workload(name: str) -> WorkloadKind:
    kinds = workload_kinds()
    if name not in kinds:
        raise UserError(f"unknown --workload {name!r}; choose from {', '.join(kinds)}")
    return kinds[name]


def make_workload(settings: ServeSettings, tokenizer: Tokenizer | None) -> Workload:
    """The prompts `settings.workload` makes, after refusing options that kind does not read."""
    kind = get_workload(settings.workload)
    if kind.needs_prompts and settings.prompts is None:
        raise UserError(f"--workload {kind.name} needs --prompts FILE")
    check_options(kind, settings)
    return kind.make(settings, tokenizer)


def check_options(kind: WorkloadKind, settings: ServeSettings) -> None:
    given = {
        "prefix_groups": settings.prefix_groups != 1,
        "prefix_len": settings.prefix_len is not None,
    }
    for option, flag in KIND_OPTIONS.items():
        if given[option] and option not in kind.options:
            users = [k.name for k in workload_kinds().values() if option in k.options]
            noun = "workload" if len(users) == 1 else "workloads"
            raise UserError(f"{flag} applies to the {' and '.join(users)} {noun}")


def _prompts_path(settings: ServeSettings) -> Path:
    assert settings.prompts is not None  # make_workload checked needs_prompts
    return settings.prompts


def _random(settings: ServeSettings, tokenizer: Tokenizer | None) -> Workload:
    return random_workload(
        num_prompts=settings.num_prompts,
        input_len=settings.input_len,
        output_len=settings.output_len,
        seed=settings.seed,
        tokenizer=tokenizer,
        range_ratio=settings.random_range_ratio,
        prefix_len=settings.prefix_len or 0,
        prefix_groups=settings.prefix_groups,
    )


def _shared_prefix(settings: ServeSettings, tokenizer: Tokenizer | None) -> Workload:
    return shared_prefix_workload(
        num_conversations=settings.num_conversations,
        num_turns=settings.num_turns,
        prefix_len=512 if settings.prefix_len is None else settings.prefix_len,
        turn_len=settings.input_len,
        output_len=settings.output_len,
        seed=settings.seed,
        tokenizer=tokenizer,
    )


def _trace(settings: ServeSettings, tokenizer: Tokenizer | None) -> Workload:
    from rocmkit.infer.traces import trace_workload  # traces builds on this module

    return trace_workload(
        _prompts_path(settings),
        num_prompts=settings.num_prompts,
        time_scale=settings.trace_time_scale,
        seed=settings.seed,
        tokenizer=tokenizer,
    )


register_workload(
    WorkloadKind(
        name="random",
        description="random prompts of --input-len (words without --tokenizer)",
        make=_random,
        options=frozenset({"prefix_groups", "prefix_len"}),
    )
)
register_workload(
    WorkloadKind(
        name="jsonl",
        description='--prompts FILE, one {"prompt"} or {"messages"} object per line',
        make=lambda settings, tokenizer: jsonl_workload(
            _prompts_path(settings), output_len=settings.output_len, tokenizer=tokenizer
        ),
        needs_prompts=True,
    )
)
register_workload(
    WorkloadKind(
        name="sharegpt",
        description="--prompts FILE in ShareGPT form: first human turn, first reply's length",
        make=lambda settings, tokenizer: sharegpt_workload(
            _prompts_path(settings),
            num_prompts=settings.num_prompts,
            seed=settings.seed,
            tokenizer=tokenizer,
        ),
        needs_prompts=True,
    )
)
register_workload(
    WorkloadKind(
        name="shared-prefix",
        description="multi-turn chats behind one shared system prompt (prefix caching)",
        make=_shared_prefix,
        options=frozenset({"prefix_len"}),
    )
)
register_workload(
    WorkloadKind(
        name="trace",
        description="--prompts FILE: a BurstGPT .csv or Mooncake .jsonl trace, replayed in time",
        make=_trace,
        needs_prompts=True,
    )
)

"""Prompt sets for the server benchmark: random, JSONL file, ShareGPT file, multi-turn shared prefix,
trace replay, and any other a package registers.

Every workload yields `Prompt`s holding both a chat `messages` list and the same text flattened for
the completions API, so one workload drives either endpoint. Token counts come from a local
tokenizer directory when one is given; without one, lengths are counted in words (noted in the
result), which is what `Prompt.length_unit` records.

`--workload NAME` picks one of the kinds registered in `rocmkit.infer.workload_kinds`.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rocmkit.errors import UserError, require_extra

LengthUnit = Literal["tokens", "words"]

# A plain word list for tokenizer-free random prompts: common English words, mostly one token each
# in BPE vocabularies, so a word count is a fair stand-in for a token count.
_WORD_TEXT = (
    "the of and to in is was for on are with as by at from that this have not but had they which "
    "one you were all their there been has when who will more no if out so said what up its about "
    "into than them can only other new some could time these two may then do first any my now such "
    "like our over man me even most made after also did many before must through back years where "
    "much your way well down should because each just those people how too little state good very "
    "make world still own see men work long get here between both life being under never day same "
    "another know while last might us great old year off come since against go came right used take"
)
_WORDS = tuple(_WORD_TEXT.split())


@dataclass(kw_only=True, frozen=True, slots=True)
class Prompt:
    """One request's input: chat messages, the same as flat text, and the requested output length."""

    messages: tuple[dict[str, str], ...]
    max_tokens: int
    input_tokens: int | None = None  # known prompt length in tokens (None without a tokenizer)
    arrival_s: float | None = None  # send time from the run's start (trace replay); None: by rate

    @property
    def text(self) -> str:
        """The messages flattened for /v1/completions (contents joined by blank lines)."""
        return "\n\n".join(m["content"] for m in self.messages)


@dataclass(kw_only=True, frozen=True, slots=True)
class Workload:
    """A named prompt list plus a note on how lengths were counted."""

    name: str
    prompts: list[Prompt]
    length_unit: LengthUnit
    notes: list[str] = field(default_factory=list)


class Tokenizer:
    """A local Hugging Face tokenizer directory (`llm` extra), used only to count and make tokens."""

    def __init__(self, path: str | Path) -> None:
        transformers = require_extra("transformers", "llm")
        directory = Path(path)
        if not directory.is_dir():
            raise UserError(f"tokenizer directory not found: {directory}")
        try:
            self._tok = transformers.AutoTokenizer.from_pretrained(
                str(directory), local_files_only=True
            )
        except (OSError, ValueError) as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UserError(f"cannot load a tokenizer from {directory}: {reason}") from None
        special = set(self._tok.all_special_ids)
        self._vocab = [i for i in range(len(self._tok)) if i not in special]

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False))

    def random_text(self, rng: random.Random, num_tokens: int) -> str:
        return str(self._tok.decode([rng.choice(self._vocab) for _ in range(num_tokens)]))


def random_workload(
    *,
    num_prompts: int,
    input_len: int,
    output_len: int,
    seed: int = 0,
    tokenizer: Tokenizer | None = None,
    range_ratio: float = 0.0,
    prefix_len: int = 0,
    prefix_groups: int = 1,
) -> Workload:
    """Prompts of `input_len` random tokens (or words, without a tokenizer), `output_len` to generate.

    With `range_ratio` r > 0 each length is drawn uniformly from [len * (1 - r), len * (1 + r)]
    (at least 1), as vLLM's `--random-range-ratio` does. With `prefix_len` L > 0 every prompt
    starts with a fixed random prefix of L tokens (vLLM's `--random-prefix-len`); with
    `prefix_groups` N there are N such prefixes and prompt i starts with prefix i mod N (SGLang's
    generated-shared-prefix groups), so a prefix cache sees N shared prefixes at once.
    """
    if num_prompts < 1 or input_len < 1 or output_len < 1:
        raise UserError("random workload needs --num-prompts, --input-len and --output-len >= 1")
    if not 0.0 <= range_ratio < 1.0:
        raise UserError(f"--random-range-ratio must be in [0, 1) (got {range_ratio})")
    if prefix_len < 0 or prefix_groups < 1 or (prefix_groups > 1 and prefix_len == 0):
        raise UserError("--prefix-groups N >= 1 needs --prefix-len L > 0 (tokens of each prefix)")
    rng = random.Random(seed)
    make = random_text_maker(rng, tokenizer)
    prefixes = [make(prefix_len) for _ in range(prefix_groups)] if prefix_len else []
    prompts = []
    for index in range(num_prompts):
        num_in, num_out = (_vary(rng, n, range_ratio) for n in (input_len, output_len))
        text = make(num_in)
        if prefixes:  # one message, as vLLM prepends the prefix ids: every chat template takes it
            text = f"{prefixes[index % prefix_groups]} {text}"
        prompts.append(user_prompt(text, num_out, tokenizer))
    notes = (
        [f"{prefix_groups} shared prefix(es) of {prefix_len} before every prompt"]
        if prefixes
        else []
    )
    return counted_workload("random", prompts, tokenizer, notes=notes)


def _vary(rng: random.Random, length: int, ratio: float) -> int:
    if ratio == 0.0:
        return length
    return max(1, rng.randint(math.floor(length * (1 - ratio)), math.ceil(length * (1 + ratio))))


def user_prompt(
    text: str, max_tokens: int, tokenizer: Tokenizer | None, arrival_s: float | None = None
) -> Prompt:
    """A one-message user prompt; its length is counted when a tokenizer is given (a random
    text's decode/encode round trip can shift its length a little, so it is counted again)."""
    return Prompt(
        messages=({"role": "user", "content": text},),
        max_tokens=max_tokens,
        input_tokens=tokenizer.count(text) if tokenizer else None,
        arrival_s=arrival_s,
    )


def counted_workload(
    name: str, prompts: list[Prompt], tokenizer: Tokenizer | None, notes: Sequence[str] = ()
) -> Workload:
    """A workload whose length unit and notes say whether a tokenizer counted its prompts."""
    unit: LengthUnit = "words" if tokenizer is None else "tokens"
    counted = [] if tokenizer else ["no --tokenizer given: prompt lengths are in words, not tokens"]
    return Workload(name=name, prompts=prompts, length_unit=unit, notes=[*counted, *notes])


def jsonl_workload(
    path: str | Path, *, output_len: int, tokenizer: Tokenizer | None = None
) -> Workload:
    """One JSON object per line: {"prompt": str} or {"messages": [...]}, optional "max_tokens"."""
    prompts = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        prompts.append(_prompt_from_item(item, f"{path}:{number}", output_len, tokenizer))
    if not prompts:
        raise UserError(f"{path} holds no prompts")
    return counted_workload(f"jsonl:{Path(path).name}", prompts, tokenizer)


def sharegpt_workload(
    path: str | Path,
    *,
    num_prompts: int,
    output_len: int | None = None,
    seed: int = 0,
    tokenizer: Tokenizer | None = None,
) -> Workload:
    """First human turn of ShareGPT conversations; the output length is the first reply's length
    (as vLLM does) unless `output_len` is given."""
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list):
        raise UserError(f"{path} must hold a JSON list of {{'conversations': [...]}} entries")
    count = tokenizer.count if tokenizer else _count_words
    pairs = [pair for pair in map(_first_exchange, data) if pair is not None]
    if not pairs:
        raise UserError(f"{path} holds no conversation with a human turn followed by a reply")
    random.Random(seed).shuffle(pairs)
    prompts = [
        user_prompt(question, output_len or max(1, count(answer)), tokenizer)
        for question, answer in pairs[:num_prompts]
    ]
    return counted_workload(f"sharegpt:{Path(path).name}", prompts, tokenizer)


def shared_prefix_workload(
    *,
    num_conversations: int,
    num_turns: int,
    prefix_len: int,
    turn_len: int,
    output_len: int,
    seed: int = 0,
    tokenizer: Tokenizer | None = None,
) -> Workload:
    """Multi-turn chats that all start with one long shared system prompt.

    Turn k of a conversation resends the whole history (the prefix, earlier questions and canned
    replies of `output_len`), so a server with prefix caching serves later turns faster. Requests
    are ordered turn by turn across conversations, so each history was sent shortly before.
    """
    if min(num_conversations, num_turns, prefix_len, turn_len, output_len) < 1:
        raise UserError("shared-prefix workload needs every length and count >= 1")
    rng = random.Random(seed)
    make = random_text_maker(rng, tokenizer)
    system = {"role": "system", "content": make(prefix_len)}
    histories: list[list[dict[str, str]]] = [[system] for _ in range(num_conversations)]
    prompts = []
    for _turn in range(num_turns):
        for history in histories:
            history.append({"role": "user", "content": make(turn_len)})
            messages = tuple(history)
            count = sum(tokenizer.count(m["content"]) for m in messages) if tokenizer else None
            prompts.append(Prompt(messages=messages, max_tokens=output_len, input_tokens=count))
            history.append({"role": "assistant", "content": make(output_len)})
    canned = "assistant turns in the history are canned text, not the server's replies"
    return counted_workload("shared-prefix", prompts, tokenizer, notes=[canned])


def random_text_maker(rng: random.Random, tokenizer: Tokenizer | None) -> Callable[[int], str]:
    """A function giving n random tokens of text (n words without a tokenizer)."""
    if tokenizer is not None:
        return lambda n: tokenizer.random_text(rng, n)
    return lambda n: " ".join(rng.choice(_WORDS) for _ in range(n))


def _prompt_from_item(
    item: Any, where: str, output_len: int, tokenizer: Tokenizer | None
) -> Prompt:
    if isinstance(item, dict) and isinstance(item.get("prompt"), str):
        messages: tuple[dict[str, str], ...] = ({"role": "user", "content": item["prompt"]},)
    elif isinstance(item, dict) and _valid_messages(item.get("messages")):
        messages = tuple({"role": m["role"], "content": m["content"]} for m in item["messages"])
    else:
        raise UserError(
            f'{where}: each line needs "prompt" (text) or "messages" (list of role/content)'
        )
    max_tokens = item.get("max_tokens", output_len)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise UserError(f'{where}: "max_tokens" must be a positive integer')
    count = sum(tokenizer.count(m["content"]) for m in messages) if tokenizer else None
    return Prompt(messages=messages, max_tokens=max_tokens, input_tokens=count)


def _valid_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in value
        )
    )


def _first_exchange(entry: Any) -> tuple[str, str] | None:
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    first, second = turns[0], turns[1]
    if not (isinstance(first, dict) and isinstance(second, dict)):
        return None
    question, answer = first.get("value"), second.get("value")
    if (
        first.get("from") not in ("human", "user")
        or not isinstance(question, str)
        or not isinstance(answer, str)
    ):
        return None
    return question, answer


def _read_text(path: str | Path) -> str:
    file = Path(path)
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"prompts file not found: {file}") from None
    except UnicodeDecodeError:
        raise UserError(f"{file} is not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"cannot read {file}: {exc.strerror}") from None


def _count_words(text: str) -> int:
    return len(text.split())


def token_counter(tokenizer: Tokenizer | None) -> Callable[[str], int] | None:
    """The function the client uses to count output tokens when the server sends no usage."""
    return tokenizer.count if tokenizer else None

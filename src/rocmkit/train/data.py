"""Training data: synthetic tokens/images, a tokenized text file (memory-mapped), an image folder.

Every source serves `get_batch(step=, micro_step=, micro_batch_size=, grad_accum=, rank=,
world_size=)` as a pure function of its arguments: sample number
g = ((step * grad_accum + micro_step) * world_size + rank) * micro_batch_size + i picks the data.
So a resumed run continues at the exact sample where it stopped without saved iterator state,
and ranks 0..W-1 with micro-batch B together see what one process with micro-batch W*B sees.
File-backed sources walk a fresh seeded permutation of their samples in every epoch.

Synthetic sources build their batches directly on the training device from a counter-based hash
of (seed, sample number, position): no host work, no copy, so a throughput run on a GPU measures
the model and never the data source. File-backed sources read on the host; the loop pins and
prefetches their batches (rocmkit.train.batches).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from rocmkit.atomic import atomic_open
from rocmkit.errors import UserError, require_extra, warn_once
from rocmkit.train.data_config import DataConfig
from rocmkit.train.models import ModelConfig, model_spec, resolved_vocab_size

__all__ = ["DataConfig", "DataSource", "build_data", "global_sample_index"]

# Synthetic tokens: a noisy walk around a fixed cycle of this many tokens. A model learns the
# successor of each token in a few dozen steps, so "loss goes down" is visible in smoke runs.
_CYCLE_TOKENS = 256
_NOISE_FRACTION = 0.1
# Synthetic images: one low-resolution prototype per class, upsampled, plus per-sample noise.
_PROTOTYPE_PIXELS = 8
_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


def global_sample_index(
    *,
    step: int,
    micro_step: int,
    micro_batch_size: int,
    grad_accum: int,
    rank: int,
    world_size: int,
) -> int:
    """Number of the first sample of this rank's micro-batch (see the module docstring)."""
    if micro_batch_size < 1 or grad_accum < 1 or world_size < 1:
        raise UserError("micro-batch size, gradient accumulation and world size must be positive")
    if not 0 <= rank < world_size or not 0 <= micro_step < grad_accum or step < 0:
        raise UserError(
            f"invalid batch position step={step} micro_step={micro_step}/{grad_accum} "
            f"rank={rank}/{world_size}"
        )
    return ((step * grad_accum + micro_step) * world_size + rank) * micro_batch_size


class DataSource(ABC):
    """Serves micro-batches as a pure function of the batch position."""

    task: Literal["lm", "image"]
    num_samples: int | None = None  # distinct samples in one epoch; None for synthetic data
    # True: batches are made on the device they are asked for; False: on the host (CPU).
    makes_on_device: bool = False

    def get_batch(
        self,
        *,
        step: int,
        micro_step: int,
        micro_batch_size: int,
        grad_accum: int,
        rank: int,
        world_size: int,
        device: torch.device | str = "cpu",
    ) -> dict[str, torch.Tensor]:
        """LM: {"input_ids", "labels"} int64 [B, T]; image: {"images" [B,3,S,S], "labels" [B]}.

        Sources that make data on the device return tensors on `device`; host sources return
        CPU tensors whatever `device` is (the caller copies them).
        """
        first = global_sample_index(
            step=step,
            micro_step=micro_step,
            micro_batch_size=micro_batch_size,
            grad_accum=grad_accum,
            rank=rank,
            world_size=world_size,
        )
        indices = range(first, first + micro_batch_size)
        if self.makes_on_device:
            return self.samples_on(indices, torch.device(device))
        return self.samples(indices)

    def samples(self, indices: range) -> dict[str, torch.Tensor]:
        """The batch made of global samples `indices` (on the CPU)."""
        return self.samples_on(indices, torch.device("cpu"))

    def prepare(self, device: torch.device) -> None:
        """Put the tables a source makes batches from on `device`, once, before the first step:
        a copy from pageable host memory makes the host wait for the device. Host sources keep
        nothing on the device."""
        return None

    @abstractmethod
    def samples_on(self, indices: range, device: torch.device) -> dict[str, torch.Tensor]:
        """The batch made of global samples `indices`; host sources ignore `device`."""


# --- counter-based hashing: random numbers as a pure function of (seed, sample, position) ------

_MASK32 = 0xFFFFFFFF


def _mul32(x: torch.Tensor, constant: int) -> torch.Tensor:
    """(x * constant) mod 2**32 for int64 x < 2**32, without int64 overflow (16-bit halves)."""
    low, high = constant & 0xFFFF, constant >> 16
    return (x * low + (((x * high) & 0xFFFF) << 16)) & _MASK32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer mixer (Wellons' lowbias32) on int64 tensors holding values < 2**32."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def _sample_keys(seed: int, indices: range, device: torch.device) -> torch.Tensor:
    """One 32-bit key per sample: hash of (seed, sample number); int64 [B]."""
    sample = torch.arange(indices.start, indices.stop, device=device, dtype=torch.int64)
    key = hash32(torch.full_like(sample, seed & _MASK32) ^ (sample & _MASK32))
    return hash32(key ^ (sample >> 32) ^ ((seed >> 32) & _MASK32))


def _uniform_bits(keys: torch.Tensor, count: int, stream: int) -> torch.Tensor:
    """`count` 32-bit random integers per key, [B, count], for independent `stream`s."""
    positions = torch.arange(count, device=keys.device, dtype=torch.int64)
    mixed = (keys[:, None] ^ hash32(torch.full_like(positions, stream))) + positions * 0x9E3779B9
    return hash32(hash32(mixed & _MASK32))


def _uniform(bits: torch.Tensor) -> torch.Tensor:
    """Floats in (0, 1) from 32-bit integers (24 significant bits, never 0)."""
    return ((bits >> 8).to(torch.float32) + 0.5) * (1.0 / (1 << 24))


def _standard_normal(keys: torch.Tensor, count: int, stream: int) -> torch.Tensor:
    """Box-Muller normals, [B, count]."""
    u1 = _uniform(_uniform_bits(keys, count, stream))
    u2 = _uniform(_uniform_bits(keys, count, stream + 1))
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)


def _epoch_position(index: int, num_samples: int, seed: int, cache: dict[int, np.ndarray]) -> int:
    """Sample `index` of an endless stream that walks a new seeded permutation every epoch."""
    epoch, offset = divmod(index, num_samples)
    if epoch not in cache:
        cache.clear()
        cache[epoch] = np.random.default_rng([seed, epoch]).permutation(num_samples)
    return int(cache[epoch][offset])


def _lm_batch(rows: np.ndarray) -> dict[str, torch.Tensor]:
    tokens = torch.from_numpy(rows.astype(np.int64))
    return {"input_ids": tokens[:, :-1].contiguous(), "labels": tokens[:, 1:].contiguous()}


class SyntheticTokens(DataSource):
    """Endless token sequences with learnable structure, fixed by (seed, sample number)."""

    task = "lm"
    makes_on_device = True

    def __init__(self, *, vocab_size: int, seq_len: int, seed: int) -> None:
        self.seq_len = seq_len
        self.seed = seed
        count = min(vocab_size, _CYCLE_TOKENS)
        self.cycle = torch.from_numpy(
            np.random.default_rng([seed]).permutation(vocab_size)[:count].astype(np.int64)
        )
        self._cycles: dict[torch.device, torch.Tensor] = {}

    def prepare(self, device: torch.device) -> None:
        if device not in self._cycles:
            self._cycles[device] = self.cycle.to(device)

    def samples_on(self, indices: range, device: torch.device) -> dict[str, torch.Tensor]:
        self.prepare(device)
        cycle = self._cycles[device]
        count, length = len(cycle), self.seq_len + 1
        keys = _sample_keys(self.seed, indices, device)
        # A walk around the cycle from a random start; a fraction of positions jump at random.
        start = hash32(keys) % count
        positions = (start[:, None] + torch.arange(length, device=device)) % count
        noisy = _uniform(_uniform_bits(keys, length, 1)) < _NOISE_FRACTION
        jumps = _uniform_bits(keys, length, 2) % count
        tokens = cycle[torch.where(noisy, jumps, positions)]
        return {"input_ids": tokens[:, :-1].contiguous(), "labels": tokens[:, 1:].contiguous()}


class SyntheticImages(DataSource):
    """Class prototypes plus noise, normalised like ImageNet inputs, fixed by (seed, sample)."""

    task = "image"
    makes_on_device = True

    def __init__(self, *, num_classes: int, image_size: int, seed: int) -> None:
        self.image_size = image_size
        self.seed = seed
        shape = (num_classes, 3, _PROTOTYPE_PIXELS, _PROTOTYPE_PIXELS)
        self.prototypes = torch.from_numpy(
            np.random.default_rng([seed]).standard_normal(shape).astype(np.float32)
        )
        # Nearest-neighbour upsampling by index: output pixel -> prototype pixel.
        self.source_pixel = torch.arange(image_size) * _PROTOTYPE_PIXELS // image_size
        self._tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def prepare(self, device: torch.device) -> None:
        if device not in self._tables:
            self._tables[device] = (self.prototypes.to(device), self.source_pixel.to(device))

    def samples_on(self, indices: range, device: torch.device) -> dict[str, torch.Tensor]:
        self.prepare(device)
        prototypes, source_pixel = self._tables[device]
        keys = _sample_keys(self.seed, indices, device)
        labels = hash32(keys) % len(prototypes)
        noise = _standard_normal(keys, prototypes[0].numel(), 1).view(-1, *prototypes.shape[1:])
        small = prototypes[labels] + 0.5 * noise
        images = small[:, :, source_pixel][:, :, :, source_pixel]
        return {"images": images, "labels": labels}


# --- text file -> memory-mapped tokens ------------------------------------------------------

_MAGIC = b"RKTOKENS"
_PREFIX = struct.Struct("<8sII")  # magic, header bytes (data offset), JSON length
_FORMAT_VERSION = 1
_CHUNK_BYTES = 8 << 20


class TokenFile(DataSource):
    """Windows of seq_len + 1 tokens cut from a tokenized file, shuffled per epoch."""

    task = "lm"

    def __init__(self, tokens: np.ndarray, *, seq_len: int, seed: int) -> None:
        self.tokens = tokens
        self.seq_len = seq_len
        self.seed = seed
        # Non-overlapping windows; a window needs one extra token for the shifted labels.
        self.num_windows = (len(tokens) - 1) // seq_len
        self.num_samples = self.num_windows
        if self.num_windows < 1:
            raise UserError(
                f"the text has {len(tokens)} tokens; model.seq_len = {seq_len} needs at least "
                f"{seq_len + 1}: use a longer file or a shorter seq_len"
            )
        self._permutations: dict[int, np.ndarray] = {}

    def samples_on(self, indices: range, device: torch.device) -> dict[str, torch.Tensor]:
        rows = []
        for index in indices:
            window = _epoch_position(index, self.num_windows, self.seed, self._permutations)
            start = window * self.seq_len
            rows.append(self.tokens[start : start + self.seq_len + 1])
        return _lm_batch(np.stack(rows))


class _Tokenizer:
    """Bytes (vocabulary 256) or a local Hugging Face tokenizer; `identity` keys the cache."""

    def __init__(self, spec: str) -> None:
        self.hf: Any = None
        if spec == "bytes":
            self.vocab_size, self.identity = 256, "bytes"
            return
        directory = Path(spec).expanduser()
        if not directory.is_dir():
            raise UserError(
                f"data.tokenizer must be 'bytes' or a local tokenizer directory: {spec}"
            )
        transformers = require_extra("transformers", "llm")
        try:
            self.hf = transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise UserError(f"cannot load a tokenizer from {directory}: {exc}") from None
        self.vocab_size = len(self.hf)
        digest = hashlib.sha256()
        for file in sorted(p for p in directory.iterdir() if p.is_file()):
            digest.update(file.name.encode() + b"\0" + file.read_bytes())
        self.identity = "hf-" + digest.hexdigest()[:16]

    def encode_file(self, source: Path, dtype: np.dtype[Any]) -> Iterator[np.ndarray]:
        with source.open("rb") as handle:
            if self.hf is None:
                while chunk := handle.read(_CHUNK_BYTES):
                    yield np.frombuffer(chunk, dtype=np.uint8).astype(dtype)
                return
            # Whole lines per chunk, so no token or UTF-8 sequence is cut at a chunk border.
            while lines := handle.readlines(_CHUNK_BYTES):
                raw = b"".join(lines)
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    warn_once(f"{source} is not valid UTF-8; invalid bytes became U+FFFD")
                    text = raw.decode("utf-8", errors="replace")
                ids = self.hf.encode(text, add_special_tokens=False)
                yield np.asarray(ids, dtype=dtype)


def _token_dtype(vocab_size: int) -> np.dtype[Any]:
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _read_cache(path: Path, expected: dict[str, Any]) -> np.ndarray | None:
    """The cached tokens if the file exists and was made from the same source and tokenizer."""
    try:
        with path.open("rb") as handle:
            magic, header_bytes, json_bytes = _PREFIX.unpack(handle.read(_PREFIX.size))
            meta = json.loads(handle.read(json_bytes))
        dtype = np.dtype(meta["dtype"])
        num_tokens = int(meta["num_tokens"])
    except (OSError, struct.error, ValueError, KeyError, TypeError):
        return None
    if magic != _MAGIC or any(meta.get(k) != v for k, v in expected.items()):
        return None
    if path.stat().st_size != header_bytes + num_tokens * dtype.itemsize or num_tokens == 0:
        return None
    return np.memmap(path, dtype=dtype, mode="r", offset=header_bytes, shape=(num_tokens,))


def _write_cache(path: Path, meta: dict[str, Any], chunks: Iterator[np.ndarray]) -> None:
    """Stream tokens into `path` atomically (a temporary file beside it, renamed when complete).

    Ranks that tokenize at the same time write identical files, so the last rename wins harmlessly.
    """
    # Room for the final JSON: the token count is the only field unknown now, 20 digits at most.
    header_bytes = -(-(_PREFIX.size + len(json.dumps({**meta, "num_tokens": 10**20}))) // 64) * 64
    with atomic_open(path) as handle:
        handle.seek(header_bytes)
        num_tokens = 0
        for chunk in chunks:
            handle.write(chunk.tobytes())
            num_tokens += chunk.size
        encoded = json.dumps({**meta, "num_tokens": num_tokens}).encode()
        handle.seek(0)
        handle.write(_PREFIX.pack(_MAGIC, header_bytes, len(encoded)) + encoded)


def _check_text_source(path: str) -> Path:
    source = Path(path).expanduser()
    if not source.exists():
        raise UserError(f"data file not found: {source}")
    if not source.is_file():
        raise UserError(f"data.path must be a text file for data.kind = 'text': {source}")
    if source.stat().st_size == 0:
        raise UserError(f"data file is empty: {source}")
    return source


def load_text_tokens(config: DataConfig, tokenizer_spec: str, model_vocab: int) -> np.ndarray:
    """Tokenize config.path once into a memory-mapped cache; reuse it while the source is unchanged."""
    source = _check_text_source(str(config.path))
    tokenizer = _Tokenizer(tokenizer_spec)
    if tokenizer.vocab_size > model_vocab:
        raise UserError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the model only "
            f"{model_vocab}: raise model.vocab_size"
        )
    dtype = _token_dtype(tokenizer.vocab_size)
    expected = {
        "format": _FORMAT_VERSION,
        "source_sha256": _file_sha256(source),
        "tokenizer": tokenizer.identity,
        "dtype": dtype.name,
    }
    cache_dir = Path(config.cache_dir).expanduser() if config.cache_dir else source.parent
    cache = cache_dir / f"{source.name}.{tokenizer.identity}.tokens"
    tokens = _read_cache(cache, expected)
    if tokens is None:
        meta = {**expected, "source": str(source.resolve()), "vocab_size": tokenizer.vocab_size}
        try:
            _write_cache(cache, meta, tokenizer.encode_file(source, dtype))
        except OSError as exc:
            raise UserError(
                f"cannot write the token cache in {cache.parent} ({exc.strerror}): "
                "set data.cache_dir to a writable folder"
            ) from None
        tokens = _read_cache(cache, expected)
        if tokens is None:
            raise UserError(f"{source} holds no tokens after tokenization")
    return tokens


# --- image folder ---------------------------------------------------------------------------


class ImageFolderSource(DataSource):
    """An image folder with one subfolder per class, resized and centre-cropped to image_size."""

    task = "image"

    def __init__(self, path: str, *, image_size: int, num_classes: int, seed: int) -> None:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise UserError(f"image folder not found: {root}")
        datasets = require_extra("torchvision.datasets", "vision")
        from torchvision import transforms

        transform = transforms.Compose(
            [
                transforms.Resize(image_size),
                transforms.CenterCrop(image_size),
                transforms.ToTensor(),
                transforms.Normalize(_IMAGENET_MEAN, _IMAGENET_STD),
            ]
        )
        try:
            self.dataset = datasets.ImageFolder(str(root), transform=transform)
        except (FileNotFoundError, OSError) as exc:
            raise UserError(
                f"{root} is not an image folder with one subfolder per class: {exc}"
            ) from None
        if len(self.dataset.classes) > num_classes:
            raise UserError(
                f"{root} has {len(self.dataset.classes)} classes but model.num_classes = {num_classes}"
            )
        self.num_images = len(self.dataset)
        self.num_samples = self.num_images
        self.seed = seed
        self._permutations: dict[int, np.ndarray] = {}

    def samples_on(self, indices: range, device: torch.device) -> dict[str, torch.Tensor]:
        images, labels = [], []
        for index in indices:
            position = _epoch_position(index, self.num_images, self.seed, self._permutations)
            try:
                image, label = self.dataset[position]
            except OSError as exc:  # PIL's UnidentifiedImageError is an OSError
                file = self.dataset.samples[position][0]
                raise UserError(f"cannot read image {file}: {exc}") from None
            images.append(image)
            labels.append(label)
        return {"images": torch.stack(images), "labels": torch.tensor(labels, dtype=torch.int64)}


# --- entry point ----------------------------------------------------------------------------


def _default_tokenizer(config: DataConfig, model: ModelConfig) -> str:
    # A pretrained HF model is meaningless with byte tokens: use the tokenizer saved beside it.
    if config.tokenizer:
        return config.tokenizer
    if model.kind == "hf" and model.path:
        directory = Path(model.path).expanduser()
        if any(
            (directory / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")
        ):
            return str(directory)
    return "bytes"


def build_data(config: DataConfig, model: ModelConfig) -> DataSource:
    """The data source `config` describes, shaped for `model` (sequence length, image size)."""
    is_lm = model_spec(model.kind).task == "lm"  # registry: registered kinds say their task
    if config.kind == "synthetic" and is_lm:
        vocab = resolved_vocab_size(model)
        return SyntheticTokens(vocab_size=vocab, seq_len=model.seq_len, seed=config.seed)
    if config.kind == "synthetic":
        return SyntheticImages(
            num_classes=model.num_classes, image_size=model.image_size, seed=config.seed
        )
    if config.kind == "text":
        if not is_lm:
            raise UserError(
                f"data.kind = 'text' needs a language model, not model.kind = '{model.kind}'"
            )
        vocab = resolved_vocab_size(model)
        tokens = load_text_tokens(config, _default_tokenizer(config, model), vocab)
        return TokenFile(tokens, seq_len=model.seq_len, seed=config.seed)
    if is_lm:
        raise UserError(
            f"data.kind = 'images' needs an image model, not model.kind = '{model.kind}'"
        )
    return ImageFolderSource(
        str(config.path),
        image_size=model.image_size,
        num_classes=model.num_classes,
        seed=config.seed,
    )

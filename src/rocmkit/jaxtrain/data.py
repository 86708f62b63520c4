"""Synthetic tokens made on the device inside the compiled step, the same tokens as the torch side.

rocmkit.train.data.SyntheticTokens draws each sample from a counter-based hash of (seed, global
sample number, position). The same hash in uint32 arithmetic (XLA's integer multiply wraps mod
2**32, which is what torch's 16-bit-halves multiply emulates on int64) gives the same tokens, so
the batch of a step is a pure function of the step number held in the training state: nothing is
built on the host and nothing is copied per step. Sample numbers are 64-bit (lo, hi) word pairs,
as in torch, so the stream stays identical past 2**32 samples.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from rocmkit.train.data import _NOISE_FRACTION, DataSource, SyntheticTokens

__all__ = ["DeviceTokens", "device_tokens"]

_MASK16 = 0xFFFF
_MASK32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9  # the position increment of rocmkit.train.data._uniform_bits


def _u32(value: int) -> jax.Array:
    return jnp.asarray(value & _MASK32, dtype=jnp.uint32)


def hash32(x: jax.Array) -> jax.Array:
    """Wellons' lowbias32 on uint32, as rocmkit.train.data.hash32."""
    x = x ^ (x >> 16)
    x = x * _u32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * _u32(0x846CA68B)
    return x ^ (x >> 16)


def _mul_wide(a: jax.Array, b: int) -> tuple[jax.Array, jax.Array]:
    """(low, high) uint32 words of the 64-bit product of uint32 `a` and an int b < 2**32."""
    a0, a1 = a & _u32(_MASK16), a >> 16
    b0, b1 = _u32(b & _MASK16), _u32(b >> 16)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1  # each < 2**32
    middle = (p00 >> 16) + (p01 & _u32(_MASK16)) + (p10 & _u32(_MASK16))
    low = (p00 & _u32(_MASK16)) | (middle << 16)
    high = p11 + (p01 >> 16) + (p10 >> 16) + (middle >> 16)
    return low, high


def _uniform_bits(keys: jax.Array, count: int, stream: int) -> jax.Array:
    positions = jnp.arange(count, dtype=jnp.uint32)
    mixed = (keys[:, None] ^ hash32(_u32(stream))) + positions * _u32(_GOLDEN)
    return hash32(hash32(mixed))


def _uniform(bits: jax.Array) -> jax.Array:
    return ((bits >> 8).astype(jnp.float32) + 0.5) * (1.0 / (1 << 24))


class DeviceTokens:
    """SyntheticTokens' batches for one step as a traceable function of the step number."""

    def __init__(self, source: SyntheticTokens, *, micro_batch_size: int, grad_accum: int) -> None:
        if source.seed < 0 or micro_batch_size * grad_accum > _MASK32:
            raise ValueError("DeviceTokens needs a seed >= 0 and fewer than 2**32 samples a step")
        self.seed = source.seed
        self.seq_len = source.seq_len
        self.cycle = np.asarray(source.cycle.numpy(), dtype=np.int32)
        self.micro_batch_size = micro_batch_size
        self.grad_accum = grad_accum

    def _keys(self, step: jax.Array, micro_step: int) -> jax.Array:
        """One key per sample of (step, micro_step): hash of (seed, 64-bit sample number)."""
        size = self.micro_batch_size
        low, high = _mul_wide(step.astype(jnp.uint32), size * self.grad_accum)
        offsets = _u32(micro_step * size) + jnp.arange(size, dtype=jnp.uint32)
        sample_low = low + offsets
        sample_high = high + (sample_low < low).astype(jnp.uint32)  # the carry
        key = hash32(_u32(self.seed) ^ sample_low)
        return hash32(key ^ sample_high ^ _u32(self.seed >> 32))

    def micro_batch(self, step: jax.Array, micro_step: int) -> dict[str, jax.Array]:
        """{"input_ids", "labels"} int32 [micro_batch_size, seq_len] of (step, micro_step)."""
        cycle = jnp.asarray(self.cycle)
        count, length = len(self.cycle), self.seq_len + 1
        keys = self._keys(step, micro_step)
        start = hash32(keys) % _u32(count)
        positions = (start[:, None] + jnp.arange(length, dtype=jnp.uint32)) % _u32(count)
        noisy = _uniform(_uniform_bits(keys, length, 1)) < _NOISE_FRACTION
        jumps = _uniform_bits(keys, length, 2) % _u32(count)
        tokens = cycle[jnp.where(noisy, jumps, positions).astype(jnp.int32)]
        return {"input_ids": tokens[:, :-1], "labels": tokens[:, 1:]}

    def __call__(self, step: jax.Array) -> dict[str, jax.Array]:
        """Step `step`'s batch, [grad_accum, micro_batch_size, seq_len] int32."""
        micro = [self.micro_batch(step, i) for i in range(self.grad_accum)]
        return {key: jnp.stack([m[key] for m in micro]) for key in ("input_ids", "labels")}


def device_tokens(
    data: DataSource, *, micro_batch_size: int, grad_accum: int
) -> DeviceTokens | None:
    """The on-device maker of `data`'s batches, or None when they come from the host (files)."""
    if not isinstance(data, SyntheticTokens):
        return None
    return DeviceTokens(data, micro_batch_size=micro_batch_size, grad_accum=grad_accum)

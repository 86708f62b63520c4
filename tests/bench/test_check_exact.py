"""The exact check of copies and triad (one read of the destination: a bit checksum and a
rotating sample of lines) catches what the full bit-for-bit comparison caught."""

from __future__ import annotations

import pytest
import torch

from rocmkit.bench import suites  # noqa: F401  (loads the suites before bandwidth)
from rocmkit.bench.bandwidth import op_problem
from rocmkit.bench.checks import SAMPLE_STRIDE, check_exact_output, exact_reference

MIB = 2**20


def _pattern(n: int) -> torch.Tensor:
    return (torch.arange(n) % 251).to(torch.float32)


@pytest.mark.parametrize("op", ["copy", "triad"])
def test_one_wrong_element_anywhere_is_caught_at_every_check(op):
    run, check = op_problem(op, MIB, "cpu")
    n = MIB // 4
    generator = torch.Generator().manual_seed(25)
    places = [0, 1, n // 2, n - 2, n - 1, *torch.randint(0, n, (40,), generator=generator).tolist()]
    for place in places:
        out = run()
        assert check(out).correct
        right = float(out[place])
        # the smallest change there is (the lowest mantissa bit), or a zero's sign
        out[place] = -0.0 if right == 0 else torch.nextafter(torch.tensor(right), torch.tensor(0.0))
        verdict = check(out)
        assert not verdict.correct and verdict.num_wrong in (0, 1), place
        assert check(run()).correct  # the next healthy output is right again


def test_a_nan_a_stale_or_a_partial_copy_is_wrong():
    n = MIB // 4
    reference = exact_reference(_pattern(n), "copy")
    stale = torch.full((n,), -1.0)
    partial = _pattern(n)
    partial[n // 3 :] = -1.0
    nan = _pattern(n)
    nan[777] = float("nan")
    for got in (stale, partial, nan):
        verdict = check_exact_output(reference, got)
        assert not verdict.correct and verdict.num_wrong >= 1


def test_bits_moved_to_the_wrong_place_are_caught():
    """Swapped or shifted data keeps the checksum: the sampled lines catch a misplaced run of
    SAMPLE_STRIDE lines (4 KiB) for certain, and a swap of two elements when a sampled line holds
    one of them (within SAMPLE_STRIDE checks, as the sample rotates)."""
    n = MIB // 4
    expected = _pattern(n)
    reference = exact_reference(expected, "copy")
    shifted = expected.roll(5)
    assert not check_exact_output(reference, shifted).correct
    block = expected.clone()
    words = SAMPLE_STRIDE * 16  # 4 KiB of float32
    block[10_000 : 10_000 + words] = expected[20_003 : 20_003 + words]
    for _ in range(SAMPLE_STRIDE):  # at every rotation of the sample
        assert not check_exact_output(reference, block).correct
    swapped = expected.clone()
    swapped[[1000, 5000]] = swapped[[5000, 1000]]
    verdicts = [check_exact_output(reference, swapped).correct for _ in range(SAMPLE_STRIDE)]
    assert not all(verdicts)


def test_many_healthy_checks_give_no_false_wrong():
    """Every op and size class over a full rotation of the sample: never WRONG."""
    verdicts = []
    for op in ("copy", "triad"):
        for size in (4096, MIB + 4, 3 * MIB):  # odd word counts, lines that do not divide
            run, check = op_problem(op, size, "cpu")
            verdicts += [check(run()) for _ in range(SAMPLE_STRIDE + 1)]
    assert len(verdicts) >= 50
    assert all(v.correct and v.num_wrong == 0 and v.max_error == 0 for v in verdicts)

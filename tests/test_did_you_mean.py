"""An unknown flag or dotted override names the closest known one, on every command."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rocmkit.cli.main import main
from rocmkit.config import from_dict
from rocmkit.errors import UserError


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["train", "--stepz", "5"], "did you mean --steps?"),
        (["bench", "--siute", "gemm"], "did you mean --suite?"),
        (["port", ".", "--fial-on", "high"], "did you mean --fail-on?"),
        (["doctor", "--jsn"], "did you mean --json?"),
        (["hipify", "x.cu", "--dfif"], "did you mean --diff?"),
        (["report", "runs", "--fromat", "md"], "did you mean --format?"),
        (["trian"], "did you mean train?"),
        (["profile", "memory", "--world-sizee", "8"], "did you mean --world-size?"),
        (["infer", "serve", "--url", "http://h", "--model", "m", "--ratee", "1"], "--rate?"),
    ],
)
def test_unknown_flag_suggests_the_closest(
    argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert hint in err and err.count("\n") == 1
    command = " ".join(w for w in argv[:2] if w in ("profile", "memory", "infer", "serve"))
    assert f"rocmkit {command or argv[0]} --help" in err or argv == ["trian"]


def test_dotted_values_are_not_taken_for_flags(capsys: pytest.CaptureFixture[str]) -> None:
    # `--train.lr --x`: the token after a dotted key is its value, not an unknown flag
    assert main(["train", "--preset", "gpt-tiny", "--train.lrr", "3e-4"]) == 2
    err = capsys.readouterr().err
    assert "unknown setting 'train.lrr' (did you mean 'train.lr'?)" in err


@dataclass(kw_only=True)
class _Train:
    steps: int = 1
    lr: float = 0.1


@dataclass(kw_only=True)
class _Config:
    train: _Train = field(default_factory=_Train)
    seed: int = 0


def test_unknown_section_or_key_suggests_the_dotted_name() -> None:
    with pytest.raises(UserError, match=r"'trian' \(did you mean 'train.lr'\?\)"):
        from_dict(_Config, {"trian": {"lr": "1"}})
    with pytest.raises(UserError, match=r"'train.stepz' \(did you mean 'train.steps'\?\)"):
        from_dict(_Config, {"train": {"stepz": "1"}})
    with pytest.raises(UserError) as nothing_close:
        from_dict(_Config, {"zzz": 1})
    assert "did you mean" not in str(nothing_close.value)

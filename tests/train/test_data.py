"""Training data: pure batch positions, ranks, the tokenized-text cache and image folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from rocmkit.errors import UserError
from rocmkit.train.data import DataConfig, build_data, global_sample_index
from rocmkit.train.models import ModelConfig

GPT = ModelConfig(vocab_size=300, seq_len=8, n_layer=1, n_head=1, d_model=8)
RESNET = ModelConfig(kind="resnet", arch="resnet10", num_classes=3, image_size=16)


def _batch(source, *, step=0, micro_step=0, mb=4, accum=1, rank=0, world=1):
    return source.get_batch(
        step=step,
        micro_step=micro_step,
        micro_batch_size=mb,
        grad_accum=accum,
        rank=rank,
        world_size=world,
    )


def _assert_same(left: dict[str, torch.Tensor], right: dict[str, torch.Tensor]) -> None:
    assert left.keys() == right.keys()
    for key in left:
        torch.testing.assert_close(left[key], right[key], rtol=0, atol=0)


def _union_of_ranks(source, world: int, **position) -> dict[str, torch.Tensor]:
    parts = [_batch(source, rank=r, world=world, **position) for r in range(world)]
    return {key: torch.cat([p[key] for p in parts]) for key in parts[0]}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("the quick brown fox jumps over the lazy dog. " * 40, encoding="utf-8")
    return path


@pytest.fixture
def image_folder(tmp_path: Path) -> Path:
    image = pytest.importorskip("PIL.Image")
    root = tmp_path / "images"
    for label, colour in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
        (root / f"class{label}").mkdir(parents=True)
        for i in range(3):
            size = (20 + i, 24)  # not square: resize + centre crop must still give 16x16
            image.new("RGB", size, colour).save(root / f"class{label}" / f"{i}.png")
    return root


def test_sample_index_formula_places_ranks_side_by_side():
    assert (
        global_sample_index(
            step=0, micro_step=0, micro_batch_size=4, grad_accum=1, rank=1, world_size=2
        )
        == 4
    )
    assert (
        global_sample_index(
            step=1, micro_step=1, micro_batch_size=2, grad_accum=2, rank=0, world_size=2
        )
        == 12
    )
    with pytest.raises(UserError):
        global_sample_index(
            step=0, micro_step=2, micro_batch_size=2, grad_accum=2, rank=0, world_size=1
        )
    with pytest.raises(UserError):
        global_sample_index(
            step=0, micro_step=0, micro_batch_size=2, grad_accum=1, rank=2, world_size=2
        )


def test_synthetic_tokens_are_shifted_pairs_in_the_vocabulary():
    batch = _batch(build_data(DataConfig(), GPT))
    assert batch["input_ids"].shape == batch["labels"].shape == (4, GPT.seq_len)
    assert batch["input_ids"].dtype == torch.int64
    torch.testing.assert_close(batch["input_ids"][:, 1:], batch["labels"][:, :-1])
    assert int(batch["input_ids"].min()) >= 0 and int(batch["input_ids"].max()) < GPT.vocab_size


@pytest.mark.parametrize(
    ("data", "model"),
    [("synthetic", GPT), ("synthetic", RESNET), ("text", GPT), ("images", RESNET)],
)
def test_batches_are_a_pure_function_of_the_position(data, model, corpus, image_folder):
    path = {"text": corpus, "images": image_folder}.get(data)
    config = DataConfig(kind=data, path=str(path) if path else None)
    first, second = build_data(config, model), build_data(config, model)
    _assert_same(
        _batch(first, step=3, micro_step=1, accum=2), _batch(second, step=3, micro_step=1, accum=2)
    )
    # Reading other positions in between (as a resumed run would not) changes nothing.
    _batch(first, step=7)
    _assert_same(
        _batch(first, step=3, micro_step=1, accum=2), _batch(second, step=3, micro_step=1, accum=2)
    )
    assert not torch.equal(_batch(first, step=0)["labels"], _batch(first, step=1)["labels"])


@pytest.mark.parametrize(
    ("data", "model"),
    [("synthetic", GPT), ("synthetic", RESNET), ("text", GPT), ("images", RESNET)],
)
def test_ranks_see_distinct_samples_that_together_make_the_single_process_batch(
    data, model, corpus, image_folder
):
    path = {"text": corpus, "images": image_folder}.get(data)
    source = build_data(DataConfig(kind=data, path=str(path) if path else None, seed=5), model)
    position = {"step": 2, "micro_step": 1, "accum": 2}
    rank0 = _batch(source, rank=0, world=2, mb=2, **position)
    rank1 = _batch(source, rank=1, world=2, mb=2, **position)
    key = "input_ids" if "input_ids" in rank0 else "images"
    if data != "images":  # 9 same-colour images: two ranks may draw identical pixels
        assert not torch.equal(rank0[key], rank1[key])
    _assert_same(_union_of_ranks(source, 2, mb=2, **position), _batch(source, mb=4, **position))


def test_seed_changes_synthetic_data():
    a = _batch(build_data(DataConfig(seed=0), GPT))
    b = _batch(build_data(DataConfig(seed=1), GPT))
    assert not torch.equal(a["input_ids"], b["input_ids"])


def test_synthetic_images_have_the_model_shape_and_labels_in_range():
    batch = _batch(build_data(DataConfig(), RESNET), mb=6)
    assert batch["images"].shape == (6, 3, 16, 16) and batch["images"].dtype == torch.float32
    assert batch["labels"].dtype == torch.int64
    assert set(batch["labels"].tolist()) <= {0, 1, 2}


def _cache_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.tokens"))


def test_text_is_tokenized_once_and_reused(corpus: Path):
    source = build_data(DataConfig(kind="text", path=str(corpus)), GPT)
    (cache,) = _cache_files(corpus.parent)
    stamp = cache.stat().st_mtime_ns
    again = build_data(DataConfig(kind="text", path=str(corpus)), GPT)
    assert cache.stat().st_mtime_ns == stamp and _cache_files(corpus.parent) == [cache]
    _assert_same(_batch(source), _batch(again))
    # Byte tokens: the windows are pieces of the text itself.
    text = corpus.read_bytes()
    row = bytes(_batch(source)["input_ids"][0].tolist())
    assert row in text


def test_changed_text_rebuilds_the_cache(corpus: Path, tmp_path: Path):
    config = DataConfig(kind="text", path=str(corpus), cache_dir=str(tmp_path / "cache"))
    build_data(config, GPT)
    # Same size, same timestamp: only the content differs.
    stat = corpus.stat()
    corpus.write_bytes(corpus.read_bytes().replace(b"fox", b"cat"))
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    source = build_data(config, GPT)
    windows = [bytes(row.tolist()) for row in _batch(source, mb=source.num_samples)["input_ids"]]
    assert any(b"cat" in w for w in windows) and not any(b"fox" in w for w in windows)
    assert len(_cache_files(tmp_path / "cache")) == 1


def test_a_damaged_cache_is_rebuilt(corpus: Path):
    expected = _batch(build_data(DataConfig(kind="text", path=str(corpus)), GPT))
    (cache,) = _cache_files(corpus.parent)
    cache.write_bytes(cache.read_bytes()[:100])
    _assert_same(_batch(build_data(DataConfig(kind="text", path=str(corpus)), GPT)), expected)


def test_bytes_tokenizer_reads_text_that_is_not_utf8(tmp_path: Path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("café déjà vu, naïve façade. ".encode("latin-1") * 10 + b"\xff\xfe\x00")
    source = build_data(DataConfig(kind="text", path=str(path)), GPT)
    rows = _batch(source, mb=source.num_samples)["input_ids"]
    assert int(rows.max()) <= 255 and 0xE9 in rows.flatten().tolist()  # latin-1 'é', one byte


@pytest.mark.parametrize(
    ("content", "message"), [(None, "not found"), (b"", "empty"), (b"tiny", "at least 9")]
)
def test_missing_empty_or_too_short_text_is_a_user_error(tmp_path: Path, content, message):
    path = tmp_path / "data.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        build_data(DataConfig(kind="text", path=str(path)), GPT)


def test_text_for_an_image_model_is_a_user_error(corpus: Path):
    with pytest.raises(UserError, match="language model"):
        build_data(DataConfig(kind="text", path=str(corpus)), RESNET)


def test_local_hf_tokenizer_is_used_and_checked_against_the_vocabulary(
    tmp_path: Path, corpus: Path
):
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    words = [*sorted(set(corpus.read_text().replace(".", " .").split())), "[UNK]"]
    model = tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]")
    backend = tokenizers.Tokenizer(model)
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    fast.save_pretrained(tmp_path / "tok")
    config = DataConfig(kind="text", path=str(corpus), tokenizer=str(tmp_path / "tok"))
    source = build_data(config, GPT)
    batch = _batch(source)
    assert int(batch["input_ids"].max()) < len(words)
    assert len(_cache_files(corpus.parent)) == 1
    small = ModelConfig(vocab_size=4, seq_len=8, n_layer=1, n_head=1, d_model=8)
    with pytest.raises(UserError, match="vocab_size"):
        build_data(config, small)


def test_image_folder_gives_normalised_images_with_folder_labels(image_folder: Path):
    source = build_data(DataConfig(kind="images", path=str(image_folder)), RESNET)
    assert source.num_samples == 9
    batch = _batch(source, mb=9)
    assert batch["images"].shape == (9, 3, 16, 16)
    assert sorted(batch["labels"].tolist()) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # Red images are class 0: their red channel is the brightest after normalisation.
    red = batch["images"][batch["labels"] == 0]
    assert bool((red[:, 0] > red[:, 1]).all())


def test_bad_image_folders_are_user_errors(tmp_path: Path, image_folder: Path):
    with pytest.raises(UserError, match="not found"):
        build_data(DataConfig(kind="images", path=str(tmp_path / "missing")), RESNET)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="subfolder per class"):
        build_data(DataConfig(kind="images", path=str(tmp_path / "empty")), RESNET)
    with pytest.raises(UserError, match="num_classes"):
        two = ModelConfig(kind="resnet", arch="resnet10", num_classes=2, image_size=16)
        build_data(DataConfig(kind="images", path=str(image_folder)), two)
    (image_folder / "class0" / "0.png").write_bytes(b"not a png")
    source = build_data(DataConfig(kind="images", path=str(image_folder)), RESNET)
    with pytest.raises(UserError, match=r"class0/0\.png"):
        _batch(source, mb=9)


def test_settings_that_do_nothing_warn():
    with pytest.warns(UserWarning, match="no effect"):
        DataConfig(kind="synthetic", path="corpus.txt")

"""Open registries: a model kind and a precision policy registered outside rocmkit train end to end."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from rocmkit.errors import UserError
from rocmkit.train import config as train_config
from rocmkit.train import load_train_config, models, train
from rocmkit.train.models import BuiltModel, ModelConfig, register_model
from rocmkit.train.precision import PrecisionPolicy

# A model kind that rocmkit does not ship: a two-layer MLP over small images.
MLP_SOURCE = textwrap.dedent(
    """
    import torch
    from rocmkit.train.models import BuiltModel, register_model

    def build_mlp(config):
        hidden = int(config.options.get("hidden", 16))
        pixels = 3 * config.image_size**2
        module = torch.nn.Sequential(
            torch.nn.Flatten(),
            torch.nn.Linear(pixels, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, config.num_classes),
        )
        return BuiltModel(
            module=module,
            blocks=[],
            task="image",
            num_params=sum(p.numel() for p in module.parameters()),
            flops_per_sample=6.0 * (pixels * hidden + hidden * config.num_classes),
            units_per_sample=1,
            unit_name="images",
        )

    register_model("mlp", build_mlp, task="image", description="test MLP")
    """
)

MLP_TOML = """
[model]
kind = "mlp"
image_size = 8
num_classes = 4
options = {{ hidden = 12 }}
{module}

[train]
steps = 4
micro_batch = 4
warmup = 1
device = "cpu"

[checkpoint]
save_final = false

[logging]
run_dir = "{run_dir}"
log_every = 1
"""


@pytest.fixture(autouse=True)
def _restore_registries(monkeypatch):
    """Registrations made by a test do not leak into the next one."""
    monkeypatch.setattr(models, "_REGISTRY", dict(models._REGISTRY))
    monkeypatch.setattr(train_config, "_PRECISIONS", dict(train_config._PRECISIONS))
    yield
    sys.modules.pop("toy_mlp_model", None)


def _register_mlp_here() -> list[BuiltModel]:
    namespace: dict[str, object] = {}
    exec(compile(MLP_SOURCE, "toy_mlp_model.py", "exec"), namespace)
    built: list[BuiltModel] = []
    build = namespace["build_mlp"]

    def recording_build(config: ModelConfig) -> BuiltModel:
        built.append(build(config))  # type: ignore[operator]
        return built[-1]

    register_model("mlp", recording_build, task="image")
    return built


def test_a_registered_model_kind_trains_from_a_toml_file(tmp_path: Path, run_dir: Path):
    built = _register_mlp_here()
    path = tmp_path / "mlp.toml"
    path.write_text(MLP_TOML.format(module="", run_dir=run_dir))
    config = load_train_config(path=path)
    assert config.model.kind == "mlp" and config.model.options == {"hidden": 12}
    result = train(config)
    assert result.steps_done == 4 and len(result.losses) == 4
    assert all(torch.isfinite(torch.tensor(result.losses)))
    assert result.unit_name == "images" and result.units_per_s and result.units_per_s > 0
    (model,) = built
    assert model.module[1].out_features == 12  # model.options reached the builder
    assert result.run is not None and result.run.config["model"]["kind"] == "mlp"


def test_an_unknown_kind_names_every_registered_one():
    _register_mlp_here()
    with pytest.raises(UserError, match="gpt, hf, mlp, resnet") as error:
        load_train_config(overrides={"model.kind": "mpl"})
    assert "register_model" in str(error.value)


def test_a_model_built_for_another_task_than_registered_is_refused():
    built = _register_mlp_here()
    register_model("mlp-lm", models.model_spec("mlp").builder, task="lm")
    with pytest.raises(UserError, match="registered task 'lm'"):
        models.build_model(ModelConfig(kind="mlp-lm", image_size=8, num_classes=4))
    assert built  # the builder ran: the mismatch is found on what it returned


@pytest.mark.slow
def test_model_module_registers_a_kind_from_the_cli(tmp_path: Path, run_dir: Path):
    """`model.module` in a TOML file imports the user's module, which registers the kind."""
    from loop_helpers import run_cli, src_dir

    (tmp_path / "toy_mlp_model.py").write_text(MLP_SOURCE)
    path = tmp_path / "mlp.toml"
    path.write_text(MLP_TOML.format(module='module = "toy_mlp_model"', run_dir=run_dir))
    proc = run_cli("train", "--config", str(path), PYTHONPATH=f"{src_dir()}:{tmp_path}")
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((run_dir / "result.json").read_text())
    assert saved["config"]["model"]["module"] == "toy_mlp_model"
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) >= 4


def test_a_model_module_that_cannot_be_imported_is_a_user_error():
    with pytest.raises(UserError, match=r"model.module 'no_such_models'.*PYTHONPATH"):
        load_train_config(overrides={"model.module": "no_such_models"})


class CountingPolicy(PrecisionPolicy):
    """fp32 arithmetic that counts its forward passes: proof that the loop used this policy."""

    name = "fp32-counted"
    forwards = 0

    def autocast(self):  # type: ignore[override]
        CountingPolicy.forwards += 1
        return super().autocast()


def test_a_registered_precision_is_accepted_and_used(run_dir: Path):
    train_config.register_precision("fp32-counted", CountingPolicy, peak_dtype="fp32")
    overrides = {
        "precision.dtype": "fp32-counted",
        "train.steps": "2",
        "train.grad_accum": "2",
        "train.device": "cpu",
        "model.n_layer": "1",
        "model.seq_len": "16",
        "model.vocab_size": "64",
        "logging.run_dir": str(run_dir),
        "checkpoint.save_final": "false",
    }
    CountingPolicy.forwards = 0
    result = train(load_train_config(preset="gpt-tiny", overrides=overrides))
    assert result.steps_done == 2 and CountingPolicy.forwards == 4  # 2 steps x 2 micro-batches


def test_an_unknown_precision_names_the_registered_ones():
    with pytest.raises(UserError, match=r"bf16, fp16, fp32.*register_precision"):
        load_train_config(overrides={"precision.dtype": "fp8"})
    assert train_config.precision_spec("fp16").loss_scaling
    assert not train_config.precision_spec("bf16").loss_scaling

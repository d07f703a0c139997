"""`TrainConfig`'s recipe options: label smoothing, the moving average, kept epoch weights."""

import json

import pytest

from keras_attention.cli import build_parser, config_from_args
from keras_attention.runs.train_config import TrainConfig

RECIPE = {"label_smoothing": 0.1, "ema": True, "ema_momentum": 0.99, "keep_epoch_weights": 3}


def test_a_config_saved_before_the_recipe_options_loads_without_them():
    values = json.loads(TrainConfig().to_json())
    for name in RECIPE:
        del values[name]
    config = TrainConfig.from_json(json.dumps(values))
    assert (config.label_smoothing, config.ema, config.ema_momentum) == (0.0, False, 0.999)
    assert config.keep_epoch_weights == 0


def test_the_recipe_options_are_saved_and_read_back(tmp_path):
    TrainConfig(out=str(tmp_path), **RECIPE).save(tmp_path)
    config = TrainConfig.load(tmp_path)
    assert {name: getattr(config, name) for name in RECIPE} == RECIPE


def test_a_run_resumed_with_another_smoothing_differs_from_its_saved_config():
    """The claim refuses a run whose saved config differs (`run_state.claim_run_directory`)."""
    saved = TrainConfig(label_smoothing=0.1)
    assert saved.differences(TrainConfig()) == ["label_smoothing: 0.1 -> 0.0"]
    assert saved.differences(TrainConfig(label_smoothing=0.1)) == []


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("label_smoothing", 1.0, r"`label_smoothing` must be in \[0, 1\)"),
        ("label_smoothing", -0.1, r"`label_smoothing` must be in \[0, 1\)"),
        ("label_smoothing", True, r"`label_smoothing` must be in \[0, 1\)"),
        ("ema_momentum", 1.0, r"`ema_momentum` must be in \[0, 1\)"),
        ("keep_epoch_weights", -1, r"`keep_epoch_weights` must be an int >= 0"),
        ("keep_epoch_weights", 2.0, r"`keep_epoch_weights` must be an int >= 0"),
    ],
)
def test_a_recipe_option_out_of_range_is_refused_with_its_name(name, value, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{name: value})


def test_the_train_command_takes_the_recipe_flags():
    args = build_parser().parse_args(
        [
            "train",
            "--label-smoothing",
            "0.1",
            "--ema",
            "--ema-momentum",
            "0.99",
            "--keep-epoch-weights",
            "3",
        ]
    )
    config = config_from_args(args)
    assert {name: getattr(config, name) for name in RECIPE} == RECIPE
    defaults = config_from_args(build_parser().parse_args(["train"]))
    assert (defaults.label_smoothing, defaults.ema, defaults.keep_epoch_weights) == (0.0, False, 0)

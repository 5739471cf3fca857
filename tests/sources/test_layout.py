"""The readers of the original's pre-training checkpoints
(`electra_tf.sources.layout`): layout and size inference, the pretrainer
built without a config, and the errors for a checkpoint that is not
ELECTRA's, lacks a layer or a tensor, or disagrees with the given hparams."""

import json

import numpy as np
import pytest

from electra_tf import convert
from electra_tf.models import official_names
from tests.helpers.conversion import DIMS
from tests.helpers.conversion import LAYOUTS
from tests.helpers.conversion import layout_shapes
from tests.helpers.conversion import write_layout
from tests.helpers.official_checkpoint_helper import random_values
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_inference_finds_layout_and_sizes(name):
  _, embedding_size, dims, expected = LAYOUTS[name]
  config, _, _ = convert.infer_config_from_checkpoint(layout_shapes(name))
  d = dict(DIMS, **dims)
  assert config.vocab_size == d["V"]
  assert config.embedding_size == (embedding_size or d["H"])
  assert config.model_hparam_overrides["hidden_size"] == d["H"]
  assert config.model_hparam_overrides["num_hidden_layers"] == d["L"]
  assert config.model_hparam_overrides["intermediate_size"] == d["I"]
  assert config.model_hparam_overrides["max_position_embeddings"] == d["P"]
  for key, value in expected.items():
    assert getattr(config, key) == value, key


def test_inference_of_original_small_listing(original_fixtures):
  listing = (original_fixtures / "variables" / "small_gen1.txt").read_text().splitlines()
  shapes = {}
  for line in listing:
    if line and not line.startswith("#"):
      name, shape, _ = line.split("\t")
      shapes[name] = [int(d) for d in shape.strip("[]").split(",") if d.strip()]
  config, layout, _ = convert.infer_config_from_checkpoint(shapes)
  assert layout == convert.LAYOUT_DEFAULT
  assert config.model_size == "small"
  assert config.generator_hidden_size == 1.0
  assert config.embedding_size == 128 and config.vocab_size == 7814


def test_inference_recognises_the_debug_model():
  shapes = spec_checkpoint_shapes("default", V=100, H=144, L=3, I=576, E=128, Hg=36, Lg=3, Ig=144)
  config, _, _ = convert.infer_config_from_checkpoint(shapes)
  assert config.model_hparam_overrides["num_attention_heads"] == 4
  assert config.generator_hidden_size == 0.25


def test_given_hparams_win_for_heads_and_are_checked(tmp_path):
  shapes = layout_shapes("default")
  config, _, notes = convert.infer_config_from_checkpoint(
    shapes, {"model_hparam_overrides": {"num_attention_heads": 4}}
  )
  assert config.model_hparam_overrides["num_attention_heads"] == 4
  assert not any("attention heads" in n for n in notes)
  _, _, notes = convert.infer_config_from_checkpoint(shapes)
  assert any("attention heads" in n for n in notes)


def test_load_official_pretrainer_needs_no_config(tmp_path):
  source = write_layout(tmp_path / "official", "electric", with_slots=False)
  pretrainer, config, tensors, info = convert.load_official_pretrainer(source)
  assert info["layout"] == convert.LAYOUT_TWO_TOWER and config.electric_objective
  for name, variable in official_names.official_name_map(pretrainer).items():
    assert np.asarray(variable).tobytes() == tensors[name].tobytes(), name


def test_not_an_electra_checkpoint(tmp_path):
  (tmp_path / "c").mkdir()
  write_name_based_checkpoint(
    tmp_path / "c" / "model.ckpt-1",
    {"bert/embeddings/word_embeddings": np.zeros((4, 2), "float32")},
  )
  with pytest.raises(ValueError, match="not an ELECTRA checkpoint"):
    convert.convert(str(tmp_path / "c"), str(tmp_path / "out"))


def test_missing_layer_is_reported(tmp_path):
  values = random_values(layout_shapes("default"))
  values = {n: v for n, v in values.items() if "electra/encoder/layer_0/" not in n}
  (tmp_path / "c").mkdir()
  write_name_based_checkpoint(tmp_path / "c" / "model.ckpt-1", values)
  with pytest.raises(ValueError, match=r"layers \[0\] are missing"):
    convert.convert(str(tmp_path / "c"), str(tmp_path / "out"))


def test_missing_tensor_is_reported(tmp_path):
  values = random_values(layout_shapes("default"))
  del values["generator_predictions/output_bias"]
  (tmp_path / "c").mkdir()
  write_name_based_checkpoint(tmp_path / "c" / "model.ckpt-1", values)
  with pytest.raises(ValueError, match="generator_predictions/output_bias"):
    convert.convert(str(tmp_path / "c"), str(tmp_path / "out"))


@pytest.mark.parametrize(
  "hparams,shown",
  [
    ({"embedding_size": 12}, "config gives [40, 12], checkpoint has [40, 8]"),
    ({"generator_hidden_size": 0.5}, "config gives [8, 8], checkpoint has [4, 4]"),
    ({"model_size": "small"}, "config gives [256, 256], checkpoint has [16, 16]"),
    ({"uniform_generator": True}, "in the checkpoint but not in the config's model"),
  ],
)
def test_mismatched_config_shows_both(tmp_path, hparams, shown):
  source = write_layout(tmp_path / "official", "default", with_slots=False)
  with pytest.raises(ValueError) as error:
    convert.convert(str(source), str(tmp_path / "out"), hparams=json.dumps(hparams))
  message = str(error.value)
  assert shown in message
  assert str(source) in message
  assert json.dumps(hparams, sort_keys=True) in message

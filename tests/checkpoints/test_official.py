"""`load_official_checkpoint`: parity with the original's outputs on its own
checkpoint, and strict loading of self-made name-based checkpoints for every
layout of the variable names of the original's checkpoints."""

import json

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import load_official_checkpoint
from electra_tf.checkpoints.official import restore_from_name_map
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names

PARITY_ATOL = 1e-5


# ----------------------------------------------------------------------------
# Parity with the original (shared fixtures)
# ----------------------------------------------------------------------------


def _tiny_config(fixtures, tmp_path):
  hparams = json.loads((fixtures / "models" / "tiny_hparams.json").read_text())
  hparams.pop("pretrain_tfrecords", None)
  return PretrainingConfig("tiny", str(tmp_path), **hparams)


@pytest.fixture(scope="module")
def tiny_parity_outputs(original_fixtures, tmp_path_factory):
  config = _tiny_config(original_fixtures, tmp_path_factory.mktemp("tiny"))
  pretrainer = load_official_checkpoint(original_fixtures / "models" / "tiny", config)
  golden = dict(np.load(original_fixtures / "golden" / "tiny.npz"))
  masked = {
    "input_ids": golden["masked_input_ids"],
    "input_mask": golden["input_mask"],
    "segment_ids": golden["segment_ids"],
  }
  unmasked = {
    "input_ids": golden["input_ids"],
    "input_mask": golden["input_mask"],
    "segment_ids": golden["segment_ids"],
  }
  gen = pretrainer.generator(
    masked, masked_lm_positions=golden["masked_lm_positions"], training=False
  )
  disc = pretrainer.discriminator(unmasked, training=False)
  return pretrainer, golden, gen, disc


def _weighted_mlm_loss(logits, targets, weights):
  """The original's `run_pretraining.py:PretrainingModel._get_masked_lm_output`: sum(w · nll) / (sum(w) + 1e-6)."""
  log_probs = tf.nn.log_softmax(logits, axis=-1)
  nll = -tf.reduce_sum(tf.one_hot(targets, logits.shape[-1]) * log_probs, axis=-1)
  return tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-6)


def test_tiny_checkpoint_restores_every_variable(tiny_parity_outputs):
  pretrainer, golden, _, _ = tiny_parity_outputs
  info = pretrainer.official_checkpoint_info
  assert len(info["loaded"]) == 82  # variables/tiny.txt: 82 model variables
  assert info["global_step"] == int(golden["global_step_of_ckpt"]) == 50
  assert "global_step" in info["ignored"]
  assert all(n == "global_step" or n.endswith(("/adam_m", "/adam_v")) for n in info["ignored"])


# The original's fixture names these outputs `gen_<name>` and `disc_<name>`.
_PARITY_OUTPUTS = [
  ("gen", name) for name in ("embedding_output", "sequence_output", "mlm_logits")
] + [("disc", name) for name in ("embedding_output", "sequence_output", "pooled_output", "logits")]


@pytest.mark.parametrize("network,name", _PARITY_OUTPUTS)
def test_generator_and_discriminator_match_original(tiny_parity_outputs, network, name):
  _, golden, gen, disc = tiny_parity_outputs
  outputs = gen if network == "gen" else disc
  np.testing.assert_allclose(
    np.asarray(outputs[name]), golden[f"{network}_{name}"], atol=PARITY_ATOL, rtol=0
  )


def test_generator_mlm_loss_and_preds_match_original(tiny_parity_outputs):
  _, golden, gen, _ = tiny_parity_outputs
  loss = _weighted_mlm_loss(gen["mlm_logits"], golden["masked_lm_ids"], golden["masked_lm_weights"])
  np.testing.assert_allclose(float(loss), float(golden["gen_mlm_loss"]), atol=PARITY_ATOL)
  np.testing.assert_array_equal(np.argmax(gen["mlm_logits"], -1), golden["gen_mlm_preds"])


def test_discriminator_hidden_layers_and_probs_match_original(tiny_parity_outputs):
  _, golden, _, disc = tiny_parity_outputs
  hidden = np.stack([np.asarray(h) for h in disc["hidden_states"]])
  assert hidden.shape == golden["disc_all_layer_outputs"].shape
  np.testing.assert_allclose(hidden, golden["disc_all_layer_outputs"], atol=PARITY_ATOL, rtol=0)
  probs = tf.sigmoid(disc["logits"]).numpy()
  np.testing.assert_allclose(probs, golden["disc_probs"], atol=PARITY_ATOL, rtol=0)


def test_loading_accepts_directory_and_prefix(original_fixtures, tmp_path):
  config = _tiny_config(original_fixtures, tmp_path)
  prefix = original_fixtures / "models" / "tiny" / "model.ckpt-50"
  pretrainer = load_official_checkpoint(str(prefix), config)
  reader = tf.train.load_checkpoint(str(prefix))
  np.testing.assert_array_equal(
    pretrainer.embeddings.word_embeddings.numpy(),
    reader.get_tensor("electra/embeddings/word_embeddings"),
  )


# ----------------------------------------------------------------------------
# Self-made name-based checkpoints for every layout of the variable names of the original's checkpoints
# ----------------------------------------------------------------------------

from tests.helpers.official_checkpoint_helper import random_values  # noqa: E402
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes  # noqa: E402
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint  # noqa: E402

TINY = dict(V=50, H=32, L=2, I=64, Hg=8, Lg=2, Ig=32, P=64)
TINY_OVERRIDES = {
  "hidden_size": 32,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 64,
  "max_position_embeddings": 64,
}

# layout name → (the original's layout, E, Hg/Ig override, PretrainingConfig kwargs)
LAYOUTS = {
  "default": ("default", 16, {}, {}),
  "small_plus_plus": ("default", 16, {"Hg": 32, "Ig": 128}, {"generator_hidden_size": 1.0}),
  "e_equals_h": ("default", None, {}, {"embedding_size": None}),
  "untied_embeddings": ("untied_embeddings", 16, {}, {"untied_generator_embeddings": True}),
  "tied_generator": ("tied", 16, {}, {"untied_generator": False}),
  "mlm": ("mlm", 16, {}, {"electra_objective": False}),
  "uniform": ("uniform", 16, {}, {"uniform_generator": True}),
  "electric": ("electric", 16, {}, {"electra_objective": False, "electric_objective": True}),
}


def _layout_config(tmp_path, name):
  _, embedding_size, _, kwargs = LAYOUTS[name]
  kwargs = dict(kwargs)
  kwargs.setdefault("embedding_size", embedding_size)
  return PretrainingConfig(
    name, str(tmp_path), vocab_size=TINY["V"], model_hparam_overrides=TINY_OVERRIDES, **kwargs
  )


def _layout_shapes(name):
  layout, embedding_size, dims, _ = LAYOUTS[name]
  args = dict(TINY, **dims)
  return spec_checkpoint_shapes(layout, E=embedding_size, **args)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_self_made_checkpoint_loads_for_layout(tmp_path, layout):
  values = random_values(_layout_shapes(layout), seed=len(layout))
  prefix = tmp_path / "ckpt" / "model.ckpt-7"
  prefix.parent.mkdir()
  written = write_name_based_checkpoint(prefix, values)
  listed = [n for n, _ in tf.train.list_variables(str(prefix))]
  assert listed == written  # the file holds exactly the original's names

  pretrainer = load_official_checkpoint(str(prefix.parent), _layout_config(tmp_path, layout))
  info = pretrainer.official_checkpoint_info
  assert sorted(info["loaded"]) == sorted(values)
  assert info["global_step"] == 7
  assert len(info["ignored"]) == 2 * len(values) + 1
  name_map = official_names.official_name_map(pretrainer)
  for name, value in values.items():
    np.testing.assert_array_equal(name_map[name].numpy(), value, err_msg=name)

  # Values landed in the structurally right places, checked without the map.
  np.testing.assert_array_equal(
    pretrainer.embeddings.word_embeddings.numpy(), values["electra/embeddings/word_embeddings"]
  )
  if pretrainer.discriminator is not None:
    layer = pretrainer.discriminator.encoder.transformer_layers[1]
    np.testing.assert_array_equal(
      layer.output_dense.kernel.numpy(), values["electra/encoder/layer_1/output/dense/kernel"]
    )
    np.testing.assert_array_equal(
      pretrainer.discriminator.head.dense_1.kernel.numpy(),
      values["discriminator_predictions/dense_1/kernel"],
    )
  generator = pretrainer.generator
  if layout in ("default", "small_plus_plus", "e_equals_h"):
    assert generator.embeddings is pretrainer.embeddings
    np.testing.assert_array_equal(
      generator.encoder.transformer_layers[0].query.kernel.numpy(),
      values["generator/encoder/layer_0/attention/self/query/kernel"],
    )
  if layout == "untied_embeddings":
    assert generator.embeddings is not pretrainer.embeddings
    np.testing.assert_array_equal(
      generator.word_embeddings.numpy(), values["generator/embeddings/word_embeddings"]
    )
  if layout == "tied_generator":
    assert generator.encoder is pretrainer.discriminator.encoder
  if layout == "mlm":
    assert pretrainer.discriminator is None
    np.testing.assert_array_equal(
      generator.encoder.transformer_layers[0].key.bias.numpy(),
      values["electra/encoder/layer_0/attention/self/key/bias"],
    )
  if layout == "uniform":
    assert generator is None
  if layout == "electric":
    assert generator.is_two_tower
    np.testing.assert_array_equal(
      generator.rtl_encoder.transformer_layers[1].value.kernel.numpy(),
      values["generator_rtl/encoder/layer_1/attention/self/value/kernel"],
    )
    np.testing.assert_array_equal(
      generator.head.output_bias.numpy(), values["cloze_predictions/output_bias"]
    )

  # The restored model runs.
  ids = np.array([[2, 5, 7, 9, 3, 0]], np.int32)
  features = {
    "input_ids": ids,
    "input_mask": (ids > 0).astype(np.int32),
    "segment_ids": np.zeros_like(ids),
  }
  outputs = pretrainer(features, training=False)
  for part in outputs.values():
    for key in ("logits", "mlm_logits"):
      if key in part:
        assert np.all(np.isfinite(part[key]))


def test_released_style_checkpoint_without_slots_loads(tmp_path):
  values = random_values(_layout_shapes("default"))
  prefix = tmp_path / "electra_small"
  write_name_based_checkpoint(
    prefix, values, with_slots=False, global_step=None, checkpoint_file=False
  )
  pretrainer = load_official_checkpoint(str(prefix), _layout_config(tmp_path, "default"))
  assert pretrainer.official_checkpoint_info["global_step"] is None
  assert pretrainer.official_checkpoint_info["ignored"] == []
  np.testing.assert_array_equal(
    pretrainer.generator.head.output_bias.numpy(), values["generator_predictions/output_bias"]
  )


def _write(tmp_path, values):
  prefix = tmp_path / "bad" / "model.ckpt-1"
  prefix.parent.mkdir()
  write_name_based_checkpoint(prefix, values)
  return str(prefix)


def test_wrong_shape_is_reported(tmp_path):
  values = random_values(_layout_shapes("default"))
  name = "generator/encoder/layer_1/intermediate/dense/kernel"
  values[name] = np.zeros((8, 33), np.float32)
  with pytest.raises(ValueError) as error:
    load_official_checkpoint(_write(tmp_path, values), _layout_config(tmp_path, "default"))
  message = str(error.value)
  assert name in message and "[8, 32]" in message and "[8, 33]" in message


def test_missing_variable_is_reported(tmp_path):
  values = random_values(_layout_shapes("default"))
  del values["discriminator_predictions/dense_1/bias"]
  with pytest.raises(ValueError, match="missing.*\n.*discriminator_predictions/dense_1/bias"):
    load_official_checkpoint(_write(tmp_path, values), _layout_config(tmp_path, "default"))


def test_unknown_variable_is_reported(tmp_path):
  values = random_values(_layout_shapes("default"))
  values["electra/pooler/dense/kernel"] = np.zeros((32, 32), np.float32)
  with pytest.raises(ValueError, match="no model variable.*\n.*electra/pooler/dense/kernel"):
    load_official_checkpoint(_write(tmp_path, values), _layout_config(tmp_path, "default"))


def test_wrong_layout_is_reported(tmp_path):
  # An MLM-only checkpoint does not fit a default ELECTRA config.
  values = random_values(_layout_shapes("mlm"))
  with pytest.raises(ValueError, match="generator/encoder/layer_0"):
    load_official_checkpoint(_write(tmp_path, values), _layout_config(tmp_path, "default"))


def test_bad_path_is_reported(tmp_path):
  with pytest.raises(ValueError, match="neither a checkpoint prefix"):
    load_official_checkpoint(str(tmp_path / "nothing"), _layout_config(tmp_path, "default"))
  with pytest.raises(ValueError, match="no usable `checkpoint` file"):
    load_official_checkpoint(str(tmp_path), _layout_config(tmp_path, "default"))


def test_restore_from_name_map_can_skip_unrelated_entries(tmp_path):
  """Fine-tuning style: only the discriminator's `electra/*` names."""
  values = random_values(_layout_shapes("default"))
  prefix = _write(tmp_path, values)
  pretrainer = ElectraPretrainer.from_pretraining_config(_layout_config(tmp_path, "default"))
  name_map = official_names.discriminator_name_map(pretrainer.discriminator, include_head=False)
  info = restore_from_name_map(name_map, prefix, allow_unexpected=True)
  assert all(n.startswith("electra/") for n in info["loaded"])
  assert "generator_predictions/output_bias" in info["unexpected"]
  np.testing.assert_array_equal(
    pretrainer.discriminator.encoder.embeddings_project.kernel.numpy(),
    values["electra/embeddings_project/kernel"],
  )


@pytest.mark.parametrize(
  "kwargs,entries",
  [
    ({}, 343),
    ({"untied_generator": False}, 193),
    ({"electra_objective": False}, 181),
    ({"uniform_generator": True}, 178),
    ({"electra_objective": False, "electric_objective": True}, 493),
  ],
)
def test_debug_entry_counts_match_original(tmp_path, kwargs, entries):
  """Spec the variable names of the original's checkpoints–8.3 verified counts: 3 entries per variable + global_step."""
  config = PretrainingConfig("debug", str(tmp_path), debug=True, **kwargs)
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  assert 3 * len(official_names.official_name_map(pretrainer)) + 1 == entries

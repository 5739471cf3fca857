"""ElectraPretrainer: every generator mode of `run_pretraining.py:PretrainingModel`, the contract the
training step relies on, and serialization."""

import keras
import numpy as np
import pytest

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names
from electra_tf.pretraining.objective import PretrainingObjective

OVERRIDES = {
  "hidden_size": 32,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 64,
  "max_position_embeddings": 32,
}
MODES = {
  "default": {},
  "small_plus_plus": {"generator_hidden_size": 1.0},
  "untied_embeddings": {"untied_generator_embeddings": True},
  "tied_generator": {"untied_generator": False},
  "mlm": {"electra_objective": False},
  "uniform": {"uniform_generator": True},
  "electric": {"electra_objective": False, "electric_objective": True},
  "two_tower_electra": {"two_tower_generator": True},
}
IDS = np.array([[101, 5, 7, 9, 102, 0, 0, 0], [101, 4, 4, 6, 102, 8, 9, 102]], np.int32)
FEATURES = {
  "input_ids": IDS,
  "input_mask": (IDS > 0).astype(np.int32),
  "segment_ids": np.array([[0] * 8, [0] * 5 + [1] * 3], np.int32),
}


def _config(tmp_path, mode, **extra):
  return PretrainingConfig(
    "m",
    str(tmp_path),
    vocab_size=120,
    embedding_size=16,
    max_seq_length=8,
    model_hparam_overrides=OVERRIDES,
    **MODES[mode],
    **extra,
  )


@pytest.mark.parametrize("mode", sorted(MODES))
def test_modes_build_run_and_follow_the_contract(tmp_path, mode):
  config = _config(tmp_path, mode)
  model = ElectraPretrainer.from_pretraining_config(config)
  objective = model.objective
  assert model.vocab_size == config.vocab_size
  copied = (
    "electra_objective electric_objective gen_weight disc_weight mask_prob "
    "max_predictions_per_seq temperature disallow_correct"
  ).split()
  for name in copied:
    assert getattr(objective, name) == getattr(config, name), name
  expected_mode = {"uniform": "uniform", "electric": "two_tower", "two_tower_electra": "two_tower"}
  assert objective.generator_mode == expected_mode.get(mode, "masked_lm")
  assert objective.has_discriminator == (mode != "mlm")
  o = objective
  assert (o.pad_id, o.cls_id, o.sep_id, o.mask_id) == (0, 101, 102, 103)

  outputs = model(FEATURES, training=False)
  gen, disc = model.generator, model.discriminator
  if mode == "uniform":
    assert gen is None and "generator" not in outputs
  else:
    assert gen.is_two_tower == (mode in ("electric", "two_tower_electra"))
  if mode == "mlm":
    assert disc is None and "discriminator" not in outputs
  else:
    d = disc(FEATURES, training=False)
    assert d["logits"].shape == (2, 8) and d["logits"].dtype == "float32"
    assert d["sequence_output"].shape == (2, 8, 32)
    assert len(d["hidden_states"]) == 2 and d["embedding_output"].shape == (2, 8, 32)
  if gen is not None:
    positions = np.array([[1, 2, 3], [3, 5, 6]], np.int32)
    hg = {"default": 8, "untied_embeddings": 8, "electric": 8, "two_tower_electra": 8}.get(mode, 32)
    if gen.is_two_tower:
      g = gen(FEATURES, training=False)
      assert g["sequence_output"].shape == (2, 8, 2 * hg)
      assert g["logits"].shape == (2, 8, 120) and g["logits"].dtype == "float32"
    else:
      g = gen(FEATURES, masked_lm_positions=positions, training=False)
      assert g["sequence_output"].shape == (2, 8, hg)
      assert g["mlm_logits"].shape == (2, 3, 120) and g["mlm_logits"].dtype == "float32"

  # Sharing as in the original.
  if mode in ("default", "small_plus_plus", "electric", "two_tower_electra", "tied_generator"):
    assert gen.embeddings is model.embeddings
  if mode == "untied_embeddings":
    assert gen.embeddings is not model.embeddings
    assert gen.embeddings.embedding_size == 8 and gen.encoder.embeddings_project is None
  if mode == "tied_generator":
    assert gen.encoder is disc.encoder
  if disc is not None:
    assert disc.embeddings is model.embeddings
  # Every weight is named, none twice.
  name_map = official_names.official_name_map(model)
  assert {id(v) for v in name_map.values()} == {id(v) for v in model.weights}
  assert len(name_map) == len(model.weights)


@pytest.mark.parametrize("mode", ["default", "tied_generator", "electric", "untied_embeddings"])
def test_keras_round_trip(tmp_path, mode):
  model = ElectraPretrainer.from_pretraining_config(_config(tmp_path, mode))
  expected = model(FEATURES, training=False)
  config = model.get_config()
  assert ElectraPretrainer.from_config(config).get_config() == config
  path = str(tmp_path / "pretrainer.keras")
  model.save(path)
  restored = keras.saving.load_model(path)
  assert isinstance(restored, ElectraPretrainer)
  assert restored.get_config() == config
  assert len(restored.weights) == len(model.weights)
  for a, b in zip(model.weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
  actual = restored(FEATURES, training=False)
  keras.tree.map_structure(
    lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6),
    expected,
    actual,
  )
  # Sharing survives the round trip.
  if restored.generator is not None and mode != "untied_embeddings":
    assert restored.generator.embeddings is restored.embeddings
  if mode == "tied_generator":
    assert restored.generator.encoder is restored.discriminator.encoder


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("mode", ["default", "electric"])
def test_mixed_precision_forward(tmp_path, policy, mode):
  keras.mixed_precision.set_global_policy(policy)
  model = ElectraPretrainer.from_pretraining_config(_config(tmp_path, mode))
  outputs = model(FEATURES, training=False)
  assert all(v.dtype == "float32" for v in model.weights)
  logits = outputs["generator"]["logits" if mode == "electric" else "mlm_logits"]
  assert logits.dtype == "float32" and np.all(np.isfinite(logits))
  assert outputs["discriminator"]["logits"].dtype == "float32"
  assert (
    outputs["discriminator"]["sequence_output"].dtype
    == keras.mixed_precision.global_policy().compute_dtype
  )


def test_special_ids_come_from_the_vocab_file(tmp_path):
  tokens = ["[PAD]", "hello", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
  (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n")
  model = ElectraPretrainer.from_pretraining_config(_config(tmp_path, "default"))
  o = model.objective
  assert (o.pad_id, o.cls_id, o.sep_id, o.mask_id) == (0, 3, 4, 5)
  (tmp_path / "vocab.txt").write_text("[PAD]\n[CLS]\n[SEP]\n")
  with pytest.raises(ValueError, match=r"vocab.txt.*\[UNK\]"):
    ElectraPretrainer.from_pretraining_config(_config(tmp_path, "default"))


def test_debug_config_is_shrunk(tmp_path):
  config = PretrainingConfig("d", str(tmp_path), debug=True, vocab_size=200)
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  assert model.discriminator.encoder.hidden_size == 144
  assert model.generator.encoder.hidden_size == 36
  assert len(model.discriminator.encoder.transformer_layers) == 3


def test_invalid_combinations_are_rejected(tmp_path):
  config = _config(tmp_path, "default")
  bert = {"vocab_size": 120, "hidden_size": 32, "num_attention_heads": 2}
  electric = PretrainingObjective(
    electra_objective=False, electric_objective=True, generator_mode="two_tower"
  )
  with pytest.raises(ValueError, match="untied_generator=True"):
    ElectraPretrainer(bert, bert, objective=electric, untied_generator=False)
  two_tower = PretrainingObjective(generator_mode="two_tower")
  with pytest.raises(ValueError, match="untied, non-uniform"):
    ElectraPretrainer(bert, bert, objective=two_tower, untied_generator=False)
  with pytest.raises(ValueError, match="needs generator_config"):
    ElectraPretrainer(bert, objective=two_tower)
  with pytest.raises(ValueError, match="objective must be"):
    ElectraPretrainer(bert, bert, objective=[0.15])
  with pytest.raises(ValueError, match="no network"):
    ElectraPretrainer.from_pretraining_config(_config(tmp_path, "mlm", uniform_generator=True))
  with pytest.raises(ValueError, match="vocab_size"):
    ElectraPretrainer(bert, bert, vocab_size=7)
  with pytest.raises(ValueError, match="input_mask"):
    ElectraPretrainer.from_pretraining_config(config)({"input_ids": IDS, "segment_ids": IDS})


def test_call_with_dynamic_shapes_and_int64_inputs(tmp_path):
  """tf.data yields int64 features of unknown length inside tf.function."""
  import tensorflow as tf

  model = ElectraPretrainer.from_pretraining_config(_config(tmp_path, "default"))
  spec = {k: tf.TensorSpec([None, None], tf.int64) for k in FEATURES}
  forward = tf.function(lambda f: model(f, training=False), input_signature=[spec])
  outputs = forward({k: tf.constant(v, tf.int64) for k, v in FEATURES.items()})
  # default positions 0..min(N, S)-1 with N = max_predictions_per_seq
  n = min(model.objective.max_predictions_per_seq, 8)
  assert outputs["generator"]["mlm_logits"].shape == (2, n, 120)
  eager = model(FEATURES, training=False)
  np.testing.assert_allclose(
    outputs["discriminator"]["logits"], eager["discriminator"]["logits"], atol=1e-5
  )


def test_object_checkpoint_holds_every_weight(tmp_path):
  """tf.train.Checkpoint must see every weight through the model itself
  (Keras 3 leaves list attributes out unless named explicitly)."""
  import tensorflow as tf

  from electra_tf import PretrainingConfig
  from electra_tf.models.electra_pretrainer import ElectraPretrainer

  config = PretrainingConfig(
    "m",
    str(tmp_path),
    vocab_size=50,
    model_hparam_overrides={
      "hidden_size": 16,
      "num_hidden_layers": 2,
      "num_attention_heads": 2,
      "intermediate_size": 32,
    },
  )
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
  saved = [name for name, _ in tf.train.list_variables(path) if name.startswith("model/")]
  assert len(saved) == len({id(w) for w in model.weights})
  assert any("transformer_layers_1" in name for name in saved)


@pytest.mark.parametrize("mode", ["default", "tied_generator", "electric"])
def test_fused_training_kernels_reaches_every_transformer_layer(tmp_path, mode):
  """The hparam turns the fused kernels off for the whole model, and the
  setting survives `get_config`/`from_config`."""
  from electra_tf.layers import ElectraTransformerLayer
  from electra_tf.utils import keras_compat

  def settings(model):
    return {
      layer.fused_training_kernels
      for layer in keras_compat.flatten_layers(model)
      if isinstance(layer, ElectraTransformerLayer)
    }

  model = ElectraPretrainer.from_pretraining_config(
    _config(tmp_path, mode, fused_training_kernels=False)
  )
  assert settings(model) == {False}
  assert settings(ElectraPretrainer.from_config(model.get_config())) == {False}
  assert settings(ElectraPretrainer.from_pretraining_config(_config(tmp_path, mode))) == {True}


def test_compile_takes_electra_tf_optimizer_names(tmp_path):
  from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
  from electra_tf.optimization.lamb import Lamb

  config = _config(tmp_path, "default", optimizer="lamb")
  model = ElectraPretrainer.from_pretraining_config(config)
  model.compile(pretraining_config=config)  # the config's hparam
  assert type(model.optimizer) is Lamb
  model.compile(optimizer="adam", pretraining_config=config)  # the name wins
  assert type(model.optimizer) is AdamWeightDecay
  model.compile(optimizer="lamb")  # the original's defaults otherwise
  assert type(model.optimizer) is Lamb
  # LayerNorm and bias variables are neither decayed nor adapted.
  model.optimizer.build(model.trainable_variables)
  flags = dict(zip((v.path for v in model.trainable_variables), model.optimizer._adaptation_flags))
  assert not any(flag for path, flag in flags.items() if "bias" in path or "norm" in path.lower())
  assert any(flags.values())
  with pytest.raises(ValueError, match="hparam optimizer='sgd'"):
    _config(tmp_path, "default", optimizer="sgd")

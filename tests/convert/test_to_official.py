"""electra_tf models to the original's checkpoints
(`electra_tf.convert.to_official`): training checkpoints (float32
and mixed precision) and `.keras` files, identical outputs after the way back,
and hparams that do not match the checkpoint."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names
from tests.helpers.conversion import TINY_TRANSFORMER
from tests.helpers.conversion import assert_bit_exact
from tests.helpers.conversion import encoder_features
from tests.helpers.conversion import read_all
from tests.helpers.conversion import write_layout


def _features(vocab, batch=2, length=9, seed=0):
  _, features = encoder_features(vocab, batch, length, 6, 4, seed)
  features["masked_lm_positions"] = np.array([[1, 3, 5], [2, 4, 0]], "int32")
  return features


def _outputs(pretrainer, features):
  out = pretrainer(features, training=False)
  flat = {}
  for tower, values in out.items():
    for key in ("sequence_output", "mlm_logits", "logits"):
      if key in values:
        flat[f"{tower}/{key}"] = np.asarray(values[key])
  return flat


@pytest.mark.parametrize(
  "kwargs",
  [
    {},
    {"electric_objective": True, "electra_objective": False},
    {"untied_generator": False},
  ],
)
def test_keras_to_official_to_keras_gives_identical_outputs(tmp_path, kwargs):
  hparams = dict(
    vocab_size=40,
    embedding_size=8,
    model_hparam_overrides=dict(TINY_TRANSFORMER),
    **kwargs,
  )
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  keras.utils.set_random_seed(3)
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.build()
  convert.write_training_checkpoint(pretrainer, config, str(tmp_path / "train"), 17)
  features = _features(40)
  expected = _outputs(pretrainer, features)

  # As run_pretraining leaves it: no hparams file; inferred from the shapes.
  report = convert.keras_to_official(tmp_path / "train", tmp_path / "official")
  assert report["global_step"] == 17
  assert any("optimizer slots" in n for n in report["not_converted"])
  convert.official_to_keras(tmp_path / "official", str(tmp_path / "p.keras"), hparams=hparams)
  restored = keras.saving.load_model(str(tmp_path / "p.keras"), compile=False)
  actual = _outputs(restored, features)
  assert sorted(actual) == sorted(expected)
  for key, value in expected.items():
    np.testing.assert_array_equal(actual[key], value, err_msg=key)


def test_mixed_precision_training_checkpoint_to_official(tmp_path):
  hparams = dict(
    vocab_size=40,
    embedding_size=8,
    mixed_precision="mixed_float16",
    model_hparam_overrides=dict(TINY_TRANSFORMER, num_hidden_layers=1),
  )
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  keras.mixed_precision.set_global_policy("mixed_float16")
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.build()
  convert.write_training_checkpoint(pretrainer, config, str(tmp_path / "train"), 4)
  assert pretrainer.optimizer.__class__.__name__ == "LossScaleOptimizer"
  keras.mixed_precision.set_global_policy("float32")
  # No hparams: layout, sizes and the LossScaleOptimizer come from the checkpoint.
  report = convert.keras_to_official(
    tmp_path / "train", tmp_path / "official", with_optimizer_slots=True
  )
  assert any("loss scale" in n for n in report["not_converted"])
  written, dtypes = read_all(report["output"])
  name_map = official_names.official_name_map(pretrainer)
  assert set(written) == (
    {"global_step"} | set(name_map) | {n + s for n in name_map for s in ("/adam_m", "/adam_v")}
  )
  assert all(d == tf.float32 for n, d in dtypes.items() if n != "global_step")
  for name, variable in name_map.items():
    assert written[name].tobytes() == np.asarray(variable).tobytes(), name


def test_keras_file_to_official_round_trip(tmp_path):
  source = write_layout(tmp_path / "official", "default", with_slots=False)
  convert.official_to_keras(source, str(tmp_path / "p.keras"))
  report = convert.convert(str(tmp_path / "p.keras"), str(tmp_path / "back"), global_step=123)
  assert report["output"].endswith("model.ckpt-123")
  assert_bit_exact(source, report["output"])


def test_keras_checkpoint_with_mismatched_hparams(tmp_path):
  source = write_layout(tmp_path / "official", "default")
  report = convert.convert(str(source), str(tmp_path / "keras"))
  wrong = dict(report["hparams"], embedding_size=12)
  wrong = {k: wrong[k] for k in ("vocab_size", "embedding_size", "model_hparam_overrides")}
  with pytest.raises(ValueError) as error:
    convert.convert(str(tmp_path / "keras"), str(tmp_path / "back"), hparams=wrong)
  message = str(error.value)
  assert "does not match the model built from the hparams" in message
  assert "[40, 12]" in message and "[40, 8]" in message

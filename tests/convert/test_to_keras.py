"""The original's pre-training checkpoints to electra_tf
(`electra_tf.convert.to_keras`): released checkpoints without
optimizer slots, the original's tiny checkpoint bit-exact there and back, and
run_pretraining resuming from the converted training checkpoint."""

import json

import numpy as np
import tensorflow as tf

from electra_tf import convert
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import official_names
from tests.helpers.conversion import assert_bit_exact
from tests.helpers.conversion import checkpoint_listing
from tests.helpers.conversion import fixture_listing
from tests.helpers.conversion import read_all
from tests.helpers.conversion import write_layout


def test_round_trip_without_slots_released_style(tmp_path):
  source = write_layout(tmp_path / "official", "default", with_slots=False, global_step=None)
  report = convert.convert(str(source), str(tmp_path / "keras"))
  assert report["global_step"] is None
  assert any("no optimizer slots" in n for n in report["notes"])
  back = convert.keras_to_official(tmp_path / "keras", tmp_path / "back", hparams=report["hparams"])
  written, dtypes = read_all(back["output"])
  original, _ = read_all(source)
  assert set(written) == set(original) | {"global_step"}
  assert dtypes["global_step"] == tf.int64 and int(written["global_step"]) == 0
  for n, v in original.items():
    assert written[n].tobytes() == v.tobytes(), n


def test_tiny_original_round_trip_is_bit_exact(original_fixtures, tmp_path):
  hparams = original_fixtures / "models" / "tiny_hparams.json"
  source = original_fixtures / "models" / "tiny" / "model.ckpt-50"
  report = convert.official_to_keras(
    original_fixtures / "models" / "tiny", tmp_path / "keras", hparams=str(hparams)
  )
  assert report["global_step"] == 50 and report["not_converted"] == []
  back = convert.keras_to_official(
    tmp_path / "keras", tmp_path / "back", hparams=str(hparams), with_optimizer_slots=True
  )
  assert_bit_exact(source, back["output"])
  # The listing equals the original's, entry for entry.
  assert checkpoint_listing(back["output"]) == fixture_listing(
    original_fixtures / "variables" / "tiny.txt"
  )


def test_run_pretraining_resumes_from_converted_checkpoint(original_fixtures, tmp_path):
  """The training checkpoint written by to-keras is what run_pretraining's
  model/optimizer restore: weights, slots and step of the original."""
  from electra_tf.checkpoints import checkpointing
  from electra_tf.training import pretraining_run

  hparams = json.loads((original_fixtures / "models" / "tiny_hparams.json").read_text())
  hparams.pop("pretrain_tfrecords")
  model_dir = tmp_path / "models" / "tiny"
  convert.official_to_keras(original_fixtures / "models" / "tiny", model_dir, hparams=hparams)
  config = PretrainingConfig("tiny", str(tmp_path), **hparams)
  model = pretraining_run.build_pretrainer(config, tf.distribute.get_strategy())
  manager = checkpointing.TrainingCheckpointManager(model, config.model_dir)
  assert manager.restore_latest() == 50
  original, _ = read_all(original_fixtures / "models" / "tiny" / "model.ckpt-50")
  name_map = official_names.official_name_map(model)
  for name, variable in name_map.items():
    assert np.asarray(variable).tobytes() == original[name].tobytes(), name
  for name, slot in model.optimizer.official_slots(name_map).items():
    assert np.asarray(slot).tobytes() == original[name].tobytes(), name

"""`PretrainingObjective`: built from the config, validated, serialised, and
the only place the training step reads its settings from."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.pretraining import step as pretraining_step
from electra_tf.pretraining.objective import PretrainingObjective
from electra_tf.text import vocab as vocab_lib


def _config(tmp_path, **kwargs):
  return PretrainingConfig("m", str(tmp_path), **kwargs)


@pytest.mark.parametrize(
  "hparams,mode,has_discriminator",
  [
    ({}, "masked_lm", True),
    ({"electra_objective": False}, "masked_lm", False),
    ({"uniform_generator": True}, "uniform", True),
    ({"two_tower_generator": True}, "two_tower", True),
    ({"electra_objective": False, "electric_objective": True}, "two_tower", True),
    # (Electric with the user's two_tower_generator=False is refused by the config:
    # tests/test_sweep9_bad_inputs.py.)
  ],
)
def test_from_config_generator_mode(tmp_path, hparams, mode, has_discriminator):
  objective = PretrainingObjective.from_config(_config(tmp_path, **hparams))
  assert objective.generator_mode == mode
  assert objective.has_discriminator == has_discriminator


def test_from_config_copies_the_settings(tmp_path):
  # Every copied hparam away from its default.
  settings = dict(
    electra_objective=False,
    mask_prob=0.25,
    gen_weight=2.0,
    disc_weight=10.0,
    temperature=0.7,
    disallow_correct=True,
  )
  config = _config(tmp_path, max_seq_length=64, **settings)
  objective = PretrainingObjective.from_config(config)
  assert {name: getattr(objective, name) for name in settings} == settings
  assert objective.max_predictions_per_seq == config.max_predictions_per_seq == 16
  assert (objective.pad_id, objective.cls_id, objective.sep_id, objective.mask_id) == (
    0,
    101,
    102,
    103,
  )


def test_special_ids_are_looked_up_in_the_vocab(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(["[UNK]", "[SEP]", "[CLS]", "a", "[MASK]", "b"]) + "\n")
  vocab = vocab_lib.load_vocab(str(path))
  objective = PretrainingObjective.from_config(_config(tmp_path), vocab)
  # No [PAD] in this vocab: 0, as in the original, which never looks it up.
  assert (objective.pad_id, objective.cls_id, objective.sep_id, objective.mask_id) == (0, 2, 1, 4)
  assert objective.special_ids == (2, 1, 4)
  with pytest.raises(ValueError, match=r"\[MASK\]"):
    PretrainingObjective.from_config(_config(tmp_path), {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2})


def test_invalid_objectives_are_rejected(tmp_path):
  with pytest.raises(ValueError, match="generator_mode='cloze'; expected one of"):
    PretrainingObjective(generator_mode="cloze")
  with pytest.raises(ValueError, match="electric_objective=True needs"):
    PretrainingObjective(electric_objective=True)
  with pytest.raises(ValueError, match="no network to train"):
    PretrainingObjective(electra_objective=False, generator_mode="uniform")
  with pytest.raises(ValueError, match="two_tower_generator=True needs"):
    PretrainingObjective(electra_objective=False, generator_mode="two_tower")
  with pytest.raises(ValueError, match="two_tower_generator=True needs"):
    PretrainingObjective.from_config(
      _config(tmp_path, uniform_generator=True, two_tower_generator=True)
    )


def test_dict_round_trip_types_and_immutability():
  objective = PretrainingObjective(
    mask_prob=np.float32(0.25), max_predictions_per_seq=np.int64(32), disallow_correct=np.bool_(1)
  )
  values = objective.to_dict()
  assert type(values["mask_prob"]) is float and type(values["max_predictions_per_seq"]) is int
  assert type(values["disallow_correct"]) is bool
  assert PretrainingObjective.from_dict(values) == objective
  assert hash(PretrainingObjective.from_dict(values)) == hash(objective)
  with pytest.raises(dataclasses.FrozenInstanceError):
    objective.mask_prob = 0.5
  with pytest.raises(ValueError, match="'mask_probability' — did you mean 'mask_prob'"):
    PretrainingObjective.from_dict(dict(values, mask_probability=0.1))


def test_the_step_reads_the_objective(tmp_path):
  """Changing only the model's objective changes what `forward` computes."""
  config = _config(
    tmp_path,
    vocab_size=128,
    max_seq_length=16,
    embedding_size=8,
    model_hparam_overrides={"hidden_size": 16, "num_hidden_layers": 1, "intermediate_size": 32},
  )
  model = ElectraPretrainer.from_pretraining_config(config)
  ids = np.tile(np.array([110, 111], np.int32), [2, 8])
  ids[:, 0], ids[:, -1] = 101, 102
  features = {
    "input_ids": tf.constant(ids),
    "input_mask": tf.ones([2, 16], tf.int32),
    "segment_ids": tf.zeros([2, 16], tf.int32),
  }

  def run():
    return pretraining_step.forward(model, features, training=False, seed=3, step=tf.constant(0))

  base = run()
  assert float(base["total_loss"]) == pytest.approx(
    float(base["gen_loss"]) + 50.0 * float(base["disc_loss"]), rel=1e-5
  )
  assert base["masked_lm_ids"].shape == (2, config.max_predictions_per_seq)

  model.objective = dataclasses.replace(
    model.objective, disc_weight=0.0, gen_weight=3.0, max_predictions_per_seq=5
  )
  changed = run()
  assert changed["masked_lm_ids"].shape == (2, 5)
  assert float(changed["total_loss"]) == pytest.approx(3.0 * float(changed["gen_loss"]), rel=1e-5)

  # The special ids decide what may be masked: once the token 110 is
  # "[CLS]" no slot holds it (half of the body is 110).
  model.objective = dataclasses.replace(model.objective, mask_prob=0.5, max_predictions_per_seq=8)
  slots = run()
  used = slots["masked_lm_weights"].numpy() > 0
  assert 110 in slots["masked_lm_ids"].numpy()[used]
  model.objective = dataclasses.replace(model.objective, cls_id=110)
  slots = run()
  used = slots["masked_lm_weights"].numpy() > 0
  assert used.sum() >= 8 and 110 not in slots["masked_lm_ids"].numpy()[used]

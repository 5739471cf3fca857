"""`ElectraPretrainer.fit/evaluate` with the original's step (`run_pretraining.py:PretrainingModel`, `model/optimization.py`, `run_pretraining.py:train_or_eval`)."""

import glob
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.runtime import distribution

SEQ_LEN = 32
VOCAB = 128  # the default special ids (101–103) fit in it


def _synthetic_features(num, seed=0):
  """Counting sequences `a, a+1, ...` over ids 104..127: easy to learn."""
  rng = np.random.RandomState(seed)
  ids = np.zeros([num, SEQ_LEN], np.int32)
  input_mask = np.zeros_like(ids)
  segment_ids = np.zeros_like(ids)
  for b in range(num):
    length = rng.randint(12, SEQ_LEN + 1)
    start = rng.randint(0, 24)
    ids[b, :length] = 104 + (start + np.arange(length)) % 24
    ids[b, 0], ids[b, length - 1] = 101, 102
    input_mask[b, :length] = 1
    segment_ids[b, length // 2 : length] = 1
  return {"input_ids": ids, "input_mask": input_mask, "segment_ids": segment_ids}


def _synthetic_dataset(batch_size, num=256, seed=0):
  ds = tf.data.Dataset.from_tensor_slices(_synthetic_features(num, seed))
  return ds.repeat().batch(batch_size, drop_remainder=True)


def _tiny_config(tmp_path, **kwargs):
  hparams = dict(
    vocab_size=VOCAB,
    max_seq_length=SEQ_LEN,
    embedding_size=16,
    model_hparam_overrides={"hidden_size": 32, "num_hidden_layers": 1, "intermediate_size": 64},
    learning_rate=2e-3,
    num_train_steps=40,
    num_warmup_steps=3,
    seed=1,
  )
  hparams.update(kwargs)
  return PretrainingConfig("tiny", str(tmp_path), **hparams)


class _PerStepLogs(keras.callbacks.Callback):
  """The values `fit` logs after each step (each step's own, as the
  original's ETA line shows)."""

  def __init__(self):
    super().__init__()
    self.values = {}

  def on_train_batch_end(self, batch, logs=None):
    for key, value in (logs or {}).items():
      self.values.setdefault(key, []).append(float(value))

  def per_step(self):
    return {key: np.array(values, np.float64) for key, values in self.values.items()}


def _fit_losses(config, dataset, steps, **compile_kwargs):
  keras.utils.set_random_seed(0)
  model = ElectraPretrainer.from_pretraining_config(config)
  model.compile(pretraining_config=config, **compile_kwargs)
  logs = _PerStepLogs()
  model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[logs])
  return model, logs.per_step()


def _read_original_tfrecords(pattern, batch_size):
  feature = {
    k: tf.io.FixedLenFeature([128], tf.int64) for k in ("input_ids", "input_mask", "segment_ids")
  }
  files = sorted(glob.glob(pattern))
  assert files, f"no TFRecords match {pattern}"
  ds = tf.data.TFRecordDataset(files).repeat().shuffle(100, seed=0)
  ds = ds.map(
    lambda r: {k: tf.cast(v, tf.int32) for k, v in tf.io.parse_single_example(r, feature).items()}
  )
  return ds.batch(batch_size, drop_remainder=True)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_learns_like_the_original_on_its_tiny_run(original_fixtures, policy):
  hparams = json.loads((original_fixtures / "models" / "tiny_hparams.json").read_text())
  config = PretrainingConfig("tiny", str(original_fixtures), seed=0, **hparams)
  assert (config.train_batch_size, config.num_train_steps) == (8, 50)
  # the hparams file gives the pattern relative to the data dir
  pattern = str(original_fixtures / config.pretrain_tfrecords)
  dataset = _read_original_tfrecords(pattern, config.train_batch_size)
  with distribution.dtype_policy(policy):
    model, history = _fit_losses(config, dataset, config.num_train_steps)
    # about one pass over the 812 records, at the original's eval batch size
    results = model.evaluate(
      _read_original_tfrecords(pattern, 128), steps=7, verbose=0, return_dict=True
    )
  loss = np.array(history["loss"])
  # The original on the same data and settings: 43.4 at step 1, 30.4 at
  # step 10, 22.7 at step 20, mean of steps 41–50 about 21.0; its eval of
  # the step-50 checkpoint: loss 20.65, discriminator AUC 0.907.
  assert loss[0] == pytest.approx(43.4, abs=1.0)  # ln(7814) + 50 ln 2
  assert loss[9] < 34.0
  assert loss[19] < 27.0
  assert loss[40:].mean() == pytest.approx(21.0, abs=2.0)
  assert np.all(np.isfinite(loss))
  assert results["loss"] == pytest.approx(20.65, abs=2.0)
  assert results["disc_auc"] == pytest.approx(0.907, abs=0.05)


def test_mlm_objective_loss_falls(tmp_path):
  config = _tiny_config(tmp_path, electra_objective=False)
  model, history = _fit_losses(config, _synthetic_dataset(16), 40)
  assert model.discriminator is None and "disc_loss" not in history
  loss = np.array(history["loss"])
  assert loss[0] == pytest.approx(np.log(VOCAB), abs=0.3)
  assert loss[-5:].mean() < 0.8 * loss[:3].mean()
  results = model.evaluate(_synthetic_dataset(16, seed=1), steps=2, return_dict=True, verbose=0)
  assert {"masked_lm_accuracy", "masked_lm_loss", "loss"} <= set(results)
  assert "disc_auc" not in results


@pytest.mark.slow
def test_electric_objective_losses_fall(tmp_path):
  config = _tiny_config(tmp_path, electra_objective=False, electric_objective=True)
  model, history = _fit_losses(config, _synthetic_dataset(16), 40)
  assert model.generator.is_two_tower
  gen = np.array(history["generator_loss"])
  disc = np.array(history["disc_loss"])
  assert gen[-5:].mean() < 0.7 * gen[:3].mean()
  assert disc[-5:].mean() < disc[:3].mean()
  assert np.all(np.isfinite(history["loss"]))


@pytest.mark.slow
def test_electra_evaluate_reports_the_original_metrics(tmp_path):
  config = _tiny_config(tmp_path)
  model, history = _fit_losses(config, _synthetic_dataset(16), 30)
  loss = np.array(history["loss"])
  assert loss[-5:].mean() < loss[:3].mean()
  results = model.evaluate(_synthetic_dataset(16, seed=2), steps=3, return_dict=True, verbose=0)
  assert set(results) >= {
    "loss",
    "masked_lm_accuracy",
    "masked_lm_loss",
    "sampled_masked_lm_accuracy",
    "disc_loss",
    "disc_auc",
    "disc_accuracy",
    "disc_precision",
    "disc_recall",
  }
  assert 0.5 < results["disc_auc"] <= 1.0
  # evaluation is deterministic for a given seed and weights
  again = model.evaluate(_synthetic_dataset(16, seed=2), steps=3, return_dict=True, verbose=0)
  assert again["loss"] == pytest.approx(results["loss"], rel=1e-5)


def _first_step(strategy, config, weights, features):
  with strategy.scope():
    model = ElectraPretrainer.from_pretraining_config(config)
    model.build()
    model.set_weights(weights)
    model.compile(pretraining_config=config)
  ds = tf.data.Dataset.from_tensor_slices(features).batch(8)
  history = model.fit(ds, epochs=1, verbose=0)
  evaluation = model.evaluate(ds, return_dict=True, verbose=0)
  # step 0 has learning rate 0 (`model/optimization.py:create_optimizer`): the slots hold the clipped
  # gradients, m = 0.1 g and v = 0.001 g².
  from electra_tf.models import official_names  # pylint: disable=g-import-not-at-top

  slots = model.optimizer.official_slots(official_names.official_name_map(model))
  grads = {
    k[: -len("/adam_m")]: np.asarray(v.numpy()) / 0.1
    for k, v in slots.items()
    if k.endswith("/adam_m")
  }
  return history.history["loss"][0], grads, evaluation


@pytest.mark.slow
def test_mirrored_strategy_matches_one_device(tmp_path, two_replica_strategy):
  config = _tiny_config(
    tmp_path,
    model_hparam_overrides={
      "hidden_size": 32,
      "num_hidden_layers": 1,
      "intermediate_size": 64,
      # dropout draws are per replica; the comparison is of the step itself
      "hidden_dropout_prob": 0.0,
      "attention_probs_dropout_prob": 0.0,
    },
  )
  features = _synthetic_features(8, seed=3)
  weights = ElectraPretrainer.from_pretraining_config(config)
  weights.build()
  weights = weights.get_weights()
  one_loss, one_grads, one_eval = _first_step(
    tf.distribute.get_strategy(), config, weights, features
  )
  mirrored = two_replica_strategy
  assert mirrored.num_replicas_in_sync == 2
  two_loss, two_grads, two_eval = _first_step(mirrored, config, weights, features)
  assert two_loss == pytest.approx(one_loss, rel=1e-5)
  # streamed metrics are read across replicas, not per replica
  assert one_eval.keys() == two_eval.keys()
  for key in one_eval:
    # (200 fixed AUC thresholds: a probability an ulp away from one could
    # move a count, hence the absolute tolerance)
    assert two_eval[key] == pytest.approx(one_eval[key], rel=1e-4, abs=2e-3), key
  assert one_grads.keys() == two_grads.keys()
  assert max(np.abs(g).max() for g in one_grads.values()) > 1e-4
  for name in one_grads:
    np.testing.assert_allclose(two_grads[name], one_grads[name], rtol=1e-3, atol=1e-6, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_without_nan(tmp_path, policy):
  keras.mixed_precision.set_global_policy(policy)
  config = _tiny_config(tmp_path)
  model, history = _fit_losses(config, _synthetic_dataset(16), 12)
  if policy == "mixed_float16":
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
  else:
    assert not isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
  loss = np.array(history["loss"])
  assert np.all(np.isfinite(loss))
  assert loss[-3:].mean() < loss[:2].mean()
  assert all(np.all(np.isfinite(w)) for w in model.get_weights())


@pytest.mark.slow
def test_jit_compiled_step_trains(tmp_path):
  config = _tiny_config(tmp_path)
  _, history = _fit_losses(config, _synthetic_dataset(16), 6, jit_compile=True)
  loss = np.array(history["loss"])
  assert np.all(np.isfinite(loss))
  assert loss[-2:].mean() < loss[:2].mean()


def test_default_optimizer_decays_on_official_names(tmp_path):
  config = _tiny_config(tmp_path)
  model = ElectraPretrainer.from_pretraining_config(config)
  model.compile(pretraining_config=config)
  opt = model.optimizer
  from electra_tf.models import official_names  # pylint: disable=g-import-not-at-top

  names = official_names.official_name_map(model)
  assert opt.variable_names == {v.path: n for n, v in names.items()}
  decayed = {n for n in names if opt._do_use_weight_decay(n)}  # pylint: disable=protected-access
  assert "electra/embeddings/word_embeddings" in decayed
  assert "generator_predictions/output_bias" not in decayed
  assert not any("LayerNorm" in n or n.endswith("bias") for n in decayed)


@pytest.mark.parametrize(
  "mode",
  [
    {"uniform_generator": True},
    {"untied_generator": False},
    {"untied_generator_embeddings": True},
    {"two_tower_generator": True},
    {"disallow_correct": True, "temperature": 0.5},
  ],
)
def test_forward_in_every_generator_mode(tmp_path, mode):
  from electra_tf.pretraining import step as pretraining_step  # pylint: disable=g-import-not-at-top

  config = _tiny_config(tmp_path, **mode)
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  features = {k: tf.constant(v) for k, v in _synthetic_features(4).items()}
  with tf.GradientTape() as tape:
    out = pretraining_step.forward(model, features, training=True, seed=0, step=tf.constant(1))
  grads = tape.gradient(out["loss"], model.trainable_variables)
  assert np.isfinite(float(out["loss"]))
  assert float(out["total_loss"]) == pytest.approx(
    config.gen_weight * float(out["gen_loss"]) + config.disc_weight * float(out["disc_loss"]),
    rel=1e-5,
  )
  if config.uniform_generator:
    assert float(out["gen_loss"]) == pytest.approx(np.log(VOCAB), rel=1e-4)
  if config.disallow_correct:
    # a sample never equals its slot's original id, so every used slot is fake
    used = out["masked_lm_weights"].numpy() > 0
    assert not np.any((out["sampled_tokens"].numpy() == out["masked_lm_ids"].numpy())[used])
  assert sum(g is not None for g in grads) > 0
  disc_grads = [
    g
    for g, v in zip(grads, model.trainable_variables)
    if any(v is w for w in model.discriminator.trainable_variables)
  ]
  assert any(
    g is not None and float(tf.reduce_max(tf.abs(tf.convert_to_tensor(g)))) > 0 for g in disc_grads
  )

"""Gradient accumulation in pre-training: k micro-batches of b/k are the
step of one batch of b (`ElectraPretrainer.compile(gradient_accumulation_steps=k)`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.layers import layer_utils
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.pretraining import step as pretraining_step
from electra_tf.runtime import replicas
from tests.pretraining.test_fit import _synthetic_features
from tests.pretraining.test_fit import _tiny_config


def _train(config, weights, features, k, strategy, steps=3, loss_scale=None):
  """`steps` steps of `fit` from `weights` (dropout on, the same dropout
  seeds for every k); returns the state that must not depend on k."""
  keras.utils.set_random_seed(5)
  with strategy.scope():
    model = ElectraPretrainer.from_pretraining_config(config)
    model.build()
    model.set_weights(weights)
    model.compile(pretraining_config=config, gradient_accumulation_steps=k)
    model.optimizer.build(model.trainable_variables)
    if loss_scale is not None:
      model.optimizer.dynamic_scale.assign(loss_scale)
  dataset = tf.data.Dataset.from_tensor_slices(features).batch(8)
  history = model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
  return {
    "weights": model.get_weights(),
    "logs": {name: values[-1] for name, values in history.history.items()},
    "seed_states": [v.numpy() for v in layer_utils.seed_generator_states(model)],
    "iterations": int(model.optimizer.iterations.numpy()),
    "loss_scale": float(model.optimizer.dynamic_scale) if loss_scale is not None else None,
  }


def _assert_same_step(got, want, weights, atol):
  assert got["iterations"] == want["iterations"]
  assert got["loss_scale"] == want["loss_scale"]
  for name, value in want["logs"].items():
    assert got["logs"][name] == pytest.approx(value, rel=1e-5, abs=1e-5), name
  # the dropout generators end where the undivided step leaves them
  for a, b in zip(got["seed_states"], want["seed_states"]):
    np.testing.assert_array_equal(a, b)
  moved = max(np.abs(w - w0).max() for w, w0 in zip(want["weights"], weights))
  assert moved > 10 * atol  # the steps did train
  for a, b in zip(got["weights"], want["weights"]):
    np.testing.assert_allclose(a, b, rtol=0, atol=atol)


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["float32", "mirrored", "mixed_float16"])
def test_k_micro_batches_make_the_one_batch_step(tmp_path, setting, request):
  if setting == "mixed_float16":
    keras.mixed_precision.set_global_policy("mixed_float16")
  strategy = (
    request.getfixturevalue("two_replica_strategy")
    if setting == "mirrored"
    else tf.distribute.get_strategy()
  )
  # fused kernels off: the same masks and math, without their XLA compiles
  config = _tiny_config(tmp_path, fused_training_kernels=False, num_warmup_steps=1)
  features = _synthetic_features(24, seed=3)
  keras.utils.set_random_seed(0)
  initial = ElectraPretrainer.from_pretraining_config(config)
  initial.build()
  weights = initial.get_weights()
  # float16: a loss scale that overflows in no micro-batch size (a larger one
  # may overflow a whole batch's float16 weight gradients but not a smaller
  # micro-batch's, which accumulates in float32), then one that overflows in
  # every step: the whole accumulated step is skipped, once per step.
  scale = 256.0 if setting == "mixed_float16" else None
  atol = 2e-4 if setting == "mixed_float16" else 1e-6
  one_batch = _train(config, weights, features, 1, strategy, loss_scale=scale)
  for k in (2, 4):
    got = _train(config, weights, features, k, strategy, loss_scale=scale)
    _assert_same_step(got, one_batch, weights, atol)
  if setting == "mixed_float16":
    skipped = _train(config, weights, features, 2, strategy, steps=2, loss_scale=2.0**40)
    assert skipped["loss_scale"] == 2.0**38
    for a, b in zip(skipped["weights"], weights):
      np.testing.assert_array_equal(a, b)


def test_micro_batches_compute_the_whole_batch_forward(tmp_path):
  """Each micro-batch, with the whole batch's denominators, masks, samples,
  drops out and scores its rows as the whole batch does, and the shares of
  the losses add up to the whole batch's."""
  config = _tiny_config(tmp_path, fused_training_kernels=False)
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  states = layer_utils.seed_generator_states(model)
  start = [v.numpy() for v in states]
  features = {k: tf.constant(v) for k, v in _synthetic_features(8, seed=3).items()}
  step = tf.constant(4)
  whole = pretraining_step.forward(model, features, training=True, seed=1, step=step)
  denominators = pretraining_step.loss_denominators(model, features, seed=1, step=step)
  shares = []
  for index in range(2):
    for v, value in zip(states, start):
      v.assign(value)
    with replicas.micro_batch(index, 2):
      micro = pretraining_step.forward(
        model,
        {k: v[4 * index : 4 * index + 4] for k, v in features.items()},
        training=True,
        seed=1,
        step=step,
        denominators=denominators,
      )
    for key in ("masked_lm_ids", "sampled_tokens", "disc_labels"):
      np.testing.assert_array_equal(micro[key], whole[key][4 * index : 4 * index + 4], key)
    np.testing.assert_allclose(
      micro["disc_per_example_loss"],
      whole["disc_per_example_loss"][4 * index : 4 * index + 4],
      rtol=1e-5,
    )
    shares.append([float(micro[key]) for key in ("total_loss", "gen_loss", "disc_loss")])
  np.testing.assert_allclose(
    np.sum(shares, axis=0),
    [float(whole[key]) for key in ("total_loss", "gen_loss", "disc_loss")],
    rtol=1e-5,
  )


def test_keras_optimizer_accumulation_is_refused(tmp_path):
  config = _tiny_config(tmp_path)
  model = ElectraPretrainer.from_pretraining_config(config)
  with pytest.raises(ValueError, match="gradient_accumulation_steps=4.*pass gradient_accumulation"):
    model.compile(optimizer=keras.optimizers.SGD(0.1, gradient_accumulation_steps=4))
  with pytest.raises(ValueError, match="gradient_accumulation_steps=0; expected an integer"):
    model.compile(pretraining_config=config, gradient_accumulation_steps=0)

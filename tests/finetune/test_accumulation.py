"""Gradient accumulation in fine-tuning: k micro-batches of b/k are the step
of one batch of b (`FinetuningModel.compile(gradient_accumulation_steps=k)`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.layers import layer_utils
from electra_tf.optimization import factory as optimizer_factory
from tests.finetune.test_fit import BERT
from tests.finetune.test_fit import _multitask_batch

# dropout on (encoder and classification head): the micro-batches must draw
# the whole batch's masks
DROPOUT_BERT = dict(BERT, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def _model():
  heads = [
    ClassificationHead("rte", 2, dropout_rate=0.1, name="task_specific_rte"),
    ClassificationHead("sts", 1, regression=True, dropout_rate=0.1, name="task_specific_sts"),
  ]
  model = FinetuningModel(DROPOUT_BERT, heads, embedding_size=8, name="finetuning_model")
  model.build()
  return model


def _train(weights, batch, k, strategy, steps=3, loss_scale=None):
  keras.utils.set_random_seed(5)
  with strategy.scope():
    model = _model()
    model.set_weights(weights)
    # the original's optimizer: AdamWeightDecay, layer-wise decay, clipping
    # of the global norm at 1 (here of the summed gradient)
    optimizer = optimizer_factory.finetuning_optimizer(
      model.official_name_map(), 2, 10, learning_rate=1e-2, warmup_proportion=0.1
    )
    model.compile(optimizer=optimizer, gradient_accumulation_steps=k)
    model.optimizer.build(model.trainable_variables)
    if loss_scale is not None:
      model.optimizer.dynamic_scale.assign(loss_scale)
  dataset = tf.data.Dataset.from_tensors(batch).unbatch().repeat().batch(8)
  history = model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
  return {
    "weights": model.get_weights(),
    "loss": history.history["loss"][-1],
    "seed_states": [v.numpy() for v in layer_utils.seed_generator_states(model)],
    "loss_scale": float(model.optimizer.dynamic_scale) if loss_scale is not None else None,
  }


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["float32", "mirrored", "mixed_float16"])
def test_k_micro_batches_make_the_one_batch_step(setting, request):
  if setting == "mixed_float16":
    keras.mixed_precision.set_global_policy("mixed_float16")
  strategy = (
    request.getfixturevalue("two_replica_strategy")
    if setting == "mirrored"
    else tf.distribute.get_strategy()
  )
  keras.utils.set_random_seed(0)
  weights = _model().get_weights()
  batch = _multitask_batch(n=24, seed=1)
  # float16: a loss scale that overflows for no micro-batch size (the loss is
  # a sum: 256 already overflows the whole batch's float16 gradients)
  scale = 1.0 if setting == "mixed_float16" else None
  atol = 1e-3 if setting == "mixed_float16" else 1e-6  # float16 rounding, Adam at 1e-2
  want = _train(weights, batch, 1, strategy, loss_scale=scale)
  moved = max(np.abs(w - w0).max() for w, w0 in zip(want["weights"], weights))
  assert moved > 10 * atol
  for k in (2, 4):
    got = _train(weights, batch, k, strategy, loss_scale=scale)
    assert got["loss"] == pytest.approx(want["loss"], rel=max(atol, 1e-5))
    assert got["loss_scale"] == want["loss_scale"]
    for a, b in zip(got["seed_states"], want["seed_states"]):
      np.testing.assert_array_equal(a, b)
    for a, b in zip(got["weights"], want["weights"]):
      np.testing.assert_allclose(a, b, rtol=0, atol=atol)
  if setting == "mixed_float16":
    # a step that overflows anywhere is skipped whole, once per step
    skipped = _train(weights, batch, 2, strategy, steps=2, loss_scale=2.0**40)
    assert skipped["loss_scale"] == 2.0**38
    for a, b in zip(skipped["weights"], weights):
      np.testing.assert_array_equal(a, b)

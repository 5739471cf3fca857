"""The XLA-fused GELU and attention softmax used in training equal the plain
ops, values and gradients."""

import numpy as np
import tensorflow as tf
import keras

from electra_tf.layers import layer_utils
from electra_tf.layers.electra_transformer_layer import ElectraTransformerLayer


def test_fused_gelu_matches_exact_gelu_and_its_gradient():
  x = tf.constant(np.linspace(-6, 6, 1001, dtype=np.float32))
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    fused = layer_utils.fused_gelu(x)
    plain = keras.activations.gelu(x, approximate=False)
  np.testing.assert_allclose(fused.numpy(), plain.numpy(), atol=2e-6)
  np.testing.assert_allclose(tape.gradient(fused, x).numpy(), tape.gradient(plain, x).numpy(),
                             atol=2e-6)


def test_fused_attention_probs_match_softmax_and_gradient():
  rng = np.random.RandomState(0)
  scores = tf.constant(rng.normal(size=(2, 3, 5, 5)).astype(np.float32) * 4)
  adder = tf.constant(np.where(rng.rand(2, 1, 1, 5) < 0.3, -10000.0, 0.0).astype(np.float32))
  upstream = tf.constant(rng.normal(size=(2, 3, 5, 5)).astype(np.float32))
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(scores)
    fused = layer_utils.fused_attention_probs(scores, adder, 0.125)
    plain = tf.nn.softmax(scores * 0.125 + adder, axis=-1)
    fused_loss = tf.reduce_sum(fused * upstream)
    plain_loss = tf.reduce_sum(plain * upstream)
  np.testing.assert_allclose(fused.numpy(), plain.numpy(), atol=1e-6)
  np.testing.assert_allclose(tape.gradient(fused_loss, scores).numpy(),
                             tape.gradient(plain_loss, scores).numpy(), atol=1e-6)


def test_transformer_layer_trains_like_it_infers_without_dropout():
  layer = ElectraTransformerLayer(16, 2, 64, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0)
  x = tf.constant(np.random.RandomState(1).normal(size=(2, 6, 16)).astype(np.float32))
  adder = layer_utils.attention_mask_adder(tf.constant([[1, 1, 1, 1, 0, 0], [1] * 6]))
  results = {}
  for training in (True, False):
    with tf.GradientTape() as tape:
      out = layer(x, attention_mask_adder=adder, training=training)
      loss = tf.reduce_sum(out * out)
    results[training] = (out.numpy(), [g.numpy() for g in tape.gradient(loss, layer.weights)])
  np.testing.assert_allclose(results[True][0], results[False][0], atol=1e-5)
  for fused_grad, plain_grad in zip(results[True][1], results[False][1]):
    np.testing.assert_allclose(fused_grad, plain_grad, atol=1e-4, rtol=1e-4)

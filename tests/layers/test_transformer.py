"""ElectraTransformerLayer and ElectraEncoder against a NumPy BERT block."""

import collections
import math

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.layers import ElectraEncoder
from electra_tf.layers import ElectraTransformerLayer
from electra_tf.layers import layer_utils
from tests.helpers.layer_test_helper import run_layer_test
from tests.helpers.numpy_reference import erf_gelu
from tests.helpers.numpy_reference import layer_norm

B, S, H, A, I = 2, 5, 8, 2, 16
RNG = np.random.default_rng(0)
HIDDEN = RNG.normal(size=(B, S, H)).astype(np.float32)
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
LAYER_INIT = {
  "hidden_size": H,
  "num_attention_heads": A,
  "intermediate_size": I,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "attention_probs_dropout_prob": 0.1,
  "initializer_range": 0.02,
}
ENCODER_INIT = {
  "hidden_size": H,
  "num_hidden_layers": 2,
  "num_attention_heads": A,
  "intermediate_size": I,
  "embedding_size": 4,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "attention_probs_dropout_prob": 0.1,
  "initializer_range": 0.02,
  "attention_direction": "bidirectional",
}


def _numpy_block(layer, x, mask3d):
  """The original's `model/modeling.py:transformer_model` written out in NumPy."""
  w = lambda d: (d.kernel.numpy(), d.bias.numpy())  # noqa: E731
  d = H // A

  def heads(t):
    return t.reshape(B, S, A, d).transpose(0, 2, 1, 3)

  q, k, v = (heads(x @ w(l)[0] + w(l)[1]) for l in (layer.query, layer.key, layer.value))
  scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
  scores = scores + (1.0 - mask3d[:, None]) * -10000.0
  probs = np.exp(scores - scores.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  context = (probs @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
  ln1 = layer.attention_layer_norm
  attn = layer_norm(
    context @ w(layer.attention_output_dense)[0] + w(layer.attention_output_dense)[1] + x,
    ln1.gamma.numpy(),
    ln1.beta.numpy(),
  )
  inter = erf_gelu(attn @ w(layer.intermediate_dense)[0] + w(layer.intermediate_dense)[1])
  ln2 = layer.output_layer_norm
  return layer_norm(
    inter @ w(layer.output_dense)[0] + w(layer.output_dense)[1] + attn,
    ln2.gamma.numpy(),
    ln2.beta.numpy(),
  )


def _randomize(layer, seed=1):
  rng = np.random.default_rng(seed)
  for v in layer.weights:
    v.assign(rng.normal(scale=0.5, size=v.shape).astype(np.float32))


def test_transformer_layer_contract(tmp_path):
  adder = np.asarray(layer_utils.attention_mask_adder(MASK))
  run_layer_test(
    ElectraTransformerLayer,
    LAYER_INIT,
    {"hidden_states": HIDDEN, "attention_mask_adder": adder},
    tmp_path,
    expected_output_shape=(B, S, H),
    float32_outputs=[],
  )


def test_transformer_layer_matches_numpy_bert_block():
  layer = ElectraTransformerLayer(**LAYER_INIT)
  layer.build()
  _randomize(layer)
  got = np.asarray(layer(HIDDEN, layer_utils.attention_mask_adder(MASK), training=False))
  mask3d = np.ones((B, S, S), np.float32) * MASK[:, None, :]
  np.testing.assert_allclose(got, _numpy_block(layer, HIDDEN.astype(np.float64), mask3d), atol=2e-5)
  assert layer.attention_layer_norm.epsilon == 1e-12


def test_separate_qkv_projections_drop_the_kernel_join_and_keep_the_numbers():
  layer = ElectraTransformerLayer(**LAYER_INIT)
  layer.build()
  _randomize(layer)
  adder = layer_utils.attention_mask_adder(MASK)

  def traced():
    function = tf.function(lambda x, a: layer(x, a, training=False))
    concrete = function.get_concrete_function(tf.constant(HIDDEN), adder)
    counts = collections.Counter(op.type for op in concrete.graph.get_operations())
    return np.asarray(concrete(tf.constant(HIDDEN), adder)), counts

  joined, joined_ops = traced()
  with layer_utils.separate_qkv_projections():
    separate, separate_ops = traced()
  assert not layer_utils.qkv_projections_are_separate()  # the context is undone
  assert joined_ops["ConcatV2"] == 2 and separate_ops["ConcatV2"] == 0  # kernels and biases
  assert separate_ops["MatMul"] == joined_ops["MatMul"] + 2
  np.testing.assert_allclose(separate, joined, atol=1e-5)


def test_kernel_shapes_are_in_out():
  layer = ElectraTransformerLayer(**LAYER_INIT)
  layer.build()
  assert tuple(layer.query.kernel.shape) == (H, H)
  assert tuple(layer.intermediate_dense.kernel.shape) == (H, I)
  assert tuple(layer.output_dense.kernel.shape) == (I, H)


def test_heads_must_divide_hidden_size():
  with pytest.raises(ValueError, match="num_attention_heads"):
    ElectraTransformerLayer(hidden_size=10, num_attention_heads=3, intermediate_size=4)


@pytest.mark.parametrize("direction", ["bidirectional", "ltr", "rtl"])
def test_encoder_contract(tmp_path, direction):
  embeddings = RNG.normal(size=(B, S, 4)).astype(np.float32)
  run_layer_test(
    ElectraEncoder,
    dict(ENCODER_INIT, attention_direction=direction),
    {"embeddings": embeddings, "input_mask": MASK},
    tmp_path,
    expected_output_shape={"sequence_output": (B, S, H), "embedding_output": (B, S, H)},
    run_mixed_precision_test=direction == "ltr",
  )


def test_encoder_projection_and_hidden_states():
  encoder = ElectraEncoder(**ENCODER_INIT)
  embeddings = RNG.normal(size=(B, S, 4)).astype(np.float32)
  out = encoder(embeddings, MASK, training=False)
  proj = encoder.embeddings_project
  np.testing.assert_allclose(
    np.asarray(out["embedding_output"]),
    embeddings @ proj.kernel.numpy() + proj.bias.numpy(),
    atol=1e-5,
  )
  assert len(out["hidden_states"]) == 2
  np.testing.assert_array_equal(
    np.asarray(out["hidden_states"][-1]), np.asarray(out["sequence_output"])
  )
  # no projection when E == H
  assert ElectraEncoder(**dict(ENCODER_INIT, embedding_size=H)).embeddings_project is None
  # Glorot-uniform projection kernel: bounded by sqrt(6 / (fan_in + fan_out))
  assert np.abs(proj.kernel.numpy()).max() <= math.sqrt(6 / (4 + H))


def test_padding_keys_do_not_affect_real_positions():
  encoder = ElectraEncoder(**ENCODER_INIT)
  embeddings = RNG.normal(size=(B, S, 4)).astype(np.float32)
  changed = embeddings.copy()
  changed[1, 3:] += 5.0  # padding positions of example 1
  a = np.asarray(encoder(embeddings, MASK, training=False)["sequence_output"])
  b = np.asarray(encoder(changed, MASK, training=False)["sequence_output"])
  np.testing.assert_allclose(a[1, :3], b[1, :3], atol=1e-5)
  assert not np.allclose(a[1, 3:], b[1, 3:])  # queries at padding still compute


@pytest.mark.parametrize("direction", ["ltr", "rtl"])
def test_directional_masks(direction):
  encoder = ElectraEncoder(**dict(ENCODER_INIT, attention_direction=direction))
  embeddings = RNG.normal(size=(1, S, 4)).astype(np.float32)
  mask = np.ones((1, S), np.int32)
  t = 2
  changed = embeddings.copy()
  if direction == "ltr":
    changed[0, t + 1 :] += 3.0  # the future must not matter for positions ≤ t
    unaffected, affected = slice(0, t + 1), slice(t + 1, S)
  else:
    changed[0, :t] += 3.0  # the past must not matter for positions ≥ t
    unaffected, affected = slice(t, S), slice(0, t)
  a = np.asarray(encoder(embeddings, mask, training=False)["sequence_output"])
  b = np.asarray(encoder(changed, mask, training=False)["sequence_output"])
  np.testing.assert_allclose(a[0, unaffected], b[0, unaffected], atol=1e-5)
  assert not np.allclose(a[0, affected], b[0, affected])


def test_mask_adder_values():
  adder = np.asarray(layer_utils.attention_mask_adder(MASK, "ltr"))
  assert adder.shape == (B, 1, S, S)
  assert adder[0, 0, 1, 2] == -10000.0 and adder[0, 0, 2, 1] == 0.0
  assert adder[1, 0, 4, 3] == -10000.0 and adder[1, 0, 4, 2] == 0.0
  with pytest.raises(ValueError, match="attention_direction"):
    layer_utils.attention_mask_adder(MASK, "both")


def test_get_activation_follows_the_original():
  x = np.array([-1.5, 0.3, 2.0], np.float32)
  np.testing.assert_allclose(
    np.asarray(layer_utils.get_activation("gelu")(x)), erf_gelu(x), atol=1e-6
  )
  assert layer_utils.get_activation("linear") is None and layer_utils.get_activation("") is None
  np.testing.assert_allclose(np.asarray(layer_utils.get_activation("relu")(x)), [0, 0.3, 2.0])
  np.testing.assert_allclose(
    np.asarray(layer_utils.get_activation("tanh")(x)), np.tanh(x), atol=1e-6
  )
  with pytest.raises(ValueError, match="swish"):
    layer_utils.get_activation("swish")


def test_dropout_only_in_training():
  layer = ElectraTransformerLayer(
    **dict(LAYER_INIT, hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5)
  )
  adder = layer_utils.attention_mask_adder(MASK)
  a = np.asarray(layer(HIDDEN, adder, training=False))
  np.testing.assert_array_equal(a, np.asarray(layer(HIDDEN, adder, training=False)))
  assert not np.allclose(a, np.asarray(layer(HIDDEN, adder, training=True)))

"""MLM, cloze and discriminator heads: math, serialization, float32 logits."""

import math

import numpy as np

from electra_tf.layers import ElectraClozeHead
from electra_tf.layers import ElectraDiscriminatorHead
from electra_tf.layers import ElectraMaskedLMHead
from tests.helpers.layer_test_helper import run_layer_test
from tests.helpers.numpy_reference import erf_gelu
from tests.helpers.numpy_reference import layer_norm

RNG = np.random.default_rng(0)
V, E, HG = 30, 6, 4
TABLE = RNG.normal(size=(V, E)).astype(np.float32)
REPRS = RNG.normal(size=(2, 3, HG)).astype(np.float32)


def _randomize(layer):
  for v in layer.weights:
    v.assign(RNG.normal(scale=0.5, size=v.shape).astype(np.float32))


def _numpy_token_logits(head, x):
  h = erf_gelu(x @ head.dense.kernel.numpy() + head.dense.bias.numpy())
  h = layer_norm(h, head.layer_norm.gamma.numpy(), head.layer_norm.beta.numpy())
  return h @ TABLE.T + head.output_bias.numpy()


def test_masked_lm_head_contract(tmp_path):
  run_layer_test(
    ElectraMaskedLMHead,
    {"vocab_size": V, "embedding_size": E, "hidden_act": "gelu", "initializer_range": 0.02},
    {"hidden_states": REPRS, "embedding_table": TABLE},
    tmp_path,
    expected_output_shape=(2, 3, V),
    float32_outputs=[None],
  )


def test_masked_lm_head_math():
  head = ElectraMaskedLMHead(vocab_size=V, embedding_size=E)
  head(REPRS, TABLE)
  _randomize(head)
  np.testing.assert_allclose(
    np.asarray(head(REPRS, TABLE)), _numpy_token_logits(head, REPRS), atol=2e-5
  )
  assert tuple(head.dense.kernel.shape) == (HG, E)
  assert head.layer_norm.epsilon == 1e-12


def test_cloze_head_contract(tmp_path):
  ltr = RNG.normal(size=(2, 5, HG)).astype(np.float32)
  rtl = RNG.normal(size=(2, 5, HG)).astype(np.float32)
  run_layer_test(
    ElectraClozeHead,
    {"vocab_size": V, "embedding_size": E, "hidden_act": "gelu", "initializer_range": 0.02},
    {"ltr_output": ltr, "rtl_output": rtl, "embedding_table": TABLE},
    tmp_path,
    expected_output_shape={"logits": (2, 5, V), "sequence_output": (2, 5, 2 * HG)},
    float32_outputs=["logits"],
  )


def test_cloze_head_joins_neighbours_with_wraparound():
  ltr = RNG.normal(size=(1, 5, HG)).astype(np.float32)
  rtl = RNG.normal(size=(1, 5, HG)).astype(np.float32)
  head = ElectraClozeHead(vocab_size=V, embedding_size=E)
  out = head(ltr, rtl, TABLE)
  joined = np.asarray(out["sequence_output"])
  for t in range(5):
    np.testing.assert_array_equal(joined[0, t, :HG], ltr[0, (t - 1) % 5])  # ltr[t-1]
    np.testing.assert_array_equal(joined[0, t, HG:], rtl[0, (t + 1) % 5])  # rtl[t+1]
  _randomize(head)
  np.testing.assert_allclose(
    np.asarray(head(ltr, rtl, TABLE)["logits"]), _numpy_token_logits(head, joined), atol=2e-5
  )
  assert tuple(head.dense.kernel.shape) == (2 * HG, E)


def test_discriminator_head_contract(tmp_path):
  run_layer_test(
    ElectraDiscriminatorHead,
    {"hidden_size": 8, "hidden_act": "gelu", "initializer_range": 0.02},
    {"hidden_states": RNG.normal(size=(2, 3, 8)).astype(np.float32)},
    tmp_path,
    expected_output_shape=(2, 3),
    float32_outputs=[None],
  )


def test_discriminator_head_math_and_inits():
  head = ElectraDiscriminatorHead(hidden_size=64)
  x = RNG.normal(size=(2, 3, 64)).astype(np.float32)
  head(x)
  # dense_1 is Glorot-uniform (bound sqrt(6/65)), dense is truncated normal 0.02
  assert np.abs(head.dense_1.kernel.numpy()).max() > 0.05
  assert np.abs(head.dense_1.kernel.numpy()).max() <= math.sqrt(6 / 65)
  assert np.abs(head.dense.kernel.numpy()).max() <= 0.04 + 1e-7
  _randomize(head)
  h = erf_gelu(x @ head.dense.kernel.numpy() + head.dense.bias.numpy())
  want = (h @ head.dense_1.kernel.numpy() + head.dense_1.bias.numpy())[..., 0]
  np.testing.assert_allclose(np.asarray(head(x)), want, atol=2e-5)

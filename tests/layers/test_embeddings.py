"""ElectraEmbeddings: the original's embedding math, serialization, mixed precision."""

import numpy as np

from electra_tf.layers import ElectraEmbeddings
from tests.helpers.layer_test_helper import run_layer_test

INIT = {
  "vocab_size": 20,
  "embedding_size": 6,
  "max_position_embeddings": 10,
  "type_vocab_size": 2,
  "initializer_range": 0.02,
  "dropout_rate": 0.1,
}
IDS = np.array([[1, 5, 7, 0], [3, 19, 2, 2]], np.int32)
SEGMENTS = np.array([[0, 0, 1, 1], [0, 1, 1, 1]], np.int32)


def test_layer_contract(tmp_path):
  run_layer_test(
    ElectraEmbeddings,
    INIT,
    {"input_ids": IDS, "segment_ids": SEGMENTS},
    tmp_path,
    expected_output_shape=(2, 4, 6),
  )


def _layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_math_matches_spec():
  layer = ElectraEmbeddings(**INIT)
  layer.build()
  rng = np.random.default_rng(0)
  for v in (
    layer.word_embeddings,
    layer.position_embeddings,
    layer.token_type_embeddings,
    layer.layer_norm.gamma,
    layer.layer_norm.beta,
  ):
    v.assign(rng.normal(size=v.shape).astype(np.float32))
  got = np.asarray(layer(IDS, SEGMENTS, training=False))
  x = (
    layer.word_embeddings.numpy()[IDS]
    + layer.token_type_embeddings.numpy()[SEGMENTS]
    + layer.position_embeddings.numpy()[None, :4]
  )
  want = _layer_norm(x, layer.layer_norm.gamma.numpy(), layer.layer_norm.beta.numpy())
  np.testing.assert_allclose(got, want, atol=1e-5)


def test_layer_norm_epsilon_and_initializers():
  layer = ElectraEmbeddings(vocab_size=2000, embedding_size=64)
  layer.build()
  assert layer.layer_norm.epsilon == 1e-12
  table = layer.word_embeddings.numpy()
  # truncated normal(0.02): cut at 2σ, std of the truncated law ≈ 0.88σ
  assert np.abs(table).max() <= 0.04 + 1e-7
  assert 0.015 < table.std() < 0.02
  np.testing.assert_array_equal(layer.layer_norm.gamma.numpy(), 1.0)
  np.testing.assert_array_equal(layer.layer_norm.beta.numpy(), 0.0)


def test_dropout_only_in_training():
  layer = ElectraEmbeddings(**dict(INIT, dropout_rate=0.5))
  a = np.asarray(layer(IDS, SEGMENTS, training=False))
  b = np.asarray(layer(IDS, SEGMENTS, training=False))
  np.testing.assert_array_equal(a, b)
  c = np.asarray(layer(IDS, SEGMENTS, training=True))
  assert (c == 0).mean() > 0.2
  kept = c != 0
  np.testing.assert_allclose(c[kept], 2 * a[kept], rtol=1e-5)  # inverted scaling


def test_sequence_longer_than_positions_is_an_error():
  layer = ElectraEmbeddings(**INIT)
  ids = np.zeros((1, 11), np.int32)
  try:
    layer(ids, ids)
  except ValueError as error:
    assert "max_position_embeddings" in str(error)
  else:
    raise AssertionError("expected a ValueError")

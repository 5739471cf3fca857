"""Layer-wise learning-rate exponents (`model/optimization.py:create_optimizer`)."""

import pytest

from electra_tf.optimization import layerwise as lw

NAMES = [
  "electra/embeddings/word_embeddings",
  "electra/embeddings/LayerNorm/gamma",
  "electra/embeddings_project/kernel",
  "electra/encoder/layer_0/attention/self/query/kernel",
  "electra/encoder/layer_1/output/dense/bias",
  "electra/encoder/layer_10/intermediate/dense/kernel",
  "electra/encoder/layer_11/output/LayerNorm/beta",
  "task_specific/mnli/dense/kernel",
]


def test_original_exponents_with_the_off_by_one():
  got = lw.layerwise_exponents(NAMES, num_layers=12)
  assert got == {
    "electra/embeddings/word_embeddings": 14,
    "electra/embeddings/LayerNorm/gamma": 14,
    "electra/embeddings_project/kernel": 14,
    "electra/encoder/layer_0/attention/self/query/kernel": 13,
    "electra/encoder/layer_1/output/dense/bias": 12,
    "electra/encoder/layer_10/intermediate/dense/kernel": 3,
    "electra/encoder/layer_11/output/LayerNorm/beta": 2,  # decay², not decay
    "task_specific/mnli/dense/kernel": 0,
  }


def test_fixed_option_gives_the_top_layer_decay_one():
  got = lw.layerwise_exponents(NAMES, num_layers=12, fixed=True)
  assert got["electra/encoder/layer_11/output/LayerNorm/beta"] == 1
  assert got["electra/embeddings/word_embeddings"] == 13
  assert got["electra/encoder/layer_0/attention/self/query/kernel"] == 12
  assert got["task_specific/mnli/dense/kernel"] == 0


def test_multipliers_and_disabled_decay():
  m = lw.layerwise_lr_multipliers(NAMES, 12, 0.8)
  assert m["electra/encoder/layer_11/output/LayerNorm/beta"] == pytest.approx(0.64)
  assert m["electra/embeddings/word_embeddings"] == pytest.approx(0.8**14)
  assert m["task_specific/mnli/dense/kernel"] == 1.0
  assert set(lw.layerwise_lr_multipliers(NAMES, 12, -1).values()) == {1.0}


def test_unmatched_variable_raises_like_the_original():
  with pytest.raises(ValueError, match="No learning rate specified for variable"):
    lw.layerwise_exponents(["electra/pooler/dense/kernel"], 12)
  with pytest.raises(ValueError, match="No learning rate"):
    lw.layerwise_exponents(["electra/encoder/layer_12/output/dense/bias"], 12)

"""ElectraBackbone, ElectraGenerator and ElectraDiscriminator: outputs, sharing,
serialization."""

import numpy as np
import pytest

from electra_tf.layers import ElectraEmbeddings
from electra_tf.models import ElectraBackbone
from electra_tf.models import ElectraDiscriminator
from electra_tf.models import ElectraGenerator
from tests.helpers.layer_test_helper import run_layer_test

V = 40
DISC = {
  "vocab_size": V,
  "hidden_size": 16,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 32,
  "max_position_embeddings": 16,
}
GEN = dict(DISC, hidden_size=8, num_attention_heads=1, intermediate_size=16)
IDS = np.array([[1, 5, 7, 9, 2, 0], [1, 4, 4, 6, 8, 2]], np.int32)
INPUTS = {
  "input_ids": IDS,
  "input_mask": (IDS > 0).astype(np.int32),
  "segment_ids": np.array([[0, 0, 0, 1, 1, 0], [0, 0, 1, 1, 1, 1]], np.int32),
}
POSITIONS = np.array([[1, 3, 0], [2, 5, 4]], np.int32)


def test_discriminator_contract(tmp_path):
  run_layer_test(
    ElectraDiscriminator,
    {"bert_config": DISC, "embedding_size": 8, "embeddings": None, "include_head": True},
    {"inputs": INPUTS},
    tmp_path,
    expected_output_shape={
      "logits": (2, 6),
      "sequence_output": (2, 6, 16),
      "embedding_output": (2, 6, 16),
      "pooled_output": (2, 16),
    },
    float32_outputs=["logits"],
  )


def test_backbone_contract(tmp_path):
  run_layer_test(
    ElectraBackbone,
    {"bert_config": DISC, "embedding_size": 8, "embeddings": None},
    {"inputs": INPUTS},
    tmp_path,
    expected_output_shape={
      "sequence_output": (2, 6, 16),
      "embedding_output": (2, 6, 16),
      "pooled_output": (2, 16),
    },
  )


def test_discriminator_is_its_backbone_plus_the_head():
  """The same weights give the same encoder outputs with and without the head,
  under the same variable paths (what checkpoints and converters read)."""
  disc = ElectraDiscriminator(DISC, embedding_size=8, name="electra")
  backbone = ElectraBackbone(DISC, embedding_size=8, name="electra")
  disc.build()
  backbone.build()
  head_paths = {v.path for v in disc.head.weights}
  assert sorted(v.path for v in backbone.weights) == sorted(
    v.path for v in disc.weights if v.path not in head_paths
  )
  for variable in backbone.weights:
    variable.assign(next(v for v in disc.weights if v.path == variable.path))
  with_head, alone = disc(INPUTS), backbone(INPUTS)
  assert "logits" in with_head and "logits" not in alone
  np.testing.assert_array_equal(
    np.asarray(with_head["sequence_output"]), np.asarray(alone["sequence_output"])
  )


def test_discriminator_outputs_and_encoder_only():
  disc = ElectraDiscriminator(DISC, embedding_size=8)
  out = disc(INPUTS, training=False)
  assert len(out["hidden_states"]) == 2
  np.testing.assert_array_equal(
    np.asarray(out["pooled_output"]), np.asarray(out["sequence_output"])[:, 0]
  )
  np.testing.assert_allclose(
    np.asarray(out["logits"]), np.asarray(disc.head(out["sequence_output"])), atol=1e-6
  )
  encoder_only = ElectraDiscriminator(DISC, include_head=False)
  out = encoder_only(INPUTS)
  assert "logits" not in out and encoder_only.head is None
  assert encoder_only.encoder.embeddings_project is None  # E == H


def test_discriminator_rejects_bad_inputs():
  disc = ElectraDiscriminator(DISC)
  with pytest.raises(ValueError, match="segment_ids"):
    disc({"input_ids": IDS, "input_mask": IDS})
  with pytest.raises(ValueError, match="Unknown BertConfig field"):
    ElectraDiscriminator(dict(DISC, hidden_sise=3))


def _generator_layer_test(tmp_path, embeddings=None, two_tower=False, **kwargs):
  """`run_layer_test` of a generator (H=8, E=12) called on INPUTS at POSITIONS."""
  run_layer_test(
    ElectraGenerator,
    dict(
      bert_config=GEN, embedding_size=12, embeddings=embeddings, encoder=None, two_tower=two_tower
    ),
    {"inputs": INPUTS, "masked_lm_positions": POSITIONS},
    tmp_path,
    **kwargs,
  )


@pytest.mark.parametrize("two_tower", [False, True])
def test_generator_contract(tmp_path, two_tower):
  shapes = {"sequence_output": (2, 6, 16 if two_tower else 8), "mlm_logits": (2, 3, V)}
  float32 = ["mlm_logits"]
  if two_tower:
    shapes["logits"] = (2, 6, V)
    float32.append("logits")
  _generator_layer_test(
    tmp_path, two_tower=two_tower, expected_output_shape=shapes, float32_outputs=float32
  )


def test_generator_with_shared_embeddings_round_trips(tmp_path):
  embeddings = ElectraEmbeddings(V, 12, max_position_embeddings=16)
  _generator_layer_test(tmp_path, embeddings=embeddings, run_mixed_precision_test=False)


def test_generator_mlm_logits_are_gathered_and_tied():
  embeddings = ElectraEmbeddings(V, 12, max_position_embeddings=16)
  gen = ElectraGenerator(GEN, embeddings=embeddings)
  out = gen(INPUTS, masked_lm_positions=POSITIONS, training=False)
  assert gen.word_embeddings is embeddings.word_embeddings
  seq = np.asarray(out["sequence_output"])
  gathered = np.stack([seq[b, POSITIONS[b]] for b in range(2)])
  want = gen.head(gathered, embeddings.word_embeddings)
  np.testing.assert_allclose(np.asarray(out["mlm_logits"]), np.asarray(want), atol=1e-6)
  # Changing the shared table changes the generator's output (tied output).
  embeddings.word_embeddings.assign(embeddings.word_embeddings.numpy() * 2)
  changed = gen(INPUTS, masked_lm_positions=POSITIONS, training=False)["mlm_logits"]
  assert not np.allclose(np.asarray(changed), np.asarray(out["mlm_logits"]))
  # No positions: no MLM logits.
  assert "mlm_logits" not in gen(INPUTS, training=False)


def test_two_tower_generator():
  gen = ElectraGenerator(GEN, embedding_size=12, two_tower=True)
  out = gen(INPUTS, training=False)
  assert gen.is_two_tower and gen.rtl_encoder.attention_direction == "rtl"
  assert gen.encoder.attention_direction == "ltr"
  assert gen.embeddings is not gen.rtl_embeddings  # untied: one block per tower
  ltr, rtl = np.asarray(out["ltr_sequence_output"]), np.asarray(out["rtl_sequence_output"])
  np.testing.assert_array_equal(np.asarray(out["sequence_output"])[:, 2, :8], ltr[:, 1])
  np.testing.assert_array_equal(np.asarray(out["sequence_output"])[:, 2, 8:], rtl[:, 3])
  assert out["logits"].shape == (2, 6, V)
  shared = ElectraEmbeddings(V, 12, max_position_embeddings=16)
  gen = ElectraGenerator(GEN, embeddings=shared, two_tower=True)
  assert gen.embeddings is shared and gen.rtl_embeddings is shared

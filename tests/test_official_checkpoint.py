"""`load_official_checkpoint`: parity with the original's outputs on its own
checkpoint, and strict loading of self-made name-based checkpoints for every
layout of spec §8.3."""

import json

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import checkpoint_names
from electra_tf import load_official_checkpoint
from electra_tf.official_checkpoint import restore_from_name_map
from electra_tf.pretraining_config import PretrainingConfig

PARITY_ATOL = 1e-5


# ----------------------------------------------------------------------------
# Parity with the original (shared fixtures)
# ----------------------------------------------------------------------------


def _tiny_config(fixtures, tmp_path):
  hparams = json.loads((fixtures / "models" / "tiny_hparams.json").read_text())
  hparams.pop("pretrain_tfrecords", None)
  return PretrainingConfig("tiny", str(tmp_path), **hparams)


@pytest.fixture(scope="module")
def tiny_parity_outputs(original_fixtures, tmp_path_factory):
  config = _tiny_config(original_fixtures, tmp_path_factory.mktemp("tiny"))
  pretrainer = load_official_checkpoint(original_fixtures / "models" / "tiny", config)
  golden = dict(np.load(original_fixtures / "golden" / "tiny.npz"))
  masked = {"input_ids": golden["masked_input_ids"], "input_mask": golden["input_mask"],
            "segment_ids": golden["segment_ids"]}
  unmasked = {"input_ids": golden["input_ids"], "input_mask": golden["input_mask"],
              "segment_ids": golden["segment_ids"]}
  gen = pretrainer.generator(masked, masked_lm_positions=golden["masked_lm_positions"],
                             training=False)
  disc = pretrainer.discriminator(unmasked, training=False)
  return pretrainer, golden, gen, disc


def _weighted_mlm_loss(logits, targets, weights):
  """Spec §7.2: sum(w · nll) / (sum(w) + 1e-6)."""
  log_probs = tf.nn.log_softmax(logits, axis=-1)
  nll = -tf.reduce_sum(tf.one_hot(targets, logits.shape[-1]) * log_probs, axis=-1)
  return tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-6)


def test_tiny_checkpoint_restores_every_variable(tiny_parity_outputs):
  pretrainer, golden, _, _ = tiny_parity_outputs
  info = pretrainer.official_checkpoint_info
  assert len(info["loaded"]) == 82  # variables/tiny.txt: 82 model variables
  assert info["global_step"] == int(golden["global_step_of_ckpt"]) == 50
  assert "global_step" in info["ignored"]
  assert all(n == "global_step" or n.endswith(("/adam_m", "/adam_v")) for n in info["ignored"])


@pytest.mark.parametrize("ours,theirs", [
    ("embedding_output", "gen_embedding_output"),
    ("sequence_output", "gen_sequence_output"),
    ("mlm_logits", "gen_mlm_logits"),
])
def test_generator_matches_original(tiny_parity_outputs, ours, theirs):
  _, golden, gen, _ = tiny_parity_outputs
  np.testing.assert_allclose(np.asarray(gen[ours]), golden[theirs], atol=PARITY_ATOL, rtol=0)


def test_generator_mlm_loss_and_preds_match_original(tiny_parity_outputs):
  _, golden, gen, _ = tiny_parity_outputs
  loss = _weighted_mlm_loss(gen["mlm_logits"], golden["masked_lm_ids"],
                            golden["masked_lm_weights"])
  np.testing.assert_allclose(float(loss), float(golden["gen_mlm_loss"]), atol=PARITY_ATOL)
  np.testing.assert_array_equal(np.argmax(gen["mlm_logits"], -1), golden["gen_mlm_preds"])


@pytest.mark.parametrize("ours,theirs", [
    ("embedding_output", "disc_embedding_output"),
    ("sequence_output", "disc_sequence_output"),
    ("pooled_output", "disc_pooled_output"),
    ("logits", "disc_logits"),
])
def test_discriminator_matches_original(tiny_parity_outputs, ours, theirs):
  _, golden, _, disc = tiny_parity_outputs
  np.testing.assert_allclose(np.asarray(disc[ours]), golden[theirs], atol=PARITY_ATOL, rtol=0)


def test_discriminator_hidden_layers_and_probs_match_original(tiny_parity_outputs):
  _, golden, _, disc = tiny_parity_outputs
  hidden = np.stack([np.asarray(h) for h in disc["hidden_states"]])
  assert hidden.shape == golden["disc_all_layer_outputs"].shape
  np.testing.assert_allclose(hidden, golden["disc_all_layer_outputs"], atol=PARITY_ATOL, rtol=0)
  probs = tf.sigmoid(disc["logits"]).numpy()
  np.testing.assert_allclose(probs, golden["disc_probs"], atol=PARITY_ATOL, rtol=0)


def test_loading_accepts_directory_and_prefix(original_fixtures, tmp_path):
  config = _tiny_config(original_fixtures, tmp_path)
  prefix = original_fixtures / "models" / "tiny" / "model.ckpt-50"
  pretrainer = load_official_checkpoint(str(prefix), config)
  reader = tf.train.load_checkpoint(str(prefix))
  np.testing.assert_array_equal(
      pretrainer.embeddings.word_embeddings.numpy(),
      reader.get_tensor("electra/embeddings/word_embeddings"))

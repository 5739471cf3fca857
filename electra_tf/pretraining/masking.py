"""Dynamic masking and its tensor helpers (`pretrain/pretrain_helpers.py`, the original's pretrain_helpers).

Everything runs inside the training graph at every step.
"""

import tensorflow as tf

from electra_tf.pretraining import random_streams
from electra_tf.pretraining.positions import gather_positions
from electra_tf.pretraining.positions import scatter_update

# Probability that a selected position is replaced by [MASK]; the rest keep
# their token. There is no random-token replacement (`pretrain/pretrain_helpers.py:mask`).
MASK_REPLACE_PROB = 0.85


def get_candidates_mask(input_ids, input_mask, special_ids, disallow_from_mask=None):
  """Positions that may be masked (`pretrain/pretrain_helpers.py:get_candidates_mask`): real tokens that are not special.

  Args:
    input_ids: int `[B, L]`.
    input_mask: `[B, L]`, 1 for real tokens (so padding is excluded).
    special_ids: ids never masked: the original uses [CLS], [SEP], [MASK].
    disallow_from_mask: optional bool/int `[B, L]` of further exclusions.

  Returns:
    bool `[B, L]`.
  """
  candidates = tf.equal(tf.cast(input_mask, tf.int32), 1)
  for token_id in special_ids:
    candidates &= tf.not_equal(input_ids, token_id)
  if disallow_from_mask is not None:
    candidates &= ~tf.cast(disallow_from_mask, tf.bool)
  return candidates


def mask(
  input_ids,
  input_mask,
  *,
  mask_prob,
  max_predictions_per_seq,
  cls_id,
  sep_id,
  mask_id,
  proposal_distribution=1.0,
  disallow_from_mask=None,
  already_masked=None,
  position_seeds=None,
  replace_seeds=None,
):
  """The original's dynamic masking (`pretrain/pretrain_helpers.py:mask`).

  `max(1, min(N, round_half_even(num_tokens * mask_prob)))` positions per
  row are drawn from the candidates WITH replacement; unused slots get
  position 0 and id 0 and weight 0. Each slot independently becomes [MASK]
  with probability 0.85 and otherwise keeps its token; a duplicated position
  is masked if any of its copies is.

  Positions are drawn by Gumbel-max over the log proposal probabilities,
  which is the same categorical distribution as the original's
  `tf.random.categorical`, but with noise that can be keyed per example.

  Args:
    input_ids: int `[B, L]` original ids.
    input_mask: `[B, L]` 1 for real tokens.
    mask_prob: fraction of the real tokens to predict.
    max_predictions_per_seq: N, the number of slots.
    cls_id, sep_id, mask_id: the special ids never selected.
    proposal_distribution: weights over positions (scalar or `[B, L]`).
    disallow_from_mask: optional `[B, L]` positions never selected.
    already_masked: optional `[B, N]`; those slots get weight 0.
    position_seeds, replace_seeds: optional int32 `[B, 2]` per-example seeds
      for the position draw and the [MASK] coin (None: stateful noise).

  Returns:
    Dict with `input_ids` (masked, int32 `[B, L]`), `masked_lm_positions`,
    `masked_lm_ids` (int32 `[B, N]`) and `masked_lm_weights` (float32 `[B, N]`).

  Example:
  >>> out = mask(tf.constant([[101, 7, 8, 9, 102]]), tf.ones([1, 5]), mask_prob=0.4,
  ...            max_predictions_per_seq=3, cls_id=101, sep_id=102, mask_id=103)
  >>> int(tf.reduce_sum(out["masked_lm_weights"]))
  2
  """
  input_ids = tf.cast(input_ids, tf.int32)
  batch_size = tf.shape(input_ids)[0]
  length = tf.shape(input_ids)[1]
  n = max_predictions_per_seq

  num_tokens = tf.reduce_sum(tf.cast(input_mask, tf.float32), axis=-1)
  num_to_predict = tf.maximum(
    1, tf.minimum(n, tf.cast(tf.round(num_tokens * mask_prob), tf.int32))
  )  # half to even
  masked_lm_weights = tf.sequence_mask(num_to_predict, n, dtype=tf.float32)
  if already_masked is not None:
    masked_lm_weights *= 1.0 - tf.cast(already_masked, tf.float32)

  candidates = get_candidates_mask(
    input_ids, input_mask, (cls_id, sep_id, mask_id), disallow_from_mask
  )
  sample_prob = tf.cast(proposal_distribution, tf.float32) * tf.cast(candidates, tf.float32)
  sample_prob /= tf.reduce_sum(sample_prob, axis=-1, keepdims=True)
  sample_logits = tf.where(sample_prob > 0, tf.math.log(sample_prob), -float("inf"))
  uniform = random_streams.row_uniform(position_seeds, [n, length], batch_size=batch_size)
  scores = sample_logits[:, None, :] + random_streams.gumbel_noise(uniform)
  sampled_positions = tf.argmax(scores, axis=-1, output_type=tf.int32)  # [B, N]

  masked_lm_positions = sampled_positions * tf.cast(masked_lm_weights, tf.int32)
  masked_lm_ids = gather_positions(input_ids, masked_lm_positions)
  masked_lm_ids *= tf.cast(masked_lm_weights, tf.int32)

  replace = (
    random_streams.row_uniform(replace_seeds, [n], batch_size=batch_size) < MASK_REPLACE_PROB
  )
  replace_positions = masked_lm_positions * tf.cast(replace, tf.int32)
  masked_input_ids, _ = scatter_update(
    input_ids, tf.fill(tf.shape(masked_lm_positions), tf.cast(mask_id, tf.int32)), replace_positions
  )
  return {
    "input_ids": tf.stop_gradient(masked_input_ids),
    "masked_lm_positions": masked_lm_positions,
    "masked_lm_ids": masked_lm_ids,
    "masked_lm_weights": masked_lm_weights,
  }


def unmask(input_ids, masked_lm_positions, masked_lm_ids):
  """Writes `masked_lm_ids` back at `masked_lm_positions` (`pretrain/pretrain_helpers.py:unmask`)."""
  updated, _ = scatter_update(tf.cast(input_ids, tf.int32), masked_lm_ids, masked_lm_positions)
  return updated

"""Dynamic masking, in the training graph at every step (`pretrain/pretrain_helpers.py`)."""

import numpy as np
import tensorflow as tf

from electra_tf.pretraining import random_streams
from electra_tf.pretraining.positions import gather_positions
from electra_tf.pretraining.positions import scatter_update

# Probability that a selected position is replaced by [MASK]; the rest keep
# their token (no random-token replacement).
MASK_REPLACE_PROB = 0.85


def is_wordpiece_continuation(token):
  """True for a WordPiece piece that continues the previous word (`##ing`)."""
  return token.startswith("##")


def is_sentencepiece_continuation(token):
  """True for a SentencePiece piece that continues the previous word (no `▁`)."""
  return not token.startswith("\u2581")


def continuation_table(vocab, is_continuation=is_wordpiece_continuation):
  """Bool array `[V]`: does the token of each id continue the previous word?
  An id no token uses is a word start.

  Args:
    vocab: token → id mapping (`electra_tf.text.vocab.load_vocab`).
    is_continuation: the vocab kind's test on a token string
      (`is_wordpiece_continuation`, `is_sentencepiece_continuation`).

  Example:
  >>> continuation_table({"[CLS]": 0, "play": 1, "##ing": 2}).tolist()
  [False, False, True]
  """
  table = np.zeros([max(vocab.values()) + 1 if vocab else 0], bool)
  for token, token_id in vocab.items():
    table[token_id] = is_continuation(token)
  return table


def word_starts(input_ids, candidates, word_continuation):
  """Bool `[B, L]`: candidate positions that start a word.

  A word is a candidate token that does not continue the previous one,
  followed by its continuation pieces; a non-candidate ends a word.

  Args:
    input_ids: int `[B, L]`.
    candidates: bool `[B, L]` (`get_candidates_mask`).
    word_continuation: bool `[V]` (`continuation_table`).
  """
  table = tf.convert_to_tensor(word_continuation, tf.bool)
  ids = tf.clip_by_value(tf.cast(input_ids, tf.int32), 0, tf.shape(table)[0] - 1)
  continues = tf.gather(table, ids)
  previous_is_candidate = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
  return candidates & (~continues | ~previous_is_candidate)


def get_candidates_mask(input_ids, input_mask, special_ids, disallow_from_mask=None):
  """Positions that may be masked: real tokens that are not special
  (`pretrain/pretrain_helpers.py:get_candidates_mask`).

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
  row are drawn from the candidates WITH replacement (by Gumbel-max, the
  original's categorical distribution with noise keyed per example); unused
  slots get position 0, id 0 and weight 0. Each slot becomes [MASK] with
  probability 0.85, else keeps its token.

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
  num_to_predict = _num_to_predict(input_mask, mask_prob, n)
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
  return _replace_with_mask(
    input_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights, replace_seeds, mask_id, n
  )


def _num_to_predict(input_mask, mask_prob, n):
  """`max(1, min(n, round_half_even(num_tokens * mask_prob)))` per row."""
  num_tokens = tf.reduce_sum(tf.cast(input_mask, tf.float32), axis=-1)
  return tf.maximum(1, tf.minimum(n, tf.cast(tf.round(num_tokens * mask_prob), tf.int32)))


def _replace_with_mask(
  input_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights, replace_seeds, mask_id, n
):
  """Both masking kinds' last step: each picked position becomes `[MASK]`
  with probability `MASK_REPLACE_PROB` (one draw per slot, keyed per row)."""
  batch_size = tf.shape(input_ids)[0]
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


def mask_whole_words(
  input_ids,
  input_mask,
  *,
  mask_prob,
  max_predictions_per_seq,
  cls_id,
  sep_id,
  mask_id,
  word_continuation,
  position_seeds=None,
  replace_seeds=None,
):
  """Whole-word masking: `mask`'s outputs, with every piece of a chosen word
  masked together.

  The token budget is `mask`'s. Words are visited in a uniformly random
  order and each is taken whole when its pieces fit in what is left of the
  budget (one that does not is skipped). Every slot holds a distinct
  position; the taken positions fill the first slots in sequence order,
  unused slots get position 0, id 0 and weight 0. Each slot then becomes
  [MASK] as in `mask`.

  Args:
    input_ids, input_mask, mask_prob, max_predictions_per_seq, cls_id,
      sep_id, mask_id, position_seeds, replace_seeds: as in `mask`
      (`position_seeds` keys the word order).
    word_continuation: bool `[V]` (`continuation_table` of the run's vocab).

  Returns:
    The dict `mask` returns.

  Example:
  >>> table = [False] * 10 + [True]  # id 10 continues a word
  >>> out = mask_whole_words(tf.constant([[101, 7, 8, 10, 102]]), tf.ones([1, 5]),
  ...     mask_prob=0.5, max_predictions_per_seq=3, cls_id=101, sep_id=102,
  ...     mask_id=103, word_continuation=table + [False] * 92)
  >>> sorted(set(out["masked_lm_positions"].numpy()[0].tolist()) - {0}) in ([1], [2, 3])
  True
  """
  input_ids = tf.cast(input_ids, tf.int32)
  batch_size = tf.shape(input_ids)[0]
  length = tf.shape(input_ids)[1]
  n = max_predictions_per_seq
  budget = _num_to_predict(input_mask, mask_prob, n)
  candidates = get_candidates_mask(input_ids, input_mask, (cls_id, sep_id, mask_id))
  starts = word_starts(input_ids, candidates, word_continuation)
  # Each candidate's word, numbered by its start; non-candidates go to an
  # extra bin `length` that nothing reads.
  word = tf.where(candidates, tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, length)
  rows = tf.broadcast_to(tf.range(batch_size)[:, None], tf.shape(word))
  bins = tf.stack([rows, word], axis=-1)
  word_length = tf.tensor_scatter_nd_add(
    tf.zeros([batch_size, length + 1], tf.int32), bins, tf.cast(candidates, tf.int32)
  )
  # Each word's length at its start position, 0 elsewhere.
  length_at_start = tf.where(starts, tf.gather(word_length, word, batch_dims=1), 0)

  # A random order of the words: sort the start positions by uniform keys
  # (non-starts last).
  uniform = random_streams.row_uniform(position_seeds, [length], batch_size=batch_size)
  order = tf.argsort(tf.where(starts, uniform, 2.0), axis=1, stable=True)
  lengths_in_order = tf.gather(length_at_start, order, batch_dims=1)

  def take_if_it_fits(state, word_len):
    used, _ = state
    take = (word_len > 0) & (used + word_len <= budget)
    return used + tf.where(take, word_len, 0), take

  _, taken_in_order = tf.scan(
    take_if_it_fits,
    tf.transpose(lengths_in_order),
    initializer=(tf.zeros([batch_size], tf.int32), tf.zeros([batch_size], tf.bool)),
  )
  taken_in_order = tf.transpose(taken_in_order)  # [B, L]
  # Back to the start positions, then to every piece of each taken word.
  taken_start = tf.gather(taken_in_order, tf.argsort(order, axis=1), batch_dims=1)
  taken_word = tf.tensor_scatter_nd_add(
    tf.zeros([batch_size, length + 1], tf.int32),
    bins,
    tf.cast(taken_start & starts, tf.int32),
  )
  selected = candidates & (tf.gather(taken_word, word, batch_dims=1) > 0)

  # The selected positions in sequence order fill the first slots.
  rank = tf.where(selected, length - tf.range(length)[None, :], 0)
  rank = tf.concat([rank, tf.zeros([batch_size, n], tf.int32)], axis=1)
  top, slot_positions = tf.math.top_k(rank, k=n, sorted=True)
  filled = top > 0
  masked_lm_weights = tf.cast(filled, tf.float32)
  masked_lm_positions = tf.where(filled, slot_positions, 0)
  masked_lm_ids = gather_positions(input_ids, masked_lm_positions) * tf.cast(filled, tf.int32)
  return _replace_with_mask(
    input_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights, replace_seeds, mask_id, n
  )


def unmask(input_ids, masked_lm_positions, masked_lm_ids):
  """Writes `masked_lm_ids` back at `masked_lm_positions` (`pretrain/pretrain_helpers.py:unmask`)."""
  updated, _ = scatter_update(tf.cast(input_ids, tf.int32), masked_lm_ids, masked_lm_positions)
  return updated

"""Dynamic masking and its helpers (`pretrain/pretrain_helpers.py`)."""

import collections

import numpy as np
import tensorflow as tf

from electra_tf.pretraining import masking
from electra_tf.pretraining import random_streams
from electra_tf.pretraining.positions import gather_positions
from electra_tf.pretraining.positions import scatter_update

CLS, SEP, MASK, PAD = 101, 102, 103, 0


def test_gather_positions_2d_and_3d():
  seq = np.arange(2 * 5).reshape(2, 5).astype(np.int32)
  pos = np.array([[4, 0, 4], [1, 2, 3]], np.int32)
  np.testing.assert_array_equal(gather_positions(seq, pos).numpy(), np.take_along_axis(seq, pos, 1))
  seq3 = np.random.RandomState(0).rand(2, 5, 3).astype(np.float32)
  got = gather_positions(seq3, pos).numpy()
  np.testing.assert_allclose(got, np.stack([seq3[b, pos[b]] for b in range(2)]))


def test_scatter_update_ignores_position_zero_and_averages_duplicates():
  seq = tf.constant([[1, 2, 3, 4, 5]], tf.int32)
  updated, mask = scatter_update(seq, tf.constant([[100, 200, 7, 9]]), tf.constant([[2, 2, 0, 4]]))
  # the floor-mean id of the duplicates, position 0 untouched (`pretrain/pretrain_helpers.py:scatter_update`)
  np.testing.assert_array_equal(updated.numpy(), [[1, 2, 150, 4, 9]])
  np.testing.assert_array_equal(mask.numpy(), [[0, 0, 1, 0, 1]])
  updated, _ = scatter_update(seq, tf.constant([[100, 201]]), tf.constant([[3, 3]]))
  assert updated.numpy()[0, 3] == 150  # floor((100 + 201) / 2)


def test_scatter_update_float_divides_by_count():
  seq = tf.zeros([1, 3, 2])
  updates = tf.constant([[[1.0, 2.0], [2.0, 3.0]]])
  updated, mask = scatter_update(seq, updates, tf.constant([[1, 1]]))
  np.testing.assert_allclose(updated.numpy()[0], [[0, 0], [1.5, 2.5], [0, 0]])
  np.testing.assert_array_equal(mask.numpy(), [[0, 1, 0]])


def test_candidates_exclude_special_and_padding():
  ids = tf.constant([[CLS, 5, MASK, 6, SEP, PAD]])
  input_mask = tf.constant([[1, 1, 1, 1, 1, 0]])
  got = masking.get_candidates_mask(ids, input_mask, (CLS, SEP, MASK))
  np.testing.assert_array_equal(got.numpy(), [[False, True, False, True, False, False]])
  got = masking.get_candidates_mask(
    ids, input_mask, (CLS, SEP, MASK), disallow_from_mask=tf.constant([[0, 1, 0, 0, 0, 0]])
  )
  np.testing.assert_array_equal(got.numpy(), [[False, False, False, True, False, False]])


def _batch(lengths, seq_len, rng):
  ids = np.zeros([len(lengths), seq_len], np.int32)
  input_mask = np.zeros_like(ids)
  for b, n in enumerate(lengths):
    ids[b, :n] = rng.randint(1000, 2000, size=n)
    ids[b, 0] = CLS
    ids[b, n - 1] = SEP
    if n > 6:
      ids[b, n // 2] = SEP  # a second segment's [SEP]
    input_mask[b, :n] = 1
  return ids, input_mask


def _mask(ids, input_mask, mask_prob, n, **kw):
  return {
    k: v.numpy()
    for k, v in masking.mask(
      ids,
      input_mask,
      mask_prob=mask_prob,
      max_predictions_per_seq=n,
      cls_id=CLS,
      sep_id=SEP,
      mask_id=MASK,
      **kw,
    ).items()
  }


def test_number_of_positions_follows_the_formula_with_half_to_even_rounding():
  rng = np.random.RandomState(0)
  # 0.25 * 10 = 2.5 -> 2, 0.25 * 14 = 3.5 -> 4, 0.25 * 3 = 0.75 -> 1,
  # 0.25 * 60 = 15 -> clipped to N = 8, 0.25 * 2 = 0.5 -> 0 -> at least 1
  lengths = [10, 14, 3, 60, 2, 23]
  ids, input_mask = _batch(lengths, 64, rng)
  ids[4, :2] = [CLS, 1500]  # keep a candidate in the 2-token row
  out = _mask(ids, input_mask, 0.25, 8)
  expected = [max(1, min(8, int(np.round(0.25 * n)))) for n in lengths]  # numpy: half to even
  assert expected == [2, 4, 1, 8, 1, 6]
  np.testing.assert_array_equal(out["masked_lm_weights"].sum(1), expected)
  for b, k in enumerate(expected):
    assert np.all(out["masked_lm_weights"][b, :k] == 1)
    assert np.all(out["masked_lm_positions"][b, k:] == 0)
    assert np.all(out["masked_lm_ids"][b, k:] == 0)


def test_masking_statistics_over_many_draws():
  rng = np.random.RandomState(1)
  lengths = rng.randint(8, 48, size=3000)
  ids, input_mask = _batch(lengths, 48, rng)
  n = int((0.15 + 0.005) * 48)  # 7
  out = _mask(ids, input_mask, 0.15, n)
  weights = out["masked_lm_weights"].astype(bool)
  positions = out["masked_lm_positions"]
  masked_ids = out["input_ids"]
  np.testing.assert_array_equal(
    out["masked_lm_ids"], np.take_along_axis(ids, positions, 1) * weights
  )

  selected_tokens = np.take_along_axis(ids, positions, 1)[weights]
  assert not np.isin(selected_tokens, [CLS, SEP, MASK, PAD]).any()
  assert np.all(np.take_along_axis(input_mask, positions, 1)[weights] == 1)

  # Only selected positions change, and only ever to [MASK] (no random tokens).
  changed = masked_ids != ids
  assert np.all(masked_ids[changed] == MASK)
  selected = np.zeros_like(ids, bool)
  rows = np.repeat(np.arange(len(ids))[:, None], n, 1)
  selected[rows[weights], positions[weights]] = True
  assert not (changed & ~selected).any()

  # 85% / 15% per slot; a position drawn twice is masked if either copy is.
  singles = replaced = 0
  dup_rows = dup_expected = 0.0
  for b in range(len(ids)):
    pos = positions[b][weights[b]]
    counts = collections.Counter(pos.tolist())
    for p, c in counts.items():
      if c == 1:
        singles += 1
        replaced += masked_ids[b, p] == MASK
    k = len(pos)
    m = int(((ids[b] != CLS) & (ids[b] != SEP) & (input_mask[b] == 1)).sum())
    dup_rows += len(counts) < k
    dup_expected += 1 - np.prod([(m - i) / m for i in range(k)])
  rate = replaced / singles
  assert abs(rate - 0.85) < 0.015, rate
  # With replacement: the number of rows holding a duplicate matches the
  # birthday-problem expectation of uniform draws with replacement.
  assert dup_expected > 300
  assert abs(dup_rows - dup_expected) < 4 * np.sqrt(dup_expected), (dup_rows, dup_expected)


def test_positions_are_uniform_over_candidates():
  ids = np.array([[CLS, 11, 12, SEP, 13, 14, 15, SEP, PAD, PAD]] * 4000, np.int32)
  input_mask = (ids != PAD).astype(np.int32)
  out = _mask(ids, input_mask, 0.25, 2)
  pos = out["masked_lm_positions"][out["masked_lm_weights"] == 1]
  freq = np.bincount(pos, minlength=10) / len(pos)
  np.testing.assert_allclose(freq[[1, 2, 4, 5, 6]], 0.2, atol=0.02)
  assert freq[[0, 3, 7, 8, 9]].sum() == 0


def test_proposal_distribution_and_already_masked():
  ids = np.array([[CLS, 11, 12, 13, SEP]] * 500, np.int32)
  input_mask = np.ones_like(ids)
  proposal = np.array([[0, 0, 0, 1.0, 0]] * 500, np.float32)
  out = _mask(
    ids,
    input_mask,
    0.4,
    3,
    proposal_distribution=proposal,
    already_masked=np.array([[0, 1, 0]] * 500),
  )
  np.testing.assert_array_equal(out["masked_lm_weights"][0], [1, 0, 0])
  assert np.all(out["masked_lm_positions"][:, 0] == 3)


def test_row_keyed_masking_does_not_depend_on_the_batch_split():
  rng = np.random.RandomState(2)
  ids, input_mask = _batch(rng.randint(10, 32, size=8), 32, rng)
  step = tf.constant(5)

  def run(lo, hi):
    seeds = random_streams.step_row_seeds(123, step, lo, hi - lo)
    return _mask(
      ids[lo:hi],
      input_mask[lo:hi],
      0.15,
      5,
      position_seeds=seeds[random_streams.STREAM_MASK_POSITIONS],
      replace_seeds=seeds[random_streams.STREAM_MASK_REPLACE],
    )

  full = run(0, 8)
  halves = [run(0, 4), run(4, 8)]
  for key in full:
    np.testing.assert_array_equal(full[key], np.concatenate([h[key] for h in halves]))
  other_step = _mask(
    ids, input_mask, 0.15, 5, position_seeds=random_streams.step_row_seeds(123, 6, 0, 8)[0]
  )
  assert not np.array_equal(other_step["masked_lm_positions"], full["masked_lm_positions"])


def test_unmask_restores_the_original_ids():
  rng = np.random.RandomState(3)
  ids, input_mask = _batch(rng.randint(10, 32, size=16), 32, rng)
  out = _mask(ids, input_mask, 0.15, 5)
  restored = masking.unmask(out["input_ids"], out["masked_lm_positions"], out["masked_lm_ids"])
  np.testing.assert_array_equal(restored.numpy(), ids)


def test_mask_runs_in_a_compiled_function():
  rng = np.random.RandomState(4)
  ids, input_mask = _batch([12, 20], 24, rng)

  @tf.function(jit_compile=True)
  def f(ids, input_mask, seeds):
    return masking.mask(
      ids,
      input_mask,
      mask_prob=0.15,
      max_predictions_per_seq=3,
      cls_id=CLS,
      sep_id=SEP,
      mask_id=MASK,
      position_seeds=seeds,
      replace_seeds=seeds,
    )

  seeds = random_streams.step_row_seeds(0, 0, 0, 2)[0]
  out = f(ids, input_mask, seeds)
  # XLA's Philox kernel draws other numbers than TF's for the same seed, so
  # compare a compiled run with itself, not with eager mode.
  again = f(ids, input_mask, seeds)
  np.testing.assert_array_equal(
    out["masked_lm_positions"].numpy(), again["masked_lm_positions"].numpy()
  )
  assert out["masked_lm_positions"].shape == (2, 3)
  np.testing.assert_array_equal(out["masked_lm_weights"].numpy().sum(1), [2, 3])


def test_row_without_candidates_selects_nothing():
  ids = np.array([[CLS, SEP, PAD, PAD]], np.int32)
  out = _mask(ids, (ids != PAD).astype(np.int32), 0.15, 2)
  np.testing.assert_array_equal(out["input_ids"], ids)
  assert np.all(out["masked_lm_positions"] == 0)

"""Generator sampling and fake-data construction (`pretrain/pretrain_helpers.py:sample_from_softmax`, `run_pretraining.py:PretrainingModel._get_fake_data`)."""

import numpy as np
import tensorflow as tf

from electra_tf.pretraining import random_streams
from electra_tf.pretraining import sampling


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def test_gumbel_max_samples_follow_the_softmax():
  logits = np.array([2.0, 1.0, 0.0, -1.0, 0.5], np.float32)
  draws = 40000
  ids = sampling.sample_ids_from_softmax(np.tile(logits, [draws // 10, 10, 1])).numpy()
  freq = np.bincount(ids.ravel(), minlength=5) / draws
  expected = _softmax(logits)
  # 5 standard errors of a binomial proportion
  np.testing.assert_allclose(freq, expected, atol=5 * np.sqrt(0.25 / draws))


def test_one_hot_api_and_temperature():
  logits = np.array([[[3.0, 0.0, 0.0]]], np.float32)
  one_hot = sampling.sample_from_softmax(np.tile(logits, [2000, 1, 1])).numpy()
  assert one_hot.shape == (2000, 1, 3)
  np.testing.assert_array_equal(one_hot.sum(-1), 1.0)
  hot_rate = one_hot[..., 0].mean()
  np.testing.assert_allclose(hot_rate, _softmax(logits[0, 0])[0], atol=0.04)
  # temperature 3 flattens the distribution: p(0) = e/(e+2)
  fake = sampling.get_fake_data(
    np.full([2000, 4], 7, np.int32),
    np.ones([2000, 1], np.int32),
    np.full([2000, 1], 7),
    np.tile(logits, [2000, 1, 1]),
    temperature=3.0,
  )
  rate = (fake["sampled_tokens"].numpy() == 0).mean()
  np.testing.assert_allclose(rate, np.e / (np.e + 2), atol=0.04)


def test_disallow_correct_never_samples_the_original():
  logits = np.zeros([500, 3, 6], np.float32)
  logits[..., 2] = 20.0  # the original id dominates
  original = np.full([500, 3], 2, np.int32)
  ids = sampling.sample_ids_from_softmax(logits, disallow_ids=original).numpy()
  assert not (ids == 2).any()
  disallow = tf.one_hot(original, 6)
  assert not (sampling.sample_from_softmax(logits, disallow).numpy()[..., 2] == 1).any()
  assert (sampling.sample_ids_from_softmax(logits).numpy() == 2).all()


def test_fake_data_labels_duplicates_and_electric():
  input_ids = np.array([[101, 10, 11, 12, 102]], np.int32)
  positions = np.array([[1, 2, 3, 3, 0]], np.int32)
  masked_lm_ids = np.array([[10, 11, 12, 12, 0]], np.int32)
  # near one-hot logits: slot k samples `targets[k]`
  targets = np.array([10, 50, 20, 30, 40])
  logits = np.full([1, 5, 64], -1e4, np.float32)
  logits[0, np.arange(5), targets] = 0.0
  fake = sampling.get_fake_data(input_ids, positions, masked_lm_ids, logits)
  # slot 0 re-sampled the original -> real; slot 2 and 3 share position 3 ->
  # floor-mean 25; slot 4 aims at position 0 -> ignored
  np.testing.assert_array_equal(fake["input_ids"].numpy(), [[101, 10, 50, 25, 102]])
  np.testing.assert_array_equal(fake["is_fake_tokens"].numpy(), [[0, 0, 1, 1, 0]])
  np.testing.assert_array_equal(fake["sampled_tokens"].numpy(), [targets])
  electric = sampling.get_fake_data(
    input_ids, positions, masked_lm_ids, logits, electric_labels=True
  )
  np.testing.assert_array_equal(electric["is_fake_tokens"].numpy(), [[0, 1, 1, 1, 0]])


def test_no_gradient_flows_through_sampling():
  logits = tf.Variable(tf.zeros([1, 2, 5]))
  with tf.GradientTape() as tape:
    fake = sampling.get_fake_data(
      np.array([[1, 2, 3]]), np.array([[1, 2]]), np.array([[2, 3]]), logits
    )
    y = tf.reduce_sum(tf.cast(fake["input_ids"], tf.float32))
  assert tape.gradient(y, logits) is None


def test_sampling_stays_float32_for_half_precision_logits():
  logits = tf.cast(tf.constant([[[0.0, 8.0, 0.0]]]), tf.bfloat16)
  ids = sampling.sample_ids_from_softmax(tf.tile(logits, [100, 1, 1]))
  assert ids.dtype == tf.int32
  assert (ids.numpy() == 1).mean() > 0.95


def test_row_keyed_noise_depends_only_on_seed_step_and_global_row():
  seeds_full = random_streams.step_row_seeds(7, tf.constant(3), 0, 6)[2]
  seeds_tail = random_streams.step_row_seeds(7, tf.constant(3), 4, 2)[2]
  full = random_streams.row_uniform(seeds_full, [3, 11]).numpy()
  tail = random_streams.row_uniform(seeds_tail, [3, 11]).numpy()
  np.testing.assert_array_equal(full[4:], tail)
  assert not np.array_equal(full[0], full[1])
  streams = random_streams.step_row_seeds(7, tf.constant(3), 0, 1)
  assert len({tuple(s.numpy()[0]) for s in streams}) == len(streams)
  next_step = random_streams.row_uniform(
    random_streams.step_row_seeds(7, tf.constant(4), 0, 6)[2], [3, 11]
  )
  assert not np.array_equal(full, next_step.numpy())
  assert 0.0 <= full.min() and full.max() < 1.0

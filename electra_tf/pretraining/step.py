"""The forward pass of one pre-training step (`run_pretraining.py:PretrainingModel`): mask → generator →
sample → discriminator → losses, as the pretrainer's `objective` says.

Every loss divides this replica's numerator by the GLOBAL denominator, and
the random draws are keyed per example by (seed, step, row in the global
batch), so replicas add up to the single-device step. With gradient
accumulation `loss_denominators` computes the whole step's denominators
first, and `forward` runs on each micro-batch with them.
"""

import functools

import tensorflow as tf

from electra_tf.pretraining import losses as pretraining_losses
from electra_tf.pretraining import masking
from electra_tf.pretraining import random_streams
from electra_tf.pretraining import sampling
from electra_tf.pretraining.positions import gather_positions
from electra_tf.runtime import replicas


def _inputs_and_masking(pretrainer, features, seed, step):
  o = pretrainer.objective
  input_ids = tf.cast(features["input_ids"], tf.int32)
  input_mask = tf.cast(features["input_mask"], tf.int32)
  segment_ids = tf.cast(features["segment_ids"], tf.int32)
  batch_size = tf.shape(input_ids)[0]
  seeds = random_streams.step_row_seeds(
    seed, step, replicas.replica_first_row(batch_size), batch_size
  )
  if o.masking == "whole_word":
    mask_fn = functools.partial(
      masking.mask_whole_words, word_continuation=pretrainer.word_continuation
    )
  else:
    mask_fn = masking.mask
  masked = mask_fn(
    input_ids,
    input_mask,
    mask_prob=o.mask_prob,
    max_predictions_per_seq=o.max_predictions_per_seq,
    cls_id=o.cls_id,
    sep_id=o.sep_id,
    mask_id=o.mask_id,
    position_seeds=seeds[random_streams.STREAM_MASK_POSITIONS],
    replace_seeds=seeds[random_streams.STREAM_MASK_REPLACE],
  )
  unmasked = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
  return unmasked, masked, seeds


def loss_denominators(pretrainer, features, *, seed, step):
  """The global denominators of the step's weighted-mean losses: `mlm`
  (masked positions), `cloze` (Electric's candidates) and `disc` (real
  tokens). Call it on this replica's whole batch, outside any
  `replicas.micro_batch`, for `forward(denominators=...)`."""
  o = pretrainer.objective
  unmasked, masked, _ = _inputs_and_masking(pretrainer, features, seed, step)
  sums = {
    "mlm": tf.reduce_sum(tf.cast(masked["masked_lm_weights"], tf.float32)),
    "disc": tf.reduce_sum(tf.cast(unmasked["input_mask"], tf.float32)),
  }
  if o.generator_mode == "two_tower":
    candidates = masking.get_candidates_mask(
      unmasked["input_ids"], unmasked["input_mask"], o.special_ids
    )
    sums["cloze"] = tf.reduce_sum(tf.cast(candidates, tf.float32))
  totals = replicas.cross_replica_sum(tf.stack(list(sums.values())))
  return {name: totals[i] for i, name in enumerate(sums)}


def forward(pretrainer, features, *, training, seed, step, denominators=None, temperature=None):
  """Runs one pre-training step's forward pass.

  Args:
    pretrainer: an `ElectraPretrainer`: its `generator`, `discriminator`,
      `vocab_size` and `objective` (a `PretrainingObjective`, which says what
      the step computes).
    features: dict with int `input_ids`, `input_mask`, `segment_ids` `[B, S]`.
    training: dropout on/off.
    seed: int, the run's seed (masking and sampling).
    step: int scalar tensor; draws differ per step.
    denominators: None, or `loss_denominators` of the whole step when
      `features` is one micro-batch of it: the losses then divide by them.
    temperature: the generator's sampling temperature; None: the objective's.

  Returns:
    Dict with `loss` (this replica's share of the total loss: differentiate
    it), `total_loss`, `gen_loss`, `disc_loss` (global values for display;
    with `denominators`, this micro-batch's shares) and the per-example
    tensors `metrics.update_pretraining_metrics` needs.
  """
  p = pretrainer
  o = pretrainer.objective
  unmasked_inputs, masked, seeds = _inputs_and_masking(pretrainer, features, seed, step)
  input_ids = unmasked_inputs["input_ids"]
  input_mask = unmasked_inputs["input_mask"]
  batch_size = tf.shape(input_ids)[0]
  distributed = replicas.num_replicas() > 1 and denominators is None
  reduce_fn = replicas.cross_replica_sum if distributed else None
  denominators = denominators or {}

  positions = masked["masked_lm_positions"]
  masked_lm_ids = masked["masked_lm_ids"]
  masked_lm_weights = masked["masked_lm_weights"]
  masked_inputs = dict(unmasked_inputs, input_ids=masked["input_ids"])

  cloze_logits = None
  if o.generator_mode == "uniform":
    # All-zero logits: uniform over the whole vocabulary, loss log V.
    mlm_logits = tf.zeros([batch_size, o.max_predictions_per_seq, p.vocab_size], tf.float32)
  elif o.generator_mode == "two_tower":
    cloze_logits = p.generator(unmasked_inputs, training=training)["logits"]
    candidates = masking.get_candidates_mask(input_ids, input_mask, o.special_ids)
    cloze = pretraining_losses.cloze_output(
      cloze_logits, input_ids, candidates, reduce_fn, denominators.get("cloze")
    )
    mlm_logits = gather_positions(cloze_logits, positions)
  else:
    generator_outputs = p.generator(masked_inputs, masked_lm_positions=positions, training=training)
    mlm_logits = generator_outputs["mlm_logits"]
  mlm = pretraining_losses.softmax_output(
    mlm_logits, masked_lm_ids, masked_lm_weights, reduce_fn, denominators.get("mlm")
  )
  gen_loss = cloze["loss"] if o.generator_mode == "two_tower" else mlm["loss"]

  loss = o.gen_weight * gen_loss
  outputs = {
    "masked_lm_ids": masked_lm_ids,
    "masked_lm_preds": mlm["preds"],
    "masked_lm_weights": masked_lm_weights,
    "mlm_per_slot_loss": mlm["per_example_loss"],
    "input_mask": input_mask,
  }
  disc_loss = None
  if o.has_discriminator:
    fake = sampling.get_fake_data(
      input_ids,
      positions,
      masked_lm_ids,
      mlm["logits"],
      temperature=o.temperature if temperature is None else temperature,
      disallow_correct=o.disallow_correct,
      electric_labels=o.electric_objective,
      row_seeds=seeds[random_streams.STREAM_GENERATOR_SAMPLE],
    )
    fake_inputs = dict(unmasked_inputs, input_ids=fake["input_ids"])
    disc_logits = p.discriminator(fake_inputs, training=training)["logits"]
    if o.electric_objective:
      disc_logits = tf.cast(disc_logits, tf.float32) + pretraining_losses.electric_logit_adjustment(
        cloze_logits, fake["input_ids"], o.mask_prob
      )
    disc = pretraining_losses.discriminator_output(
      disc_logits, fake["is_fake_tokens"], input_mask, reduce_fn, denominators.get("disc")
    )
    disc_loss = disc["loss"]
    loss += o.disc_weight * disc_loss
    outputs.update(
      {
        "sampled_tokens": fake["sampled_tokens"],
        "disc_labels": disc["labels"],
        "disc_preds": disc["preds"],
        "disc_probs": disc["probs"],
        "disc_per_example_loss": disc["per_example_loss"],
      }
    )

  global_sum = replicas.cross_replica_sum if distributed else (lambda x: x)
  outputs["loss"] = loss
  outputs["total_loss"] = global_sum(loss)
  outputs["gen_loss"] = global_sum(gen_loss)
  if disc_loss is not None:
    outputs["disc_loss"] = global_sum(disc_loss)
  return outputs

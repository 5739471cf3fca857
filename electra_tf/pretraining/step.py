"""The forward pass of one pre-training step (`run_pretraining.py:PretrainingModel`): mask → generator →
sample → discriminator → losses. `ElectraPretrainer.train_step/test_step`
call `forward` and differentiate its `loss`. Every setting of what is
computed (masking rate, loss weights, sampling, generator mode, special ids)
comes from the pretrainer's `objective` (`PretrainingObjective`).

Distribution: every loss divides this replica's numerator by the GLOBAL
denominator (all-reduced), so the replicas' losses — and their gradients,
which the optimizer sums — add up to the single-device values for the same
global batch. The random draws are keyed per example by (seed, step, row
in the global batch), see `electra_tf.pretraining.random_streams`, so
masks and samples do not depend on how the batch is split either.
"""

import tensorflow as tf

from electra_tf.layers import layer_utils
from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
from electra_tf.optimization.schedule import ElectraLearningRateSchedule
from electra_tf.pretraining import losses as pretraining_losses
from electra_tf.pretraining import masking
from electra_tf.pretraining import random_streams
from electra_tf.pretraining import sampling
from electra_tf.pretraining.positions import gather_positions


def num_replicas():
  ctx = tf.distribute.get_replica_context()
  return 1 if ctx is None else ctx.num_replicas_in_sync


def cross_replica_sum(value):
  """Sum of a tensor over the replicas in sync (identity on one replica)."""
  ctx = tf.distribute.get_replica_context()
  if ctx is None or ctx.num_replicas_in_sync == 1:
    return value
  return ctx.all_reduce(tf.distribute.ReduceOp.SUM, value)


def replica_first_row(local_batch_size):
  """Global-batch row of this replica's first example, as int32 (the
  dropout masks use the same row, `layer_utils.replica_first_example`)."""
  return tf.cast(layer_utils.replica_first_example(local_batch_size), tf.int32)


def forward(pretrainer, features, *, training, seed, step):
  """Runs one pre-training step's forward pass.

  Args:
    pretrainer: an `ElectraPretrainer`: its `generator`, `discriminator`,
      `vocab_size` and `objective` (a `PretrainingObjective`, which says what
      the step computes).
    features: dict with int `input_ids`, `input_mask`, `segment_ids` `[B, S]`.
    training: dropout on/off.
    seed: int, the run's seed (masking and sampling).
    step: int scalar tensor; draws differ per step.

  Returns:
    Dict with `loss` (this replica's share of the total loss: differentiate
    it), `total_loss`, `gen_loss`, `disc_loss` (global values for display),
    and the per-example tensors the metrics need (`masked_lm_ids`,
    `masked_lm_preds`, `masked_lm_weights`, `mlm_per_slot_loss`,
    `sampled_tokens`, `disc_labels`, `disc_preds`, `disc_probs`,
    `disc_per_example_loss`, `input_mask`).
  """
  p = pretrainer
  o = pretrainer.objective
  input_ids = tf.cast(features["input_ids"], tf.int32)
  input_mask = tf.cast(features["input_mask"], tf.int32)
  segment_ids = tf.cast(features["segment_ids"], tf.int32)
  batch_size = tf.shape(input_ids)[0]
  seeds = random_streams.step_row_seeds(seed, step, replica_first_row(batch_size), batch_size)
  distributed = num_replicas() > 1
  reduce_fn = cross_replica_sum if distributed else None

  masked = masking.mask(
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
  positions = masked["masked_lm_positions"]
  masked_lm_ids = masked["masked_lm_ids"]
  masked_lm_weights = masked["masked_lm_weights"]
  unmasked_inputs = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
  masked_inputs = dict(unmasked_inputs, input_ids=masked["input_ids"])

  cloze_logits = None
  if o.generator_mode == "uniform":
    # All-zero logits: uniform over the whole vocabulary, loss log V.
    mlm_logits = tf.zeros([batch_size, o.max_predictions_per_seq, p.vocab_size], tf.float32)
    mlm = pretraining_losses.softmax_output(mlm_logits, masked_lm_ids, masked_lm_weights, reduce_fn)
    gen_loss = mlm["loss"]
  elif o.generator_mode == "two_tower":
    cloze_logits = p.generator(unmasked_inputs, training=training)["logits"]
    candidates = masking.get_candidates_mask(input_ids, input_mask, o.special_ids)
    cloze = pretraining_losses.cloze_output(cloze_logits, input_ids, candidates, reduce_fn)
    mlm = pretraining_losses.softmax_output(
      gather_positions(cloze_logits, positions), masked_lm_ids, masked_lm_weights, reduce_fn
    )
    gen_loss = cloze["loss"]
  else:
    generator_outputs = p.generator(masked_inputs, masked_lm_positions=positions, training=training)
    mlm = pretraining_losses.softmax_output(
      generator_outputs["mlm_logits"], masked_lm_ids, masked_lm_weights, reduce_fn
    )
    gen_loss = mlm["loss"]

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
      temperature=o.temperature,
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
      disc_logits, fake["is_fake_tokens"], input_mask, reduce_fn
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

  global_sum = cross_replica_sum if distributed else (lambda x: x)
  outputs["loss"] = loss
  outputs["total_loss"] = global_sum(loss)
  outputs["gen_loss"] = global_sum(gen_loss)
  if disc_loss is not None:
    outputs["disc_loss"] = global_sum(disc_loss)
  return outputs


def make_optimizer(
  pretrainer=None,
  *,
  learning_rate=5e-4,
  num_train_steps=1000000,
  num_warmup_steps=10000,
  lr_decay_power=1.0,
  weight_decay_rate=0.01,
):
  """The original's pre-training optimizer (`model/optimization.py`): `AdamWeightDecay` with
  the warmup × polynomial-decay schedule, decay exclusions decided on the
  official variable names of `pretrainer` (if given)."""
  variable_names = None
  if pretrainer is not None:
    # Imported here: checkpoint_names imports the models, which import this.
    from electra_tf.checkpoints import names as checkpoint_names  # pylint: disable=g-import-not-at-top

    variable_names = checkpoint_names.keras_path_map(checkpoint_names.official_name_map(pretrainer))
  schedule = ElectraLearningRateSchedule(
    learning_rate, num_train_steps, warmup_steps=num_warmup_steps, lr_decay_power=lr_decay_power
  )
  return AdamWeightDecay(
    learning_rate=schedule, weight_decay_rate=weight_decay_rate, variable_names=variable_names
  )


def make_optimizer_from_config(config, pretrainer=None):
  """`make_optimizer` with a `PretrainingConfig`'s hparams."""
  return make_optimizer(
    pretrainer,
    learning_rate=config.learning_rate,
    num_train_steps=config.num_train_steps,
    num_warmup_steps=config.num_warmup_steps,
    lr_decay_power=config.lr_decay_power,
    weight_decay_rate=config.weight_decay_rate,
  )


def agree_on_finite_gradients(grads):
  """Makes every replica see non-finite gradients if any replica has them.

  `LossScaleOptimizer` decides per replica (or from replica 0) whether to
  skip a step, before this package's optimizer sums the gradients; replicas
  disagreeing would apply an inf/NaN sum or stall. Returns dense gradients.
  """
  dense = [None if g is None else tf.convert_to_tensor(g) for g in grads]
  if num_replicas() == 1:
    return dense
  local_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in dense if g is not None])
  num_bad = cross_replica_sum(1.0 - tf.cast(local_ok, tf.float32))
  poison = tf.where(num_bad > 0, float("nan"), 0.0)
  return [None if g is None else g + tf.cast(poison, g.dtype) for g in dense]

"""The executed-op count (bench.graph_ops) of the discriminator's forward and
of the pre-training step: what one more transformer layer adds, so that a
dense layer fed a 3-D activation (a tensordot: Shape, GatherV2, Prod, Pack,
ConcatV2 and two Reshapes per call) shows up as a regression."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bench import graph_ops
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer

# Ops that compute shapes at run time; splitting into heads needs one Pack
# per call of the encoder (Grappler merges the layers' identical ones).
SHAPE_ARITHMETIC = ("Shape", "GatherV2", "Prod", "StridedSlice", "Pack", "Size")


def _pretrainer(num_layers, **hparams):
  keras.utils.set_random_seed(0)
  config = PretrainingConfig(
    "ops",
    "/nonexistent",
    vocab_size=200,
    max_seq_length=16,
    train_batch_size=4,
    model_hparam_overrides={
      "hidden_size": 32,
      "num_hidden_layers": num_layers,
      "num_attention_heads": 2,
      "intermediate_size": 64,
    },
    **hparams,
  )
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  return model, config


def _inputs():
  ids = np.arange(4 * 16, dtype="int32").reshape(4, 16) % 150 + 5
  return {
    "input_ids": tf.constant(ids),
    "input_mask": tf.ones_like(ids),
    "segment_ids": tf.zeros_like(ids),
  }


# Shapes unknown when traced, as in the serving signatures: static shapes
# would let Grappler fold away the very shape arithmetic under test.
SIGNATURE = {
  key: tf.TensorSpec([None, None], tf.int32) for key in ("input_ids", "input_mask", "segment_ids")
}


def _forward_ops(num_layers):
  model, _ = _pretrainer(num_layers)

  def forward():  # what the serving module reads of the discriminator
    return tf.function(
      input_signature=[SIGNATURE],
    )(
      lambda features: {
        k: v
        for k, v in model.discriminator(features, training=False).items()
        if k in ("logits", "sequence_output", "pooled_output")
      }
    )

  return graph_ops.op_types(lambda: forward()(_inputs()), warm_up=lambda: forward()(_inputs()))


def _step_ops(num_layers):
  model, config = _pretrainer(num_layers)
  model.compile(pretraining_config=config)
  model.optimizer.build(model.trainable_variables)

  def step():
    return tf.function(model.train_step, input_signature=[SIGNATURE])

  return graph_ops.op_types(lambda: step()(_inputs()), warm_up=lambda: step()(_inputs()))


def _per_layer(counts_one, counts_three):
  """What each of two more layers adds, by op type."""
  added = counts_three.copy()
  added.subtract(counts_one)
  return {op: n / 2 for op, n in added.items() if n}


def test_a_layer_of_the_forward_adds_no_shape_arithmetic_and_few_ops():
  per_layer = _per_layer(_forward_ops(1), _forward_ops(3))
  shape_ops = {op: n for op, n in per_layer.items() if op in SHAPE_ARITHMETIC}
  assert not shape_ops, f"each layer adds shape arithmetic: {shape_ops}"
  executed = sum(n for op, n in per_layer.items() if op not in graph_ops.NOT_EXECUTED)
  # 16 variable reads, 7 matmuls, two nine-op LayerNorms, GELU, softmax,
  # one reshape/transpose/unstack into heads and one transpose/reshape out.
  assert executed <= 58, f"a layer executes {executed} ops: {per_layer}"
  assert per_layer.get("Reshape", 0) == 2, per_layer  # into heads and out, nothing else


@pytest.mark.slow
def test_a_layer_of_the_training_step_adds_no_tensordot():
  per_layer = _per_layer(_step_ops(1), _step_ops(3))
  tensordot = {op: n for op, n in per_layer.items() if op in ("GatherV2", "Prod")}
  assert not tensordot, f"each layer adds a tensordot's shape arithmetic: {tensordot}"


@pytest.mark.parametrize("name", ["Const", "_Arg", "_Retval", "NoOp"])
def test_summary_leaves_out_what_does_not_execute(name):
  import collections

  counts = collections.Counter({"MatMul": 2, "Reshape": 1, name: 5})
  row = graph_ops.summary(counts)
  assert row["executed"] == 3
  assert row["matmuls"] == 2 and row["shape_ops"] == 1

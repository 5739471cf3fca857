"""Executed ops per call of the graphs TensorFlow runs on every request and
every step: the serving signatures of an ELECTRA-Small discriminator export
(loaded back from disk, as TF Serving runs it), the discriminator's forward,
the pre-training step and the fine-tuning step (MNLI's classification head).

TensorFlow pays a fixed cost for each executed op (a kernel dispatch on CPU,
a launch on a GPU), so on a short request or a small model the op count, not
the arithmetic, sets the time. Counted from the graphs TensorFlow actually
executes (after Grappler), recorded with run metadata on the first call:

- `executed`: every node but `Const`, `_Arg`, `_Retval` and `NoOp` (the
  kernels that run; an XLA cluster counts as one);
- `shape_ops`: the shape arithmetic among them (`Shape`, `Reshape`,
  `GatherV2`, `Prod`, `ConcatV2`, `Pack`, `StridedSlice`, ...), the part that
  grows with the layer count when a dense layer sees a 3-D input;
- `matmuls`: `MatMul`, `_FusedMatMul` and `BatchMatMulV2`;
- `nodes_not_const`: every node but `Const`, arguments included.

  python -m bench.graph_ops [--quick] [--json out.json]

`--quick` counts a two-layer model (the test's size); the full run counts
ELECTRA-Small (12 layers, H 256, batch 8 × 128 for the training steps).
"""

import collections
import os
import tempfile

from bench.common import call_in_child
from bench.common import fresh_keras_session
from bench.common import main

NOT_EXECUTED = ("Const", "_Arg", "_Retval", "NoOp")
SHAPE_OPS = (
  "Shape",
  "Reshape",
  "GatherV2",
  "Prod",
  "ConcatV2",
  "Pack",
  "StridedSlice",
  "Size",
  "Fill",
  "BroadcastTo",
)
MATMULS = ("MatMul", "_FusedMatMul", "BatchMatMulV2")
MODULE = "bench.graph_ops"
VOCAB = 30522
SEQ = 128
TRAIN_BATCH = 8
SIGNATURES = ("serving_default", "serve_ids", "serve_examples")


def op_types(fn, warm_up=None):
  """Counter of the op types TensorFlow executed for `fn()`, from the
  optimised partition graphs of every function the call ran.

  Graphs are recorded when a function is first instantiated, so `fn` must
  call a function that has not run before. A first call that creates
  variables also runs their initialisers: `warm_up()` runs first, unrecorded,
  to create them (with another instance of the same `tf.function`).
  """
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top

  if warm_up is not None:
    warm_up()
  context.enable_run_metadata()
  try:
    context.export_run_metadata()  # drops what eager ops left in the buffer before
    fn()
    metadata = context.export_run_metadata()
  finally:
    context.disable_run_metadata()
  counts = collections.Counter()
  for function_graph in metadata.function_graphs:
    for partition in function_graph.partition_graphs:
      counts.update(node.op for node in partition.node)
  if not counts:
    raise RuntimeError("no executed graph was recorded: was the function called before?")
  return counts


def summary(counts):
  """The row's counts from `op_types`."""
  executed = sum(n for op, n in counts.items() if op not in NOT_EXECUTED)
  return {
    "executed": executed,
    "shape_ops": sum(counts[op] for op in SHAPE_OPS),
    "matmuls": sum(counts[op] for op in MATMULS),
    "read_variable_ops": counts["ReadVariableOp"],
    "nodes_not_const": sum(counts.values()) - counts["Const"],
  }


def _vocab_file(directory, size):
  path = os.path.join(directory, "vocab.txt")
  special = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  words = [f"w{i}" for i in range(size - len(special))]
  with open(path, "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t in special + words))
  return path


def _size(quick):
  from bench.reference_rows import TINY_TOWERS  # pylint: disable=g-import-not-at-top

  return dict(TINY_TOWERS) if quick else {}


def serving_and_forward(quick=False):
  """`{"rows": [...]}` for the three serving signatures (an export loaded from disk) and
  the discriminator's forward (`training=False`, a 12-token request)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from electra_tf.configs.pretraining import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.models.electra_pretrainer import ElectraPretrainer  # pylint: disable=g-import-not-at-top
  from electra_tf.serving import export as export_lib  # pylint: disable=g-import-not-at-top
  from electra_tf.serving import loading  # pylint: disable=g-import-not-at-top

  fresh_keras_session("float32")
  vocab_size = 2000 if quick else VOCAB
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    vocab_file = _vocab_file(tmp, vocab_size)
    config = PretrainingConfig(
      "ops", tmp, model_size="small", vocab_size=vocab_size, max_seq_length=SEQ, **_size(quick)
    )
    model = ElectraPretrainer.from_pretraining_config(config)
    model.build()
    path = export_lib.export(
      model, "discriminator", vocab_file, os.path.join(tmp, "export"), max_seq_length=SEQ
    )
    ids = np.zeros((1, SEQ), "int32")
    ids[0, :12] = [101] + [1000 + i for i in range(10)] + [102]
    inputs = {
      "input_ids": tf.constant(ids),
      "input_mask": tf.constant((ids > 0).astype("int32")),
      "segment_ids": tf.zeros_like(tf.constant(ids)),
    }
    example = tf.train.Example()
    for key, value in inputs.items():
      example.features.feature[key].int64_list.value.extend(value.numpy()[0].tolist())
    calls = {
      "serving_default": dict(text_a=tf.constant(["w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"]), text_b=tf.constant([""])),
      "serve_ids": inputs,
      "serve_examples": dict(examples=tf.constant([example.SerializeToString()])),
    }  # fmt: skip
    loaded = loading.load(path)
    for name in SIGNATURES:
      signature = loaded.signatures[name]
      counts = op_types(lambda: signature(**calls[name]))
      rows.append({"name": f"signature {name} (1 request of 12 tokens)", **summary(counts)})

    def forward():
      return tf.function(lambda features: model.discriminator(features, training=False))

    counts = op_types(lambda: forward()(inputs), warm_up=lambda: forward()(inputs))
    rows.append({"name": "discriminator forward (training=False)", **summary(counts)})
  return {"rows": rows}


def pretraining_step(quick=False):
  """`{"rows": [row]}` for one `ElectraPretrainer.train_step` (fp32, fused kernels)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bench.bench_pretraining_step import _batch  # pylint: disable=g-import-not-at-top
  from bench.bench_pretraining_step import _pretrainer  # pylint: disable=g-import-not-at-top

  vocab_size = 2000 if quick else VOCAB
  model = _pretrainer(vocab_size, batch=TRAIN_BATCH, tiny=quick)
  model.optimizer.build(model.trainable_variables)
  batch = {k: tf.constant(v) for k, v in _batch(vocab_size, TRAIN_BATCH, SEQ).items()}
  step = tf.function(model.train_step)
  counts = op_types(lambda: step(batch))
  return {
    "rows": [{"name": f"pre-training step (batch {TRAIN_BATCH} x {SEQ}, fp32)", **summary(counts)}]
  }


def finetuning_step(quick=False):
  """`{"rows": [row]}` for one `FinetuningModel.train_step` of MNLI's head (fp32)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bench.bench_finetuning import _dataset  # pylint: disable=g-import-not-at-top
  from bench.bench_finetuning import _model  # pylint: disable=g-import-not-at-top
  from bench.bench_finetuning import _optimizer  # pylint: disable=g-import-not-at-top

  vocab_size = 2000 if quick else VOCAB
  config, model = _model("mnli", "float32", SEQ, vocab_size, tiny=quick)
  model.compile(optimizer=_optimizer(config, model, 10))
  model.optimizer.build(model.trainable_variables)
  features = next(iter(_dataset("mnli", TRAIN_BATCH, SEQ, vocab_size)))
  counts = op_types(
    lambda: tf.function(model.train_step)(features),
    warm_up=lambda: tf.function(model.train_step)(features),
  )
  name = f"fine-tuning step, MNLI (batch {TRAIN_BATCH} x {SEQ}, fp32)"
  return {"rows": [{"name": name, **summary(counts)}]}


def run(quick=False):
  size = "two-layer tiny model" if quick else "ELECTRA-Small"
  rows = []
  for part in ("serving_and_forward", "pretraining_step", "finetuning_step"):
    # A fresh process each: graphs are recorded only when first instantiated.
    rows += call_in_child(MODULE, part, quick=quick)["rows"]
  for row in rows:
    row["model"] = size
  return rows


if __name__ == "__main__":
  main(
    run,
    "Executed ops per call: serving signatures, discriminator forward, pre-training and fine-tuning steps",
  )

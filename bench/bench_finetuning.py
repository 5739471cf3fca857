"""Throughput of an ELECTRA-Small fine-tuning step, MNLI-sized batches
(32 × 128, 3 classes): the `model.fit` path that `run_finetuning` uses now
(`FinetuningModel.train_step`) against the hand-written `GradientTape` loop
it used before, reproduced here as the baseline (a `tf.function` step that
densifies the embedding gradients and applies `AdamWeightDecay`, called
once per batch with the loss read back to Python for the progress line).
Both in fp32 and `mixed_bfloat16`, in one run.

  python -m bench.bench_finetuning [--quick] [--json out.json]
"""

import time

from bench.common import main

BATCH = 32
SEQ = 128
VOCAB = 30522
PRECISIONS = ("float32", "mixed_bfloat16")


def _model(precision, seq, vocab):
  import keras  # pylint: disable=g-import-not-at-top

  from electra_tf.configs.finetuning import FinetuningConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.classification.head import ClassificationHead  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.model import FinetuningModel  # pylint: disable=g-import-not-at-top

  keras.utils.clear_session()
  keras.mixed_precision.set_global_policy(precision)
  config = FinetuningConfig(
    "bench",
    "/nonexistent",
    model_size="small",
    vocab_size=vocab,
    task_names=["mnli"],
    max_seq_length=seq,
  )
  head = ClassificationHead("mnli", 3, name="task_specific_mnli")
  return config, FinetuningModel.from_finetuning_config(config, [head])


def _dataset(batch, seq, vocab):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(0)
  features = {
    "input_ids": rng.integers(1, vocab, size=(batch, seq)).astype("int32"),
    "input_mask": np.ones((batch, seq), "int32"),
    "segment_ids": np.concatenate(
      [np.zeros((batch, seq // 2)), np.ones((batch, seq - seq // 2))], 1
    ).astype("int32"),
    "task_id": np.zeros(batch, "int32"),
    "mnli_eid": np.arange(batch, dtype="int32"),
    "mnli_label_ids": rng.integers(0, 3, size=batch).astype("int32"),
  }
  return tf.data.Dataset.from_tensors(features).repeat().prefetch(2)


def _optimizer(config, model, steps):
  from electra_tf.finetune import optimizer as finetuning_optimizer  # pylint: disable=g-import-not-at-top

  return finetuning_optimizer.make_optimizer_from_config(config, model, steps)


def _time_fit(precision, batch, seq, vocab, steps, repeats):
  config, model = _model(precision, seq, vocab)
  model.compile(optimizer=_optimizer(config, model, 100000))
  dataset = _dataset(batch, seq, vocab)
  model.fit(dataset, epochs=1, steps_per_epoch=2, verbose=0)  # trace + warm up
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
    best = min(best, time.perf_counter() - start)
  return best / steps


def _time_tape_loop(precision, batch, seq, vocab, steps, repeats):
  """The previous `run_finetuning` loop (no loss scaling: it ran fp32 only)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  config, model = _model(precision, seq, vocab)
  optimizer = _optimizer(config, model, 100000)
  optimizer.build(model.trainable_variables)

  @tf.function
  def train_step(features):
    with tf.GradientTape() as tape:
      loss = model(features, training=True)["loss"]
    grads = tape.gradient(loss, model.trainable_variables)
    grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
    optimizer.apply(grads, model.trainable_variables)
    return loss

  iterator = iter(_dataset(batch, seq, vocab))
  for _ in range(2):
    float(train_step(next(iterator)))
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(steps):
      float(train_step(next(iterator)))
    best = min(best, time.perf_counter() - start)
  return best / steps


def run(quick=False):
  batch, seq, vocab = (4, 16, 1000) if quick else (BATCH, SEQ, VOCAB)
  steps, repeats = (2, 1) if quick else (10, 3)
  rows = []
  for precision in PRECISIONS:
    per_step = {
      "tape_loop": _time_tape_loop(precision, batch, seq, vocab, steps, repeats),
      "fit": _time_fit(precision, batch, seq, vocab, steps, repeats),
    }
    for path, seconds in per_step.items():
      rows.append(
        {
          "name": f"{path} {precision} b{batch} s{seq}",
          "sequences_per_s": round(batch / seconds, 1),
          "ms_per_step": round(1000 * seconds, 1),
          "fit_vs_tape_loop": round(per_step["tape_loop"] / per_step["fit"], 3),
        }
      )
  return rows


if __name__ == "__main__":
  main(
    run,
    f"ELECTRA-Small fine-tuning step, batch {BATCH} × seq {SEQ}: fit vs the previous "
    "GradientTape loop, fp32 and mixed_bfloat16",
  )

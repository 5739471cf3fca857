"""Throughput of an ELECTRA-Small fine-tuning step (batch 32 × 128, vocab
30,522) in examples/s, fp32 and `mixed_bfloat16`, for a GLUE-style
classification task (MNLI, 3 classes) and SQuAD, against the HF
transformers/PyTorch peer's fine-tuning step on the same shapes, in one run.

Rows:

- `fit <task> <precision>`: the `model.fit` path that `run_finetuning` uses
  (`FinetuningModel.train_step`) with the head the task builds
  (`task_builder.get_task(...).create_head()`): MNLI's `ClassificationHead`;
  SQuAD's `QAHead` (joint start→end prediction with teacher forcing, beam 20,
  answerable classifier) fed the features the SQuAD task writes
  (`squad_start_positions`, `squad_end_positions`, `squad_is_impossible`,
  `squad_eid`), spans inside the second segment.
- `tape_loop mnli <precision>`: the hand-written `GradientTape` loop that
  `run_finetuning` used before, reproduced here as the baseline (a
  `tf.function` step that densifies the embedding gradients and applies
  `AdamWeightDecay`, called once per batch with the loss read back to Python
  for the progress line). `fit_vs_tape_loop` on the MNLI rows is the `fit`
  step's speed over this one's (issue #18).
- `hf_transformers_pytorch_finetune_<task>`: the peer,
  `bench.bench_hf_peer.finetuning_examples_per_s` (`ElectraForSequenceClassification`
  with 3 labels for MNLI, `ElectraForQuestionAnswering` for SQuAD; AdamW,
  clipping at 1.0, fp32). `vs_hf_peer` on each electra_tf row is its
  examples/s over the peer's for the same task. Without torch or
  transformers the peer rows are skipped with a printed reason.

- `matmuls_only <task> <dtype>`: the fp32 step's MatMuls and BatchMatMuls
  replayed alone in that dtype (`bench_pretraining_step.replay_matmuls`),
  the ceiling of the step whose matmuls run in it; every electra_tf row's
  `fraction_of_matmul_ceiling` is its step time over its precision's one.

Every row runs in its own process (`bench.common.call_in_child`) and carries
that process's `peak_rss_mb`, and the machine's fp32 (and, where native,
bf16) matmul rate and memory bandwidth measured in the same run
(`bench.bench_pretraining_step.machine_rates`). The electra_tf rows are the
fastest of 3 consecutive windows of 10 steps after 2 warm-up steps, all in
one `fit` call (one loop for the baseline), timed from the steps' end times
as `run_finetuning` runs them; the peer's the mean of 5 steps after 2. A
quick run uses batch 4 × 32, vocab 2,000, for every row including the peer's.

- `fit squad ELECTRA-Base 384 x batch 32 mixed_float16 xla=on`: NVIDIA's
  published SQuAD row (`bench.reference_rows`), on a GPU only (a `--quick`
  run on a CPU runs it at a smoke size), naming the GPU model next to the
  published figure.

One shape instead of all rows (the SQuAD `fit` step, on a GPU in
`mixed_float16` with XLA, on a CPU in float32; `--precision` picks another policy):

  python -m bench.bench_finetuning --model-size base --seq-length 384 --batch 32

  python -m bench.bench_finetuning [--quick] [--json out.json]
"""

import importlib.util
import sys
import time

from bench.bench_pretraining_step import MATMUL_DTYPES
from bench.bench_pretraining_step import replay_matmuls
from bench.common import call_in_child
from bench.common import fresh_keras_session
from bench.common import main
from bench.reference_rows import FINETUNING_ROWS
from bench.reference_rows import TINY_TOWERS
from bench.reference_rows import describe_shape
from bench.reference_rows import gpu_model
from bench.reference_rows import rows_to_run

BATCH = 32
SEQ = 128
VOCAB = 30522
PRECISIONS = ("float32", "mixed_bfloat16")
# electra_tf task → the peer's task of the same shapes and head kind
PEER_TASKS = {"mnli": "classification", "squad": "squad"}
MODULE = "bench.bench_finetuning"
WARMUP_STEPS = 2


def _model(task_name, precision, seq, vocab, model_size="small", tiny=False):
  from electra_tf.configs.finetuning import FinetuningConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune import task_builder  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.model import FinetuningModel  # pylint: disable=g-import-not-at-top

  fresh_keras_session(precision)
  config = FinetuningConfig(
    "bench",
    "/nonexistent",
    model_size=model_size,
    vocab_size=vocab,
    task_names=[task_name],
    max_seq_length=seq,
    **(TINY_TOWERS if tiny else {}),
  )
  head = task_builder.get_task(config, task_name, tokenizer=None).create_head()
  return config, FinetuningModel.from_finetuning_config(config, [head])


def _task_features(task_name, rng, batch, seq):
  """The label features the task's featuriser writes, on random values."""
  import numpy as np  # pylint: disable=g-import-not-at-top

  features = {f"{task_name}_eid": np.arange(batch, dtype="int32")}
  if task_name == "mnli":
    features["mnli_label_ids"] = rng.integers(0, 3, size=batch).astype("int32")
  elif task_name == "squad":
    # answers inside the second segment (the context), at most 8 tokens
    start = rng.integers(seq // 2 + 1, seq - 1, size=batch)
    end = np.minimum(start + rng.integers(0, 8, size=batch), seq - 2)
    features["squad_start_positions"] = start.astype("int32")
    features["squad_end_positions"] = end.astype("int32")
    features["squad_is_impossible"] = (rng.random(batch) < 0.3).astype("int32")
  else:
    raise ValueError(f"task {task_name!r}; expected one of {sorted(PEER_TASKS)}")
  return features


def _dataset(task_name, batch, seq, vocab):
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
    **_task_features(task_name, rng, batch, seq),
  }
  return tf.data.Dataset.from_tensors(features).repeat().prefetch(2)


def _optimizer(config, model, steps):
  from electra_tf.optimization import factory as optimizer_factory  # pylint: disable=g-import-not-at-top

  return optimizer_factory.finetuning_optimizer_from_config(config, model, steps)


def _best_window(step_ends, steps, repeats):
  """Seconds per step of the fastest of `repeats` consecutive windows of
  `steps` steps; `step_ends` are the perf_counter times at which each step
  ended, warm-up steps first (the window before the first measured step
  starts at the end of the last warm-up step)."""
  ends = step_ends[-(steps * repeats + 1) :]
  return min((ends[(i + 1) * steps] - ends[i * steps]) / steps for i in range(repeats))


def _time_fit(
  task_name,
  precision,
  batch,
  seq,
  vocab,
  steps,
  repeats,
  model_size="small",
  tiny=False,
  jit_compile=False,
):
  """Steps inside one `fit` call, as `run_finetuning` trains: each `fit`
  call also costs a second or two on its return (tearing down the epoch's
  iterator and functions), which a run pays once, so timing several short
  `fit` calls would charge it to the steps."""
  config, model = _model(task_name, precision, seq, vocab, model_size, tiny)
  model.compile(optimizer=_optimizer(config, model, 100000), jit_compile=jit_compile)
  import keras  # pylint: disable=g-import-not-at-top

  step_ends = []
  model.fit(
    _dataset(task_name, batch, seq, vocab),
    epochs=1,
    steps_per_epoch=WARMUP_STEPS + steps * repeats,
    verbose=0,
    callbacks=[
      keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: step_ends.append(time.perf_counter())
      )
    ],
  )
  return _best_window(step_ends, steps, repeats)


def _time_tape_loop(task_name, precision, batch, seq, vocab, steps, repeats):
  """The previous `run_finetuning` loop (no loss scaling: it ran fp32 only)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  config, model = _model(task_name, precision, seq, vocab)
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

  iterator = iter(_dataset(task_name, batch, seq, vocab))
  step_ends = []
  for _ in range(WARMUP_STEPS + steps * repeats):
    float(train_step(next(iterator)))
    step_ends.append(time.perf_counter())
  return _best_window(step_ends, steps, repeats)


_PATHS = {"fit": _time_fit, "tape_loop": _time_tape_loop}


def matmuls_only(task_name, dtype, batch, seq, vocab_size, repeats=3):
  """The fp32 fine-tuning step's matmuls replayed alone in `dtype`
  (`bench_pretraining_step.replay_matmuls`): the ceiling of the step whose
  matmuls run in that dtype; for `call_in_child`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  config, model = _model(task_name, "float32", seq, vocab_size)
  model.compile(optimizer=_optimizer(config, model, 100000))
  model.optimizer.build(model.trainable_variables)
  features = next(iter(_dataset(task_name, batch, seq, vocab_size)))
  graph = tf.function(model.train_step).get_concrete_function(features).graph
  return replay_matmuls(graph, dtype, repeats)


def measure(path, task_name, precision, batch, seq, vocab_size, steps, repeats, **shape):
  """Seconds per step of `path` ("fit" or "tape_loop"); for `call_in_child`.
  `shape`: `model_size`, `tiny` and `jit_compile` of the "fit" path."""
  seconds = _PATHS[path](task_name, precision, batch, seq, vocab_size, steps, repeats, **shape)
  return {"seconds_per_step": seconds, "gpu_model": gpu_model()}


def _shaped_row(row, shape, steps, repeats, machine, vocab=VOCAB):
  """One `fit` row at `shape` (`bench.reference_rows`), in its own process."""
  result = call_in_child(
    MODULE,
    "measure",
    path="fit",
    task_name=row["task_name"],
    precision=row["precision"],
    batch=shape["batch"],
    seq=shape["seq"],
    vocab_size=vocab,
    steps=steps,
    repeats=repeats,
    model_size=shape["model_size"],
    tiny=shape["tiny"],
    jit_compile=row["jit_compile"],
  )
  seconds = result["seconds_per_step"]
  return {
    "name": f"fit {row['task_name']} {describe_shape(row, shape)} v{vocab}",
    "examples_per_s": round(shape["batch"] / seconds, 2),
    "ms_per_step": round(1000 * seconds, 1),
    "gpu_model": result["gpu_model"] or "none (CPU)",
    "published": row["published"],
    **machine,
    "peak_rss_mb": result["peak_rss_mb"],
  }


def run_shape(model_size, seq_length, batch, quick=False, precision=None):
  """The SQuAD `fit` step at one shape given on the command line: on a GPU in
  `mixed_float16` with XLA (NVIDIA's setting), on a CPU in float32, unless `precision` names another policy."""
  rates = call_in_child("bench.bench_pretraining_step", "machine_rates")
  machine = {k: v for k, v in rates.items() if k.endswith("_per_s")}
  gpu = rates["gpus"] > 0
  row = {
    "task_name": "squad",
    "precision": precision or ("mixed_float16" if gpu else "float32"),
    "jit_compile": gpu,
    "published": "(shape given on the command line)",
  }
  shape = {"model_size": model_size, "batch": batch, "seq": seq_length, "tiny": False}
  steps, repeats = (2, 1) if quick else (10, 3)
  return [_shaped_row(row, shape, steps, repeats, machine)]


def _peer_missing():
  """Why the PyTorch peer cannot run here, or None."""
  missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
  if missing:
    return f"{' and '.join(missing)} not installed (pip install -e '.[bench]')"
  return None


def run(quick=False, model_size=None, seq_length=None, batch=None, precision=None):
  if model_size or seq_length or batch:
    return run_shape(model_size or "small", seq_length or SEQ, batch or BATCH, quick, precision)
  batch, seq, vocab = (4, 32, 2000) if quick else (BATCH, SEQ, VOCAB)
  steps, repeats = (2, 1) if quick else (10, 3)
  peer_warmup, peer_measured = (1, 2) if quick else (2, 5)
  rates = call_in_child("bench.bench_pretraining_step", "machine_rates")
  machine = {k: v for k, v in rates.items() if k.endswith("_per_s")}
  shapes = dict(batch=batch, seq=seq, vocab_size=vocab)

  peers = {}
  reason = _peer_missing()
  if reason:
    print(f"bench_finetuning: HF peer rows skipped: {reason}", file=sys.stderr, flush=True)
  else:
    for task_name, peer_task in PEER_TASKS.items():
      peers[task_name] = call_in_child(
        "bench.bench_hf_peer",
        "finetuning_examples_per_s",
        task=peer_task,
        warmup=peer_warmup,
        measured=peer_measured,
        **shapes,
      )

  timing = dict(shapes, steps=steps, repeats=repeats)
  rows = []
  for task_name in PEER_TASKS:
    ceilings = {
      precision: call_in_child(
        MODULE, "matmuls_only", task_name=task_name, dtype=MATMUL_DTYPES[precision], **shapes
      )
      for precision in PRECISIONS
    }
    # the tape-loop baseline is issue #18's, on MNLI-sized batches only
    paths = ("tape_loop", "fit") if task_name == "mnli" else ("fit",)
    for precision in PRECISIONS:
      results = {
        path: call_in_child(
          MODULE, "measure", path=path, task_name=task_name, precision=precision, **timing
        )
        for path in paths
      }
      for path, result in results.items():
        seconds = result["seconds_per_step"]
        row = {
          "name": f"{path} {task_name} {precision} b{batch} s{seq} v{vocab}",
          "examples_per_s": round(batch / seconds, 2),
          "ms_per_step": round(1000 * seconds, 1),
        }
        if "tape_loop" in results:
          row["fit_vs_tape_loop"] = round(
            results["tape_loop"]["seconds_per_step"] / results["fit"]["seconds_per_step"], 3
          )
        if task_name in peers:
          row["vs_hf_peer"] = round(row["examples_per_s"] / peers[task_name]["examples_per_s"], 3)
        row["fraction_of_matmul_ceiling"] = round(ceilings[precision]["seconds"] / seconds, 3)
        rows.append({**row, **machine, "peak_rss_mb": result["peak_rss_mb"]})
    for precision, ceiling in ceilings.items():
      dtype = MATMUL_DTYPES[precision]
      rows.append(
        {
          "name": f"matmuls_only {task_name} {dtype} b{batch} s{seq} v{vocab} (upper bound)",
          "examples_per_s": round(batch / ceiling["seconds"], 2),
          "ms_per_step": round(1000 * ceiling["seconds"], 1),
          "matmul_ops": ceiling["ops"],
          **machine,
          "peak_rss_mb": ceiling["peak_rss_mb"],
        }
      )
  # NVIDIA's published SQuAD row (ELECTRA-Base, 384 x 32, AMP + XLA).
  runs, skipped = rows_to_run(FINETUNING_ROWS, quick, rates["gpus"])
  for row, shape in runs:
    rows.append(_shaped_row(row, shape, steps, repeats, machine, vocab))
  if skipped:
    rows.append({"name": "SQuAD row of NVIDIA's TF2 ELECTRA", "skipped": skipped})
  for peer in peers.values():
    row = dict(peer)
    row["ms_per_step"] = round(1000 * row.pop("seconds_per_step"), 1)
    peak_rss_mb = row.pop("peak_rss_mb")
    rows.append({**row, **machine, "peak_rss_mb": peak_rss_mb})
  return rows


if __name__ == "__main__":
  main(
    run,
    f"ELECTRA-Small fine-tuning step, batch {BATCH} × seq {SEQ}, MNLI and SQuAD, fp32 and "
    "mixed_bfloat16: fit vs the previous GradientTape loop and vs the HF transformers/PyTorch peer",
  )

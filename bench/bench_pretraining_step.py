"""Throughput of one ELECTRA-Small pre-training step (batch 128, sequence 128).

The full step of `ElectraPretrainer.fit`: dynamic masking, generator,
Gumbel sampling, discriminator, MLM + 50·RTD loss, AdamWeightDecay with
global-norm clipping. Configurations: vocab 7,814 (the fixtures') and 30,522
(the released one) × fp32 / mixed_bfloat16 × XLA off / on.

Reported per configuration: sequences/s and the achieved FLOP rate as a
fraction of this machine's fp32 matmul rate, measured in the same run
(`tf.matmul` of two 2048×2048 float32 matrices). FLOPs of one step:

  6 · (non-embedding parameters of the discriminator + the generator) · B·S
  + attention: 12 · S² · h · L per sequence for each tower
    (QKᵀ and AV, 2·S²·h each forward; backward twice the forward)
  + the generator's output matmul at the masked positions: 6 · N · E · V
    per sequence (N = 19 slots)

Non-embedding parameters exclude the word, position and token-type tables.

The training step runs the transformer's elementwise chains as XLA-fused
kernels (`electra_tf.layers.fused_ops`); one extra row measures the fp32 step
with them off (hparam `fused_training_kernels: false`, plain TF ops) as the
in-run baseline.
Those chains are memory-bound, so each row also carries the machine's
memory bandwidth, measured in the same run (`x·2` over 256 MB, read + write).
One more row replays only the fp32 step's matmuls (`matmuls_only`): the
speed the step would have if everything else took no time. Its FLOPs are
counted from the traced ops themselves.

  python -m bench.bench_pretraining_step [--quick] [--json out.json]
"""

import time

from bench.common import main

BATCH = 128
SEQ = 128
VOCABS = (7814, 30522)
PRECISIONS = ("float32", "mixed_bfloat16")


def _best_seconds(fn, repeats=3):
  """Fastest of `repeats` timed calls of `fn`, after one untimed warm-up call."""
  fn()
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    best = min(best, time.perf_counter() - start)
  return best


def _pretrainer(vocab_size, precision="float32", jit_compile=False, fused=True):
  """A compiled ELECTRA-Small `ElectraPretrainer` for batch BATCH, seq SEQ."""
  import keras  # pylint: disable=g-import-not-at-top

  from electra_tf.configs.pretraining import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.models import electra_pretrainer  # pylint: disable=g-import-not-at-top

  keras.utils.clear_session()
  keras.mixed_precision.set_global_policy(precision)
  config = PretrainingConfig(
    "bench",
    "/nonexistent",
    model_size="small",
    vocab_size=vocab_size,
    max_seq_length=SEQ,
    train_batch_size=BATCH,
    seed=0,
    fused_training_kernels=fused,
  )
  model = electra_pretrainer.ElectraPretrainer.from_pretraining_config(config)
  model.compile(pretraining_config=config, jit_compile=jit_compile)
  return model


def matmul_flops_per_s(n=2048, repeats=10):
  """This machine's fp32 matmul rate (FLOP/s), from a compiled loop."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  a = tf.random.normal([n, n])
  # Scaled so that the chained products stay finite; a chain cannot be
  # merged by common-subexpression elimination, unlike repeated a·b.
  b = tf.random.normal([n, n]) / float(n) ** 0.5

  @tf.function
  def run(a, b):
    x = a
    for _ in range(repeats):
      x = tf.matmul(x, b)
    return x

  return 2.0 * n**3 * repeats / _best_seconds(lambda: run(a, b).numpy())


def memory_copy_bytes_per_s(n=64 * 1024 * 1024, repeats=5):
  """Bytes read + written per second by an elementwise `x·2` of n float32."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  x = tf.random.normal([n])
  scale = tf.function(lambda x: x * 2.0)
  return 2 * 4 * n / _best_seconds(lambda: scale(x).numpy(), repeats)


def step_flops(model):
  """FLOPs of one training step by the formula in the module docstring."""
  from electra_tf.checkpoints import names as checkpoint_names  # pylint: disable=g-import-not-at-top

  names = checkpoint_names.official_name_map(model)
  tables = ("word_embeddings", "position_embeddings", "token_type_embeddings")
  non_embedding = sum(int(v.numpy().size) for n, v in names.items() if not n.endswith(tables))
  tokens = BATCH * SEQ
  flops = 6 * non_embedding * tokens
  towers = [model.bert_config, model.generator_config]
  for config in towers:
    flops += 12 * SEQ**2 * config["hidden_size"] * config["num_hidden_layers"] * BATCH
  width = model.embedding_size or model.bert_config["hidden_size"]
  flops += 6 * model.objective.max_predictions_per_seq * width * model.vocab_size * BATCH
  return flops, non_embedding


def _matmul_flops(op):
  """FLOPs of one traced MatMul / BatchMatMulV2 op (static shapes)."""
  a, b = (list(t.shape.as_list()) for t in op.inputs)
  if op.type == "MatMul":
    transpose_a, transpose_b = op.get_attr("transpose_a"), op.get_attr("transpose_b")
  else:
    transpose_a, transpose_b = op.get_attr("adj_x"), op.get_attr("adj_y")
  rows, inner = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
  cols = b[-2] if transpose_b else b[-1]
  batch = 1
  for dim in a[:-2]:
    batch *= dim
  return 2 * batch * rows * inner * cols, (tuple(a), tuple(b), transpose_a, transpose_b)


def matmuls_only(vocab_size, repeats=3):
  """The fp32 step's matmuls alone: an upper bound on the step's speed.

  Traces `train_step` for one batch and replays every MatMul and
  BatchMatMulV2 of the step's graph (forward and gradient, both towers and
  heads, with the same shapes and transposes) on random inputs, with nothing
  else in between. The XLA-fused elementwise kernels' internal matmuls
  (column sums) are not counted. Repeated ops get distinct input tensors so
  that common-subexpression elimination cannot merge them.

  Returns:
    dict with `seconds` (best of `repeats`), `flops` and `ops` (count).
  """
  import collections  # pylint: disable=g-import-not-at-top
  import math  # pylint: disable=g-import-not-at-top

  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  model = _pretrainer(vocab_size)
  model.optimizer.build(model.trainable_variables)
  batch = {k: tf.constant(v) for k, v in _batch(vocab_size).items()}
  graph = tf.function(model.train_step).get_concrete_function(batch).graph
  traced = [
    _matmul_flops(op) for op in graph.get_operations() if op.type in ("MatMul", "BatchMatMulV2")
  ]

  # The i-th repeat of a spec uses copy (i mod c) of its first input and copy
  # (i div c) of its second, c = ⌈√repeats⌉: every (first, second) pair differs.
  repeats_of = collections.Counter(spec for _, spec in traced)
  seen = collections.Counter()
  copies = collections.Counter()
  plan = []
  for _, spec in traced:
    a, b, transpose_a, transpose_b = spec
    per_side = math.ceil(math.sqrt(repeats_of[spec]))
    a_copy, b_copy = seen[spec] % per_side, seen[spec] // per_side
    seen[spec] += 1
    copies[a] = max(copies[a], a_copy + 1)
    copies[b] = max(copies[b], b_copy + 1)
    plan.append(((a, a_copy), (b, b_copy), transpose_a, transpose_b))
  keys = sorted((shape, i) for shape, n in copies.items() for i in range(n))
  values = [tf.random.normal(shape) for shape, _ in keys]

  @tf.function
  def replay(values):
    by_key = dict(zip(keys, values))
    # One element of every product is returned so that no matmul is pruned.
    firsts = [
      tf.reshape(
        tf.matmul(by_key[a], by_key[b], transpose_a=transpose_a, transpose_b=transpose_b), [-1]
      )[0]
      for a, b, transpose_a, transpose_b in plan
    ]
    return tf.add_n(firsts)

  best = _best_seconds(lambda: replay(values).numpy(), repeats)
  return {"seconds": best, "flops": sum(flops for flops, _ in traced), "ops": len(traced)}


def _batch(vocab_size):
  import numpy as np  # pylint: disable=g-import-not-at-top

  rng = np.random.RandomState(0)
  ids = rng.randint(1000, vocab_size, size=[BATCH, SEQ]).astype(np.int32)
  ids[:, 0] = 101
  ids[:, SEQ // 2] = 102
  ids[:, -1] = 102
  segment_ids = np.zeros_like(ids)
  segment_ids[:, SEQ // 2 + 1 :] = 1
  return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segment_ids}


def measure(vocab_size, precision, jit_compile, warmup_steps, measured_steps, fused=True):
  """Sequences/s of `fit` steps after `warmup_steps` (tracing, compiling)."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  model = _pretrainer(vocab_size, precision, jit_compile, fused)
  dataset = tf.data.Dataset.from_tensors(_batch(vocab_size)).repeat()

  times = []

  class Timer(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
      times.append(time.perf_counter())

  start = time.perf_counter()
  model.fit(
    dataset,
    steps_per_epoch=warmup_steps + measured_steps,
    epochs=1,
    verbose=0,
    callbacks=[Timer()],
  )
  first_step = times[0] - start
  seconds = (times[-1] - times[warmup_steps - 1]) / measured_steps
  flops, non_embedding = step_flops(model)
  keras.mixed_precision.set_global_policy("float32")
  return {
    "seconds_per_step": seconds,
    "first_step_s": first_step,
    "flops_per_step": flops,
    "non_embedding_params": non_embedding,
  }


def run(quick=False):
  matmul_rate = matmul_flops_per_s()
  copy_rate = memory_copy_bytes_per_s()
  if quick:
    configs = [(7814, "float32", False, True)]
    warmup, measured = 1, 2
  else:
    configs = [(v, p, x, True) for v in VOCABS for p in PRECISIONS for x in (False, True)]
    configs.insert(1, (VOCABS[0], "float32", False, False))
    warmup, measured = 2, 5
  rows = []
  for vocab_size, precision, jit, fused in configs:
    result = measure(vocab_size, precision, jit, warmup, measured, fused=fused)
    seconds = result["seconds_per_step"]
    rows.append(
      {
        "name": (
          f"electra_small_step vocab={vocab_size} {precision} xla={'on' if jit else 'off'}"
          + ("" if fused else " plain ops (fused kernels off)")
        ),
        "sequences_per_s": round(BATCH / seconds, 2),
        "utilisation_of_fp32_matmul": round(result["flops_per_step"] / seconds / matmul_rate, 3),
        "step_gflop": round(result["flops_per_step"] / 1e9, 1),
        "fp32_matmul_gflop_per_s": round(matmul_rate / 1e9, 1),
        "memory_copy_gb_per_s": round(copy_rate / 1e9, 1),
        "first_step_s": round(result["first_step_s"], 1),
        "non_embedding_params": result["non_embedding_params"],
      }
    )
  ceiling = matmuls_only(VOCABS[0])
  rows.insert(
    min(2, len(rows)),
    {  # after the fp32 rows it bounds
      "name": f"electra_small_step vocab={VOCABS[0]} float32 matmuls only (upper bound)",
      "sequences_per_s": round(BATCH / ceiling["seconds"], 2),
      "utilisation_of_fp32_matmul": round(ceiling["flops"] / ceiling["seconds"] / matmul_rate, 3),
      "step_gflop": round(ceiling["flops"] / 1e9, 1),
      "fp32_matmul_gflop_per_s": round(matmul_rate / 1e9, 1),
      "matmul_ops": ceiling["ops"],
    },
  )
  return rows


if __name__ == "__main__":
  main(run, "ELECTRA-Small pre-training step (fit), batch 128, seq 128")

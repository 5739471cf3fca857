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

The user's path is timed too: `python -m electra_tf.run_pretraining` end to
end on real TFRecords (the shared fixtures' when present, else records this
benchmark writes), its steps 6–25 timed from the arrival of its own
per-step log lines, next to the `fit` row of the same precision, which then
also times steps 6–25.

Every row runs in its own process and carries that process's peak RSS, the
machine's fp32 (and, where native, bf16) matmul rate and the step's fraction
of the matmuls-only ceiling of its precision, all measured in the same run.
When a GPU is visible, the `fit` and CLI rows also run there with XLA on in
`mixed_float16` and `mixed_bfloat16`.

Gradient accumulation rows: the fp32 `fit` step of the same global batch as
k = 1, 2, 4, 8 micro-batches (`gradient_accumulation_steps`), each with its
peak RSS and its throughput relative to k = 1, in the same run.

The peers' published rows (`bench.reference_rows`): on a GPU, ELECTRA-Base
at 128 × 176 and 512 × 24 in `mixed_float16` with XLA (NVIDIA's TF2
ELECTRA) and ELECTRA-Small at 128 × 128 (the original's V100 figure), each
row naming the GPU model next to the published figure; a `--quick` run on a
CPU runs them at a smoke size; a full CPU run skips them with a row saying so.

One shape instead of all rows (the `fit` step, on a GPU in `mixed_float16`
with XLA, on a CPU in float32; `--precision` picks another policy):

  python -m bench.bench_pretraining_step --model-size base --seq-length 512 --batch 24

  python -m bench.bench_pretraining_step [--quick] [--json out.json]
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import time

from bench.common import FIXTURE_VOCAB
from bench.common import REPO_ROOT
from bench.common import call_in_child
from bench.common import fresh_keras_session
from bench.common import main
from bench.reference_rows import PRETRAINING_ROWS
from bench.reference_rows import TINY_TOWERS
from bench.reference_rows import describe_shape
from bench.reference_rows import gpu_model
from bench.reference_rows import rows_to_run

# The environment override exists for smoke runs on small machines only;
# the figures docs/benchmarks.md quotes are at 128.
BATCH = int(os.environ.get("BENCH_PRETRAINING_BATCH", "128"))
SEQ = 128
VOCABS = (7814, 30522)
PRECISIONS = ("float32", "mixed_bfloat16")
# Micro-batches per step of the gradient-accumulation rows (same global batch).
ACCUMULATION_STEPS = (1, 2, 4, 8)
# The matmul dtype of each precision's step, for its matmuls-only ceiling.
MATMUL_DTYPES = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
FIXTURE_TFRECORDS = os.path.join(
  os.path.dirname(FIXTURE_VOCAB), "pretrain_tfrecords", "pretrain_data.tfrecord*"
)
# The run_pretraining ETA line: "<step>/<n_steps> = <pct>%, SPS: ..."
_STEP_LINE = re.compile(r"^(\d+)/(\d+) = ")


def _best_seconds(fn, repeats=3):
  """Fastest of `repeats` timed calls of `fn`, after one untimed warm-up call."""
  fn()
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    best = min(best, time.perf_counter() - start)
  return best


def _pretrainer(
  vocab_size,
  precision="float32",
  jit_compile=False,
  fused=True,
  accumulation=1,
  model_size="small",
  batch=BATCH,
  seq=SEQ,
  tiny=False,
):
  """A compiled `ElectraPretrainer` of `model_size` for `batch` × `seq`
  (run as `accumulation` micro-batches per step); `tiny` shrinks the towers
  to a smoke-test size."""

  from electra_tf.configs.pretraining import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.models import electra_pretrainer  # pylint: disable=g-import-not-at-top

  fresh_keras_session(precision)
  config = PretrainingConfig(
    "bench",
    "/nonexistent",
    model_size=model_size,
    vocab_size=vocab_size,
    max_seq_length=seq,
    train_batch_size=batch,
    seed=0,
    fused_training_kernels=fused,
    **(TINY_TOWERS if tiny else {}),
  )
  model = electra_pretrainer.ElectraPretrainer.from_pretraining_config(config)
  model.compile(
    pretraining_config=config, jit_compile=jit_compile, gradient_accumulation_steps=accumulation
  )
  return model


def matmul_flops_per_s(n=2048, repeats=10, dtype="float32"):
  """This machine's matmul rate (FLOP/s) in `dtype`, from a compiled loop."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  a = tf.cast(tf.random.normal([n, n]), dtype)
  # Scaled so that the chained products stay finite; a chain cannot be
  # merged by common-subexpression elimination, unlike repeated a·b.
  b = tf.cast(tf.random.normal([n, n]) / float(n) ** 0.5, dtype)

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


def step_flops(model, batch=BATCH, seq=SEQ):
  """FLOPs of one training step by the formula in the module docstring."""
  from electra_tf.models import official_names  # pylint: disable=g-import-not-at-top

  names = official_names.official_name_map(model)
  tables = ("word_embeddings", "position_embeddings", "token_type_embeddings")
  non_embedding = sum(int(v.numpy().size) for n, v in names.items() if not n.endswith(tables))
  tokens = batch * seq
  flops = 6 * non_embedding * tokens
  towers = [model.bert_config, model.generator_config]
  for config in towers:
    flops += 12 * seq**2 * config["hidden_size"] * config["num_hidden_layers"] * batch
  width = model.embedding_size or model.bert_config["hidden_size"]
  flops += 6 * model.objective.max_predictions_per_seq * width * model.vocab_size * batch
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


def machine_rates():
  """The machine's matmul rates and memory bandwidth, and whether bf16 is native.

  Returns:
    dict: `fp32_matmul_gflop_per_s`, `memory_copy_gb_per_s`, `gpus`,
    `bf16_native`, and `bf16_matmul_gflop_per_s` where bf16 is native
    (`fp16_matmul_gflop_per_s` on a GPU).
  """
  from electra_tf.runtime import distribution  # pylint: disable=g-import-not-at-top

  capabilities = distribution.gpu_compute_capabilities()
  if capabilities:
    slow = distribution.bf16_slowdown_reason("gpu", gpu_capabilities=capabilities)
  else:
    slow = distribution.bf16_slowdown_reason("cpu", distribution.read_cpu_flags())
  rates = {
    "fp32_matmul_gflop_per_s": round(matmul_flops_per_s() / 1e9, 1),
    "memory_copy_gb_per_s": round(memory_copy_bytes_per_s() / 1e9, 1),
    "gpus": len(capabilities),
    "bf16_native": slow is None,
  }
  if slow is None:
    rates["bf16_matmul_gflop_per_s"] = round(matmul_flops_per_s(dtype="bfloat16") / 1e9, 1)
  if capabilities:
    rates["fp16_matmul_gflop_per_s"] = round(matmul_flops_per_s(dtype="float16") / 1e9, 1)
  return rates


def matmuls_only(vocab_size, repeats=3, dtype="float32"):
  """The fp32 step's matmuls alone, in `dtype`: an upper bound on the speed
  of the step whose matmuls run in that dtype (see `replay_matmuls`).

  Returns:
    dict with `seconds` (best of `repeats`), `flops` and `ops` (count).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  model = _pretrainer(vocab_size)
  model.optimizer.build(model.trainable_variables)
  batch = {k: tf.constant(v) for k, v in _batch(vocab_size).items()}
  graph = tf.function(model.train_step).get_concrete_function(batch).graph
  return replay_matmuls(graph, dtype, repeats)


def replay_matmuls(graph, dtype="float32", repeats=3):
  """Replays every MatMul and BatchMatMulV2 of a traced training step's
  `graph` (forward and gradient, with the same shapes and transposes) on
  random inputs in `dtype`, with nothing else in between. The XLA-fused
  elementwise kernels' internal matmuls (column sums) are not counted.
  Repeated ops get distinct input tensors so that common-subexpression
  elimination cannot merge them.

  Returns:
    dict with `seconds` (best of `repeats`), `flops` and `ops` (count).
  """
  import collections  # pylint: disable=g-import-not-at-top
  import math  # pylint: disable=g-import-not-at-top

  import tensorflow as tf  # pylint: disable=g-import-not-at-top

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
  values = [tf.cast(tf.random.normal(shape), dtype) for shape, _ in keys]

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


def _batch(vocab_size, batch=BATCH, seq=SEQ):
  import numpy as np  # pylint: disable=g-import-not-at-top

  rng = np.random.RandomState(0)
  ids = rng.randint(1000, vocab_size, size=[batch, seq]).astype(np.int32)
  ids[:, 0] = 101
  ids[:, seq // 2] = 102
  ids[:, -1] = 102
  segment_ids = np.zeros_like(ids)
  segment_ids[:, seq // 2 + 1 :] = 1
  return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segment_ids}


def measure(
  vocab_size,
  precision,
  jit_compile,
  warmup_steps,
  measured_steps,
  fused=True,
  accumulation=1,
  model_size="small",
  batch=BATCH,
  seq=SEQ,
  tiny=False,
):
  """Seconds per `fit` step after `warmup_steps` (tracing, compiling)."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  model = _pretrainer(
    vocab_size, precision, jit_compile, fused, accumulation, model_size, batch, seq, tiny
  )
  dataset = tf.data.Dataset.from_tensors(_batch(vocab_size, batch, seq)).repeat()

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
  flops, non_embedding = step_flops(model, batch, seq)
  keras.mixed_precision.set_global_policy("float32")
  return {
    "seconds_per_step": seconds,
    "device": "GPU" if tf.config.list_logical_devices("GPU") else "CPU",
    "gpu_model": gpu_model(),
    "first_step_s": first_step,
    "flops_per_step": flops,
    "non_embedding_params": non_embedding,
  }


def _write_tfrecords(directory, vocab_size, num=256):
  """Records in the original's layout (`input_ids`, `input_mask`,
  `segment_ids`, int64 × SEQ) for when the fixtures are absent."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  os.makedirs(directory, exist_ok=True)
  rng = np.random.RandomState(0)
  path = os.path.join(directory, "pretrain_data.tfrecord-0-of-1")
  with tf.io.TFRecordWriter(path) as writer:
    for _ in range(num):
      length = rng.randint(SEQ // 2, SEQ + 1)
      ids = np.zeros(SEQ, np.int64)
      ids[:length] = rng.randint(1000, vocab_size, size=length)
      ids[0], ids[length // 2], ids[length - 1] = 101, 102, 102
      mask = (np.arange(SEQ) < length).astype(np.int64)
      segments = ((np.arange(SEQ) > length // 2) & (mask == 1)).astype(np.int64)
      feature = {
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
        for k, v in (("input_ids", ids), ("input_mask", mask), ("segment_ids", segments))
      }
      writer.write(
        tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
      )
  return os.path.join(directory, "pretrain_data.tfrecord*")


def measure_cli(precision, jit_compile, warmup_steps, measured_steps, vocab_size=VOCABS[0]):
  """Runs `python -m electra_tf.run_pretraining` for `warmup_steps +
  measured_steps` steps on real TFRecords and times the measured steps by
  the arrival of its per-step log lines (step `warmup_steps` to the last).

  Returns:
    dict: `seconds_per_step`, `first_step_s`, `tfrecords` and `peak_rss_mb`,
    the run_pretraining process's own peak.
  """
  import json  # pylint: disable=g-import-not-at-top

  steps = warmup_steps + measured_steps
  with tempfile.TemporaryDirectory() as data_dir:
    if vocab_size == 7814 and glob.glob(FIXTURE_TFRECORDS):
      tfrecords, source = FIXTURE_TFRECORDS, "shared fixtures (the original's)"
    else:
      tfrecords, source = _write_tfrecords(os.path.join(data_dir, "records"), vocab_size), "own"
    hparams = {
      "model_size": "small",
      "vocab_size": vocab_size,
      "max_seq_length": SEQ,
      "train_batch_size": BATCH,
      "num_train_steps": steps,
      "save_checkpoints_steps": 10 * steps,  # none inside the timed steps
      "log_every_steps": 1,
      "mixed_precision": precision,
      "jit_compile": jit_compile,
      "pretrain_tfrecords": tfrecords,
      "seed": 0,
    }
    if os.path.isfile(FIXTURE_VOCAB) and vocab_size == 7814:
      hparams["vocab_file"] = FIXTURE_VOCAB
    cmd = [
      sys.executable,
      "-m",
      "electra_tf.run_pretraining",
      "--data-dir",
      data_dir,
      "--model-name",
      "bench",
      "--hparams",
      json.dumps(hparams),
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    proc = subprocess.Popen(
      cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    arrivals, tail = {}, []
    for line in proc.stdout:
      match = _STEP_LINE.match(line)
      if match:
        # the first line of a step (the last step is logged again at the end)
        arrivals.setdefault(int(match.group(1)), time.perf_counter())
      tail = (tail + [line])[-20:]
    # wait4: this process's own peak RSS, not the maximum over all children
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
  if proc.returncode != 0 or warmup_steps not in arrivals or steps not in arrivals:
    raise RuntimeError(
      f"run_pretraining exited with {proc.returncode}; last lines:\n" + "".join(tail)
    )
  return {
    "seconds_per_step": (arrivals[steps] - arrivals[warmup_steps]) / measured_steps,
    "first_step_s": min(arrivals.values()) - start,
    "tfrecords": source,
    "peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1),
  }


def _configs(quick, gpu):
  """`(vocab, precision, xla, fused, with a CLI row)` of every `fit` row."""
  if quick:
    return [(VOCABS[0], "float32", False, True, True)]
  configs = [
    (v, p, x, True, v == VOCABS[0] and not x)
    for v in VOCABS
    for p in PRECISIONS
    for x in (False, True)
  ]
  configs.insert(1, (VOCABS[0], "float32", False, False, False))
  if gpu:
    configs += [(VOCABS[0], p, True, True, True) for p in ("mixed_float16", "mixed_bfloat16")]
  return configs


def _shaped_row(row, shape, steps, machine, vocab_size=VOCABS[1]):
  """One `fit` row at `shape` (`bench.reference_rows`), in its own process."""
  result = call_in_child(
    "bench.bench_pretraining_step",
    "measure",
    vocab_size=vocab_size,
    precision=row["precision"],
    jit_compile=row["jit_compile"],
    warmup_steps=steps[0],
    measured_steps=steps[1],
    **shape,
  )
  seconds = result["seconds_per_step"]
  return {
    "name": f"pretraining fit {describe_shape(row, shape)} vocab={vocab_size}",
    "sequences_per_s": round(shape["batch"] / seconds, 2),
    "seconds_per_step": round(seconds, 3),
    "timed_steps": f"{steps[0] + 1}-{sum(steps)}",
    "device": result["device"],
    "gpu_model": result["gpu_model"] or "none (CPU)",
    "published": row["published"],
    "first_step_s": round(result["first_step_s"], 1),
    **machine,
    "peak_rss_mb": result["peak_rss_mb"],
  }


def run_shape(model_size, seq_length, batch, quick=False, precision=None):
  """The `fit` step at one shape given on the command line: on a GPU in
  `mixed_float16` with XLA (the peers' setting), on a CPU in float32, unless `precision` names another policy."""
  module = "bench.bench_pretraining_step"
  rates = call_in_child(module, "machine_rates")
  machine = {k: v for k, v in rates.items() if k.endswith("_per_s")}
  gpu = rates["gpus"] > 0
  row = {
    "precision": precision or ("mixed_float16" if gpu else "float32"),
    "jit_compile": gpu,
    "published": "(shape given on the command line)",
  }
  shape = {"model_size": model_size, "batch": batch, "seq": seq_length, "tiny": False}
  return [_shaped_row(row, shape, (1, 2) if quick else (5, 20), machine)]


def run(quick=False, model_size=None, seq_length=None, batch=None, precision=None):
  module = "bench.bench_pretraining_step"
  if model_size or seq_length or batch:
    return run_shape(model_size or "small", seq_length or SEQ, batch or BATCH, quick, precision)
  rates = call_in_child(module, "machine_rates")
  rates.pop("peak_rss_mb", None)
  machine = {k: v for k, v in rates.items() if k.endswith("_per_s")}
  configs = _configs(quick, rates["gpus"] > 0)
  # Steps 6–25 for the rows compared with the CLI (the steps the issue's
  # table times), steps 3–7 for the rest; a quick run times steps 2–3.
  short, long = ((1, 2), (1, 2)) if quick else ((2, 5), (5, 20))

  ceilings = {}
  for precision in sorted({c[1] for c in configs}):
    ceiling = call_in_child(
      module, "matmuls_only", vocab_size=VOCABS[0], dtype=MATMUL_DTYPES[precision]
    )
    ceilings[precision] = ceiling

  def describe(vocab_size, precision, result, steps):
    seconds = result["seconds_per_step"]
    row = {
      "sequences_per_s": round(BATCH / seconds, 2),
      "seconds_per_step": round(seconds, 3),
      "timed_steps": f"{steps[0] + 1}-{sum(steps)}",
    }
    if "flops_per_step" in result:
      row["utilisation_of_fp32_matmul"] = round(
        result["flops_per_step"] / seconds / (rates["fp32_matmul_gflop_per_s"] * 1e9), 3
      )
      row["step_gflop"] = round(result["flops_per_step"] / 1e9, 1)
    if vocab_size == VOCABS[0]:
      row["fraction_of_matmul_ceiling"] = round(ceilings[precision]["seconds"] / seconds, 3)
    row.update(machine)
    row["peak_rss_mb"] = result["peak_rss_mb"]
    return row

  rows = []
  for vocab_size, precision, jit, fused, with_cli in configs:
    steps = long if with_cli else short
    result = call_in_child(
      module,
      "measure",
      vocab_size=vocab_size,
      precision=precision,
      jit_compile=jit,
      warmup_steps=steps[0],
      measured_steps=steps[1],
      fused=fused,
    )
    name = (
      f"electra_small_step fit vocab={vocab_size} {precision} xla={'on' if jit else 'off'}"
      + ("" if fused else " plain ops (fused kernels off)")
      + (" GPU" if result["device"] == "GPU" else "")
    )
    fit_row = {"name": name, **describe(vocab_size, precision, result, steps)}
    fit_row["first_step_s"] = round(result["first_step_s"], 1)
    fit_row["non_embedding_params"] = result["non_embedding_params"]
    rows.append(fit_row)
    if with_cli:
      cli = call_in_child(
        module,
        "measure_cli",
        precision=precision,
        jit_compile=jit,
        warmup_steps=steps[0],
        measured_steps=steps[1],
        vocab_size=vocab_size,
      )
      cli_row = {
        "name": name.replace("step fit", "step `python -m electra_tf.run_pretraining`"),
        **describe(vocab_size, precision, cli, steps),
      }
      cli_row["ratio_to_fit_row"] = round(
        cli_row["sequences_per_s"] / fit_row["sequences_per_s"], 3
      )
      cli_row["first_step_s"] = round(cli["first_step_s"], 1)
      cli_row["tfrecords"] = cli["tfrecords"]
      rows.append(cli_row)

  # Gradient accumulation: the same global batch as k micro-batches per
  # step (fp32, XLA off); each row's own process gives its peak RSS.
  for k in (1, 2) if quick else ACCUMULATION_STEPS:
    result = call_in_child(
      module,
      "measure",
      vocab_size=VOCABS[0],
      precision="float32",
      jit_compile=False,
      warmup_steps=short[0],
      measured_steps=short[1],
      accumulation=k,
    )
    row = {
      "name": (
        f"electra_small_step fit vocab={VOCABS[0]} float32 xla=off gradient_accumulation_steps={k}"
        f" ({k} x {BATCH // k})" + (" GPU" if result["device"] == "GPU" else "")
      ),
      **describe(VOCABS[0], "float32", result, short),
    }
    row["first_step_s"] = round(result["first_step_s"], 1)
    rows.append(row)
  base = next(r for r in rows if r["name"].endswith(f"gradient_accumulation_steps=1 (1 x {BATCH})"))
  for row in rows:
    if "gradient_accumulation_steps=" in row["name"]:
      row["throughput_vs_k1"] = round(row["sequences_per_s"] / base["sequences_per_s"], 3)
      row["peak_rss_vs_k1"] = round(row["peak_rss_mb"] / base["peak_rss_mb"], 3)

  # The peers' published shapes (NVIDIA's Base rows, the original's Small).
  runs, skipped = rows_to_run(PRETRAINING_ROWS, quick, rates["gpus"])
  for row, shape in runs:
    rows.append(_shaped_row(row, shape, short if quick else (5, 20), machine))
  if skipped:
    rows.append(
      {"name": "pretraining rows of NVIDIA's TF2 ELECTRA and the original", "skipped": skipped}
    )

  for precision, ceiling in ceilings.items():
    rows.append(
      {
        "name": (
          f"electra_small_step vocab={VOCABS[0]} {precision} matmuls only in "
          f"{MATMUL_DTYPES[precision]} (upper bound)"
        ),
        "sequences_per_s": round(BATCH / ceiling["seconds"], 2),
        "seconds_per_step": round(ceiling["seconds"], 3),
        "utilisation_of_fp32_matmul": round(
          ceiling["flops"] / ceiling["seconds"] / (rates["fp32_matmul_gflop_per_s"] * 1e9), 3
        ),
        "step_gflop": round(ceiling["flops"] / 1e9, 1),
        "matmul_ops": ceiling["ops"],
        **machine,
        "peak_rss_mb": ceiling["peak_rss_mb"],
      }
    )
  return rows


if __name__ == "__main__":
  main(run, "ELECTRA-Small pre-training step (fit and the run_pretraining CLI), batch 128, seq 128")

"""Where a short request's time goes in a loaded SavedModel: the floor of a
signature call, TensorFlow's cost per executed op, the arithmetic, and what
the executor's thread pools and Grappler change.

For an ELECTRA-Small discriminator export (random init, fp32, as
`electra_tf.serving.export` writes it and `tf.saved_model.load` reads it):

- `serve_ids` on one request of 12 tokens and of 128 tokens (p50, p90);
- the floor: a signature of the same kind that returns its input;
- the cost of one executed op: a loaded signature running a chain of
  `serve_ids`' executed-op count of dependent element-wise ops on one
  float, minus the floor, divided by the count;
- the arithmetic: the request's matmul FLOPs at this machine's fp32 GEMM
  rate (an optimistic bound: small matmuls run below the peak rate);
- `serve_ids` (12 tokens) again in fresh processes with one inter-op thread,
  with one intra-op thread, with Grappler's meta-optimizer off (op count
  and time), and with TensorFlow's oneDNN kernels off
  (`TF_ENABLE_ONEDNN_OPTS=0`), alone and with one intra-op thread, to see
  what the thread pools, the kernel library and graph rewrites cost or
  save (each row says whether oneDNN kernels ran: on CPUs where TensorFlow
  leaves them off, "oneDNN off" is the default);
- every configuration on a batch of 32 full-length requests too (what the
  settings that help one short request cost a batched server);
- ONNX Runtime on the same network's float ONNX file and the same ids (the
  yardstick of the lean-graph work), in the same run, and each row's ratio
  to it, and each configuration's 128-token latency over its 12-token one;
- the same export with `jit_compile=True` (`--jit-compile`), with
  `constant_weights=True` (`--constant-weights`: with the default settings,
  one intra-op thread, and oneDNN off with one intra-op thread) and with
  both, in the same run;
- the kernels' own time by op type at 12 and 128 tokens, from TensorFlow's
  profiler: what each op type's kernels spent per call, summed over the
  intra-op threads (so the sum can exceed the wall time: two kernels run at
  once on two cores).

The last row splits the 12-token latency into floor + ops × per-op cost +
arithmetic + the rest.

  python -m bench.serving_fixed_cost [--quick] [--json out.json]
"""

import os
import statistics
import sys
import tempfile

from bench.bench_serving import _percentile
from bench.bench_serving import _runtime
from bench.bench_serving import _time_calls
from bench.common import call_in_child
from bench.common import main

SEQ = 128
SHORT_TOKENS = 12
BATCH = 32
VOCAB = 30522
# The exports timed: `export_lib.export` options by name.
EXPORTS = {
  "default": {},
  "xla": {"jit_compile": True},
  "constant_weights": {"constant_weights": True},
  "xla_constant_weights": {"jit_compile": True, "constant_weights": True},
}
# Rows beside the default: (export, `time_serve_ids` settings) by name.
VARIANTS = {
  "XLA export (--jit-compile)": ("xla", {}),
  "1 inter-op thread": ("default", {"inter_op": 1}),
  "1 intra-op thread": ("default", {"intra_op": 1}),
  "Grappler off": ("default", {"grappler": False}),
  "oneDNN off": ("default", {"onednn": False}),
  "oneDNN off, 1 intra-op thread": ("default", {"onednn": False, "intra_op": 1}),
  "constant-weights export (--constant-weights)": ("constant_weights", {}),
  "constant-weights export, 1 intra-op thread": ("constant_weights", {"intra_op": 1}),
  "constant-weights export, oneDNN off, 1 intra-op thread": (
    "constant_weights",
    {"onednn": False, "intra_op": 1},
  ),
  "XLA and constant-weights export": ("xla_constant_weights", {}),
}


def _time(call, warmup, repeats):
  """p50 and p90 of `repeats` calls after `warmup` unrecorded ones, as
  bench_serving times its rows."""
  _time_calls(call, warmup)
  times = _time_calls(call, repeats)
  return {
    "p50_ms": round(1000 * statistics.median(times), 3),
    "p90_ms": round(1000 * _percentile(times, 0.9), 3),
  }


def _ids(tokens, batch=1):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  ids = np.zeros((batch, SEQ), "int32")
  ids[:, :tokens] = [101] + [1000 + i for i in range(tokens - 2)] + [102]
  return {
    "input_ids": tf.constant(ids),
    "input_mask": tf.constant((ids > 0).astype("int32")),
    "segment_ids": tf.zeros_like(tf.constant(ids)),
  }


def time_serve_ids(export_dir, repeats, inter_op=None, intra_op=None, grappler=True, onednn=True):
  """p50/p90 of `serve_ids` at 12 and 128 tokens, its executed-op count and
  whether oneDNN kernels ran, in this process with the given threads,
  Grappler and oneDNN settings (call first thing in a fresh process: all
  must be set before TensorFlow runs)."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  if not onednn:
    if "tensorflow" in sys.modules:
      raise RuntimeError("oneDNN can only be turned off before TensorFlow is imported")
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bench.graph_ops import op_types  # pylint: disable=g-import-not-at-top
  from bench.graph_ops import summary  # pylint: disable=g-import-not-at-top

  if inter_op:
    tf.config.threading.set_inter_op_parallelism_threads(inter_op)
  if intra_op:
    tf.config.threading.set_intra_op_parallelism_threads(intra_op)
  if not grappler:
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
  from electra_tf.serving import loading  # pylint: disable=g-import-not-at-top

  # Registers the tokenizer's TF Text ops before the graph is read.
  serve = loading.load(export_dir).signatures["serve_ids"]
  short, full, batch = _ids(SHORT_TOKENS), _ids(SEQ), _ids(SEQ, BATCH)
  counts = op_types(lambda: serve(**short))
  warmup = max(3, repeats // 10)
  return {
    "executed_ops": summary(counts)["executed"],
    "onednn_kernels": any(op.startswith("_Mkl") for op in counts),
    "short": _time(lambda: serve(**short), warmup, repeats),
    "full": _time(lambda: serve(**full), warmup, repeats),
    "batch": _time(lambda: serve(**batch), 2, max(3, repeats // 20)),
  }


# Profiler events on the executor's threads that wrap kernels rather than
# being kernels (a node's whole run, a parallel shard, the done callback).
PROFILE_WRAPPERS = ("Process", "ParallelFor", "ExecutorDoneCallback")
# Op types named in a profile row; the rest are summed as "other".
PROFILE_TOP = 8


def kernel_time(call, calls):
  """Wall time and kernel time by op type of `call()`, from `tf.profiler`
  traces of `calls` calls after as many unprofiled ones: `{"wall_ms",
  "kernels_ms", "by_op": {op: {"us", "count"}}}`, per call, microseconds
  summed over the executor's threads."""
  import collections  # pylint: disable=g-import-not-at-top
  import glob  # pylint: disable=g-import-not-at-top

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top

  _time_calls(call, calls)
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    wall = statistics.mean(_time_calls(call, calls))
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    (trace,) = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    with open(trace, "rb") as f:
      space.ParseFromString(f.read())
  micros, counts = collections.Counter(), collections.Counter()
  for plane in space.planes:
    for line in plane.lines:
      if not line.name.startswith("tf_Compute"):  # the executor's threads
        continue
      for event in line.events:
        op = plane.event_metadata[event.metadata_id].name.split(":")[-1]
        if op not in PROFILE_WRAPPERS:
          micros[op] += event.duration_ps / 1e6 / calls
          counts[op] += 1 / calls
  return {
    "wall_ms": round(1000 * wall, 3),
    "kernels_ms": round(sum(micros.values()) / 1000, 3),
    "by_op": {
      op: {"us": round(us, 1), "count": round(counts[op])} for op, us in micros.most_common()
    },
  }


def kernel_time_by_op_type(export_dir, calls):
  """`kernel_time` of `serve_ids` at 12 and 128 tokens: `{"by_length":
  {tokens: ...}}`."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  from electra_tf.serving import loading  # pylint: disable=g-import-not-at-top

  serve = loading.load(export_dir).signatures["serve_ids"]
  by_length = {}
  for tokens in (SHORT_TOKENS, SEQ):
    request = _ids(tokens)
    by_length[tokens] = kernel_time(lambda request=request: serve(**request), calls)
  return {"by_length": by_length}


def save_floor_and_chain(directory, ops):
  """Writes two SavedModels: `floor` (returns its input) and `chain` (`ops`
  dependent element-wise ops on one float). Loaded in another process, so
  nothing of their tracing is shared with the timed calls."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  class Identity(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="x")])
    def serve(self, x):
      return {"output": tf.identity(x)}

  class Chain(tf.Module):
    @tf.function(
      input_signature=[
        tf.TensorSpec([1], tf.float32, name="x"),
        tf.TensorSpec([1], tf.float32, name="y"),
      ]
    )
    def serve(self, x, y):
      # A multiplication between the sines: Grappler fuses a run of unary
      # ops into one kernel, not this, so the executor runs `ops` kernels.
      for i in range(ops):
        x = tf.sin(x) if i % 2 else x * y
      return {"output": x}

  for name, module in (("floor", Identity()), ("chain", Chain())):
    tf.saved_model.save(module, os.path.join(directory, name), signatures={"serve": module.serve})
  return {}


def time_loaded(path, repeats):
  """p50/p90 and executed-op count of the `serve` signature at `path`
  (written by `save_floor_and_chain`)."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bench.graph_ops import op_types  # pylint: disable=g-import-not-at-top
  from bench.graph_ops import summary  # pylint: disable=g-import-not-at-top

  serve = tf.saved_model.load(path).signatures["serve"]
  specs = serve.structured_input_signature[1]
  if "y" in specs:
    args = {"x": tf.constant([0.5]), "y": tf.constant([0.999])}
  else:
    args = {"x": tf.zeros([1, SEQ], tf.int32)}
  executed = summary(op_types(lambda: serve(**args)))["executed"]
  return {"executed_ops": executed, **_time(lambda: serve(**args), max(3, repeats // 10), repeats)}


def time_onnx(path, repeats):
  """p50/p90 of ONNX Runtime (CPU, its default threads) on the float ONNX
  file at `path`, on the ids of `serve_ids`' requests cut to their real
  length (as `bench_serving` feeds it)."""
  make_call = _runtime(path)
  timed = {}
  for length, tokens, batch, n in (
    ("short", SHORT_TOKENS, 1, repeats),
    ("full", SEQ, 1, repeats),
    ("batch", SEQ, BATCH, max(3, repeats // 20)),
  ):
    feed = {k: v.numpy()[:, :tokens] for k, v in _ids(tokens, batch).items()}
    timed[length] = _time(make_call(feed), max(2, n // 10), n)
  return timed


def _onnx_file(model, vocab_file, directory):
  """The discriminator's float ONNX file, or None without the `onnx` extra."""
  from electra_tf.serving import portable  # pylint: disable=g-import-not-at-top

  try:
    portable.require("onnx")
  except portable.MissingExtra as e:
    print(f"serving_fixed_cost: the ONNX Runtime rows are left out: {e}")
    return None
  path = os.path.join(directory, "discriminator.onnx")
  return portable.export_portable(
    model, path, "onnx", kind="discriminator", vocab_file=vocab_file, max_seq_length=SEQ
  )


def _export(directory, quick):
  import keras  # pylint: disable=g-import-not-at-top

  from bench.graph_ops import _size  # pylint: disable=g-import-not-at-top
  from bench.graph_ops import _vocab_file  # pylint: disable=g-import-not-at-top
  from electra_tf.configs.pretraining import PretrainingConfig  # pylint: disable=g-import-not-at-top
  from electra_tf.models.electra_pretrainer import ElectraPretrainer  # pylint: disable=g-import-not-at-top
  from electra_tf.serving import export as export_lib  # pylint: disable=g-import-not-at-top

  keras.mixed_precision.set_global_policy("float32")
  vocab_size = 2000 if quick else VOCAB
  vocab_file = _vocab_file(directory, vocab_size)
  config = PretrainingConfig(
    "cost", directory, model_size="small", vocab_size=vocab_size, max_seq_length=SEQ, **_size(quick)
  )
  keras.utils.set_random_seed(0)
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  paths = {
    name: export_lib.export(
      model, "discriminator", vocab_file, os.path.join(directory, name), max_seq_length=SEQ,
      **options,
    )
    for name, options in EXPORTS.items()
  }  # fmt: skip
  return paths, _onnx_file(model, vocab_file, directory), model


def _matmul_flops(model, tokens):
  """Matmul FLOPs of the discriminator's forward on one request of `tokens`
  tokens: each Dense kernel once per token, attention's two products."""
  import numpy as np  # pylint: disable=g-import-not-at-top

  flops = 0
  for weight in model.discriminator.trainable_weights:
    shape = tuple(weight.shape)
    if len(shape) == 2 and "embeddings" not in weight.path:
      flops += 2 * tokens * int(np.prod(shape))
  config = model.discriminator.get_config()["bert_config"]
  hidden, layers = config["hidden_size"], config["num_hidden_layers"]
  flops += layers * 2 * 2 * tokens * tokens * hidden
  return flops


def run(quick=False):
  repeats = 20 if quick else 200
  rates = call_in_child("bench.bench_pretraining_step", "machine_rates")
  machine = {k: v for k, v in rates.items() if k.endswith("_per_s")}
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    paths, onnx_path, model = _export(tmp, quick)
    path = paths["default"]
    flops = _matmul_flops(model, SHORT_TOKENS)
    default = call_in_child(MODULE, "time_serve_ids", export_dir=path, repeats=repeats)
    ops = default["executed_ops"]
    call_in_child(MODULE, "save_floor_and_chain", directory=tmp, ops=ops)
    base = {
      name: call_in_child(MODULE, "time_loaded", path=os.path.join(tmp, name), repeats=repeats)
      for name in ("floor", "chain")
    }
    measured = {"default": default}
    for name, (export, settings) in VARIANTS.items():
      measured[name] = call_in_child(
        MODULE, "time_serve_ids", export_dir=paths[export], repeats=repeats, **settings
      )
    profile = call_in_child(
      MODULE, "kernel_time_by_op_type", export_dir=path, calls=max(5, repeats // 4)
    )
    onnx = onnx_path and call_in_child(MODULE, "time_onnx", path=onnx_path, repeats=repeats)
  for name, m in measured.items():
    for length, tokens in (("short", SHORT_TOKENS), ("full", SEQ)):
      row = dict(
        name=f"serve_ids, 1 request of {tokens} tokens, {name}",
        latency_ms=m[length]["p50_ms"],
        latency_p90_ms=m[length]["p90_ms"],
        executed_ops=m["executed_ops"],
        onednn_kernels=m["onednn_kernels"],
        # The two aims: within 2x of ONNX Runtime float, and a short
        # request at least 4x faster than a full-length one.
        short_speedup_over_full=round(m["full"]["p50_ms"] / m["short"]["p50_ms"], 2),
        **machine,
      )
      if onnx:
        row["times_onnx_float"] = round(m[length]["p50_ms"] / onnx[length]["p50_ms"], 2)
      rows.append(row)
    rows.append(
      _batch_row(f"serve_ids, batch of {BATCH} requests of {SEQ} tokens, {name}", m, onnx, machine)
    )
  if onnx:
    for length, tokens in (("short", SHORT_TOKENS), ("full", SEQ)):
      rows.append(
        dict(
          name=f"ONNX Runtime float on the same ids, 1 request of {tokens} tokens (the yardstick)",
          latency_ms=onnx[length]["p50_ms"],
          latency_p90_ms=onnx[length]["p90_ms"],
          short_speedup_over_full=round(onnx["full"]["p50_ms"] / onnx["short"]["p50_ms"], 2),
          **machine,
        )
      )
    rows.append(
      _batch_row(
        f"ONNX Runtime float on the same ids, batch of {BATCH} requests of {SEQ} tokens",
        onnx,
        onnx,
        machine,
      )
    )
  floor, chain = base["floor"], base["chain"]
  per_op_us = 1000 * (chain["p50_ms"] - floor["p50_ms"]) / max(1, chain["executed_ops"])
  rows.append(
    dict(
      name="loaded signature returning its input (the floor of a call)",
      latency_ms=floor["p50_ms"],
      latency_p90_ms=floor["p90_ms"],
      executed_ops=floor["executed_ops"],
      **machine,
    )
  )
  rows.append(
    dict(
      name=f"loaded signature running {chain['executed_ops']} dependent element-wise ops",
      latency_ms=chain["p50_ms"],
      latency_p90_ms=chain["p90_ms"],
      executed_ops=chain["executed_ops"],
      per_op_us=round(per_op_us, 2),
      **machine,
    )
  )
  for tokens, p in sorted(profile["by_length"].items(), key=lambda item: int(item[0])):
    top = list(p["by_op"].items())[:PROFILE_TOP]
    rest = sum(v["us"] for v in p["by_op"].values()) - sum(v["us"] for _, v in top)
    rows.append(
      dict(
        name=f"serve_ids, {tokens} tokens, kernel time by op type (profiler, summed over threads)",
        profiled_wall_ms=p["wall_ms"],
        kernels_ms=p["kernels_ms"],
        kernel_us={**{op: v["us"] for op, v in top}, "other": round(rest, 1)},
        kernel_count={op: v["count"] for op, v in top},
        **machine,
      )
    )
  total = default["short"]["p50_ms"]
  arithmetic_ms = 1000 * flops / (1e9 * machine["fp32_matmul_gflop_per_s"])
  ops_ms = ops * per_op_us / 1000
  rows.append(
    dict(
      name=f"serve_ids, {SHORT_TOKENS} tokens, split",
      latency_ms=total,
      floor_ms=floor["p50_ms"],
      ops_ms=round(ops_ms, 3),
      arithmetic_ms=round(arithmetic_ms, 3),
      matmul_flops=flops,
      rest_ms=round(total - floor["p50_ms"] - ops_ms - arithmetic_ms, 3),
      executed_ops=ops,
      **machine,
    )
  )
  return rows


def _batch_row(name, measured, onnx, machine):
  row = dict(
    name=name,
    latency_ms=measured["batch"]["p50_ms"],
    sequences_per_s=round(1000 * BATCH / measured["batch"]["p50_ms"], 1),
    **machine,
  )
  if onnx:
    row["times_onnx_float"] = round(measured["batch"]["p50_ms"] / onnx["batch"]["p50_ms"], 2)
  return row


MODULE = "bench.serving_fixed_cost"

if __name__ == "__main__":
  main(run, __doc__.split("\n\n")[0])

"""Serving: latency of the exported `serving_default` signature (raw text in,
replaced-token-detection probabilities out) on one short sentence (12
tokens, p50 and p90), and its throughput on a batch of 32 requests of mixed
lengths, for ELECTRA-Small (H=256, L=12, A=4, I=1024, E=128) at random init,
max_seq_length 128, float32, on this CPU. Both before (every request padded
to 128, `real_length=False`) and after (the encoder runs on the batch's
longest row, the export's default), in the same run; and the opt-in XLA
export (`jit_compile=True`, `length_multiple=16`) on real lengths and on full
padding, with the first request's time (which compiles).

The ids-in files of `export_saved_model --format litert|onnx` (float and
`--quantize dynamic-int8`) are timed in the same run on the same requests,
tokenised beforehand and sent at their real length (these files take any
length and have no tokenizer): one short sentence (p50, p90), one
full-length request (128 tokens, p50) and the batch of 32 padded to its
longest row, with each file's size next to the SavedModel's variables;
`serve_ids` of the real-length SavedModel on the same ids is the float
baseline without the in-graph tokenizer. These rows need the `litert` and
`onnx` extras and are left out (with a note) without them.

Every row carries the machine's matmul rates and memory bandwidth, measured
in the same run (`bench.bench_pretraining_step.machine_rates`).

The SavedModel is written by `electra_tf.serving.export` and loaded back
with `tf.saved_model.load`, so the tokenizer and packing run in the graph as
they would in TF Serving (without the server's RPC overhead).

  python -m bench.bench_serving [--quick] [--json out.json]
"""

import os
import statistics
import tempfile
import time

from bench.common import FIXTURE_VOCAB
from bench.common import call_in_child
from bench.common import main

SEQ = 128
BATCH = 32
# About 12 tokens with [CLS] and [SEP]: the one-sentence request.
SHORT_SENTENCE = "The quick brown fox jumps over the lazy dog."
SENTENCES = [
  "The quick brown fox jumps over the lazy dog near the river bank this morning.",
  "ELECTRA trains a discriminator to tell original tokens from replaced ones.",
  "Serving latency matters when a model answers requests one sentence at a time.",
  "A small model with twelve layers and hidden size 256 runs well on a CPU.",
]
# Words per request in the batch of 32: mostly short queries and sentences,
# a few paragraphs (the longest about 60 words, under half of S), the mix a
# search or classification service sees.
MIXED_WORDS = [4, 6, 7, 9, 10, 12, 14, 16, 18, 20, 22, 25, 28, 32, 40, 60]
# The XLA export's length bucket: 8 compilations per batch size at S=128.
XLA_LENGTH_MULTIPLE = 16


def mixed_batch(size):
  """`size` texts of the mixed lengths above, every third one a pair."""
  words = " ".join(SENTENCES).split()
  texts_a, texts_b = [], []
  for i in range(size):
    n = MIXED_WORDS[i % len(MIXED_WORDS)]
    text = " ".join(words[(i * 7 + j) % len(words)] for j in range(n))
    if i % 3 == 2:
      texts_a.append(text[: len(text) // 2])
      texts_b.append(text[len(text) // 2 :])
    else:
      texts_a.append(text)
      texts_b.append("")
  return texts_a, texts_b


def _vocab_file(directory):
  """The fixtures' vocab when present, else a synthetic BERT-layout one (30522)."""
  if os.path.isfile(FIXTURE_VOCAB):
    return FIXTURE_VOCAB
  tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  words = sorted({w.strip(".,").lower() for s in SENTENCES for w in s.split()})
  tokens += words + list(".,!?'")
  tokens += [f"##x{i}" for i in range(30522 - len(tokens))]
  path = os.path.join(directory, "vocab.txt")
  with open(path, "w") as f:
    f.write("\n".join(tokens) + "\n")
  return path


def _time_calls(fn, repeats):
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return times


def _percentile(times, fraction):
  ordered = sorted(times)
  return ordered[int(fraction * (len(ordered) - 1))]


def _dir_mb(path):
  total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
  return round(total / 1e6, 2)


def _portable_rows(model, vocab_file, tmp, requests, timing, common, baseline):
  """Rows for the LiteRT and ONNX files (float, int8) of `model`'s
  discriminator and for `serve_ids` of the SavedModel at `baseline`."""
  import numpy as np
  import tensorflow as tf

  from electra_tf.serving import portable

  serve_ids = tf.saved_model.load(baseline).signatures["serve_ids"]
  padded = {name: {k: tf.constant(v) for k, v in f.items()} for name, f in requests.items()}

  def saved_model(name):
    return lambda: serve_ids(**padded[name])

  runners = {"SavedModel serve_ids, real length (float)": (saved_model, _dir_mb(baseline))}
  for fmt in portable.FORMATS:
    try:
      portable.require(fmt)
    except portable.MissingExtra as e:
      print(f"bench_serving: {fmt} rows left out: {e}")
      continue
    for quantize in (None, "dynamic-int8"):
      path = os.path.join(
        tmp, "portable", portable.default_filename("discriminator", fmt, quantize)
      )
      portable.export_portable(
        model, path, fmt, quantize, kind="discriminator", vocab_file=vocab_file
      )
      runners[f"{'LiteRT' if fmt == 'litert' else 'ONNX Runtime'} {quantize or 'float'}"] = (
        _runtime(path),
        round(os.path.getsize(path) / 1e6, 2),
      )
  rows = []
  trimmed = {
    name: {k: v[:, : int(np.max(np.sum(f["input_mask"], axis=1)))] for k, v in f.items()}
    for name, f in requests.items()
  }
  short_p50 = {}
  for variant, (make, size_mb) in runners.items():
    feed = padded if variant.startswith("SavedModel") else trimmed
    calls = {name: (make(name) if variant.startswith("SavedModel") else make(feed[name]))
             for name in requests}  # fmt: skip
    single, full, batched = (timing(calls[n], n) for n in ("short", "full", "batch"))
    short_p50[variant] = statistics.median(single)
    rows.append(
      dict(
        name=f"ids in, {variant}: 1 sentence of 12 tokens / 1 of 128 / batch {BATCH} "
        "(ELECTRA-Small discriminator)",
        latency_ms=round(1000 * short_p50[variant], 2),
        latency_p90_ms=round(1000 * _percentile(single, 0.9), 2),
        full_length_latency_ms=round(1000 * statistics.median(full), 2),
        full_length_latency_p90_ms=round(1000 * _percentile(full, 0.9), 2),
        sequences_per_s=round(BATCH / statistics.median(batched), 1),
        file_mb=size_mb,
        speedup_over_float_saved_model=round(
          short_p50["SavedModel serve_ids, real length (float)"] / short_p50[variant], 2
        ),
        **common,
      )
    )
  return rows


def _runtime(path):
  """`make(feed)` → a no-argument call of the file at `path` on `feed`."""
  if path.endswith(".onnx"):
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return lambda feed: lambda: session.run(None, feed)
  from ai_edge_litert.interpreter import Interpreter

  runner = Interpreter(model_path=path, num_threads=os.cpu_count()).get_signature_runner()
  return lambda feed: lambda: runner(**feed)


def run(quick=False):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import keras
  import tensorflow as tf

  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.models.electra_pretrainer import ElectraPretrainer
  from electra_tf.serving import export as export_lib
  from electra_tf.serving import modules as serving_modules
  from electra_tf.text.tokenizer import ElectraTokenizer

  keras.mixed_precision.set_global_policy("float32")
  rates = call_in_child("bench.bench_pretraining_step", "machine_rates")
  machine = {k: v for k, v in rates.items() if k.endswith("_per_s")}
  one_a, one_b = tf.constant([SHORT_SENTENCE]), tf.constant([""])
  texts_a, texts_b = mixed_batch(BATCH)
  batch_a, batch_b = tf.constant(texts_a), tf.constant(texts_b)
  warmup, repeats = (2, 5) if quick else (10, 100)
  batch_repeats = 3 if quick else 30
  with tempfile.TemporaryDirectory() as tmp:
    vocab_file = _vocab_file(tmp)
    with open(vocab_file) as f:
      vocab_size = sum(1 for _ in f)
    config = PretrainingConfig(
      "small",
      tmp,
      model_size="small",
      embedding_size=128,
      vocab_size=vocab_size,
      max_seq_length=SEQ,
    )
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer.from_pretraining_config(config)
    model.build()
    # "after": the export as users make it (the encoder runs on the real length)
    start = time.perf_counter()
    path = export_lib.export(
      model, "discriminator", vocab_file, os.path.join(tmp, "export"), max_seq_length=SEQ
    )
    export_s = time.perf_counter() - start
    tokenizer = ElectraTokenizer(vocab_file=vocab_file)

    def save_module(variant, **kwargs):
      module = serving_modules.DiscriminatorServingModule(
        model.discriminator, tokenizer, SEQ, **kwargs
      )
      module_path = os.path.join(tmp, variant, "1")
      tf.saved_model.save(module, module_path, signatures=module.get_signatures())
      return module_path

    paths = {
      # "before": the same network with every request padded to S
      "full padding": save_module("full_padding", real_length=False),
      "real length": path,
      # the opt-in XLA export, as `export_saved_model --jit-compile --length-multiple 16` writes it
      "real length, XLA": export_lib.export(
        model,
        "discriminator",
        vocab_file,
        os.path.join(tmp, "export_xla"),
        max_seq_length=SEQ,
        length_multiple=XLA_LENGTH_MULTIPLE,
        jit_compile=True,
      ),
      "full padding, XLA": save_module("full_padding_xla", real_length=False, jit_compile=True),
    }

    timings, first_call = {}, {}
    for variant, model_path in paths.items():
      serve = tf.saved_model.load(model_path).signatures["serving_default"]
      first_call[variant] = _time_calls(lambda: serve(text_a=one_a, text_b=one_b), 1)[0]
      _time_calls(lambda: serve(text_a=one_a, text_b=one_b), warmup)
      single = _time_calls(lambda: serve(text_a=one_a, text_b=one_b), repeats)
      _time_calls(lambda: serve(text_a=batch_a, text_b=batch_b), 2)
      batched = _time_calls(lambda: serve(text_a=batch_a, text_b=batch_b), batch_repeats)
      lengths = serve(text_a=batch_a, text_b=batch_b)["input_mask"].numpy().sum(axis=1)
      timings[variant] = (single, batched, lengths)
    # The same requests as packed ids, for the ids-in files.
    serve = tf.saved_model.load(path).signatures["serving_default"]
    long_a = tf.constant([" ".join(SENTENCES * 8)])
    requests = {
      name: {k: v.numpy() for k, v in serve(text_a=a, text_b=b).items() if k in ("input_ids", "input_mask", "segment_ids")}
      for name, (a, b) in {"short": (one_a, one_b), "full": (long_a, one_b), "batch": (batch_a, batch_b)}.items()
    }  # fmt: skip

    def timing(call, name):
      n = batch_repeats if name == "batch" else repeats
      _time_calls(call, 2 if name == "batch" else warmup)
      return _time_calls(call, n)

    common = {"vocab_size": vocab_size, "max_seq_length": SEQ, "threads": os.cpu_count(), **machine}
    portable_rows = _portable_rows(model, vocab_file, tmp, requests, timing, common, path)

  rows = []
  single_p50 = {v: statistics.median(t[0]) for v, t in timings.items()}
  batch_p50 = {v: statistics.median(t[1]) for v, t in timings.items()}
  for variant, (single, batched, lengths) in timings.items():
    rows.append(
      dict(
        name=f"serving_default, 1 sentence of 12 tokens, {variant} (ELECTRA-Small, fp32)",
        latency_ms=round(1000 * single_p50[variant], 2),
        latency_p90_ms=round(1000 * _percentile(single, 0.9), 2),
        first_call_ms=round(1000 * first_call[variant], 1),
        sequences_per_s=round(1 / single_p50[variant], 1),
        speedup_over_full_padding=round(single_p50["full padding"] / single_p50[variant], 2),
        calls=repeats,
        **common,
      )
    )
    rows.append(
      dict(
        name=f"serving_default, batch {BATCH} of mixed lengths, {variant} (ELECTRA-Small, fp32)",
        latency_ms=round(1000 * batch_p50[variant], 2),
        sequences_per_s=round(BATCH / batch_p50[variant], 1),
        speedup_over_full_padding=round(batch_p50["full padding"] / batch_p50[variant], 2),
        tokens_per_row=f"{int(lengths.min())}..{int(lengths.max())} (mean {lengths.mean():.0f})",
        calls=batch_repeats,
        **common,
      )
    )
  rows[-1]["export_seconds"] = round(export_s, 1)
  return rows + portable_rows


if __name__ == "__main__":
  main(
    run,
    "TF Serving export: serving_default latency (1 sentence) and batch-32 throughput, "
    "full padding vs the request's real length, ELECTRA-Small, CPU; LiteRT and ONNX Runtime "
    "(float, int8) on ids",
  )

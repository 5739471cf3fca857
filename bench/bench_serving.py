"""Serving: latency of the exported `serving_default` signature (raw text in,
replaced-token-detection probabilities out) on one sentence, and its
throughput at batch 32, for ELECTRA-Small (H=256, L=12, A=4, I=1024, E=128)
at random init, max_seq_length 128, float32, on this CPU.

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
from bench.common import main

SEQ = 128
BATCH = 32
SENTENCES = [
  "The quick brown fox jumps over the lazy dog near the river bank this morning.",
  "ELECTRA trains a discriminator to tell original tokens from replaced ones.",
  "Serving latency matters when a model answers requests one sentence at a time.",
  "A small model with twelve layers and hidden size 256 runs well on a CPU.",
]


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


def run(quick=False):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import keras
  import tensorflow as tf

  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.models.electra_pretrainer import ElectraPretrainer
  from electra_tf.serving import export as export_lib

  keras.mixed_precision.set_global_policy("float32")
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
    start = time.perf_counter()
    path = export_lib.export(
      model, "discriminator", vocab_file, os.path.join(tmp, "export"), max_seq_length=SEQ
    )
    export_s = time.perf_counter() - start
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]

    one_a = tf.constant(SENTENCES[:1])
    one_b = tf.constant([""])
    batch_a = tf.constant([SENTENCES[i % len(SENTENCES)] for i in range(BATCH)])
    batch_b = tf.constant(
      [SENTENCES[(i + 1) % len(SENTENCES)] if i % 2 else "" for i in range(BATCH)]
    )
    warmup, repeats = (2, 5) if quick else (10, 100)
    batch_repeats = 3 if quick else 30
    _time_calls(lambda: serve(text_a=one_a, text_b=one_b), warmup)
    single = _time_calls(lambda: serve(text_a=one_a, text_b=one_b), repeats)
    _time_calls(lambda: serve(text_a=batch_a, text_b=batch_b), 2)
    batched = _time_calls(lambda: serve(text_a=batch_a, text_b=batch_b), batch_repeats)

  p50 = statistics.median(single)
  batch_p50 = statistics.median(batched)
  common = {"vocab_size": vocab_size, "max_seq_length": SEQ, "threads": os.cpu_count()}
  return [
    dict(
      name="serving_default, 1 sentence (ELECTRA-Small, fp32)",
      latency_ms=round(1000 * p50, 2),
      latency_p90_ms=round(1000 * sorted(single)[int(0.9 * (len(single) - 1))], 2),
      sequences_per_s=round(1 / p50, 1),
      calls=repeats,
      export_seconds=round(export_s, 1),
      **common,
    ),
    dict(
      name=f"serving_default, batch {BATCH} (ELECTRA-Small, fp32)",
      latency_ms=round(1000 * batch_p50, 2),
      sequences_per_s=round(BATCH / batch_p50, 1),
      tokens_per_s=round(BATCH * SEQ / batch_p50, 1),
      calls=batch_repeats,
      **common,
    ),
  ]


if __name__ == "__main__":
  main(
    run, "TF Serving export: serving_default latency and batch-32 throughput, ELECTRA-Small, CPU"
  )

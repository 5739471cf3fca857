"""Quantisation: what `--quantize dynamic-int8` costs in accuracy. A
classifier is fine-tuned on a pair task, exported as the float TF Serving
SavedModel and as LiteRT and ONNX files (float and dynamic-int8), and each
runtime's own outputs on the dev set are scored: accuracy, the change
against the float SavedModel in points, how many dev predictions differ from
the SavedModel's, the largest logit difference, and the file's size.

The task is synthetic (no data set is downloaded): two segments of common
words hold an odd number of polarity words between them ("good", "great",
... against "bad", "wrong", ...); the label says whether the positive ones
are more. Two trainings (`TRAININGS`): one to near 100% dev accuracy (wide
logit margins: int8 has room), one stopped early (logits close together,
where int8's small logit changes flip predictions). The model has
ELECTRA-Small's width (H=256, A=4, I=1024, E=128) and 4 layers, trained
from random init on this task, the shared fixtures' vocab (or a stand-in of 7,814 entries without them),
max_seq_length 32. `--quick`: a tiny model, a few hundred examples, one training.

A row is marked `within_bound` when its accuracy is within `BOUND_POINTS`
of the float SavedModel's; a larger change is reported, not hidden.

Needs the `litert` and `onnx` extras; a format whose extra is missing is
left out with a note.

  python -m bench.bench_quantization [--quick] [--json out.json]
"""

import os
import tempfile
import time

import numpy as np

from bench.common import FIXTURE_VOCAB
from bench.common import main

# The bound docs/benchmarks.md states: int8's dev accuracy within one point of
# the float SavedModel's.
BOUND_POINTS = 1.0
SEQ = 32
POSITIVE = ("good", "great", "happy", "nice", "best", "fine", "true", "free")
NEGATIVE = ("bad", "wrong", "worst", "dead", "hard", "false", "lost", "weak")
FILLER = (
  "the a cat man on ran city long short he she it they run and or in at by was is "
  "today old new big small red blue king day with from"
).split()
# ELECTRA-Small's width with 4 of its 12 layers, so that training from random
# init takes minutes of CPU, not a quarter of an hour.
SMALL_WIDTH = {
  "hidden_size": 256,
  "num_hidden_layers": 4,
  "num_attention_heads": 4,
  "intermediate_size": 1024,
}
# (train examples, epochs) of the full run: a model trained to near 100% on
# the task (wide logit margins), and one stopped early (about 66%, its logits
# close together), where int8's small logit changes flip predictions.
TRAININGS = ((2000, 2), (1000, 1))
TINY = {
  "hidden_size": 32,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 64,
}


def polarity_pairs(n, seed):
  """`n` examples `(texts_a, texts_b, labels)`: 1 to 9 (odd) polarity words
  spread over both segments among 3-9 filler words each; label 1 when the
  positive words outnumber the negative ones."""
  rng = np.random.default_rng(seed)
  texts_a, texts_b, labels = [], [], []
  for _ in range(n):
    polar = int(rng.choice([1, 3, 5, 7, 9]))
    positives = int(rng.integers(0, polar + 1))
    words = [str(rng.choice(POSITIVE)) for _ in range(positives)]
    words += [str(rng.choice(NEGATIVE)) for _ in range(polar - positives)]
    segments = [[str(w) for w in rng.choice(FILLER, int(rng.integers(3, 10)))] for _ in range(2)]
    for word in words:
      segment = segments[int(rng.integers(0, 2))]
      segment.insert(int(rng.integers(0, len(segment) + 1)), word)
    texts_a.append(" ".join(segments[0]))
    texts_b.append(" ".join(segments[1]))
    labels.append(int(positives > polar - positives))
  return texts_a, texts_b, np.asarray(labels, np.int32)


def vocab_file(directory):
  """The fixtures' vocab when present, else one with the task's words and
  fillers up to the same 7,814 entries."""
  if os.path.isfile(FIXTURE_VOCAB):
    return FIXTURE_VOCAB
  tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  tokens += list(POSITIVE + NEGATIVE) + FILLER
  tokens += [f"##x{i}" for i in range(7814 - len(tokens))]
  path = os.path.join(directory, "vocab.txt")
  with open(path, "w") as f:
    f.write("\n".join(tokens) + "\n")
  return path


def fine_tune(vocab, train, sizes, embedding_size, epochs, learning_rate, batch_size=32):
  """An `ElectraClassifier` of `sizes` (two classes), from random init,
  fitted on `train` = `(texts_a, texts_b, labels)`."""
  import keras
  import tensorflow as tf

  import electra_tf
  from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor

  with open(vocab) as f:
    vocab_size = sum(1 for line in f if line.strip())
  bert = dict(sizes, vocab_size=vocab_size, max_position_embeddings=max(SEQ, 64))
  keras.utils.set_random_seed(0)
  model = electra_tf.ElectraClassifier(
    bert,
    2,
    preprocessor=ElectraTextPreprocessor.from_vocab_file(vocab, max_seq_length=SEQ),
    embedding_size=embedding_size,
  )
  texts_a, texts_b, labels = train
  steps = epochs * -(-len(labels) // batch_size)
  # From random init every layer learns at the same rate (no layer-wise decay).
  model.compile(num_train_steps=steps, learning_rate=learning_rate, layerwise_lr_decay=1.0)
  data = tf.data.Dataset.from_tensor_slices(((texts_a, texts_b), labels))
  model.fit(data.shuffle(len(labels), seed=0).batch(batch_size), epochs=epochs, verbose=0)
  return model


def _accuracy(logits, labels):
  return float(np.mean(np.argmax(logits, axis=-1) == labels))


def dev_accuracy_rows(model, dev, workdir, formats=None, bound_points=BOUND_POINTS):
  """Scores `model` (an `ElectraClassifier` with a preprocessor) on `dev` =
  `(texts_a, texts_b, labels)` through its exports in `workdir`: the float
  TF Serving SavedModel (`serving_default` on the texts), then LiteRT and
  ONNX files, float and dynamic-int8, each run in its runtime on the packed
  ids of the same texts. Returns one row per export."""
  import tensorflow as tf

  from electra_tf.serving import portable

  texts_a, texts_b, labels = dev
  labels = np.asarray(labels)
  saved = model.export(os.path.join(workdir, "saved_model", "1"), format="tf_saved_model")
  serve = tf.saved_model.load(saved).signatures["serving_default"]
  reference = serve(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))["logits"].numpy()
  reference_accuracy = _accuracy(reference, labels)
  packed = {
    k: np.asarray(v, np.int32)
    for k, v in model.pack((tf.constant(texts_a), tf.constant(texts_b))).items()
  }
  rows = [
    dict(
      name=f"float SavedModel (serving_default on text), {len(labels)} dev examples",
      format="tf_saved_model",
      quantize="none",
      dev_accuracy=round(reference_accuracy, 4),
      file_mb=_dir_mb(os.path.join(saved, "variables")),
    )
  ]
  for fmt in formats or portable.FORMATS:
    try:
      portable.require(fmt)
    except portable.MissingExtra as e:
      print(f"bench_quantization: {fmt} rows left out: {e}")
      continue
    for quantize in (None, "dynamic-int8"):
      path = os.path.join(workdir, fmt, portable.default_filename("classifier", fmt, quantize))
      os.makedirs(os.path.dirname(path), exist_ok=True)
      model.export(path, format=fmt, quantize=quantize)
      logits = np.asarray(portable.run_exported(path, packed)["logits"], np.float64)
      accuracy = _accuracy(logits, labels)
      delta = 100 * (accuracy - reference_accuracy)
      rows.append(
        dict(
          name=f"{'LiteRT' if fmt == 'litert' else 'ONNX Runtime'} {quantize or 'float'}, "
          f"{len(labels)} dev examples",
          format=fmt,
          quantize=quantize or "none",
          dev_accuracy=round(accuracy, 4),
          points_vs_float_saved_model=round(delta, 2),
          within_bound=bool(abs(delta) <= bound_points),
          predictions_differing=int(np.sum(logits.argmax(-1) != reference.argmax(-1))),
          max_abs_logit_diff=float(f"{np.max(np.abs(logits - reference)):.3g}"),
          file_mb=round(os.path.getsize(path) / 1e6, 2),
        )
      )
  return rows


def _dir_mb(path):
  total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
  return round(total / 1e6, 2)


def run(quick=False):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import keras

  keras.mixed_precision.set_global_policy("float32")
  if quick:
    sizes, embedding, n_dev, learning_rate, trainings = TINY, 16, 128, 1e-3, ((256, 3),)
  else:
    sizes, embedding, n_dev, learning_rate, trainings = SMALL_WIDTH, 128, 1000, 3e-4, TRAININGS
  shape = "H={hidden_size} L={num_hidden_layers} A={num_attention_heads} I={intermediate_size}"
  rows = []
  for n_train, epochs in trainings:
    keras.utils.clear_session()
    with tempfile.TemporaryDirectory() as tmp:
      vocab = vocab_file(tmp)
      start = time.perf_counter()
      train = polarity_pairs(n_train, seed=1)
      model = fine_tune(vocab, train, sizes, embedding, epochs, learning_rate)
      train_s = time.perf_counter() - start
      found = dev_accuracy_rows(model, polarity_pairs(n_dev, seed=2), tmp)
    common = {
      "model": shape.format(**sizes) + f" E={embedding}",
      "train_examples": n_train,
      "epochs": epochs,
      "train_seconds": round(train_s, 1),
      "max_seq_length": SEQ,
      "bound_points": BOUND_POINTS,
    }
    rows += [
      dict(row, name=f"{row['name']}, {epochs} epoch(s) on {n_train}", **common) for row in found
    ]
  return rows


if __name__ == "__main__":
  main(
    run,
    "int8 accuracy: dev accuracy of LiteRT and ONNX Runtime exports (float, dynamic-int8) "
    "against the float SavedModel, a classifier fine-tuned on a synthetic pair task",
  )

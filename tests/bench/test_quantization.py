"""`bench.bench_quantization`: the synthetic pair task's labels follow its
rule, and the dev accuracy of each export is computed from that runtime's
own outputs (labels made from the float model's predictions, some flipped,
give a known accuracy for the float files and a bounded one for int8)."""

import importlib.util

import numpy as np
import pytest
import tensorflow as tf

from bench import bench_quantization as bq

EXTRAS_INSTALLED = all(
  importlib.util.find_spec(m) for m in ("ai_edge_litert", "onnxruntime", "tf2onnx", "onnx")
)


def test_labels_say_whether_positive_words_outnumber_negative_ones():
  texts_a, texts_b, labels = bq.polarity_pairs(200, seed=3)
  for a, b, label in zip(texts_a, texts_b, labels):
    words = (a + " " + b).split()
    positives = sum(w in bq.POSITIVE for w in words)
    negatives = sum(w in bq.NEGATIVE for w in words)
    assert (positives + negatives) % 2 == 1
    assert label == int(positives > negatives)
  assert 0.2 < labels.mean() < 0.8  # both classes, so accuracy means something
  assert bq.polarity_pairs(5, seed=3)[0] == texts_a[:5]  # a seed gives the same set


@pytest.mark.slow
@pytest.mark.skipif(
  not EXTRAS_INSTALLED,
  reason="the litert and onnx extras are not installed: pip install -e '.[litert,onnx]'",
)
def test_dev_accuracy_comes_from_each_runtimes_outputs(tmp_path):
  vocab = bq.vocab_file(str(tmp_path))
  model = bq.fine_tune(vocab, bq.polarity_pairs(8, seed=1), bq.TINY, 8, 1, 1e-3, batch_size=8)
  texts_a, texts_b, _ = bq.polarity_pairs(24, seed=2)
  predicted = np.argmax(model.predict((tf.constant(texts_a), tf.constant(texts_b))), axis=-1)
  flipped = 5
  labels = predicted.copy()
  labels[:flipped] = 1 - labels[:flipped]
  expected = 1 - flipped / len(labels)

  rows = bq.dev_accuracy_rows(model, (texts_a, texts_b, labels), str(tmp_path), formats=("litert",))

  by_kind = {(r["format"], r["quantize"]): r for r in rows}
  assert sorted(by_kind) == [
    ("litert", "dynamic-int8"),
    ("litert", "none"),
    ("tf_saved_model", "none"),
  ]
  assert by_kind["tf_saved_model", "none"]["dev_accuracy"] == pytest.approx(expected, abs=1e-4)
  floating = by_kind["litert", "none"]
  assert floating["dev_accuracy"] == pytest.approx(expected, abs=1e-4)
  assert floating["predictions_differing"] == 0 and floating["max_abs_logit_diff"] < 1e-4
  assert floating["points_vs_float_saved_model"] == 0 and floating["within_bound"]
  int8 = by_kind["litert", "dynamic-int8"]
  # Each prediction int8 changes moves the accuracy by one example at most.
  moved = abs(int8["dev_accuracy"] - expected) * len(labels)
  assert moved <= int8["predictions_differing"] + 0.01  # dev_accuracy is rounded to 4 places
  assert int8["within_bound"] == (abs(int8["points_vs_float_saved_model"]) <= bq.BOUND_POINTS)
  assert int8["max_abs_logit_diff"] > floating["max_abs_logit_diff"]  # its weights are int8
  assert int8["file_mb"] < floating["file_mb"]

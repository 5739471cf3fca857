"""A held-out set smaller than `num_eval_steps` batches: every example is
measured once, one line says how many batches were asked and how many
distinct examples were measured, and the standard errors are those of the
distinct examples (a repeating pipeline shrinks them)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.runtime import distribution
from electra_tf.training import held_out_evaluation
from electra_tf.training import pretraining_run
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import self_made_hparams

NUM_EXAMPLES = 10  # 3 batches of 4 (the last holds 2); 5 asked


def _config(tmp_path, **hparams):
  make_data_dir(tmp_path, num_examples=NUM_EXAMPLES, num_files=3)
  return PretrainingConfig(
    "m", str(tmp_path), **self_made_hparams(eval_batch_size=4, num_eval_steps=5, **hparams)
  )


def _records(tmp_path):
  """Every record's input_ids, read straight from the files."""
  files = sorted((tmp_path / "pretrain_tfrecords").iterdir())
  rows = []
  for path in files:
    for raw in tf.data.TFRecordDataset(str(path)):
      example = tf.train.Example.FromString(raw.numpy())
      rows.append(tuple(example.features.feature["input_ids"].int64_list.value))
  return rows


def test_eval_dataset_holds_each_example_once_and_says_so(tmp_path):
  config = _config(tmp_path)
  dataset, num_examples = pretraining_run.make_eval_dataset(config)
  assert num_examples == NUM_EXAMPLES
  lines = []
  steps = pretraining_run.eval_steps(5, num_examples, 4, lines.append)
  assert steps == 3
  assert lines == [
    "held-out evaluation: num_eval_steps=5 batches of 4 (20 examples) asked, but the held-out "
    "set holds 10 examples: measuring 3 batches, each of the 10 examples once"
  ]
  seen = [tuple(row) for batch in dataset.take(5) for row in batch["input_ids"].numpy().tolist()]
  expected = _records(tmp_path)
  assert len(set(expected)) == NUM_EXAMPLES  # distinct records, so repeats would show
  assert sorted(seen) == sorted(expected)
  # Enough data: no line, the steps asked.
  assert pretraining_run.eval_steps(2, num_examples, 4, lines.append) == 2 and len(lines) == 1
  assert pretraining_run.eval_steps(3, num_examples, 4, lines.append) == 3 and len(lines) == 1
  # Several workers (each takes every n-th batch): full batches every one
  # has, the same number on each.
  assert pretraining_run.eval_steps(5, num_examples, 4, lines.append, workers=2) == 1
  assert lines[-1].endswith("measuring 1 batches on each of 2 workers, 8 distinct examples once")
  with pytest.raises(ValueError, match="fewer than one batch of eval_batch_size=8 for each of 2"):
    pretraining_run.eval_steps(5, num_examples, 8, lines.append, workers=2)
  # The repeating training pipeline, asked the same, counts examples twice.
  repeating = pretraining_run.make_dataset(config, is_training=False)
  again = [tuple(r) for b in repeating.take(5) for r in b["input_ids"].numpy().tolist()]
  assert len(again) == 20 and len(set(again)) <= NUM_EXAMPLES


@pytest.mark.slow
def test_standard_errors_are_those_of_the_distinct_examples(tmp_path):
  config = _config(tmp_path, seed=3)
  model = pretraining_run.build_pretrainer(config, distribution.setup_distribution(config))
  dataset, _ = pretraining_run.make_eval_dataset(config)
  lines = []
  asked_more = held_out_evaluation.real_token_metrics(model, dataset, 5, lines.append)
  assert asked_more["num_batches"] == 3 and asked_more["num_examples"] == NUM_EXAMPLES
  assert len(lines) == 1 and "5 batches asked" in lines[0] and "10 examples" in lines[0]
  exact = held_out_evaluation.real_token_metrics(model, dataset, 3, lines.append)
  assert len(lines) == 1  # no line when the dataset holds what was asked
  keys = [f"{key}_margin_se" for key, *_ in held_out_evaluation.METRIC_ROWS]
  finite = [k for k in keys if np.isfinite(exact[k])]
  assert finite, exact
  for key in keys:
    np.testing.assert_equal(asked_more[key], exact[key])
  # Two passes (fresh masks over the same batches): twice the draws, the
  # same 3 distinct batches and 10 examples behind the errors.
  two = held_out_evaluation.real_token_metrics(model, dataset, 5, lines.append, passes=2)
  assert (two["num_batches"], two["num_examples"], two["passes"]) == (3, NUM_EXAMPLES, 2)
  assert two["real_tokens"] == 2 * exact["real_tokens"]
  assert two["masked_positions"] > exact["masked_positions"]
  assert lines[-1].endswith("measured each once per pass (2 passes with fresh masks)")
  # A repeating pipeline (the original's eval input) reuses examples and
  # reports other, smaller-looking errors for the same evidence.
  repeated = held_out_evaluation.real_token_metrics(
    model, pretraining_run.make_dataset(config, is_training=False), 8
  )
  assert repeated["num_examples"] == 32 > NUM_EXAMPLES
  assert any(repeated[k] != exact[k] for k in finite)


@pytest.mark.slow
def test_do_eval_stops_at_the_end_of_the_held_out_set(tmp_path, capsys):
  config = _config(tmp_path, num_train_steps=1, seed=3)
  assert pretraining_run.train_or_eval(config) == 1
  capsys.readouterr()
  config = PretrainingConfig(
    "m",
    str(tmp_path),
    **self_made_hparams(do_train=False, do_eval=True, eval_batch_size=4, num_eval_steps=5, seed=3),
  )
  results = pretraining_run.train_or_eval(config)
  out = capsys.readouterr().out
  line = [x for x in out.splitlines() if x.startswith("held-out evaluation:")]
  assert len(line) == 1 and "measuring 3 batches" in line[0], out
  assert results["global_step"] == 1

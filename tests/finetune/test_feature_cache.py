"""The fine-tuning feature cache cannot lie: cached records are reused only
when every setting that shapes them and every file they were read from is
unchanged; otherwise they are rebuilt with one line naming what changed. A
file that gives no example is one line, leaves no cache, and a fixed file
works on the next run."""

import json
import os
import shutil
import signal

import pytest
import tensorflow as tf

from electra_tf import run_finetuning
from electra_tf.finetune import preprocessing
from electra_tf.finetune import task_builder
from electra_tf.training import finetuning_run
from electra_tf.utils import interrupts
from tests.helpers.finetuning_testdata import WORDS
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file

# SST-2's layout: a `sentence<TAB>label` header, then rows.
SENTENCES = [
  ("The Cat sat on the mat", 1),
  ("the dog ran fast", 0),
  ("it was a Great film", 1),
  ("the movie is awful", 0),
  ("he walks in Paris", 1),
  ("she is sad", 0),
  ("the red fox jumps over the lazy dog", 1),
  ("they ran slow", 0),
]


def _sst(n_rows):
  rows = [SENTENCES[i % len(SENTENCES)] for i in range(n_rows)]
  return tsv([["sentence", "label"]] + [[s, label] for s, label in rows])


@pytest.fixture
def data(tmp_path):
  data_dir, vocab_size = make_data_dir(tmp_path)
  write_task_file(data_dir, "sst", "train.tsv", _sst(4))
  write_task_file(data_dir, "sst", "dev.tsv", _sst(4))
  return data_dir, vocab_size


def _preprocessor(data, **hparams):
  data_dir, vocab_size = data
  hparams = tiny_hparams(vocab_size, **{"task_names": ["sst"], **hparams})
  config = finetuning_config("m", data_dir, **hparams)
  tasks = task_builder.get_tasks(config, finetuning_run.finetuning_tokenizer(config))
  return preprocessing.Preprocessor(config, tasks), tasks


def _train_records(data, capsys, **hparams):
  """(decoded training records, the lines the build printed)."""
  pre, tasks = _preprocessor(data, **hparams)
  path, n_records = pre.serialize(tasks, True, "train")
  records = list(tf.data.TFRecordDataset(path).map(pre.decode))
  assert len(records) == n_records
  out = capsys.readouterr().out
  return records, [line for line in out.splitlines() if "fine-tuning features" in line]


def _ids(records):
  return sorted(tuple(r["input_ids"].numpy().tolist()) for r in records)


@pytest.mark.parametrize(
  "before, after, phrase",
  [
    ({"max_seq_length": 64}, {"max_seq_length": 128}, "max_seq_length changed (64 → 128)"),
    ({"do_lower_case": True}, {"do_lower_case": False}, "do_lower_case changed (true → false)"),
    ({"train_batch_size": 4}, {"train_batch_size": 8}, "padding_batch_size changed (4 → 8)"),
    ({"seed": 1}, {"seed": 2}, "shuffle_seed changed (1 → 2)"),
  ],
)
def test_a_changed_setting_rebuilds_with_one_line(data, capsys, before, after, phrase):
  first, lines = _train_records(data, capsys, **before)
  assert lines == []
  again, lines = _train_records(data, capsys, **before)
  assert lines == [] and _ids(again) == _ids(first)  # reused
  second, lines = _train_records(data, capsys, **after)
  assert len(lines) == 1 and lines[0].startswith("Rebuilding the fine-tuning features "), lines
  assert lines[0].endswith(": " + phrase), lines
  if "max_seq_length" in after:
    assert {r["input_ids"].shape[0] for r in second} == {128}
  if "do_lower_case" in after:
    assert _ids(second) != _ids(first)  # "The Cat" is no longer "the cat"
  if "train_batch_size" in after:
    assert (len(first), len(second)) == (4, 8)


def test_a_changed_vocab_rebuilds_with_one_line(data, capsys):
  data_dir, _ = data
  first, _ = _train_records(data, capsys)
  vocab = os.path.join(data_dir, "vocab.txt")
  with open(vocab, encoding="utf-8") as f:
    tokens = f.read().split("\n")
  # The same tokens in another order: same size, other ids.
  specials = tokens[: -len(WORDS) - 1]
  with open(vocab, "w", encoding="utf-8") as f:
    f.write("\n".join(specials + list(reversed(WORDS))) + "\n")
  second, lines = _train_records(data, capsys)
  assert len(lines) == 1 and f"the vocab {vocab} changed (same size, sha256 " in lines[0], lines
  assert _ids(second) != _ids(first)


def test_a_grown_train_tsv_is_read_again(data, capsys):
  data_dir, _ = data
  first, _ = _train_records(data, capsys)
  assert len(first) == 4
  path = write_task_file(data_dir, "sst", "train.tsv", _sst(16))
  second, lines = _train_records(data, capsys)
  assert len(second) == 16
  assert len(lines) == 1 and f": {path} changed (" in lines[0] and " bytes)" in lines[0], lines


def test_metadata_of_an_older_version_is_rebuilt(data, capsys):
  pre, tasks = _preprocessor(data)
  path, metadata = pre.dataset_paths(tasks, "train")
  os.makedirs(os.path.dirname(path))
  # An earlier version's cache: an empty record file and a bare count.
  open(path, "wb").close()
  with open(metadata, "w") as f:
    json.dump({"n_examples": 0}, f)
  records, lines = _train_records(data, capsys)
  assert len(records) == 4
  assert len(lines) == 1 and "without the settings it was built with" in lines[0], lines
  with open(metadata) as f:
    assert json.load(f)["format"] == preprocessing.METADATA_FORMAT


def test_a_changed_qa_window_rebuilds(data, capsys):
  data_dir, _ = data
  paragraph = {
    "context": "the cat sat on the mat . the dog ran fast in paris",
    "qas": [{"id": "q0", "question": "who sat ?", "is_impossible": False,
             "answers": [{"text": "the cat", "answer_start": 0}]}],
  }  # fmt: skip
  write_task_file(data_dir, "squad", "train.json", squad_json([paragraph]))
  hparams = {"task_names": ["squad"], "max_seq_length": 12}
  first, lines = _train_records(data, capsys, doc_stride=4, **hparams)
  second, lines = _train_records(data, capsys, doc_stride=2, **hparams)
  assert len(lines) == 1 and lines[0].endswith(": doc_stride changed (4 → 2)"), lines
  windows = lambda records: sum(int(r["task_id"]) == 0 for r in records)  # noqa: E731
  assert windows(second) > windows(first) > 1


def _cache_files(data_dir):
  cache = os.path.join(data_dir, "models", "m", "finetuning_tfrecords")
  if not os.path.isdir(cache):
    return []
  return sorted(
    name
    for _, _, names in os.walk(cache)
    for name in names
    if name.endswith((".tfrecord", ".metadata"))
  )


def test_a_tsv_without_usable_rows_leaves_no_cache_and_a_fixed_one_works(data, capsys):
  data_dir, _ = data
  # Wrong columns: one column where SST-2 has the sentence and the label.
  path = write_task_file(data_dir, "sst", "train.tsv", tsv([["sentence"], ["the cat"], ["a dog"]]))
  pre, tasks = _preprocessor(data)
  with pytest.raises(ValueError) as e:
    pre.serialize(tasks, True, "train")
  assert str(e.value) == (
    f"{path}, line 2: 1 tab-separated column, task sst needs at least 2; every row was skipped, "
    "none is usable"
  )
  assert _cache_files(data_dir) == []
  write_task_file(data_dir, "sst", "train.tsv", _sst(4))
  records, lines = _train_records(data, capsys)
  assert len(records) == 4 and lines == []


def test_a_first_build_stopped_while_featurising_leaves_no_empty_cache_folder(data, monkeypatch):
  """SIGTERM (as `interrupts.Stopped`) midway through the records: neither
  the partial records nor the folders the build made stay behind."""
  pre, tasks = _preprocessor(data)
  cache_root = os.path.dirname(pre._config.preprocessed_data_dir)
  real_featurize = tasks[0].featurize
  seen = []

  def stopped_midway(example, *args, **kwargs):
    seen.append(example)
    if len(seen) == 3:
      raise interrupts.Stopped(signal.SIGTERM)
    return real_featurize(example, *args, **kwargs)

  monkeypatch.setattr(tasks[0], "featurize", stopped_midway)
  with pytest.raises(interrupts.Stopped):
    pre.serialize(tasks, True, "train")
  assert len(seen) == 3
  assert not os.path.exists(cache_root)


def test_a_failed_rebuild_leaves_no_stale_cache(data, capsys):
  data_dir, _ = data
  records, _ = _train_records(data, capsys)
  assert len(_cache_files(data_dir)) == 2
  path = write_task_file(data_dir, "sst", "train.tsv", _sst(3) + "the cat\t7\n")
  pre, tasks = _preprocessor(data)
  with pytest.raises(ValueError, match=rf"^{path}, line 5: label '7' is not one of"):
    pre.serialize(tasks, True, "train")
  assert f"{path} changed (" in capsys.readouterr().out
  assert _cache_files(data_dir) == []
  write_task_file(data_dir, "sst", "train.tsv", _sst(4))
  again, lines = _train_records(data, capsys)
  assert _ids(again) == _ids(records) and lines == []


@pytest.mark.parametrize(
  "task, file_name, text, expected",
  [
    ("squad", "train.json", squad_json([]), "{path}: no train example, it has no question"),
    ("chunk", "train.txt", "-DOCSTART- -X- -X- O\n\n", "{path}: no sentence; expected lines"),
  ],
)
def test_qa_and_tagging_files_without_examples_leave_no_cache(
  data, task, file_name, text, expected
):
  data_dir, _ = data
  path = write_task_file(data_dir, task, file_name, text)
  pre, tasks = _preprocessor(data, task_names=[task])
  with pytest.raises(ValueError) as e:
    pre.serialize(tasks, True, "train")
  assert str(e.value).startswith(expected.format(path=path)) and f"(task {task})" in str(e.value)
  assert _cache_files(data_dir) == []


def _main(data, capsys, **hparams):
  data_dir, vocab_size = data
  hparams = tiny_hparams(vocab_size, **{"task_names": ["sst"], "init_checkpoint": None, **hparams})
  code = run_finetuning.main(
    ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  )
  captured = capsys.readouterr()
  return code, captured.out, [line for line in captured.err.splitlines() if line.strip()]


@pytest.mark.parametrize(
  "text, expected",
  [
    ("", "{path}: the file is empty; expected tab-separated rows (task sst)"),
    ("sentence\tlabel\n", "{path}: no rows after the header line (task sst)"),
    (
      "sentence\nthe cat\na dog\n",
      "{path}, line 2: 1 tab-separated column, task sst needs at least 2; every row was "
      "skipped, none is usable",
    ),
  ],
)
def test_run_finetuning_refuses_a_tsv_without_examples_in_one_line(data, capsys, text, expected):
  data_dir, _ = data
  path = write_task_file(data_dir, "sst", "train.tsv", text)
  code, _, lines = _main(data, capsys)
  assert code == 2 and lines == ["run_finetuning: error: " + expected.format(path=path)], lines
  assert _cache_files(data_dir) == []


@pytest.mark.slow  # two runs of the command (~40 s)
def test_run_finetuning_at_64_then_128_rebuilds_the_features(data, capsys):
  data_dir, _ = data
  code, out, lines = _main(data, capsys, max_seq_length=64)
  assert code == 0, lines
  assert "Rebuilding" not in out
  cache = os.path.join(data_dir, "models", "m", "finetuning_tfrecords", "sst_tfrecords")

  def lengths(split):
    records = tf.data.TFRecordDataset(os.path.join(cache, f"sst_{split}.tfrecord"))
    return {
      len(tf.train.Example.FromString(r.numpy()).features.feature["input_ids"].int64_list.value)
      for r in records
    }

  assert lengths("train") == lengths("dev") == {64}
  # The trained trial is another run's now: refused, and started over once removed.
  code, out, lines = _main(data, capsys, max_seq_length=128)
  assert code == 2 and "max_seq_length 64 → 128" in lines[-1], lines
  trial = os.path.join(data_dir, "models", "m", "finetuning_models", "sst_model_1")
  shutil.rmtree(trial)
  code, out, lines = _main(data, capsys, max_seq_length=128)
  assert code == 0, lines
  rebuilt = [line for line in out.splitlines() if line.startswith("Rebuilding")]
  assert len(rebuilt) == 2, out  # train and dev, one line each
  assert all(line.endswith("max_seq_length changed (64 → 128)") for line in rebuilt), rebuilt
  assert lengths("train") == lengths("dev") == {128}

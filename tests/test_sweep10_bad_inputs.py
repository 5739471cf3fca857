"""Newcomer sweep 10's bad cases (bench/reports/newcomer_sweep_10.md), one
test per class: a late signal after a clean stop, the demo's stale stages
and bad input, the hparams page tool's files, empty `--tasks`/`--hparams`,
an infinite number, a pair task without second texts, non-text items, texts
as arrays for `fit`, non-bool casing flags, and sizes no model can have."""

import os

import numpy as np
import pytest

import electra_tf
from electra_tf import demo
from electra_tf import hparams_reference
from electra_tf import run_pretraining
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune import task_builder
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.finetune.text_preprocessor import as_strings
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import finetuning_testdata
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.subprocesses import run_python
from tfrecords_tools import glue_sentences_corpus

# --- kind 1: a signal after the stop was handled (06) ---------------------------


def test_a_late_signal_during_shutdown_keeps_the_commands_status():
  """SIGTERM, then SIGHUP while the interpreter shuts down: the status
  stays the one the command returned (143), not a death by SIGHUP."""
  code = (
    "import atexit, os, signal\n"
    "from electra_tf.utils import interrupts\n"
    "atexit.register(lambda: os.kill(os.getpid(), signal.SIGHUP))\n"
    "interrupts.exit_with(143)\n"
  )
  result = run_python(["-c", code])
  assert result.returncode == 143, (result.returncode, result.stderr[-2000:])


# --- the demo (08, 09, 28) --------------------------------------------------------


def _finished_demo(out):
  paths = demo._paths(str(out))  # pylint: disable=protected-access
  for key in ("corpus", "tfrecords", "model_dir", "export"):
    os.makedirs(paths[key])
  with open(paths["vocab"], "w") as f:
    f.write("[PAD]\n")
  with open(paths["marker"], "w") as f:  # a folder the demo made
    f.write("")
  return paths


def test_rebuilding_the_demo_vocab_alone_is_refused_where_later_stages_used_it(tmp_path, capsys):
  paths = _finished_demo(tmp_path / "demo")
  with pytest.raises(SystemExit) as e:
    demo.main(["--output-dir", str(tmp_path / "demo"), "--stages", "vocab"])
  assert e.value.code == 2
  err = capsys.readouterr().err
  assert "--stages vocab rebuilds" in err and "data, pretrain, export stage(s)" in err
  assert open(paths["vocab"]).read() == "[PAD]\n"  # untouched


def test_a_stage_s_bad_input_ends_the_demo_in_one_line(tmp_path, monkeypatch, capsys):
  _finished_demo(tmp_path / "demo")

  def refused(out, args):
    raise ValueError("records made with another vocab")

  monkeypatch.setitem(demo.STAGES, "pretrain", (refused, "tfrecords", "data"))
  assert demo.main(["--output-dir", str(tmp_path / "demo"), "--stages", "pretrain"]) == 2
  assert capsys.readouterr().err.strip().splitlines()[-1] == (
    "demo: error: records made with another vocab"
  )


def test_a_demo_output_dir_that_is_a_file_is_named(tmp_path, capsys):
  (tmp_path / "out").write_text("")
  with pytest.raises(SystemExit) as e:
    demo.main(["--output-dir", str(tmp_path / "out")])
  assert e.value.code == 2
  assert f"--output-dir {str(tmp_path / 'out')!r} is a file; expected a directory" in (
    capsys.readouterr().err
  )


# --- files of the wrong kind (18, 19, 20, 24, 34) ---------------------------------


def test_hparams_reference_names_a_page_it_cannot_read(tmp_path, capsys):
  (tmp_path / "utf16.md").write_bytes("# hparams\n".encode("utf-16"))
  cases = [
    (["--check", str(tmp_path)], "is a directory"),
    (["--check", str(tmp_path / "utf16.md")], "is not UTF-8 text"),
    (["--write", str(tmp_path / "missing.md")], "does not exist"),
  ]
  for argv, problem in cases:
    assert hparams_reference.main(argv) == 2
    assert one_line(capsys) == f"error: {argv[0]} {argv[1]!r} {problem}; expected the hparams page"
  assert not (tmp_path / "missing.md").exists()


def test_glue_sentences_corpus_with_no_task_writes_nothing(tmp_path, capsys):
  argv = ["--glue-dir", str(tmp_path), "--output-dir", str(tmp_path / "out"), "--tasks", ""]
  assert glue_sentences_corpus.main(argv) == 2
  assert one_line(capsys).startswith("glue_sentences_corpus: --tasks names no task")
  assert not (tmp_path / "out").exists()


def test_an_empty_hparams_flag_is_refused_not_read_as_the_defaults(tmp_path, capsys):
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", ""]
  assert run_pretraining.main(argv) == 2
  assert "--hparams is empty (an unset shell variable?)" in one_line(capsys)


# --- values no run can use (32, 40, 47, 49, 16) -----------------------------------


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_an_infinite_number_is_refused(tmp_path, value):
  """JSON's 1e999 reads as infinity: it passed `>= 0` and the run diverged."""
  with pytest.raises(ValueError, match=r"learning_rate=.*inf; expected a finite number"):
    PretrainingConfig("m", str(tmp_path), learning_rate=value)


def test_a_pair_task_whose_second_texts_are_all_empty_is_refused(tmp_path):
  data_dir, vocab_size = finetuning_testdata.make_data_dir(tmp_path)
  rows = [["index", "sentence1", "sentence2", "label"], [0, "a cat", "", "entailment"]]
  rows.append([1, "a dog", " ", "not_entailment"])
  path = finetuning_testdata.write_task_file(
    data_dir, "rte", "train.tsv", finetuning_testdata.tsv(rows)
  )
  hparams = finetuning_testdata.tiny_hparams(vocab_size, task_names=["rte"])
  tokenizer = tokenization.FullTokenizer(os.path.join(data_dir, "vocab.txt"))
  task = task_builder.get_task(finetuning_config("m", data_dir, **hparams), "rte", tokenizer)
  with pytest.raises(ValueError) as e:
    task.get_examples("train")
  assert str(e.value) == (
    f"{path}: the second text (column 2) is empty in every row; task rte pairs two texts"
  )


def test_non_text_items_are_named_by_every_text_reader():
  """`predict_answers(["who sat ?"], [123])` answered '123' (str() of it)."""
  with pytest.raises(ValueError, match=r"expected texts \(str\); got a int \(123\)"):
    as_strings(["who sat ?", 123])
  assert as_strings(np.array(["a", "b"])) == ["a", "b"]


def test_casing_flags_must_be_bools():
  with pytest.raises(ValueError, match=r"do_lower_case='no'; expected True, False or None"):
    electra_tf.ElectraClassifier.from_checkpoint("anywhere", do_lower_case="no", num_classes=2)


def test_sizes_no_model_can_have_are_named_when_it_is_built():
  with pytest.raises(ValueError, match=r"^bert_config vocab_size=0; expected a positive integer$"):
    electra_tf.ElectraBackbone(dict(TINY_ENCODER, vocab_size=0))


def test_the_pretrainer_names_a_config_of_another_kind(tmp_path):
  config = finetuning_config("m", str(tmp_path), task_names=["sst"])
  with pytest.raises(ValueError, match=r"takes a PretrainingConfig, got FinetuningConfig"):
    ElectraPretrainer.from_pretraining_config(config)


# --- texts given to fit and evaluate as arrays (45) -------------------------------


def test_fit_and_evaluate_take_texts_as_arrays_or_lists():
  """Keras' arrays cannot hold strings ("Invalid dtype: str352"): texts with
  labels are batched by the model, as `predict` does."""
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]
  preprocessor = ElectraTextPreprocessor(ElectraTokenizer(vocabulary=vocab), max_seq_length=8)
  model = electra_tf.ElectraClassifier(
    dict(TINY_ENCODER, vocab_size=len(vocab)), 2, preprocessor=preprocessor
  )
  model.compile(num_train_steps=2)
  texts = np.array(["the cat sat", "the dog ran", "the cat ran", "the dog sat"])
  history = model.fit(texts, np.array([1, 0, 1, 0]), batch_size=2, epochs=1, verbose=0)
  assert len(history.history["loss"]) == 1
  loss = model.evaluate(list(texts), [1, 0, 1, 0], verbose=0, return_dict=True)["loss"]
  assert np.isfinite(loss)
  pairs = (list(texts), ["a", "b", "c", "d"])
  assert model.fit(pairs, np.array([1, 0, 1, 0]), batch_size=4, verbose=0).history["loss"]

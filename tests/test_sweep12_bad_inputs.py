"""Newcomer sweep 12's bad cases (bench/reports/newcomer_sweep_12.md), one
test per class: SIGTERM while a command imports TensorFlow, flags that do
not apply or name no amount, empty path flags, a warm-up longer than the
run, tokenizer files of another model beside a portable export, and the QA
model's answer length."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import electra_tf
from electra_tf import convert_checkpoint
from electra_tf import export_saved_model
from electra_tf import run_pretraining
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.serving import portable
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.pretraining_data import TINY
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.subprocesses import REPO_ROOT
from tests.helpers.subprocesses import tool_user_env
from tfrecords_tools import glue_sentences_corpus
from tfrecords_tools import python_docs_corpus


def test_sigterm_while_a_command_imports_tensorflow_is_one_line():
  """flops_computation is almost all import: SIGTERM there died without a
  word (rc -15). Now one line and 143, as for Ctrl-C (130)."""
  tool = subprocess.Popen(
    [sys.executable, "-m", "electra_tf.flops_computation"],
    cwd=REPO_ROOT,
    env=tool_user_env(),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )
  time.sleep(1.0)  # inside `import electra_tf` (TensorFlow takes seconds)
  tool.send_signal(signal.SIGTERM)
  out, err = tool.communicate(timeout=120)
  if tool.returncode == 0:
    pytest.skip("the import finished before the signal (a fast machine): nothing to test")
  assert tool.returncode == 143, (tool.returncode, err[-2000:])
  assert err == "flops_computation: stopped (SIGTERM)\n" and out == ""


def test_task_with_another_model_kind_is_refused(tmp_path, capsys):
  argv = ["--keras-model", str(tmp_path / "m.keras"), "--vocab-file", "v.txt"]
  argv += ["--export-dir", str(tmp_path / "e"), "--model", "generator", "--task", "sst"]
  with pytest.raises(SystemExit) as e:
    export_saved_model.main(argv)
  assert e.value.code == 2
  assert "--task sst picks a fine-tuned head: it applies to --model task only" in (
    capsys.readouterr().err
  )


def test_a_global_step_beyond_int64_is_named(tmp_path, capsys):
  argv = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")]
  assert convert_checkpoint.main(argv + ["--global-step", str(2**70)]) == 2
  assert f"--global-step {2**70}: expected a step in [0, 2**63)" in capsys.readouterr().err


def test_an_infinite_corpus_size_is_refused(tmp_path, capsys):
  """`--max-mb inf` ended in an OverflowError traceback."""
  assert python_docs_corpus.main(["--output-dir", str(tmp_path / "out"), "--max-mb", "inf"]) == 2
  assert one_line(capsys) == "error: --max-mb inf: expected a positive number"
  assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tool", [python_docs_corpus, glue_sentences_corpus])
def test_corpus_tools_refuse_an_empty_output_dir(tmp_path, monkeypatch, capsys, tool):
  """An unset "$OUT" wrote the corpus into the working directory."""
  monkeypatch.chdir(tmp_path)
  first = ["--glue-dir", "glue"] if tool is glue_sentences_corpus else []
  assert tool.main([*first, "--output-dir", ""]) == 2
  assert "--output-dir is empty (an unset shell variable?); expected a path" in one_line(capsys)
  assert os.listdir(tmp_path) == []


def test_an_empty_data_dir_is_named(tmp_path, monkeypatch, capsys):
  monkeypatch.chdir(tmp_path)
  argv = ["--data-dir", "", "--model-name", "m", "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert "--data-dir is empty (an unset shell variable?)" in one_line(capsys)


def test_a_warm_up_longer_than_the_run_is_said(tmp_path, capsys):
  make_data_dir(tmp_path)
  hparams = dict(TINY, num_train_steps=1, num_warmup_steps=50, vocab_size=60)
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 0
  err = capsys.readouterr().err
  assert "warning: hparam num_warmup_steps=50 is more than num_train_steps=1" in err


def test_a_portable_export_does_not_replace_another_model_s_tokenizer_files(tmp_path):
  pytest.importorskip("ai_edge_litert")
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]
  preprocessor = ElectraTextPreprocessor(ElectraTokenizer(vocabulary=vocab), max_seq_length=8)
  model = electra_tf.ElectraClassifier(
    dict(TINY_ENCODER, vocab_size=len(vocab)), 2, preprocessor=preprocessor
  )
  folder = tmp_path / "hf_model"
  folder.mkdir()
  (folder / "vocab.txt").write_text("[PAD]\nanother\n")
  with pytest.raises(ValueError, match=r"vocab.txt' is another tokenizer's file"):
    model.export(str(folder / "clf.tflite"), format="litert")
  assert sorted(os.listdir(folder)) == ["vocab.txt"]
  assert (folder / "vocab.txt").read_text() == "[PAD]\nanother\n"
  fresh = tmp_path / "fresh"
  model.export(str(fresh / "clf.tflite"), format="litert")
  model.export(str(fresh / "clf.tflite"), format="litert")  # the same files again: fine
  assert portable.vocab_file_name(preprocessor.tokenizer) in os.listdir(fresh)


def test_the_qa_model_s_answer_length_must_be_positive():
  with pytest.raises(ValueError, match=r"^max_answer_length=-1; expected a positive integer$"):
    electra_tf.ElectraQuestionAnswerer(TINY_ENCODER, max_answer_length=-1)

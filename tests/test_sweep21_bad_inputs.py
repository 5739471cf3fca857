"""Newcomer sweep 21's bad cases (bench/reports/newcomer_sweep_21.md), one
test per class: carriage returns and byte-order marks in data files, Latin-1
CoNLL files, SQuAD questions sharing an id, a TF_CONFIG TensorFlow would
misread, a model name too long for a file name, an official checkpoint of
another vocab size (the rest: test_sweep21_serving_bad_inputs.py and
test_sweep21_preset_bad_inputs.py)."""

import json

import pytest

from electra_tf import run_finetuning
from electra_tf import run_pretraining
from electra_tf.finetune.classification.tasks import read_tsv
from electra_tf.finetune.tagging.tasks import read_conll
from electra_tf.runtime import distribution
from tests.helpers import model_formats
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file


def test_a_tsv_with_carriage_returns_in_its_rows_is_one_line(tmp_path):
  """Classic-Mac line ends (a lone \\r) and a \\r pasted into a sentence
  stopped `run_finetuning` with a csv traceback; \\r\\n line ends still read."""
  cases = {
    "mac.tsv": ("sentence\tlabel\ra\t0\rb\t1\r", "line 1: its lines end in a lone \\r"),
    "pasted.tsv": ("sentence\tlabel\na \r b\t1\nc\t0\n", "line 2: a carriage return (\\r) inside"),
  }
  for name, (text, expected) in cases.items():
    path = tmp_path / name
    path.write_bytes(text.encode())
    with pytest.raises(ValueError) as e:
      read_tsv(str(path))
    assert str(e.value).startswith(f"{path}, {expected}"), e.value
  windows = tmp_path / "windows.tsv"
  windows.write_bytes(b"sentence\tlabel\r\na\t0\r\n")
  assert read_tsv(str(windows)) == [["sentence", "label"], ["a", "0"]]


@pytest.mark.parametrize(
  "tf_config, expected",
  [
    ({"cluster": ["h:1", "h:2"], "task": {"type": "worker", "index": 0}}, "'cluster' is ['h:1'"),
    ({"cluster": {"worker": ["h:1"]}, "task": "worker"}, "'task' is 'worker'"),
    ({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}}, "index 1, but"),
    ({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": "0"}}, "index '0'"),
    ({"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}}, "'ps' is not a job"),
    (["h:1"], "TF_CONFIG is ['h:1']; expected {"),
  ],
)
def test_a_tf_config_tensorflow_would_misread_is_one_line(
  tf_config, expected, tmp_path, monkeypatch, capsys
):
  """`TF_CONFIG` whose cluster is a list (not a dict of jobs) gave an
  AttributeError traceback; a task index outside the cluster would wait for
  a worker that never comes."""
  monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
  with pytest.raises(ValueError) as e:
    distribution.is_chief()
  assert str(e.value).startswith("environment variable TF_CONFIG"), e.value
  assert expected in str(e.value)
  argv = ["--data-dir", str(tmp_path), "--model-name", "n", "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert expected in one_line(capsys)
  assert not (tmp_path / "models").exists()


def test_a_model_name_too_long_for_a_file_name_is_refused(tmp_path, capsys):
  """`--model-name` of 300 characters: an OSError traceback (File name too long)."""
  argv = ["--data-dir", str(tmp_path), "--model-name", "n" * 300, "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert "--model-name is 300 bytes long ('nnnnnnnnnnnnnnnnnnnn'…)" in one_line(capsys)
  assert not (tmp_path / "models").exists()


def test_a_byte_order_mark_is_no_part_of_a_data_file_and_latin1_is_named(tmp_path):
  """SST files saved with a BOM were refused as another task's header; a
  Latin-1 CoNLL file gave "'utf-8' codec can't decode byte 0xe9" without a file."""
  path = tmp_path / "train.tsv"
  path.write_bytes(b"\xef\xbb\xbfsentence\tlabel\na\t0\n")
  assert read_tsv(str(path)) == [["sentence", "label"], ["a", "0"]]
  conll = tmp_path / "train.txt"
  conll.write_bytes(b"\xef\xbb\xbfthe B-NP\ncat I-NP\n\n")
  assert read_conll(str(conll)) == [(["the", "cat"], ["B-NP", "I-NP"])]
  conll.write_bytes(b"the B-NP\ncaf\xe9 I-NP\n")
  with pytest.raises(ValueError) as e:
    read_conll(str(conll))
  assert str(e.value) == f"{conll}, line 2: not UTF-8 text (invalid continuation byte)"


def test_evaluated_squad_questions_sharing_an_id_are_refused(tmp_path, capsys):
  """Four dev questions with the id q0 were scored against one prediction."""
  data_dir, vocab_size = make_data_dir(tmp_path)
  context = "the cat sat on the mat ."
  qas = [
    {"id": "q0", "question": q, "answers": [{"text": "the cat", "answer_start": 0}]}
    for q in ("who sat ?", "what sat ?")
  ]
  paragraphs = [{"context": context, "qas": qas}]
  for split in ("train", "dev"):
    write_task_file(data_dir, "squadv1", f"{split}.json", squad_json(paragraphs, "1.1"))
  hparams = {"task_names": ["squadv1"], "vocab_size": vocab_size, "max_seq_length": 32}
  argv = ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) == 2
  assert one_line(capsys).endswith(
    "dev.json: dev questions 1 and 2 share the id 'q0'; expected each question's own id "
    "(predictions are kept by id)"
  )


def test_an_official_checkpoint_of_another_vocab_size_is_refused_before_a_trial(tmp_path, capsys):
  """`init_checkpoint` an official checkpoint of 50 embedding rows, fine-tuned
  with a data dir's vocab of another size: a 30-line shape traceback after
  the trial directory was made."""
  data_dir, vocab_size = make_data_dir(tmp_path)
  checkpoint = model_formats.official_checkpoint(tmp_path / "official")
  write_task_file(data_dir, "sst", "train.tsv", tsv([("sentence", "label"), ("a", 0)]))
  write_task_file(data_dir, "sst", "dev.tsv", tsv([("sentence", "label"), ("a", 1)]))
  hparams = dict(model_formats.ENCODER_SIZES, task_names=["sst"], max_seq_length=32)
  hparams["init_checkpoint"] = str(checkpoint)
  argv = ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) == 2
  err = one_line(capsys)
  assert "does not fit the encoder the hparams build: " in err
  assert f"vocab_size {vocab_size} (checkpoint: 50)" in err
  assert "the vocab it was trained with?" in err
  assert not (tmp_path / "data" / "models").exists()
  # The vocab it was trained with passes this check (and the run goes on).
  vocab = model_formats.write_vocab(tmp_path / "vocab50.txt")
  from electra_tf.training import finetuning_run

  inputs = finetuning_run.make_inputs("m", data_dir, dict(hparams, vocab_file=vocab))
  assert inputs.bert_config.vocab_size == 50


def test_an_output_name_too_long_for_a_file_system_is_refused(tmp_path):
  """Every command's output check (`file_io.check_writable`) names a path
  component over the file system's 255 bytes, where the parent exists."""
  from electra_tf.utils.file_io import check_writable

  with pytest.raises(ValueError) as e:
    check_writable(str(tmp_path / ("x" * 300) / "vocab.txt"), "--output")
  assert "has a name of 300 bytes ('xxxxxxxxxxxxxxxxxxxx'…); expected at most 240" in str(e.value)
  assert str(e.value).startswith("--output ")
  check_writable(str(tmp_path / ("x" * 200) / "vocab.txt"), "--output")

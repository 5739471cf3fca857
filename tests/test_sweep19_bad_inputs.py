"""Newcomer sweep 19's bad cases (bench/reports/newcomer_sweep_19.md), one
test per class: what the user's environment brings (a Keras set to another
backend, stdout closed, an ASCII-only console, an open-file limit), a
model name or data dir that leads elsewhere, an output named for another
format, a directory hparam that is a file, the demo's summary, and the
token tagger's label lists."""

import json
import os
import subprocess
import sys

import pytest

import electra_tf
from electra_tf import convert_checkpoint
from electra_tf import run_pretraining
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.training import finetuning_run
from electra_tf.utils import file_io
from tests.conftest import REPO_ROOT
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.pretraining_data import make_data_dir as make_pretraining_data_dir
from tests.helpers.pretraining_data import self_made_hparams
from tests.helpers.subprocesses import TF_START_UP_LINE
from tests.helpers.subprocesses import quiet_env

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "a", "dog", "ran"]


def _message_lines(text):
  return [line for line in text.splitlines() if line.strip() and not TF_START_UP_LINE.search(line)]


def _command(args, **env):
  return subprocess.run(
    [sys.executable, "-m", *args],
    cwd=REPO_ROOT,
    env=dict(quiet_env(), **env),
    capture_output=True,
    text=True,
    timeout=300,
  )


@pytest.mark.parametrize(
  "env, line",
  [
    (
      {"KERAS_BACKEND": "jax"},
      "error: Keras is set to the 'jax' backend (KERAS_BACKEND); electra_tf runs on TensorFlow: "
      "set KERAS_BACKEND=tensorflow",
    ),
    (
      {"TF_USE_LEGACY_KERAS": "1"},
      "error: TF_USE_LEGACY_KERAS=1 asks TensorFlow for Keras 2 (tf_keras); electra_tf runs on "
      "Keras 3: unset it",
    ),
  ],
)
def test_a_keras_set_up_for_another_backend_is_named(env, line):
  """`KERAS_BACKEND=jax run_pretraining …`: a 40-line `No module named 'jax'`
  traceback; `TF_USE_LEGACY_KERAS=1`: "Keras cannot be imported"."""
  done = _command(["electra_tf.hparams_reference", "--help"], **env)
  assert done.returncode == 2
  assert _message_lines(done.stderr) == [line]


def test_a_keras_json_for_another_backend_is_named(tmp_path):
  (tmp_path / "keras.json").write_text(json.dumps({"backend": "torch"}))
  done = _command(["electra_tf.hparams_reference", "--help"], KERAS_HOME=str(tmp_path))
  assert done.returncode == 2
  assert _message_lines(done.stderr) == [
    f"error: Keras is set to the 'torch' backend ({tmp_path / 'keras.json'}); electra_tf runs "
    "on TensorFlow: set KERAS_BACKEND=tensorflow"
  ]


def test_a_command_with_stdout_closed_or_an_ascii_console_finishes_its_work(tmp_path):
  """`build_vocab … >&-` wrote no vocab (`'NoneType' object has no attribute
  'write'`); with `PYTHONIOENCODING=ascii` a path with `é` ended a finished
  vocab build in a UnicodeEncodeError."""
  corpus = tmp_path / "données"
  corpus.mkdir()
  (corpus / "a.txt").write_text("le chat est là\nun chien court\n" * 50, encoding="utf-8")
  build = (
    f"'{sys.executable}' -m tfrecords_tools.build_vocab --corpus-dir '{corpus}' --vocab-size 130"
  )
  done = subprocess.run(
    [
      "sh",
      "-c",
      f"{build} --output '{tmp_path}/closed/vocab.txt' >&- ; echo closed=$? >&2; "
      f"PYTHONIOENCODING=ascii {build} --output '{tmp_path}/ascii/vocab.txt' > '{tmp_path}/out'; "
      "echo ascii=$? >&2",
    ],
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )
  assert "closed=0" in done.stderr and "ascii=0" in done.stderr, done.stderr
  assert "Traceback" not in done.stderr
  for name in ("closed", "ascii"):
    assert (tmp_path / name / "vocab.txt").read_text().startswith("[PAD]\n")
  assert "donn\\xe9es" in (tmp_path / "out").read_text() + done.stderr


def test_too_few_open_files_for_the_shards_names_the_flag_and_the_limit(tmp_path):
  """`ulimit -n 24; build_pretraining_dataset … --num-out-files 40`: a
  `Too many open files` traceback."""
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("w1 w2 w3 w4\n" * 200)
  data = make_pretraining_data_dir(tmp_path / "data")
  build = (
    f"ulimit -n 40; '{sys.executable}' -m electra_tf.build_pretraining_dataset --corpus-dir "
    f"'{corpus}' --vocab-file '{data}/vocab.txt' --output-dir '{tmp_path}/records' "
    "--max-seq-length 16 --num-processes 1 --num-out-files 60"
  )
  done = subprocess.run(
    ["sh", "-c", build], cwd=REPO_ROOT, env=quiet_env(), capture_output=True, text=True, timeout=600
  )
  lines = _message_lines(done.stderr)
  assert done.returncode == 2, done.stderr
  assert lines[-1].startswith("error: --num-out-files 60: a job writes its shards at once"), lines
  assert "(ulimit -n)" in lines[-1] and "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["../escape", "/tmp/elsewhere"])
def test_a_model_name_leading_out_of_models_is_refused(tmp_path, capsys, name):
  """`--model-name ../escape` trained into `<data-dir>/escape`."""
  make_pretraining_data_dir(tmp_path)
  argv = ["--data-dir", str(tmp_path), "--model-name", name, "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert "absolute or leading out of it" in one_line(capsys)
  assert not (tmp_path / "escape").exists()


def test_a_data_dir_that_does_not_exist_is_named_before_the_vocab(tmp_path, capsys):
  """`--data-dir "~/electra_data"` (quoted: no expansion) blamed hparam vocab_file."""
  argv = ["--data-dir", "~/no_such_electra_data", "--model-name", "m"]
  argv += ["--hparams", json.dumps(self_made_hparams())]
  assert run_pretraining.main(argv) == 2
  assert one_line(capsys).endswith(
    "--data-dir '~/no_such_electra_data' does not exist (a quoted ~ is not expanded by the "
    "shell: write the path out)"
  )
  with pytest.raises(ValueError, match=r"^--data-dir '.*missing' does not exist$"):
    file_io.check_data_dir(str(tmp_path / "missing"))


def test_a_keras_model_converted_to_a_keras_name_is_refused(tmp_path, capsys):
  """`convert_checkpoint --input disc.keras --output copy.keras` wrote a
  checkpoint directory named copy.keras."""
  model = electra_tf.ElectraClassifier(dict(TINY_ENCODER, vocab_size=len(VOCAB)), 2)
  source = tmp_path / "clf.keras"
  model.save(str(source))
  argv = ["--input", str(source), "--output", str(tmp_path / "copy.keras")]
  assert convert_checkpoint.main(argv) == 2
  assert "converts to the original's format (a checkpoint directory)" in one_line(capsys)
  assert not (tmp_path / "copy.keras").exists()


def test_a_directory_hparam_that_is_a_file_is_refused_before_training(tmp_path):
  """`"preprocessed_data_dir": <a file>`: a 111-line traceback once training had begun."""
  data_dir, vocab_size = make_data_dir(tmp_path)
  taken = tmp_path / "taken"
  taken.write_text("")
  hparams = tiny_hparams(vocab_size, task_names=["rte"], preprocessed_data_dir=str(taken))
  inputs = finetuning_run.make_inputs("m", data_dir, hparams)
  with pytest.raises(ValueError, match=r"^hparam preprocessed_data_dir='.*taken' is a file"):
    finetuning_run.validate_inputs(inputs)
  assert not os.path.exists(os.path.join(data_dir, "models", "m", "finetuning_models"))


def test_the_token_tagger_needs_one_tag_list_per_sentence():
  """`wordpiece_labels(["the cat sat", "a dog ran"], [[0, 1, 2]])` labelled
  the second sentence all ignored; a flat tag list failed in `len(int)`."""
  preprocessor = ElectraTextPreprocessor(
    ElectraTokenizer(vocabulary=VOCAB), max_seq_length=8, packing="tagging"
  )
  tagger = electra_tf.ElectraTokenTagger(
    dict(TINY_ENCODER, vocab_size=len(VOCAB)), 3, preprocessor=preprocessor
  )
  with pytest.raises(ValueError, match=r"^2 sentences but 1 rows of word_tags"):
    tagger.wordpiece_labels(["the cat sat", "a dog ran"], [[0, 1, 2]])
  with pytest.raises(ValueError, match=r"^1 sentences but 3 rows of word_tags"):
    tagger.wordpiece_labels("the cat sat", [0, 1, 2])
  with pytest.raises(ValueError, match=r"word_tags\[0\]=0; expected a list of tag ids"):
    tagger.wordpiece_labels(["the"], [0])
  labels = tagger.wordpiece_labels(["the cat sat"], [[0, 1, 2]])
  assert labels[0, 1:4].tolist() == [0, 1, 2]


def test_the_demo_s_summary_lists_only_what_exists(tmp_path, monkeypatch, capsys):
  """`demo --stages corpus` listed a vocab, records, model, export, PNG and
  hparams files that no stage had made."""
  from electra_tf import demo

  def make_corpus(out, args):
    os.makedirs(demo._paths(out)["corpus"])  # pylint: disable=protected-access

  monkeypatch.setitem(demo.STAGES, "corpus", (make_corpus, None, None))
  assert demo.main(["--output-dir", str(tmp_path / "out"), "--stages", "corpus"]) == 0
  out = capsys.readouterr().out
  listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and "/" in line]
  assert listed[0] == "corpus" and "vocab" not in listed and "model_dir" not in listed, out
  assert "hparams.json" not in out and "tensorboard" not in out

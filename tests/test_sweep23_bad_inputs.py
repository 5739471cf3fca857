"""Newcomer sweep 23's bad cases (bench/reports/newcomer_sweep_23.md), one
test per class."""

import json

import pytest
import tensorflow as tf

from electra_tf.training import run_status
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line


def test_a_full_disk_anywhere_in_a_run_is_one_line(capsys):
  """The disk filling while fine-tuning wrote its feature cache: a
  ResourceExhaustedError traceback (checkpoint saves were one line already)."""

  def run():
    raise tf.errors.ResourceExhaustedError(
      None,
      None,
      "/d/models/m/finetuning_tfrecords/.sst_train.tfrecord.7.tmp; No space left on device",
    )

  assert run_status.run_to_exit_status("run_finetuning", run) == 2
  assert one_line(capsys) == (
    "run_finetuning: error: no space left on device (/d/models/m/finetuning_tfrecords/"
    ".sst_train.tfrecord.7.tmp; No space left on device); free some space and re-run (it "
    "resumes from its last checkpoint)"
  )

  def other():
    raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")

  with pytest.raises(tf.errors.ResourceExhaustedError):
    run_status.run_to_exit_status("run_finetuning", other)


def test_a_remote_data_dir_out_of_reach_is_one_line(monkeypatch, capsys):
  """`--data-dir gs://bucket/data` without network or credentials: a
  FailedPreconditionError traceback from the vocab's existence check."""
  from electra_tf import run_pretraining
  from electra_tf.training import pretraining_run

  def unreachable(*args, **kwargs):
    raise tf.errors.FailedPreconditionError(
      None,
      None,
      "Error executing an HTTP request: libcurl code 6 meaning 'Could not resolve hostname'\n"
      "\t when reading metadata of gs://bucket/data/vocab.txt",
    )

  monkeypatch.setattr(pretraining_run, "make_config", unreachable)
  argv = ["--data-dir", "gs://bucket/data", "--model-name", "m", "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert one_line(capsys) == (
    "run_pretraining: error: cannot read gs://bucket/data/vocab.txt (Error executing an HTTP "
    "request: libcurl code 6 meaning 'Could not resolve hostname'); check the network and the "
    "credentials"
  )


def test_a_task_model_save_that_fails_midway_leaves_no_partial_file(tmp_path):
  """A kill or Ctrl-C in `clf.save("clf.keras")` left a partial clf.keras under
  the real name. Here the write fails for real midway (a 16 KiB file-size
  limit): nothing is left under the name, and no hidden temporary either."""
  import subprocess
  import sys

  script = tmp_path / "save.py"
  script.write_text(
    "import resource, signal\n"
    "import electra_tf\n"
    f"TINY_ENCODER = {TINY_ENCODER!r}\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not death\n"
    "clf = electra_tf.ElectraClassifier(TINY_ENCODER, num_classes=2)\n"
    "ids = {'input_ids': [[2, 5, 3, 0]], 'input_mask': [[1, 1, 1, 0]], 'segment_ids': [[0] * 4]}\n"
    "clf.predict(ids, verbose=0)  # built\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))\n"
    "try:\n"
    f"  clf.save({str(tmp_path / 'clf.keras')!r})\n"
    "except Exception as e:\n"
    "  print('FAILED', type(e).__name__)\n"
  )
  from tests.helpers.subprocesses import REPO_ROOT
  from tests.helpers.subprocesses import quiet_env

  out = subprocess.run(
    [sys.executable, str(script)],
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert "FAILED" in out.stdout, out.stdout + out.stderr[-2000:]
  assert sorted(p.name for p in tmp_path.iterdir()) == ["save.py"]


def test_a_data_dir_of_a_file_system_tensorflow_lacks_is_one_line(capsys):
  """`--data-dir s3://bucket/data`: an UnimplementedError traceback."""
  from electra_tf import run_finetuning

  argv = ["--data-dir", "s3://bucket/data", "--model-name", "m", "--hparams", "{}"]
  assert run_finetuning.main(argv) == 2
  err = one_line(capsys)
  assert err.startswith("run_finetuning: error: cannot read s3://bucket/data/"), err
  assert "TensorFlow has no s3:// file system (" in err
  assert err.endswith(
    "use a local path or gs://, or install the package that adds it (tensorflow-io for s3)"
  )


def test_a_tokenizer_json_given_as_a_vocab_is_named(tmp_path):
  """`ElectraTextPreprocessor.from_vocab_file("hf/tokenizer.json")`: "vocab
  file '<vocabulary argument>' lacks the special token(s)", the file unnamed."""
  from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor

  path = tmp_path / "tokenizer.json"
  path.write_text('{\n  "version": "1.0",\n  "model": {"type": "WordPiece", "vocab": {}}\n}\n')
  with pytest.raises(ValueError) as e:
    ElectraTextPreprocessor.from_vocab_file(str(path), max_seq_length=32)
  assert str(e.value) == (
    f"vocab file {str(path)!r} is a JSON file (a tokenizer.json?), not a vocab with one token "
    "per line; pass the vocab.txt beside it"
  )
  words = tmp_path / "words.txt"
  words.write_text("the\ncat\n")
  with pytest.raises(ValueError, match=f"vocab file {str(words)!r} lacks the special token"):
    ElectraTextPreprocessor.from_vocab_file(str(words), max_seq_length=32)


def test_texts_to_a_task_model_without_a_preprocessor_are_named():
  """A classifier loaded from a .keras saved without its preprocessor, given
  texts: "Iterating over a symbolic tf.Tensor is not allowed"."""
  import electra_tf

  model = electra_tf.ElectraClassifier(TINY_ENCODER, num_classes=2)
  with pytest.raises(ValueError) as e:
    model.predict(["a warm film"])
  assert str(e.value) == (
    "ElectraClassifier.predict: this model has no preprocessor, so it takes packed features "
    "(a dict of input_ids, input_mask, segment_ids), not texts"
  )
  ids = {"input_ids": [[2, 5, 3]], "input_mask": [[1, 1, 1]], "segment_ids": [[0, 0, 0]]}
  assert model.predict(ids, verbose=0).shape == (1, 2)


def test_no_records_names_the_build_a_killed_rebuild_set_aside(tmp_path, capsys):
  """`build_pretraining_dataset --overwrite` killed midway leaves the earlier
  build in <output>/.previous_build; run_pretraining said only "No
  pre-training TFRecords found … build them"."""
  from electra_tf import run_pretraining
  from tests.helpers import pretraining_data

  data_dir = pretraining_data.make_data_dir(tmp_path / "data")
  records = data_dir / "pretrain_tfrecords"
  (records / ".previous_build").mkdir()
  for record_file in records.iterdir():
    if record_file.is_file():
      record_file.rename(records / ".previous_build" / record_file.name)
  argv = ["--data-dir", str(data_dir), "--model-name", "m"]
  argv += ["--hparams", json.dumps(pretraining_data.self_made_hparams())]
  assert run_pretraining.main(argv) == 2
  assert one_line(capsys).endswith(
    f"; a rebuild killed midway left the earlier build in {str(records / '.previous_build')!r}: "
    "run the build again (it finishes or puts that build back)"
  )


def test_a_vocab_that_leaves_much_of_the_corpus_unknown_is_named(tmp_path, capsys):
  """A WordPiece vocab without its `##` pieces (a word list from another
  tool): every word it cannot spell whole became [UNK], about 11% of the
  corpus, and the build said nothing."""
  from electra_tf import build_pretraining_dataset
  from tests.helpers.pretraining_data import SPECIAL

  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("the cat sat on the mat\nthe dog ran far away\n\n" * 30)
  vocab = tmp_path / "words.txt"

  def build(words, name):
    vocab.write_text("\n".join(SPECIAL + words) + "\n")
    argv = ["--corpus-dir", str(corpus), "--vocab-file", str(vocab), "--num-processes", "1"]
    argv += ["--output-dir", str(tmp_path / name), "--max-seq-length", "16", "--num-out-files", "1"]
    assert build_pretraining_dataset.main(argv) == 0
    return capsys.readouterr().err

  # 9 of the corpus's 11 words: 2 in 11 tokens are [UNK] (18%).
  err = build(["the", "cat", "sat", "on", "mat", "dog", "ran"], "few")
  warnings = [line for line in err.splitlines() if "[UNK]" in line]
  assert len(warnings) == 1
  assert "of the corpus's 330 tokens (18.2%) are [UNK]" in warnings[0]
  assert str(vocab) in warnings[0]
  # Every word spelled: no such line.
  err = build(["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away"], "all")
  assert "[UNK]" not in err

"""Newcomer sweep 24's bad cases (bench/reports/newcomer_sweep_24.md), one
test per class: the run lock's setting, a run config of a newer version,
a vocab that differs only in its line ends, a tokenizer called on a list,
a task `.keras` exported without --vocab-file or for another task, and
`fit` past the compiled schedule."""

import json
import os
import types

import pytest
import tensorflow as tf

import electra_tf
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.serving import export as export_lib
from electra_tf.sources import any_format
from electra_tf.text import tokenizer_for
from electra_tf.text.vocab import Vocab
from electra_tf.utils import run_lock
from tests.helpers.pretraining_data import SPECIAL
from tests.helpers.task_models import TINY
from tests.helpers.task_models import pretrained_dir

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran"]


def test_an_unknown_run_lock_setting_is_refused(tmp_path, monkeypatch):
  """`ELECTRA_TF_RUN_LOCK_OTHER_HOSTS=1` (the usual way to switch a boolean
  on) took another host's lock over, as if the variable were unset."""
  lock = run_lock.RunLock(str(tmp_path / "m" / "train.lock"), "run_pretraining m")
  monkeypatch.setenv(run_lock.OTHER_HOSTS_VARIABLE, "1")
  with pytest.raises(run_lock.ModelDirBusy) as e:
    lock.acquire()
  assert str(e.value) == "ELECTRA_TF_RUN_LOCK_OTHER_HOSTS='1': expected 'refuse' (or unset)"
  monkeypatch.setenv(run_lock.OTHER_HOSTS_VARIABLE, "refuse")
  lock.acquire().release()


def test_a_run_config_with_an_hparam_of_a_newer_version_is_refused_by_every_reader(tmp_path):
  """A model dir whose config.json holds an hparam this version lacks:
  export refused it, fine-tuning from it ignored it silently. The one
  reader of a run config refuses it now, for both."""
  config = electra_tf.PretrainingConfig("m", str(tmp_path))
  path = model_dir_lib.write_run_config(config, str(tmp_path / "m"))
  assert model_dir_lib.read_run_config(str(tmp_path / "m"))["hparams"]
  content = json.loads(open(path).read())
  content["hparams"]["attention_window"] = 128
  with open(path, "w") as f:
    json.dump(content, f)
  with pytest.raises(ValueError) as e:
    model_dir_lib.read_run_config(str(tmp_path / "m"))
  assert str(e.value) == (
    f"run config {path!r}: hparam 'attention_window' is unknown to PretrainingConfig "
    "(written by another electra_tf version?)"
  )


def test_a_vocab_that_differs_only_in_its_line_ends_is_the_same_vocab(tmp_path):
  """A vocab.txt checked out with CRLF line ends (git's autocrlf) was
  refused against the run it came from: 'its ids mean other tokens'."""
  lf, crlf, other = (tmp_path / n for n in ("lf.txt", "crlf.txt", "other.txt"))
  lf.write_text("\n".join(SPECIAL + WORDS) + "\n")
  crlf.write_bytes(lf.read_bytes().replace(b"\n", b"\r\n"))
  other.write_text("\n".join(SPECIAL + WORDS[::-1]) + "\n")
  recorded = Vocab.read(str(lf)).fingerprint()
  Vocab.read(str(crlf)).check_made_with(recorded, "the model in 'm' was pre-trained")
  # Runs recorded before the token list's sha256: by the recorded file, still there.
  legacy = {k: v for k, v in recorded.items() if k != "tokens_sha256"}
  Vocab.read(str(crlf)).check_made_with(legacy, "the model in 'm' was pre-trained")
  for given in (other, crlf):
    with pytest.raises(ValueError, match="its ids mean other tokens"):
      # other tokens; or, the recorded file gone, nothing to compare with
      missing = dict(legacy, file=str(tmp_path / "gone.txt"))
      Vocab.read(str(given)).check_made_with(
        recorded if given == other else missing, "the model in 'm' was pre-trained"
      )


def test_a_tokenizer_takes_texts_in_a_python_list(tmp_path):
  """`tokenizer_for(vocab)(["…", "…"])`: Keras' 'Only input tensors may be
  passed as positional arguments'."""
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(SPECIAL + WORDS) + "\n")
  tokenizer = tokenizer_for(str(vocab))
  texts = ["the cat sat on the mat", "a dog"]
  assert tokenizer(texts).to_list() == tokenizer(tf.constant(texts)).to_list()
  assert tokenizer(texts).to_list() == [[5, 6, 7, 8, 5, 9], [10, 11]]


@pytest.mark.slow
def test_a_task_keras_file_exports_with_its_own_vocabulary_and_names_another_task_first(
  tmp_path, capsys
):
  """`export_saved_model --keras-model clf.keras --model task --task rte` (an
  SST classifier) said 'pass --vocab-file … records none', though the
  file's preprocessor holds the vocabulary; the task came second."""
  model_dir = str(tmp_path / "pretrained")
  pretrained_dir(model_dir)
  vocab_file = os.path.join(model_dir, "vocab.txt")
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    model_dir, vocab_file, 2, "base", 8, TINY, 16
  )
  path = str(tmp_path / "elsewhere" / "clf.keras")
  classifier.save(path)
  model, config = export_lib.load_model(path, None, None, "task", None, None)
  args = types.SimpleNamespace(
    model="task", task="rte", vocab_file=None, no_lower_case=False, no_strip_accents=False,
    max_seq_length=None, max_query_length=None, hparams=None, checkpoint=None,
  )  # fmt: skip
  with pytest.raises(ValueError) as e:
    export_lib.settings_from_flags(model, config, path, args)
  assert str(e.value) == f"--task 'rte' is not a head of the model; it has {model.task_names}"
  args.task = model.task_names[0]
  kept, lower, strip, lengths = export_lib.settings_from_flags(model, config, path, args)
  assert open(kept).read() == open(vocab_file).read()
  assert (lower, strip, lengths.max_seq_length) == (True, True, 16)
  # Given a vocab, the preprocessor's is not written out.
  recorded = any_format.open_source(path).recorded_inputs(vocab_given=True)
  assert recorded.vocab_file is None and recorded.max_seq_length == 16


def test_fit_past_the_compiled_schedule_is_named(tmp_path, capsys):
  """`compile(num_train_steps=len(data))` then `fit(data, epochs=3)`: the
  learning rate is 0 after the first epoch, and the rest trained nothing
  without a word."""
  model_dir = str(tmp_path / "pretrained")
  pretrained_dir(model_dir)
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    model_dir, os.path.join(model_dir, "vocab.txt"), 2, "base", 8, TINY, 16
  )
  data = tf.data.Dataset.from_tensor_slices((["the cat sat", "a dog ran"] * 2, [1, 0] * 2))
  data = data.batch(2)
  classifier.compile(num_train_steps=2 * len(data))
  classifier.fit(data, epochs=2, verbose=0)
  assert "warning" not in capsys.readouterr().err  # within the horizon; no shuffle warning
  classifier.fit(data, epochs=1, verbose=0)
  err = capsys.readouterr().err
  assert err.strip() == (
    "warning: ElectraClassifier.fit runs 2 optimizer steps (1 epoch(s) of 2 batches) after 4, "
    "but compile(num_train_steps=4): the learning rate is 0 after step 4, so the rest trains "
    "nothing; compile with num_train_steps=6"
  )


def test_a_killed_swap_s_set_aside_entries_go_back_not_away(tmp_path):
  """A process killed between moving an old entry aside and moving its new
  one in (`replaced_together`) left the old one in `.<label>.<pid>.tmp.old`;
  the next run's clean-up of dead staging removed it, and the version was
  gone. It goes back where nothing stands now."""
  import subprocess
  import sys

  from electra_tf.utils import file_io

  dead = subprocess.run(
    [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
  )
  pid = int(dead.stdout)
  export = tmp_path / "export"
  (export / f".1.{pid}.tmp" / "1").mkdir(parents=True)  # the new set, not moved in
  (export / f".1.{pid}.tmp" / "1" / "saved_model.pb").write_text("new")
  (export / f".1.{pid}.tmp.old" / "1").mkdir(parents=True)  # the old one, set aside
  (export / f".1.{pid}.tmp.old" / "1" / "saved_model.pb").write_text("old")
  (export / "2").mkdir()
  (export / f".2.{pid}.tmp.old" / "2").mkdir(parents=True)  # replaced: its old one is stale
  for label in ("1", "2"):
    file_io.remove_dead_staging(str(export), label)
  assert sorted(os.listdir(export)) == ["1", "2"]
  assert (export / "1" / "saved_model.pb").read_text() == "old"

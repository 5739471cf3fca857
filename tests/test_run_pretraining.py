"""`python -m electra_tf.run_pretraining`: bad input gives one clear error
line before anything is trained; the command trains, resumes (also after
kill -9), continues from the original's checkpoint and evaluates on the
original's data. The library under it is tested in
tests/training/test_pretraining_run.py."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import run_pretraining
from electra_tf.checkpoints import checkpointing
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.data import records_info
from electra_tf.runtime import distribution
from electra_tf.text import vocab as vocab_lib
from electra_tf.training import pretraining_run
from tests.conftest import REPO_ROOT
from tests.helpers import model_formats
from tests.helpers.pretraining_data import ETA_LINE
from tests.helpers.pretraining_data import EVAL_NAMES
from tests.helpers.pretraining_data import SPECIAL
from tests.helpers.pretraining_data import eta_steps
from tests.helpers.pretraining_data import latest_step
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import original_hparams
from tests.helpers.pretraining_data import pretrain_on_self_made_data
from tests.helpers.pretraining_data import self_made_hparams
from tests.helpers.pretraining_data import write_swapped_vocab
from tests.helpers.subprocesses import killed_in_save_command
from tests.helpers.subprocesses import quiet_env
from tests.helpers.subprocesses import run_pretraining_command

TINY_60 = self_made_hparams()


def run_cli(data_dir, model_name, hparams, timeout=600):
  env = quiet_env()
  return subprocess.run(
    run_pretraining_command(data_dir, model_name, hparams),
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=timeout,
  )


# ----------------------------------------------------------------------------
# Bad input: one clear error each, before anything is trained
# ----------------------------------------------------------------------------


def _bad_input(capsys, data_dir, hparams, expected):
  code = run_pretraining.main(
    ["--data-dir", str(data_dir), "--model-name", "m", "--hparams", json.dumps(hparams)]
  )
  err = capsys.readouterr().err
  assert code == 2
  assert re.search(expected, err), err
  assert latest_step(data_dir / "models" / "m") is None
  return err


def test_zero_warmup_is_one_line_before_any_work(tmp_path, capsys):
  make_data_dir(tmp_path)
  err = _bad_input(
    capsys, tmp_path, self_made_hparams(num_warmup_steps=0), r"hparam num_warmup_steps=0; expected"
  )
  assert len(err.strip().splitlines()) == 1, err
  assert "Config" not in capsys.readouterr().out


def test_no_tfrecords(tmp_path, capsys):
  words = SPECIAL + [f"w{i}" for i in range(60 - len(SPECIAL))]
  (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(),
    r"No pre-training TFRecords found for hparam pretrain_tfrecords",
  )


def test_records_of_another_max_seq_length(tmp_path, capsys):
  make_data_dir(tmp_path, max_seq_length=32)
  err = _bad_input(capsys, tmp_path, self_made_hparams(max_seq_length=64), r"max_seq_length")
  assert "pretrain_data.tfrecord" in err


def test_vocab_smaller_than_ids(tmp_path, capsys):
  make_data_dir(tmp_path, vocab_size=60, max_id=99)
  _bad_input(capsys, tmp_path, self_made_hparams(vocab_size=60), r"(?i)vocab_size")


def test_vocab_size_must_match_the_vocab_file(tmp_path, capsys):
  make_data_dir(tmp_path, vocab_size=60)
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(vocab_size=30522),
    r"hparam vocab_size=30522 but vocab file '.*vocab.txt' has 60 entries; set vocab_size to 60",
  )


def test_missing_vocab_file_is_an_error(tmp_path, capsys):
  make_data_dir(tmp_path)
  (tmp_path / "vocab.txt").unlink()
  _bad_input(
    capsys, tmp_path, self_made_hparams(), r"hparam vocab_file='.*vocab.txt' does not exist"
  )


def test_vocab_with_a_token_twice_is_refused_naming_both_lines(tmp_path, capsys):
  make_data_dir(tmp_path)
  words = (tmp_path / "vocab.txt").read_text().splitlines()
  words[-1] = words[10]
  (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(),
    rf"token '{words[10]}' is on lines 11 and {len(words)}; expected every token once",
  )


def test_records_made_with_another_vocab_are_refused_naming_both(tmp_path, capsys):
  make_data_dir(tmp_path)
  vocab = vocab_lib.Vocab.read(str(tmp_path / "vocab.txt"))
  records_info.write_records_info(str(tmp_path / "pretrain_tfrecords"), vocab, {})
  words = (tmp_path / "vocab.txt").read_text().splitlines()
  # The same size, two tokens swapped: every count agrees, the ids do not.
  words[-1], words[-2] = words[-2], words[-1]
  (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
  err = _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(),
    rf"the TFRecords in '.*pretrain_tfrecords' were made with vocab '.*vocab.txt' \(60 tokens, "
    rf"sha256 {vocab.sha256[:12]}\) but the vocab given is '.*vocab.txt' \(60 tokens, sha256 ",
  )
  assert len(err.strip().splitlines()) == 1, err


def test_held_out_records_made_with_another_vocab_or_missing_are_refused(tmp_path, capsys):
  make_data_dir(tmp_path)
  held_out = tmp_path / "held_out"
  held_out.mkdir()
  shard = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-2-of-3"
  (held_out / shard.name).write_bytes(shard.read_bytes())
  other = tmp_path / "other_vocab.txt"
  words = (tmp_path / "vocab.txt").read_text().splitlines()
  other.write_text("\n".join(words[:-2] + [words[-1], words[-2]]) + "\n")
  records_info.write_records_info(str(held_out), vocab_lib.Vocab.read(str(other)), {})
  hparams = self_made_hparams(held_out_tfrecords=str(held_out / "*"))
  _bad_input(capsys, tmp_path, hparams, r"the TFRecords in '.*held_out' were made with vocab")
  hparams = self_made_hparams(held_out_tfrecords=str(tmp_path / "nothing*"))
  _bad_input(
    capsys,
    tmp_path,
    hparams,
    r"hparam held_out_tfrecords: no pre-training files match \['.*nothing\*'\]",
  )
  # Held-out records of another length: named before training, not deep in the first measurement.
  longer = tmp_path / "longer"
  make_data_dir(longer, max_seq_length=64)
  hparams = self_made_hparams(held_out_tfrecords=str(longer / "pretrain_tfrecords" / "*"))
  err = _bad_input(
    capsys,
    tmp_path,
    hparams,
    r"hparam held_out_tfrecords: .*record 0: feature 'input_ids' has length 64, expected",
  )
  assert len(err.strip().splitlines()) == 1, err


def test_a_model_dir_that_is_a_file_is_one_line(tmp_path, capsys):
  make_data_dir(tmp_path)
  (tmp_path / "models").mkdir()
  (tmp_path / "models" / "m").write_text("not a dir")
  _bad_input(capsys, tmp_path, self_made_hparams(), r"model dir .* is a file; expected a directory")


def test_vocab_without_mask_is_one_line_before_the_config_dump(tmp_path, capsys):
  make_data_dir(tmp_path)
  words = (tmp_path / "vocab.txt").read_text().splitlines()
  (tmp_path / "vocab.txt").write_text("\n".join(w if w != "[MASK]" else "mask" for w in words))
  err = _bad_input(
    capsys, tmp_path, self_made_hparams(), r"lacks the special token\(s\) \['\[MASK\]'\]"
  )
  assert len(err.strip().splitlines()) == 1
  assert "Config" not in capsys.readouterr().out


def test_corrupt_shard_past_record_100_is_named_before_training(tmp_path, capsys):
  make_data_dir(tmp_path, num_examples=330)  # 110 records per file
  path = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-1-of-3"
  data = bytearray(path.read_bytes())
  assert len(data) == 110 * 175  # every record of make_data_dir has 175 bytes
  data[-40] ^= 1  # inside the last record
  path.write_bytes(bytes(data))
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(num_train_steps=1),
    r"pretrain_data.tfrecord-1-of-3': record 109 at byte \d+ fails its checksum",
  )
  # Cut inside record 55 (a cut exactly between records leaves a valid,
  # shorter file: no checksum can tell).
  path.write_bytes(bytes(data[: 55 * 175 + 7]))
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(num_train_steps=1),
    r"tfrecord-1-of-3': record 55 at byte 9625 is cut short inside its header",
  )


@pytest.mark.slow
def test_corrupt_record_met_while_training_names_file_and_checkpoint(tmp_path):
  make_data_dir(tmp_path, num_examples=30)
  path = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-2-of-3"
  data = bytearray(path.read_bytes())
  data[5 * 175 + 30] ^= 1
  path.write_bytes(bytes(data))
  # Without the start-up check (a direct `train` call, no seed), training
  # reads the bad record and stops with the file, record and checkpoint.
  config = PretrainingConfig("m", str(tmp_path), **self_made_hparams(num_train_steps=100))
  with pytest.raises(pretraining_run.TrainingDataError) as info:
    files = pretraining_run.find_pretraining_files(config)
    pretraining_run.train(config, distribution.setup_distribution(config), files)
  message = str(info.value)
  assert "tfrecord-2-of-3': record 5 at byte 875 fails its checksum" in message, message
  assert "Last checkpoint: " + str(tmp_path / "models" / "m" / "model.ckpt-0") in message


def test_unknown_hparam(tmp_path, capsys):
  make_data_dir(tmp_path)
  _bad_input(
    capsys, tmp_path, self_made_hparams(num_train_step=5), r"Unknown hparam 'num_train_step'"
  )


def test_train_and_eval_both_set(tmp_path, capsys):
  make_data_dir(tmp_path)
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(do_train=True, do_eval=True),
    r"Exactly one of `do_train` or `do_eval` must be True",
  )


def test_a_two_tower_generator_that_cannot_be_is_one_line_before_any_work(tmp_path, capsys):
  make_data_dir(tmp_path)
  err = _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(uniform_generator=True, two_tower_generator=True),
    r"hparam two_tower_generator=True needs untied_generator=True, uniform_generator=False",
  )
  assert "Traceback" not in err and len(err.strip().splitlines()) == 1
  assert not (tmp_path / "models" / "m").exists()


def test_missing_init_checkpoint(tmp_path, capsys):
  make_data_dir(tmp_path)
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(init_checkpoint=str(tmp_path / "nope")),
    r"hparam init_checkpoint=.*nope",
  )


def test_an_init_checkpoint_that_is_not_a_pretraining_one_is_one_line(tmp_path, capsys):
  """A fine-tuned checkpoint (task heads, no generator) or a training
  checkpoint of another run as `init_checkpoint`: one line naming what it
  is, before the model dir is made."""
  make_data_dir(tmp_path)
  head = {
    "task_specific/sst/dense/kernel": np.zeros([8, 2], np.float32),
    "task_specific/sst/dense/bias": np.zeros([2], np.float32),
  }
  finetuned = model_formats.official_checkpoint(tmp_path / "finetuned", head)
  err = _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(init_checkpoint=str(finetuned)),
    r"hparam init_checkpoint=.*finetuned' is a fine-tuned checkpoint \(task_specific/ heads\); "
    "pre-training starts from a pre-training checkpoint in the original's name-based format",
  )
  assert len(err.strip().splitlines()) == 1, err
  assert not (tmp_path / "models" / "m").exists()
  # A Hugging Face directory: named as one, not as a directory without a checkpoint file.
  hf_dir = tmp_path / "hf_disc"
  hf_dir.mkdir()
  (hf_dir / "config.json").write_text('{"model_type": "electra"}')
  err = _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(init_checkpoint=str(hf_dir)),
    r"hparam init_checkpoint=.*hf_disc' is a Hugging Face ELECTRA directory; pre-training starts",
  )
  assert len(err.strip().splitlines()) == 1, err
  # A pre-training checkpoint of another size: one line too, not a traceback.
  other = model_formats.official_checkpoint(tmp_path / "other")
  argv = ["--data-dir", str(tmp_path), "--model-name", "m2"]
  argv += ["--hparams", json.dumps(self_made_hparams(init_checkpoint=str(other)))]
  assert run_pretraining.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith(
    f"run_pretraining: error: hparam init_checkpoint={str(other)!r}: checkpoint "
  ), err
  assert re.search(r"does not match the model: \S.* \(and \d+ more\)$", err[0]), err


@pytest.mark.parametrize("name", ["", " ", ".", "..", "../escape", "a/../../b", "/tmp/abs"])
def test_a_model_name_that_names_no_model_dir_is_one_line(tmp_path, capsys, name):
  """An empty --model-name would train into <data-dir>/models/ itself, the
  parent of every model dir."""
  make_data_dir(tmp_path)
  argv = ["--data-dir", str(tmp_path), "--model-name", name, "--hparams", json.dumps(TINY_60)]
  assert run_pretraining.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [
    f"run_pretraining: error: --model-name {name!r}: expected the name of a model directory "
    "under <data-dir>/models/ (not empty, '.', '..', absolute or leading out of it)"
  ]
  assert not (tmp_path / "models").exists()


def _rerun_one_line(tmp_path, capsys):
  """Re-runs model dir `m` (one step trained) for two steps; asserts exit 2
  and returns its one stderr line."""
  capsys.readouterr()
  argv = ["--data-dir", str(tmp_path), "--model-name", "m"]
  argv += ["--hparams", json.dumps(self_made_hparams(num_train_steps=2))]
  assert run_pretraining.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1, err
  return err[0]


def test_a_damaged_config_json_is_named_not_taken_as_missing(tmp_path, capsys):
  """The model dir's config.json is what the "architecture cannot change"
  check reads; cut short, it is named in one line, not skipped."""
  assert pretrain_on_self_made_data(tmp_path, self_made_hparams(num_train_steps=1)) == 1
  config_json = tmp_path / "models" / "m" / "config.json"
  config_json.write_text(config_json.read_text()[:300])
  err = _rerun_one_line(tmp_path, capsys)
  assert f"run config {str(config_json)!r} is not valid JSON" in err
  assert "it records the model the checkpoints hold" in err
  assert latest_step(tmp_path / "models" / "m") == 1
  assert len(config_json.read_text()) == 300


def test_resuming_with_another_vocab_of_the_same_size_is_one_line(tmp_path, capsys):
  """Same size, other ids: the architecture check cannot see it; the vocab
  config.json records can."""
  assert pretrain_on_self_made_data(tmp_path, self_made_hparams(num_train_steps=1)) == 1
  write_swapped_vocab(tmp_path / "vocab.txt", tmp_path / "vocab.txt")
  err = _rerun_one_line(tmp_path, capsys)
  assert err.startswith(
    f"run_pretraining: error: the model in {str(tmp_path / 'models' / 'm')!r} was pre-trained "
    "with vocab"
  )
  assert "its ids mean other tokens" in err
  assert latest_step(tmp_path / "models" / "m") == 1


def test_a_model_dir_of_a_fine_tuning_run_is_named_as_one(tmp_path, capsys):
  """hparam model_dir pointing at a fine-tuning trial: one line saying what
  the dir holds, not thirty architecture fields "absent"."""
  assert pretrain_on_self_made_data(tmp_path, self_made_hparams(num_train_steps=1)) == 1
  config_json = tmp_path / "models" / "m" / "config.json"
  recorded = json.loads(config_json.read_text())
  config_json.write_text(json.dumps(dict(recorded, kind="finetuning")))
  assert _rerun_one_line(tmp_path, capsys) == (
    f"run_pretraining: error: model dir {str(tmp_path / 'models' / 'm')!r} holds a fine-tuning "
    "run (its config.json says kind 'finetuning'); pre-training needs a model dir of its own: "
    "give another --model-name (or hparam model_dir)"
  )


def test_init_checkpoint_beside_checkpoints_to_resume_is_said_not_read(tmp_path, capsys):
  assert pretrain_on_self_made_data(tmp_path, self_made_hparams(num_train_steps=1)) == 1
  capsys.readouterr()
  hparams = self_made_hparams(num_train_steps=2, init_checkpoint=str(tmp_path / "models" / "m"))
  config = pretraining_run.make_config("m", str(tmp_path), hparams)
  pretraining_run.validate_config(config)
  assert capsys.readouterr().out.splitlines()[0] == (
    f"Note: hparam init_checkpoint={str(tmp_path / 'models' / 'm')!r} is not read: the model "
    "dir has model.ckpt-1, which the run resumes from (as the original does); use a new "
    "--model-name to start from it"
  )


@pytest.mark.slow
def test_cli_stop_rerun_eval_on_original_data(tmp_path, original_fixtures):
  model_dir = tmp_path / "models" / "tiny"
  first = run_cli(
    tmp_path,
    "tiny",
    original_hparams(original_fixtures, num_train_steps=4, save_checkpoints_steps=2),
  )
  assert first.returncode == 0, first.stderr
  assert eta_steps(first.stdout) == [1, 2, 3, 4]
  assert latest_step(model_dir) == 4
  second = run_cli(
    tmp_path,
    "tiny",
    original_hparams(original_fixtures, num_train_steps=6, save_checkpoints_steps=2),
  )
  assert second.returncode == 0, second.stderr
  assert "model.ckpt-4" in second.stdout
  assert eta_steps(second.stdout) == [5, 6]
  evaluation = run_cli(
    tmp_path,
    "tiny",
    original_hparams(
      original_fixtures, do_train=False, do_eval=True, num_eval_steps=2, eval_batch_size=4
    ),
  )
  assert evaluation.returncode == 0, evaluation.stderr
  written = dict(
    line.split(" = ")
    for line in (model_dir / "results" / "unsup_results.txt").read_text().splitlines()
  )
  assert set(written) == EVAL_NAMES and written["global_step"] == "6"
  assert json.loads((model_dir / "results" / "unsup_results.json").read_text())["global_step"] == 6


@pytest.mark.slow
def test_cli_continue_from_the_original_checkpoint(tmp_path, original_fixtures):
  result = run_cli(
    tmp_path,
    "cont",
    original_hparams(
      original_fixtures,
      init_checkpoint=str(original_fixtures / "models" / "tiny"),
      num_train_steps=52,
    ),
  )
  assert result.returncode == 0, result.stderr
  assert "global_step=50" in result.stdout
  assert eta_steps(result.stdout) == [51, 52]
  assert latest_step(tmp_path / "models" / "cont") == 52


@pytest.mark.slow
def test_kill_9_then_rerun_resumes_and_finishes(tmp_path, original_fixtures):
  hparams = original_hparams(
    original_fixtures, num_train_steps=30, save_checkpoints_steps=4, keep_checkpoint_max=2
  )
  env = quiet_env()
  proc = subprocess.Popen(
    run_pretraining_command(tmp_path, "tiny", hparams),
    cwd=REPO_ROOT,
    env=env,
    stdout=subprocess.PIPE,
    stderr=subprocess.DEVNULL,
    text=True,
  )
  killed_after = None
  deadline = time.time() + 300
  for line in proc.stdout:
    match = ETA_LINE.match(line)
    if match and int(match.group(1)) >= 10:
      killed_after = int(match.group(1))
      os.kill(proc.pid, signal.SIGKILL)
      break
    assert time.time() < deadline
  proc.wait()
  assert killed_after is not None and killed_after < 30
  model_dir = tmp_path / "models" / "tiny"
  resumed_from = latest_step(model_dir)
  assert resumed_from is not None and 8 <= resumed_from <= killed_after
  result = run_cli(tmp_path, "tiny", hparams)
  assert result.returncode == 0, result.stderr
  assert f"model.ckpt-{resumed_from}" in result.stdout
  steps = eta_steps(result.stdout)
  assert steps[0] == resumed_from + 1 and steps[-1] == 30
  assert latest_step(model_dir) == 30


# ----------------------------------------------------------------------------
# ----------------------------------------------------------------------------
# Exact resume, preemption exit status, presets
# ----------------------------------------------------------------------------


def _checkpoint_values(model_dir):
  """{name: value} of the newest checkpoint, without the save counter (how
  many saves a run made is not part of its state)."""
  path = tf.train.latest_checkpoint(str(model_dir))
  reader = tf.train.load_checkpoint(path)
  return {
    name: reader.get_tensor(name)
    for name in reader.get_variable_to_shape_map()
    if not name.startswith("save_counter") and name != "_CHECKPOINTABLE_OBJECT_GRAPH"
  }


class _StepLosses(keras.callbacks.Callback):
  """Each step's loss (the pretrainer logs per-step values, not running means)."""

  def __init__(self):
    super().__init__()
    self.losses = []

  def on_train_batch_end(self, batch, logs=None):
    self.losses.append(float(logs["loss"]))


class _TerminateAfter(keras.callbacks.Callback):
  """Sends this process SIGTERM so that the first `fit` stops after `steps`
  steps: the checkpoint callback runs first, so it sees the signal at the
  end of the step after the one that sent it."""

  def __init__(self, steps):
    super().__init__()
    self.steps = steps

  def on_train_batch_end(self, batch, logs=None):
    if self.steps is not None and batch + 2 == self.steps:
      self.steps = None
      os.kill(os.getpid(), signal.SIGTERM)


def _assert_same_checkpoints(a, b):
  values_a, values_b = _checkpoint_values(a), _checkpoint_values(b)
  assert sorted(values_a) == sorted(values_b)
  for name in values_a:
    np.testing.assert_array_equal(values_a[name], values_b[name], err_msg=name)


@pytest.mark.slow
def test_stop_and_rerun_matches_an_uninterrupted_run_bit_for_bit(tmp_path, capsys):
  make_data_dir(tmp_path)  # 40 records: 8-record batches cross an epoch at step 5
  hparams = self_made_hparams(
    seed=7, train_batch_size=8, num_train_steps=7, save_checkpoints_steps=100
  )
  full = _StepLosses()
  config = PretrainingConfig("full", str(tmp_path), **hparams)
  assert pretraining_run.train_or_eval(config, callbacks=[full]) == 7
  # The same run, stopped by SIGTERM after step 3 (it saves, then raises),
  # and re-run with the same command.
  split = _StepLosses()
  config = PretrainingConfig("split", str(tmp_path), **hparams)
  with pytest.raises(checkpointing.TrainingPreempted, match="global step 3"):
    pretraining_run.train_or_eval(config, callbacks=[split, _TerminateAfter(3)])
  assert latest_step(tmp_path / "models" / "split") == 3
  assert not (tmp_path / "models" / "split" / "train.lock").exists()  # released on preemption
  assert pretraining_run.train_or_eval(config, callbacks=[split]) == 7
  assert "Input pipeline resumes after 3 batches" in capsys.readouterr().out
  assert len(full.losses) == 7
  np.testing.assert_array_equal(split.losses, full.losses)
  _assert_same_checkpoints(tmp_path / "models" / "full", tmp_path / "models" / "split")
  assert _checkpoint_values(tmp_path / "models" / "split")[checkpointing.INPUT_POSITION_KEY] == 7


def test_results_files_have_normal_permissions(tmp_path):
  config = PretrainingConfig("m", str(tmp_path), **self_made_hparams())
  previous = os.umask(0o022)
  try:
    paths = pretraining_run.write_eval_results({"loss": 1.0, "global_step": 3}, config)
  finally:
    os.umask(previous)
  for path in list(paths) + [config.results_pkl]:
    assert os.stat(path).st_mode & 0o777 == 0o644, path


def test_debug_preset_is_the_debug_model_without_deleting_the_model_dir(tmp_path):
  from electra_tf.configs.pretraining import get_pretraining_bert_config

  preset = PretrainingConfig(
    "m", str(tmp_path), **json.loads((REPO_ROOT / "configs" / "debug.json").read_text())
  )
  debug = PretrainingConfig("m", str(tmp_path), debug=True)
  assert preset.debug is False
  assert get_pretraining_bert_config(preset) == get_pretraining_bert_config(debug)
  for name in ("train_batch_size", "eval_batch_size", "num_train_steps", "num_eval_steps"):
    assert getattr(preset, name) == getattr(debug, name), name


@pytest.mark.slow
def test_sigterm_ctrl_c_kill_9_and_kill_9_in_a_save_resume_exactly(tmp_path):
  make_data_dir(tmp_path)
  hparams = self_made_hparams(
    seed=4, train_batch_size=8, num_train_steps=12, save_checkpoints_steps=2
  )
  assert run_cli(tmp_path, "full", hparams).returncode == 0
  for signum, expected, at_step in (
    (signal.SIGTERM, 143, 3),
    (signal.SIGINT, 130, 5),  # Ctrl-C, as a person sends it: the same save
    (signal.SIGKILL, -signal.SIGKILL, 7),
  ):
    proc = subprocess.Popen(
      run_pretraining_command(tmp_path, "split", hparams),
      cwd=REPO_ROOT,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )
    deadline = time.time() + 300
    for line in proc.stdout:
      match = ETA_LINE.match(line)
      if match and int(match.group(1)) >= at_step:
        os.kill(proc.pid, signum)
        break
      assert time.time() < deadline
    proc.stdout.read()
    err = proc.stderr.read()
    assert proc.wait() == expected, err
    lock = tmp_path / "models" / "split" / "train.lock"
    if signum in (signal.SIGTERM, signal.SIGINT):
      what = "preempted" if signum == signal.SIGTERM else "interrupted (Ctrl-C)"
      assert f"{what}: stopped at global step" in err and "Traceback" not in err, err
      assert not lock.exists()  # released
    else:
      assert lock.exists()  # kill -9 leaves it: the re-run finds it stale
  # kill -9 inside a save (the second of the run, or the last): its files
  # are written, the state file still names the one before.
  model_dir = tmp_path / "models" / "split"
  before = latest_step(model_dir)
  target = min(before + 4, 12)
  killed = subprocess.run(
    killed_in_save_command(run_pretraining_command(tmp_path, "split", hparams), target),
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  assert (model_dir / f"model.ckpt-{target}.index").exists()
  assert latest_step(model_dir) == target - 2
  result = run_cli(tmp_path, "split", hparams)
  assert result.returncode == 0, result.stderr
  assert f"taking over the stale lock {lock}" in result.stderr and not lock.exists()
  assert "Input pipeline resumes after" in result.stdout
  _assert_same_checkpoints(tmp_path / "models" / "full", tmp_path / "models" / "split")


@pytest.mark.slow
def test_entry_points_hide_tensorflow_start_up_lines_unless_the_user_sets_the_level():
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}

  def run(args, **extra):
    return subprocess.run(
      [sys.executable] + args,
      cwd=REPO_ROOT,
      env=dict(env, **extra),
      capture_output=True,
      text=True,
      timeout=300,
    )

  for module in ("electra_tf.run_pretraining", "tfrecords_tools.build_vocab"):
    result = run(["-m", module, "--help"])
    assert result.returncode == 0 and "usage" in result.stdout
    assert result.stderr == "", result.stderr
  # The user's own setting is left alone: whatever TensorFlow prints on this
  # machine at level 0 is printed.
  bare = run(["-c", "import tensorflow"], TF_CPP_MIN_LOG_LEVEL="0")
  asked = run(["-m", "electra_tf.run_pretraining", "--help"], TF_CPP_MIN_LOG_LEVEL="0")
  assert bool(asked.stderr.strip()) == bool(bare.stderr.strip())


@pytest.mark.slow
def test_a_diverged_run_exits_3_naming_the_step_and_the_last_good_checkpoint(tmp_path, capsys):
  """A learning rate of 1e30 in float32 overflows the weights after the first
  update: the loss of a later step is NaN. The command stops there with exit
  status 3 (not preemption's 143) and one line, and writes no checkpoint of
  the broken weights."""
  make_data_dir(tmp_path)
  hparams = self_made_hparams(
    learning_rate=1e30, num_train_steps=6, save_checkpoints_steps=1, num_warmup_steps=1
  )
  code = run_pretraining.main(
    ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", json.dumps(hparams)]
  )
  err = capsys.readouterr().err
  assert code == 3, err
  lines = [line for line in err.splitlines() if line.strip()]
  assert len(lines) == 1, err
  match = re.search(
    r"global step (\d+): the loss is nan.* last good checkpoint is (\S+) .*; exit status 3$",
    lines[0],
  )
  assert match, lines[0]
  step = int(match.group(1))
  assert 1 < step <= 6
  last_good = latest_step(tmp_path / "models" / "m")
  assert last_good is not None and last_good < step
  assert f"ckpt-{last_good}" in match.group(2)
  assert not (tmp_path / "models" / "m" / "train.lock").exists()

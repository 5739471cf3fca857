"""Newcomer sweep 25's bad cases (bench/reports/newcomer_sweep_25.md) of
what a killed run leaves for the next reader, one test per class."""

import json
import os
import socket

import numpy as np

import electra_tf
from electra_tf import convert
from electra_tf import convert_checkpoint
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.utils import run_lock
from tests.helpers import model_formats
from tests.helpers import task_models


def test_a_killed_pretraining_runs_checkpoint_is_read_with_a_warning(tmp_path, capsys):
  """Sweep 25 #01, #02, #08, #09: a run killed early (its step-0 save only)
  was exported, converted and published by convert_checkpoint, fine-tuned from and loaded by
  from_checkpoint without a word; sweep 24's warning covered fine-tuning
  trials in the exporter and do_train=false only. Every reader of a run dir
  (now pre-training dirs too) warns once it has read it, naming the dir and its steps."""
  official = model_formats.official_checkpoint(tmp_path / "official")
  vocab = model_formats.write_vocab(tmp_path / "vocab.txt")
  run = tmp_path / "models" / "n"
  convert.convert(str(official), str(run), hparams=json.dumps(model_formats.PRETRAINING_HPARAMS))
  hparams = json.loads((run / "converted_hparams.json").read_text())

  def planned(steps):
    config = electra_tf.PretrainingConfig(
      "n", str(tmp_path), vocab_file=vocab, num_train_steps=steps, **hparams
    )
    model_dir_lib.write_run_config(config, model_dir=str(run))

  planned(2000)
  warning = (
    f"warning: '{run}' stopped at step 7 of 2000 (an interrupted pre-training run): "
    "re-run run_pretraining to finish it; {} it as it is"
  )
  capsys.readouterr()
  argv = ["--input", str(run), "--output"]
  assert convert_checkpoint.main([*argv, str(tmp_path / "d.keras"), "--part", "discriminator"]) == 0
  assert capsys.readouterr().err.splitlines()[-1] == warning.format("converted")
  argv += [str(tmp_path / "hf"), "--to", "huggingface", "--vocab-file", vocab]
  assert convert_checkpoint.main(argv) == 0
  assert capsys.readouterr().err.splitlines()[-1] == warning.format("published")
  electra_tf.ElectraClassifier.from_checkpoint(str(run), num_classes=2, max_seq_length=16)
  assert warning.format("loading") in capsys.readouterr().err.splitlines()
  # The Python API warns as the command does (it used to say nothing).
  convert.convert(str(run), str(tmp_path / "g.keras"), part="generator")
  assert capsys.readouterr().err.splitlines()[-1] == warning.format("converted")
  # A run that is still training is not called interrupted.
  with run_lock.RunLock(str(run / run_lock.LOCK_FILE), "run_pretraining"):
    live = model_dir_lib.unfinished_trial_warning(str(run), "exporting")
  assert live == (
    f"'{run}' is at step 7 of 2000: it is still training, in run_pretraining (pid "
    f"{os.getpid()} on {socket.gethostname()}, since {live.split('since ')[1]}"
  ), live
  assert live.endswith("); exporting its newest checkpoint as it is"), live
  assert (
    model_dir_lib.unfinished_trial_warning(str(run), "exporting")
    == warning.format("exporting")[len("warning: ") :]
  )
  assert (
    model_dir_lib.unfinished_trial_warning(str(run / "model.ckpt-7"), "fine-tuning")
    == (warning.format("fine-tuning")[len("warning: ") :])
  )
  # A finished run (or one with no planned steps recorded) says nothing.
  planned(7)
  assert model_dir_lib.warn_if_unfinished(str(run), "exporting") is None
  content = json.loads((run / "config.json").read_text())
  del content["hparams"]["num_train_steps"]
  (run / "config.json").write_text(json.dumps(content))
  assert model_dir_lib.unfinished_trial_warning(str(run), "exporting") is None
  assert capsys.readouterr().err == ""


def test_a_task_keras_file_gives_from_checkpoint_its_vocab_and_sizes(tmp_path):
  """Sweep 25 #61: ElectraQuestionAnswerer.from_checkpoint of an SST
  classifier's .keras said the file records no vocab, though its
  preprocessor's config holds the whole vocabulary (and the model its sizes)."""
  task_models.pretrained_dir(tmp_path / "pre")
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    str(tmp_path / "pre"),
    num_classes=2,
    vocab_file=str(tmp_path / "pre" / "vocab.txt"),
    max_seq_length=24,
    **task_models.TINY_SIZE,
  )
  classifier.save(str(tmp_path / "clf.keras"))  # no config.json beside it
  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(str(tmp_path / "clf.keras"))
  assert qa.preprocessor.max_seq_length == 24
  assert qa.preprocessor.tokenizer.vocab_size == classifier.preprocessor.tokenizer.vocab_size
  ours = classifier.finetuning_model.official_name_map()
  theirs = qa.finetuning_model.official_name_map()
  encoder = [n for n in ours if n.startswith("electra/")]
  assert encoder and all(np.array_equal(ours[n], theirs[n]) for n in encoder)

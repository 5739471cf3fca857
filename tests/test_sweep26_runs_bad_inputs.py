"""Newcomer sweep 26's bad cases (bench/reports/newcomer_sweep_26.md, rows
01, 08, 15, 16) of what a run starts from or leaves, one test per class: a
killed run read by the Python loaders without a word, a `.keras` of another
width as a fine-tuning start, a discriminator-only checkpoint as a
pre-training start."""

import json

import pytest

import electra_tf
from electra_tf import convert
from electra_tf import export_saved_model
from electra_tf import run_finetuning
from electra_tf import run_pretraining
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.serving import export
from electra_tf.sources import any_format
from tests.helpers import model_formats
from tests.helpers.bad_inputs import one_line


@pytest.fixture(scope="module")
def made(tmp_path_factory):
  """A random official checkpoint, its vocab and its `.keras` discriminator."""
  root = tmp_path_factory.mktemp("made")
  official = model_formats.official_checkpoint(root / "official")
  vocab = model_formats.write_vocab(root / "vocab.txt")
  disc = root / "disc.keras"
  convert.convert(str(official), str(disc), part="discriminator")
  return official, vocab, disc


def test_a_killed_run_is_read_by_the_python_loaders_with_one_warning(made, tmp_path, capsys):
  """Rows 01 and 08: `export.load_model` and `any_format.load` read a run
  killed at step 0 of 2,000 (here 7) without the warning the commands give; now they
  warn, and the export command, which loads through them, still warns once."""
  official, vocab, _ = made
  run = tmp_path / "models" / "n"
  convert.convert(str(official), str(run), hparams=json.dumps(model_formats.PRETRAINING_HPARAMS))
  hparams = json.loads((run / "converted_hparams.json").read_text())
  config = electra_tf.PretrainingConfig(
    "n", str(tmp_path), vocab_file=vocab, num_train_steps=2000, **hparams
  )
  model_dir_lib.write_run_config(config, model_dir=str(run))
  warning = (
    f"warning: '{run}' stopped at step 7 of 2000 (an interrupted pre-training run): "
    "re-run run_pretraining to finish it; {} it as it is"
  )
  capsys.readouterr()
  any_format.load(str(run), "discriminator")
  assert one_line(capsys) == warning.format("loading")
  model, _ = export.load_model(checkpoint=str(run))
  assert one_line(capsys) == warning.format("loading")
  argv = ["--model", "discriminator", "--checkpoint", str(run), "--export-dir"]
  assert export_saved_model.main([*argv, str(tmp_path / "exp")]) == 0
  warned = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
  assert warned == [warning.format("exporting")]
  # A finished run: no word.
  config.num_train_steps = 7
  model_dir_lib.write_run_config(config, model_dir=str(run))
  any_format.load(str(run), "discriminator")
  assert capsys.readouterr().err == ""


def test_a_keras_start_of_another_width_is_refused_before_the_trial_dir(made, tmp_path, capsys):
  """Row 15: `init_checkpoint` a `.keras` discriminator (H=32) with hparams of
  H=64 ended in a traceback from the weight assignment, after the trial dir
  and its config.json were written."""
  _, vocab, disc = made
  data = tmp_path / "d"
  (data / "finetuning_data").mkdir(parents=True)
  (data / "vocab.txt").write_text(open(vocab).read())
  hparams = {
    "task_names": ["rte"],
    "init_checkpoint": str(disc),
    "embedding_size": model_formats.DIMS["E"],
    "model_hparam_overrides": {
      **model_formats.ENCODER_SIZES["model_hparam_overrides"],
      "hidden_size": 64,
      "intermediate_size": 128,
    },
  }
  argv = ["--data-dir", str(data), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) == 2
  assert one_line(capsys) == (
    f"run_finetuning: error: the checkpoint '{disc}' does not fit the encoder the hparams "
    "build: hidden_size 64 (checkpoint: 32), intermediate_size 128 (checkpoint: 64)"
  )
  assert not (data / "models").exists()


def test_a_discriminator_only_checkpoint_is_refused_as_a_pretraining_start(made, tmp_path, capsys):
  """Row 16: an official checkpoint converted from a `.keras` discriminator
  as init_checkpoint was refused as a shape mismatch (`generator/… [8] (and
  22 more)`) after an empty model dir was made; now what it holds is said,
  before the model dir."""
  _, vocab, disc = made
  off = tmp_path / "off"
  convert.convert(str(disc), str(off), direction="to-official", global_step=100)
  data = tmp_path / "d"
  data.mkdir()
  (data / "vocab.txt").write_text(open(vocab).read())
  hparams = {**model_formats.ENCODER_SIZES, "init_checkpoint": str(off), "max_seq_length": 64}
  argv = ["--data-dir", str(data), "--model-name", "n", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 2
  assert one_line(capsys) == (
    f"run_pretraining: error: hparam init_checkpoint='{off}' holds a discriminator only (no "
    "generator entries: converted from a .keras discriminator?); pre-training starts from a "
    "whole pre-trainer: convert the pre-training run (or its ElectraPretrainer .keras), or "
    "start without init_checkpoint"
  )
  assert not (data / "models").exists()

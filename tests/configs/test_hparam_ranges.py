"""Every pre-training hparam with a range is checked when the config is
built, in one line naming the hparam and the range; `run_pretraining`
refuses it with exit status 2 before any work (no model dir is created)."""

import json

import pytest

from electra_tf import run_pretraining
from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.pretraining import PretrainingConfig
from tests.helpers import pretraining_data

TINY = pretraining_data.self_made_hparams()


@pytest.mark.parametrize(
  "hparams, words",
  [
    ({"mask_prob": 1.5}, "hparam mask_prob=1.5; expected a value in (0, 1]"),
    ({"mask_prob": 0}, "hparam mask_prob=0; expected a value in (0, 1]"),
    ({"mask_prob": -0.1}, "hparam mask_prob=-0.1"),
    ({"generator_hidden_size": 0}, "hparam generator_hidden_size=0; expected a value in (0, 1]"),
    ({"generator_hidden_size": 2.0}, "hparam generator_hidden_size=2.0"),
    ({"generator_layers": 1.5}, "hparam generator_layers=1.5"),
    ({"temperature": 0}, "hparam temperature=0; expected > 0"),
    ({"disc_weight": -1}, "hparam disc_weight=-1; expected >= 0"),
    ({"learning_rate": -1e-4}, "hparam learning_rate=-0.0001; expected >= 0"),
    ({"weight_decay_rate": -0.01}, "hparam weight_decay_rate=-0.01"),
    ({"train_batch_size": 0}, "hparam train_batch_size=0; expected a positive integer"),
    ({"eval_batch_size": -4}, "hparam eval_batch_size=-4"),
    ({"max_seq_length": 0}, "hparam max_seq_length=0"),
    ({"num_train_steps": 0}, "hparam num_train_steps=0"),
    ({"vocab_size": 0}, "hparam vocab_size=0"),
    ({"save_checkpoints_steps": -1}, "hparam save_checkpoints_steps=-1; expected an integer >= 0"),
    ({"embedding_size": 0}, "hparam embedding_size=0"),
    ({"do_train": False, "do_eval": True, "num_eval_steps": 0}, "hparam num_eval_steps=0"),
    (
      {"model_hparam_overrides": {**TINY["model_hparam_overrides"], "num_attention_heads": 3}},
      "hidden_size=32 must be divisible by num_attention_heads=3",
    ),
    (
      {"model_hparam_overrides": {**TINY["model_hparam_overrides"], "hidden_dropout_prob": 1.0}},
      "hidden_dropout_prob=1.0; expected a probability in [0, 1)",
    ),
    # 256 * 0.505 = 129 generator units over 2 heads (the generator's heads follow its size).
    (
      {"model_hparam_overrides": {"hidden_size": 256}, "generator_hidden_size": 0.505},
      "the generator's BertConfig (hparams generator_hidden_size=0.505",
    ),
    ({"generator_layers": 0.1}, "num_hidden_layers=0; expected at least 1 of each"),
  ],
)
def test_out_of_range_hparams_are_one_line(tmp_path, hparams, words):
  with pytest.raises(ValueError) as e:
    PretrainingConfig("m", str(tmp_path), **{**TINY, **hparams})
  assert words in str(e.value)
  assert "\n" not in str(e.value)


def test_the_presets_and_defaults_pass(tmp_path):
  PretrainingConfig("m", str(tmp_path))
  PretrainingConfig("m", str(tmp_path), debug=True)
  PretrainingConfig("m", str(tmp_path), **TINY)
  for size in ("small", "base", "large"):
    PretrainingConfig("m", str(tmp_path), model_size=size, generator_hidden_size=1.0)
  # A generator sharing the discriminator's transformer has no size of its own.
  PretrainingConfig("m", str(tmp_path), untied_generator=False, generator_hidden_size=1.0)


def test_bert_config_check_names_the_field():
  BertConfig(vocab_size=10, hidden_size=32, num_attention_heads=4).check()
  with pytest.raises(ValueError, match="x num_hidden_layers=0; expected a positive integer"):
    BertConfig(vocab_size=10, num_hidden_layers=0).check("x")
  with pytest.raises(ValueError, match="hidden_act='swish'"):
    BertConfig(vocab_size=10, hidden_act="swish").check()


@pytest.mark.parametrize(
  "hparams",
  [
    {"mask_prob": 1.5},
    {"model_hparam_overrides": {**TINY["model_hparam_overrides"], "num_attention_heads": 3}},
    {"max_seq_length": 600},  # beyond the 512 positions (a config to load a model may say so)
  ],
)
def test_run_pretraining_refuses_before_any_work(tmp_path, capsys, hparams):
  data_dir = tmp_path / "data"  # nothing there: the hparams are checked first
  argv = ["--data-dir", str(data_dir), "--model-name", "m"]
  assert run_pretraining.main(argv + ["--hparams", json.dumps({**TINY, **hparams})]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("run_pretraining: error: "), err
  assert "hparam " in err[0]
  assert not data_dir.exists()


def test_evaluation_without_a_checkpoint_is_one_line(tmp_path, capsys):
  data_dir = pretraining_data.make_data_dir(tmp_path / "data")
  hparams = {**TINY, "do_train": False, "do_eval": True, "vocab_file": str(data_dir / "vocab.txt")}
  argv = ["--data-dir", str(data_dir), "--model-name", "none", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "do_eval: no checkpoint found in model dir" in err[0], err
  assert not (data_dir / "models" / "none").exists()


def test_a_relative_data_dir_is_not_doubled_in_the_no_records_line(tmp_path, capsys, monkeypatch):
  monkeypatch.chdir(tmp_path)
  data_dir = pretraining_data.make_data_dir(tmp_path / "data")
  for record_file in (data_dir / "pretrain_tfrecords").iterdir():
    record_file.unlink()
  argv = ["--data-dir", "data", "--model-name", "m", "--hparams", json.dumps(TINY)]
  assert run_pretraining.main(argv) == 2
  err = capsys.readouterr().err
  assert "No pre-training TFRecords found" in err and "'data/pretrain_tfrecords/" in err, err
  assert "data/data" not in err

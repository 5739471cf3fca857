"""A model dir describes itself (`electra_tf.checkpoints.model_dir`): a tiny
`run_pretraining` run writes `config.json`, and the exporter and the converter
rebuild the model from it with no `--hparams` (attention heads included)."""

import hashlib
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert_checkpoint
from electra_tf import export_saved_model
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.sources import any_format
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.lock_holder import another_trainer_holding
from tests.helpers.pretraining_data import pretrain_on_self_made_data
from tests.helpers.pretraining_data import self_made_hparams

# Heads differ from the size rule max(1, H // 64) = 1, so a rebuild that
# guessed them from shapes would differ from the trained model.
HEADS = 4


def _hparams(**kwargs):
  hparams = self_made_hparams(seed=5, do_lower_case=False, **kwargs)
  hparams["model_hparam_overrides"] = dict(
    hparams["model_hparam_overrides"], num_attention_heads=HEADS
  )
  return hparams


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
  """A 2-step run of `train_or_eval` on self-made data: `(data_dir, model_dir)`."""
  data_dir = tmp_path_factory.mktemp("run")
  assert pretrain_on_self_made_data(data_dir, _hparams(num_train_steps=2)) == 2
  return data_dir, data_dir / "models" / "m"


def test_write_and_read_back_without_training(tmp_path):
  config = PretrainingConfig("m", str(tmp_path), **_hparams(uniform_generator=True))
  path = model_dir_lib.write_run_config(config)
  assert path == str(tmp_path / "models" / "m" / "config.json")
  run_config = model_dir_lib.read_run_config(os.path.dirname(path))
  assert "generator" not in run_config["architecture"]  # uniform sampling: no generator network
  assert run_config["vocab"]["file"] == str(tmp_path / "vocab.txt")
  assert run_config["vocab"]["size"] is None  # no vocab file yet: nothing made up
  again = model_dir_lib.pretraining_config_from_run_config(run_config, {"temperature": 2.0})
  assert again.to_dict() == dict(config.to_dict(), temperature=2.0)


@pytest.mark.slow
def test_config_json_describes_the_run(trained_run):
  data_dir, model_dir = trained_run
  run_config = model_dir_lib.read_run_config(str(model_dir))
  assert run_config["kind"] == "pretraining"
  assert run_config["architecture"]["discriminator"]["num_attention_heads"] == HEADS
  assert run_config["architecture"]["discriminator"]["hidden_size"] == 32
  assert run_config["architecture"]["generator"]["hidden_size"] == 8
  assert run_config["architecture"]["embedding_size"] == 16
  assert run_config["vocab"] == {
    "file": str(data_dir / "vocab.txt"),
    "size": 60,
    "sha256": hashlib.sha256((data_dir / "vocab.txt").read_bytes()).hexdigest(),
    # the tokens in id order: the same for a copy with other line ends
    "tokens_sha256": hashlib.sha256(
      "\n".join((data_dir / "vocab.txt").read_text().splitlines()).encode()
    ).hexdigest(),
    "special_ids": {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4},
    "do_lower_case": False,
    "strip_accents": run_config["hparams"]["strip_accents"],
  }
  assert run_config["hparams"]["strip_accents"] is True  # the original's default
  assert run_config["hparams"]["num_train_steps"] == 2
  # The file is plain JSON and only the config is next to the checkpoints (no temp file).
  assert not [n for n in os.listdir(model_dir) if n.startswith(".") or n.endswith(".tmp")]
  # Read through a checkpoint prefix too; the config rebuilds the same hparams.
  prefix = tf.train.latest_checkpoint(str(model_dir))
  again = model_dir_lib.pretraining_config_from_run_config(model_dir_lib.read_run_config(prefix))
  assert again.model_hparam_overrides["num_attention_heads"] == HEADS
  assert again.do_lower_case is False and again.max_predictions_per_seq == 4


def test_read_run_config_rejects_foreign_files(tmp_path):
  assert model_dir_lib.read_run_config(str(tmp_path)) is None
  (tmp_path / "config.json").write_text('{"model_type": "electra"}')
  with pytest.raises(ValueError, match="config.json' is not an electra_tf run config"):
    model_dir_lib.read_run_config(str(tmp_path))
  (tmp_path / "config.json").write_text("{")
  with pytest.raises(ValueError, match="is not valid JSON"):
    model_dir_lib.read_run_config(str(tmp_path))


def _restored_discriminator_logits(model_dir, features):
  """Logits of the run's newest checkpoint in a model built from the run's
  hparams directly (not from config.json), so wrong heads would show."""
  from electra_tf.models.electra_pretrainer import ElectraPretrainer

  config = PretrainingConfig("m", os.path.dirname(os.path.dirname(model_dir)), **_hparams())
  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  any_format.restore_model_variables(model, tf.train.latest_checkpoint(str(model_dir)))
  return np.asarray(model.discriminator(features)["logits"])


S = 16  # the export's --max-seq-length: `serve_ids` takes [batch, S]
FEATURES = {
  "input_ids": np.array([[2, 7, 9, 11, 4, 3] + [0] * (S - 6)], np.int32),
  "input_mask": np.array([[1] * 6 + [0] * (S - 6)], np.int32),
  "segment_ids": np.zeros((1, S), np.int32),
}


@pytest.mark.slow
def test_export_needs_no_hparams(trained_run, tmp_path):
  _, model_dir = trained_run
  export_dir = tmp_path / "serving"
  args = [
    "--checkpoint",
    str(model_dir),
    "--export-dir",
    str(export_dir),
    "--max-seq-length",
    str(S),
  ]
  assert export_saved_model.main(args) == 0
  loaded = tf.saved_model.load(str(export_dir / "1"))
  out = loaded.signatures["serve_ids"](**{k: tf.constant(v) for k, v in FEATURES.items()})
  expected = _restored_discriminator_logits(model_dir, FEATURES)
  mask = FEATURES["input_mask"].astype(bool)
  np.testing.assert_allclose(out["rtd_logits"].numpy()[mask], expected[mask], atol=1e-5)


@pytest.mark.slow
def test_convert_to_discriminator_in_one_hop(trained_run, tmp_path, capsys):
  data_dir, model_dir = trained_run
  output = model_dir / "disc.keras"  # kept in the run's dir: its config.json knows the vocab
  args = ["--input", str(model_dir), "--output", str(output), "--part", "discriminator"]
  assert convert_checkpoint.main(args) == 0
  assert "config.json" in capsys.readouterr().out  # the report says where the model came from
  disc = keras.saving.load_model(str(output), compile=False)
  encoder = next(layer for layer in disc.layers if type(layer).__name__ == "ElectraDiscriminator")
  assert encoder.bert_config["num_attention_heads"] == HEADS
  logits = np.asarray(disc(FEATURES)["logits"])
  mask = FEATURES["input_mask"].astype(bool)
  expected = _restored_discriminator_logits(model_dir, FEATURES)
  np.testing.assert_allclose(logits[mask], expected[mask], atol=1e-5)
  # Exporting the .keras file needs no --vocab-file either (it is the run's).
  args = ["--keras-model", str(output), "--export-dir", str(tmp_path / "serving")]
  assert export_saved_model.main(args + ["--max-seq-length", str(S)]) == 0
  exported = (tmp_path / "serving" / "1" / "assets" / "vocab.txt").read_text()
  assert exported == (data_dir / "vocab.txt").read_text()


@pytest.mark.slow
def test_contradicting_hparams_are_a_clear_error(trained_run, tmp_path, capsys):
  _, model_dir = trained_run
  wrong = json.dumps({"model_hparam_overrides": {"hidden_size": 48, "num_attention_heads": 4}})
  args = ["--input", str(model_dir), "--output", str(tmp_path / "d.keras"), "--hparams", wrong]
  assert convert_checkpoint.main(args + ["--part", "discriminator"]) == 2
  err = capsys.readouterr().err
  # Compared with what config.json records before any weights are read.
  assert f"--hparams contradict {model_dir}/config.json" in err
  assert "discriminator.hidden_size 32 → 48" in err
  assert not (tmp_path / "d.keras").exists()
  args = ["--checkpoint", str(model_dir), "--export-dir", str(tmp_path / "out"), "--hparams", wrong]
  assert export_saved_model.main(args) == 2
  # The converter and the exporter read the run through one door: one message.
  assert f"--hparams contradict {model_dir}/config.json" in capsys.readouterr().err


@pytest.mark.slow
def test_without_config_json_export_asks_for_hparams(trained_run, tmp_path, capsys):
  _, model_dir = trained_run
  copy = tmp_path / "old_run"
  copy.mkdir()
  for name in os.listdir(model_dir):
    if name.startswith(("model.ckpt", "checkpoint")):
      tf.io.gfile.copy(str(model_dir / name), str(copy / name))
  args = ["--checkpoint", str(copy), "--export-dir", str(tmp_path / "out")]
  assert export_saved_model.main(args) == 2
  assert "without config.json" in capsys.readouterr().err


@pytest.mark.slow
def test_part_on_an_official_output_names_the_fix(trained_run, tmp_path):
  _, model_dir = trained_run
  from electra_tf import convert

  with pytest.raises(ValueError, match="--part applies to .keras outputs"):
    convert.convert(str(model_dir), str(tmp_path / "official"), part="discriminator")
  with pytest.raises(ValueError, match="give an --output ending in .keras"):
    convert.convert(str(model_dir), str(tmp_path / "o"), direction="to-keras")


def test_finetuning_runs_describe_their_encoder(tmp_path):
  overrides = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": HEADS}
  config = finetuning_config(
    "m", str(tmp_path), task_names=["rte"], model_hparam_overrides=overrides
  )
  path = model_dir_lib.write_run_config(config, str(tmp_path / "ft"), kind="finetuning")
  run_config = model_dir_lib.read_run_config(path)
  assert run_config["kind"] == "finetuning"
  assert run_config["architecture"]["encoder"]["num_attention_heads"] == HEADS
  assert run_config["hparams"]["task_names"] == ["rte"]
  with pytest.raises(ValueError, match="of a finetuning run, not a pre-training run"):
    model_dir_lib.pretraining_config_from_run_config(run_config)


def _cli(data_dir, hparams):
  from electra_tf import run_pretraining

  args = ["--data-dir", str(data_dir), "--model-name", "m", "--hparams"]
  return run_pretraining.main(args + [hparams if isinstance(hparams, str) else json.dumps(hparams)])


@pytest.mark.slow
def test_a_rerun_may_not_change_the_architecture(trained_run, tmp_path, capsys):
  """A re-run that asks for another architecture (4 → 2 heads: no tensor
  shape changes) stops in one line with exit 2 and leaves config.json and
  the checkpoints as they were; other hparams may change; evaluation and a
  run config passed back as --hparams take the dir's model."""
  import shutil

  from electra_tf.utils import run_lock

  data_dir = tmp_path / "copy"
  shutil.copytree(trained_run[0], data_dir)
  model_dir = data_dir / "models" / "m"
  config_json = (model_dir / "config.json").read_bytes()
  checkpoints = sorted(os.listdir(model_dir))
  two_heads = _hparams(num_train_steps=3)
  two_heads["model_hparam_overrides"]["num_attention_heads"] = 2
  capsys.readouterr()
  assert _cli(data_dir, two_heads) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1, err
  assert "discriminator.num_attention_heads 4 → 2" in err and str(model_dir) in err
  assert (model_dir / "config.json").read_bytes() == config_json
  assert sorted(os.listdir(model_dir)) == checkpoints
  # A second trainer while one is alive: one line naming it.
  with another_trainer_holding(model_dir / run_lock.LOCK_FILE, "run_pretraining m") as pid:
    assert _cli(data_dir, _hparams(num_train_steps=3)) == 2
    assert f"in use by run_pretraining m (pid {pid}" in capsys.readouterr().err
  # A run of an older version (no config.json) is checked against the checkpoint's shapes.
  os.rename(model_dir / "config.json", tmp_path / "config.json")
  wider = _hparams(num_train_steps=3, embedding_size=8)
  assert _cli(data_dir, wider) == 2
  assert "embedding_size 16 → 8" in capsys.readouterr().err
  os.rename(tmp_path / "config.json", model_dir / "config.json")
  # Steps and learning rate may change: training goes on and config.json records them.
  assert _cli(data_dir, _hparams(num_train_steps=3, learning_rate=1e-3)) == 0
  recorded = model_dir_lib.read_run_config(str(model_dir))
  assert recorded["hparams"]["num_train_steps"] == 3
  assert recorded["hparams"]["learning_rate"] == 1e-3
  assert not (model_dir / run_lock.LOCK_FILE).exists()  # released
  # The run's config.json as --hparams: the same run (nothing left to train).
  capsys.readouterr()
  assert _cli(data_dir, str(model_dir / "config.json")) == 0
  assert "nothing to train" in capsys.readouterr().out
  # Evaluation needs no sizes: they (and the vocab, max_seq_length) come from config.json.
  assert _cli(data_dir, {"do_train": False, "do_eval": True, "num_eval_steps": 1}) == 0
  with open(model_dir / "results" / "unsup_results.json") as f:
    assert json.load(f)["global_step"] == 3
  # ... and a size that contradicts it is the same one-line error.
  assert _cli(data_dir, {"do_train": False, "do_eval": True, "embedding_size": 8}) == 2
  assert "embedding_size 16 → 8" in capsys.readouterr().err


def test_a_run_config_is_accepted_as_hparams(tmp_path, monkeypatch):
  """`--hparams <run>/config.json` gives the run's hparams; the paths that
  followed the run's --data-dir / --model-name follow the new flags, the
  ones the run set stay."""
  from electra_tf.hparams_input import load_hparams

  monkeypatch.chdir(tmp_path)
  explicit = str(tmp_path / "records" / "*.tfrecord")
  config = PretrainingConfig("m", "data", **_hparams(pretrain_tfrecords=explicit))
  path = model_dir_lib.write_run_config(config)
  hparams = load_hparams(path)
  assert "data_dir" not in hparams and "model_name" not in hparams
  assert "model_dir" not in hparams and "vocab_file" not in hparams
  assert hparams["pretrain_tfrecords"] == explicit
  again = PretrainingConfig("other", "data2", **hparams)
  assert again.model_dir == os.path.join("data2", "models", "other")
  assert again.to_dict() == dict(
    config.to_dict(),
    model_name="other",
    model_dir=again.model_dir,
    vocab_file=os.path.join("data2", "vocab.txt"),
    results_txt=again.results_txt,
    results_pkl=again.results_pkl,
  )
  # A fine-tuning trial's config.json: its trial dir is not taken as the model dir.
  ft = finetuning_config("m", "data", task_names=["rte"], learning_rate=3e-3)
  ft.model_dir += "_1"
  path = model_dir_lib.write_run_config(ft, ft.model_dir, kind="finetuning")
  ft_hparams = load_hparams(path)
  assert "model_dir" not in ft_hparams and ft_hparams["learning_rate"] == 3e-3
  assert finetuning_config("m", "data", **ft_hparams).model_dir.endswith("rte_model")


def test_an_mlm_only_run_records_its_full_size_generator_as_the_encoder(tmp_path):
  """An MLM-only run (`electra_objective: false`) has no discriminator; its
  generator is the full-size encoder (as the pretrainer builds it), and that
  is what config.json records and fine-tuning reads."""
  from electra_tf.checkpoints import model_dir as model_dir_lib
  from electra_tf.configs.pretraining import PretrainingConfig

  overrides = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
  mlm = PretrainingConfig(
    "m", str(tmp_path), electra_objective=False, vocab_size=100, model_hparam_overrides=overrides
  )
  run_config = model_dir_lib.run_config_dict(mlm)
  assert "discriminator" not in run_config["architecture"]
  assert run_config["architecture"]["generator"]["hidden_size"] == 64
  encoder, _ = model_dir_lib.encoder_config(run_config)
  assert encoder["hidden_size"] == 64 and encoder["num_hidden_layers"] == 2
  # Beside a discriminator the generator is the small one, and the encoder the discriminator.
  electra = PretrainingConfig("m", str(tmp_path), vocab_size=100, model_hparam_overrides=overrides)
  towers = model_dir_lib.run_config_dict(electra)["architecture"]
  assert towers["generator"]["hidden_size"] == 16 and towers["discriminator"]["hidden_size"] == 64

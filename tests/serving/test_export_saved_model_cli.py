"""The command line `python -m electra_tf.export_saved_model`: exports
from a fine-tuned checkpoint, an electra_tf training checkpoint and the
original's tiny checkpoint (directly or via the converter's `.keras` file),
and its errors for bad input or a checkpoint of another model."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import export_saved_model
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.text import wordpiece as tokenization
from tests.helpers.serving import PRETRAIN_HPARAMS
from tests.helpers.serving import TEXT_A
from tests.helpers.serving import TEXT_B
from tests.helpers.serving import S
from tests.helpers.serving import assert_close
from tests.helpers.serving import featurize
from tests.helpers.serving import tiny_pretrainer
from tests.helpers.serving import write_vocab


@pytest.mark.slow
def test_finetuned_checkpoint_export(tmp_path):
  from electra_tf.checkpoints import name_based
  from tests.helpers.finetuning_testdata import finetuning_config

  vocab_file = write_vocab(str(tmp_path))
  hparams = dict(PRETRAIN_HPARAMS, task_names=["rte", "sts"])
  hparams.pop("generator_hidden_size")
  config = finetuning_config("tiny", str(tmp_path), **hparams)
  keras.utils.set_random_seed(5)
  model = export_lib.build_finetuning_model(config)
  for weight in model.weights:  # trained-looking heads
    if "task_specific" in weight.path or "bias" in weight.path:
      weight.assign(np.random.default_rng(6).normal(size=weight.shape).astype("float32"))
  # the fine-tuning runs' layout: original names under task_specific/<task>/
  name_based.save_name_based(model.official_name_map(), str(tmp_path / "ft"), 9)
  assert (
    export_saved_model.main(
      [
        "--checkpoint",
        str(tmp_path / "ft"),
        "--hparams",
        json.dumps(hparams),
        "--model",
        "task",
        "--task",
        "sts",
        "--vocab-file",
        vocab_file,
        "--export-dir",
        str(tmp_path / "out"),
        "--max-seq-length",
        str(S),
        "--version",
        "12",
      ]
    )
    == 0
  )
  loaded = tf.saved_model.load(str(tmp_path / "out" / "12"))
  out = loaded.signatures["serving_default"](text_a=tf.constant(TEXT_A), text_b=tf.constant(TEXT_B))
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  sequence = model.encoder(features)["sequence_output"]
  n = len(TEXT_A)
  ref = model.heads[1](
    sequence, {"sts_targets": np.zeros(n, "float32"), "sts_eid": np.zeros(n, "int32")}
  )
  assert_close(out["predictions"].numpy(), np.asarray(ref["predictions"]), "sts")
  assert sorted(out) == ["input_ids", "input_mask", "predictions", "segment_ids"]


def test_cli_reports_bad_input(tmp_path, capsys):
  assert (
    export_saved_model.main(["--checkpoint", str(tmp_path), "--export-dir", str(tmp_path / "out")])
    == 2
  )
  assert "has no usable `checkpoint` file" in capsys.readouterr().err
  assert (
    export_saved_model.main(
      ["--checkpoint", str(tmp_path), "--model", "task", "--export-dir", str(tmp_path / "out")]
    )
    == 2
  )
  assert "holds no model electra_tf reads" in capsys.readouterr().err
  assert (
    export_saved_model.main(
      ["--keras-model", str(tmp_path / "missing.keras"), "--export-dir", str(tmp_path / "out")]
    )
    == 2
  )
  assert "does not exist" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    export_saved_model.main(
      ["--checkpoint", str(tmp_path), "--export-dir", str(tmp_path), "--length-multiple", "0"]
    )
  assert "--length-multiple 0; expected at least 1" in capsys.readouterr().err
  # An empty --export-dir names the flag (every output path is checked by the same helper).
  code = export_saved_model.main(["--checkpoint", str(tmp_path), "--export-dir", ""])
  err = capsys.readouterr().err
  assert code == 2
  assert err.strip() == "export_saved_model: error: --export-dir is empty; expected a path"


def _export_pretraining_checkpoint(checkpoint, vocab_file, export_dir):
  """The exit status of the export CLI on a pre-training checkpoint of `PRETRAIN_HPARAMS`."""
  return export_saved_model.main(
    [
      "--checkpoint",
      str(checkpoint),
      "--hparams",
      json.dumps(PRETRAIN_HPARAMS),
      "--vocab-file",
      vocab_file,
      "--export-dir",
      str(export_dir),
      "--max-seq-length",
      str(S),
    ]
  )


@pytest.mark.slow
def test_electra_tf_training_checkpoint_export(tmp_path):
  vocab_file = write_vocab(str(tmp_path))
  pretrainer = tiny_pretrainer(str(tmp_path))
  optimizer = keras.optimizers.Adam()
  optimizer.build(pretrainer.trainable_variables)
  # The layout `checkpointing.TrainingCheckpointManager` writes.
  prefix = tf.train.Checkpoint(model=pretrainer, optimizer=optimizer).write(
    str(tmp_path / "ckpt" / "model.ckpt-7")
  )
  assert (
    _export_pretraining_checkpoint(
      str(tmp_path / "ckpt" / "model.ckpt-7"), vocab_file, tmp_path / "out"
    )
    == 0
  )
  assert prefix.endswith("model.ckpt-7")
  loaded = tf.saved_model.load(str(tmp_path / "out" / "1"))
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  out = loaded.signatures["serve_ids"](**{k: tf.constant(v) for k, v in features.items()})
  assert_close(
    out["rtd_logits"].numpy(),
    np.asarray(pretrainer.discriminator(features)["logits"]),
    "rtd_logits",
  )


def test_checkpoint_of_another_model_is_refused(tmp_path, capsys):
  vocab_file = write_vocab(str(tmp_path))
  other = dict(
    PRETRAIN_HPARAMS,
    model_hparam_overrides=dict(PRETRAIN_HPARAMS["model_hparam_overrides"], num_hidden_layers=2),
  )
  keras.utils.set_random_seed(1)
  deeper = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("deeper", str(tmp_path), **other)
  )
  deeper.build()
  prefix = tf.train.Checkpoint(model=deeper).write(str(tmp_path / "ckpt" / "model.ckpt-7"))
  assert _export_pretraining_checkpoint(prefix, vocab_file, tmp_path / "out") == 2
  assert "cannot restore the whole model" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("source", ["checkpoint", "converted_keras"])
def test_official_checkpoint_export_matches_the_original(original_fixtures, tmp_path, source):
  """The original's tiny checkpoint, exported directly (read by the
  converter's loader) or from the converter's `.keras` discriminator, serves
  the original's golden RTD outputs."""
  golden = np.load(original_fixtures / "golden" / "tiny.npz")
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")
  if source == "checkpoint":
    args = ["--checkpoint", str(original_fixtures / "models" / "tiny"), "--hparams", hparams]
  else:
    from electra_tf import convert_checkpoint

    keras_file = str(tmp_path / "tiny_disc.keras")
    assert (
      convert_checkpoint.main(
        [
          "--input",
          str(original_fixtures / "models" / "tiny"),
          "--output",
          keras_file,
          "--part",
          "discriminator",
          "--hparams",
          hparams,
        ]
      )
      == 0
    )
    args = ["--keras-model", keras_file]
  export_dir = str(tmp_path / "tiny")
  assert (
    export_saved_model.main(
      args
      + [
        "--vocab-file",
        str(original_fixtures / "vocab.txt"),
        "--export-dir",
        export_dir,
        "--max-seq-length",
        "128",
        "--model",
        "discriminator",
      ]
    )
    == 0
  )
  loaded = tf.saved_model.load(os.path.join(export_dir, "1"))
  out = loaded.signatures["serve_ids"](
    **{k: tf.constant(golden[k], tf.int32) for k in serving_modules.PACKED_KEYS}
  )
  assert_close(out["rtd_probs"].numpy(), golden["disc_probs"], "disc_probs")
  assert_close(out["rtd_logits"].numpy(), golden["disc_logits"], "disc_logits")
  assert_close(out["cls_output"].numpy(), golden["disc_pooled_output"], "pooled")


def test_data_dir_and_model_name_are_refused_where_they_are_not_read(tmp_path, capsys):
  from electra_tf.checkpoints import model_dir as model_dir_lib

  vocab_file = write_vocab(str(tmp_path))
  pretrainer = tiny_pretrainer(str(tmp_path))
  prefix = tf.train.Checkpoint(model=pretrainer).write(str(tmp_path / "ckpt" / "model.ckpt-7"))
  missing = str(tmp_path / "no_such_data_dir")

  def export(*flags):
    argv = ["--checkpoint", prefix, "--hparams", json.dumps(PRETRAIN_HPARAMS)]
    argv += ["--vocab-file", vocab_file, "--export-dir", str(tmp_path / "out"), *flags]
    code = export_saved_model.main(argv)
    return code, capsys.readouterr().err

  # Without config.json the run's arguments build the config: a --data-dir
  # that does not exist is named.
  code, err = export("--data-dir", missing, "--model-name", "zz")
  assert code == 2
  assert err.strip() == (
    f"export_saved_model: error: --data-dir {missing!r} does not exist (the run's data dir)"
  )
  # With its own config.json the checkpoint does not read them: both named, one line.
  model_dir_lib.write_run_config(
    PretrainingConfig("tiny", str(tmp_path), **PRETRAIN_HPARAMS), str(tmp_path / "ckpt")
  )
  code, err = export("--data-dir", missing, "--model-name", "zz")
  assert code == 2
  assert err.strip() == (
    "export_saved_model: error: --data-dir and --model-name apply to an electra_tf training "
    f"checkpoint without config.json; {prefix!r} records its own"
  )
  code, err = export("--model-name", "zz")
  assert code == 2 and "error: --model-name applies to an electra_tf training checkpoint" in err
  assert not (tmp_path / "out").exists()

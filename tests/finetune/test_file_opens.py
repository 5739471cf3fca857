"""How often one `run_finetuning` from a pre-training dir opens each input:
a guard that the counts only go down (the goal is at most two opens each, a
read and one checksum)."""

import builtins
import collections
import json
import os

import pytest
import tensorflow as tf

from electra_tf import run_finetuning
from tests.finetune.test_run import _write_glue
from tests.helpers.pretraining_data import pretrain_on_self_made_data
from tests.helpers.pretraining_data import self_made_hparams

# Measured when this test was written (before: vocab.txt 10, each TSV 4, config.json 8:
# a run dir's config.json is now read once per format detection).
MOST_OPENS = {"vocab.txt": 5, "config.json": 4, "train.tsv": 3, "dev.tsv": 3}


@pytest.mark.slow  # a pre-training step and a fine-tuning run, ~20 s
def test_run_finetuning_opens_each_input_no_more_than_measured(tmp_path, monkeypatch, capsys):
  root = tmp_path / "pt"
  pretrain_on_self_made_data(root, self_made_hparams(num_train_steps=1))
  _write_glue(str(root))
  opens = collections.Counter()
  real_open, real_gfile_init = builtins.open, tf.io.gfile.GFile.__init__

  def counting_open(file, *args, **kwargs):
    opens[os.path.basename(str(file))] += 1
    return real_open(file, *args, **kwargs)

  def counting_gfile_init(self, name, mode="r"):
    opens[os.path.basename(str(name))] += 1
    return real_gfile_init(self, name, mode)

  monkeypatch.setattr(builtins, "open", counting_open)
  monkeypatch.setattr(tf.io.gfile.GFile, "__init__", counting_gfile_init)
  hparams = {"task_names": ["rte"], "train_batch_size": 4, "eval_batch_size": 4}
  hparams.update(max_seq_length=32, num_train_epochs=1.0)
  args = ["--data-dir", str(root), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(args) == 0, capsys.readouterr().err
  counted = {name: opens[name] for name in MOST_OPENS}
  assert all(counted[name] <= most for name, most in MOST_OPENS.items()), counted
  assert all(counted[name] >= 1 for name in MOST_OPENS), counted  # the counting works

"""How often one `run_finetuning` from a pre-training dir opens each input
(at most twice: a read and one checksum), detects the format of the model it
starts from, derives the encoder's `BertConfig` and validates its inputs
(once each): the run resolves its inputs once and passes the values on."""

import builtins
import collections
import json
import os

import pytest
import tensorflow as tf

from electra_tf import run_finetuning
from electra_tf.configs import pretraining as pretraining_config
from electra_tf.sources import formats
from electra_tf.training import finetuning_run
from tests.finetune.test_run import _write_glue
from tests.helpers.pretraining_data import pretrain_on_self_made_data
from tests.helpers.pretraining_data import self_made_hparams

# Before the inputs were resolved once: vocab.txt 10, each TSV 4, config.json 8;
# then 5, 3 and 4; now 1 each.
MOST_OPENS = {"vocab.txt": 2, "config.json": 2, "train.tsv": 2, "dev.tsv": 2}


@pytest.mark.slow  # a pre-training step and a fine-tuning run, ~20 s
def test_run_finetuning_reads_each_input_once_and_resolves_once(tmp_path, monkeypatch, capsys):
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
  calls = collections.Counter()

  def count_calls(module, name):
    real = getattr(module, name)

    def counting(*args, **kwargs):
      calls[name] += 1
      return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return counting

  count_calls(formats, "detect")
  count_calls(finetuning_run, "validate_inputs")
  bert_config = count_calls(pretraining_config, "get_pretraining_bert_config")
  monkeypatch.setattr(finetuning_run, "get_pretraining_bert_config", bert_config)
  hparams = {"task_names": ["rte"], "train_batch_size": 4, "eval_batch_size": 4}
  hparams.update(max_seq_length=32, num_train_epochs=1.0)
  args = ["--data-dir", str(root), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(args) == 0, capsys.readouterr().err
  counted = {name: opens[name] for name in MOST_OPENS}
  assert all(counted[name] <= most for name, most in MOST_OPENS.items()), counted
  assert all(counted[name] >= 1 for name in MOST_OPENS), counted  # the counting works
  assert calls == {"detect": 1, "validate_inputs": 1, "get_pretraining_bert_config": 1}, calls

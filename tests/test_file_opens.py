"""How often one `run_finetuning` from a pre-training dir and one
`run_pretraining` open each input (at most twice: a read and one checksum),
detect the format of the model they start from, derive the encoder's
`BertConfig` and validate their inputs: each run resolves its inputs once and
passes the values on."""

import builtins
import collections
import json
import os

import pytest
import tensorflow as tf

from electra_tf import run_finetuning
from electra_tf import run_pretraining
from electra_tf.configs import pretraining as pretraining_config
from electra_tf.sources import formats
from electra_tf.training import finetuning_run
from electra_tf.training import pretraining_run
from tests.finetune.test_run import _write_glue
from tests.helpers.pretraining_data import TINY
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import pretrain_on_self_made_data
from tests.helpers.pretraining_data import self_made_hparams

# Before the inputs were resolved once: vocab.txt 10, each TSV 4, config.json 8;
# then 5, 3 and 4; now 1 each.
MOST_OPENS = {"vocab.txt": 2, "config.json": 2, "train.tsv": 2, "dev.tsv": 2}


def _count_opens(monkeypatch):
  """A Counter of the files opened (by base name) from now on, by `open` or `GFile`."""
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
  return opens


def _count_calls(monkeypatch, calls, module, name):
  """Counts calls of `module.name` in `calls[name]`; returns the counting function."""
  real = getattr(module, name)

  def counting(*args, **kwargs):
    calls[name] += 1
    return real(*args, **kwargs)

  monkeypatch.setattr(module, name, counting)
  return counting


def _count_bert_configs(monkeypatch, calls, *importers):
  counting = _count_calls(monkeypatch, calls, pretraining_config, "get_pretraining_bert_config")
  for module in importers:  # modules that imported the name itself
    monkeypatch.setattr(module, "get_pretraining_bert_config", counting)


@pytest.mark.slow  # a pre-training step and a fine-tuning run, ~20 s
def test_run_finetuning_reads_each_input_once_and_resolves_once(tmp_path, monkeypatch, capsys):
  root = tmp_path / "pt"
  pretrain_on_self_made_data(root, self_made_hparams(num_train_steps=1))
  _write_glue(str(root))
  opens = _count_opens(monkeypatch)
  calls = collections.Counter()
  _count_calls(monkeypatch, calls, formats, "detect")
  _count_calls(monkeypatch, calls, finetuning_run, "validate_inputs")
  _count_bert_configs(monkeypatch, calls, finetuning_run)
  hparams = {"task_names": ["rte"], "train_batch_size": 4, "eval_batch_size": 4}
  hparams.update(max_seq_length=32, num_train_epochs=1.0)
  hparams_file = tmp_path / "ft_hparams.json"
  hparams_file.write_text(json.dumps(hparams))
  args = ["--data-dir", str(root), "--model-name", "m", "--hparams", str(hparams_file)]
  assert run_finetuning.main(args) == 0, capsys.readouterr().err
  assert opens["ft_hparams.json"] == 1, opens  # --hparams is read once, then passed as a dict
  counted = {name: opens[name] for name in MOST_OPENS}
  assert all(counted[name] <= most for name, most in MOST_OPENS.items()), counted
  assert all(counted[name] >= 1 for name in MOST_OPENS), counted  # the counting works
  assert calls == {"detect": 1, "validate_inputs": 1, "get_pretraining_bert_config": 1}, calls


def test_run_pretraining_reads_its_vocab_once_and_validates_once(tmp_path, monkeypatch, capsys):
  """The vocab is read once (before: three times: the check, the model's
  special ids, config.json's description); the encoder's `BertConfig` is
  derived by the config's own shape check and once for the run (before: 4)."""
  make_data_dir(tmp_path)
  opens = _count_opens(monkeypatch)
  calls = collections.Counter()
  _count_calls(monkeypatch, calls, pretraining_run, "validate_config")
  _count_bert_configs(monkeypatch, calls, pretraining_run)
  hparams_file = tmp_path / "pt_hparams.json"
  hparams_file.write_text(json.dumps(dict(TINY, num_train_steps=2, vocab_size=60)))
  args = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", str(hparams_file)]
  assert run_pretraining.main(args) == 0, capsys.readouterr().err
  assert opens["vocab.txt"] == 1, opens
  assert opens["pt_hparams.json"] == 1, opens  # --hparams is read once, then passed as a dict
  assert calls == {"validate_config": 1, "get_pretraining_bert_config": 2}, calls

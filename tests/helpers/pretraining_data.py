"""Pre-training data for tests: a self-made vocab and TFRecords in the
original's format, hparams for the original's data, a tiny model config, the
progress line's step numbers, the evaluation's metric names and the newest
checkpoint's step."""

import json
import os
import re

import numpy as np
import tensorflow as tf

TINY = {
  "model_size": "small",
  "model_hparam_overrides": {
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
  },
  "embedding_size": 16,
  "train_batch_size": 4,
  "eval_batch_size": 4,
  "num_warmup_steps": 2,
  "save_checkpoints_steps": 3,
  "max_seq_length": 32,
}


ETA_LINE = re.compile(r"^(\d+)/(\d+) = \d+\.\d%, SPS: [\d.inf]+, ELAP: [\d:]+, ETA: [\d:]+")


SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_data_dir(
  root, max_seq_length=32, vocab_size=60, num_examples=40, max_id=None, num_files=3
):
  """Writes `<root>/vocab.txt` and `<root>/pretrain_tfrecords/pretrain_data.tfrecord-*`."""
  os.makedirs(root / "pretrain_tfrecords", exist_ok=True)
  words = SPECIAL + [f"w{i}" for i in range(vocab_size - len(SPECIAL))]
  (root / "vocab.txt").write_text("\n".join(words) + "\n")
  rng = np.random.default_rng(0)
  top = vocab_size if max_id is None else max_id + 1
  writers = [
    tf.io.TFRecordWriter(
      str(root / "pretrain_tfrecords" / f"pretrain_data.tfrecord-{i}-of-{num_files}")
    )
    for i in range(num_files)
  ]
  for n in range(num_examples):
    length = int(rng.integers(8, max_seq_length + 1))
    ids = [2] + [int(t) for t in rng.integers(5, top, size=length - 2)] + [3]
    if max_id is not None:
      ids[1] = max_id
    pad = max_seq_length - length
    feature = {
      "input_ids": ids + [0] * pad,
      "input_mask": [1] * length + [0] * pad,
      "segment_ids": [0] * (length // 2) + [1] * (length - length // 2) + [0] * pad,
    }
    example = tf.train.Example(
      features=tf.train.Features(
        feature={
          k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feature.items()
        }
      )
    )
    writers[n % num_files].write(example.SerializeToString())
  for w in writers:
    w.close()
  return root


def self_made_hparams(**kwargs):
  return dict(dict(TINY, vocab_size=60), **kwargs)


def pretrain_on_self_made_data(root, hparams, model_name="m"):
  """Writes the self-made data dir at `root` (`make_data_dir`) and runs
  `train_or_eval` there for `model_name` with `hparams`; returns its result
  (the step reached)."""
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.training import pretraining_run

  make_data_dir(root)
  return pretraining_run.train_or_eval(PretrainingConfig(model_name, str(root), **hparams))


def eta_steps(stdout):
  return [int(m.group(1)) for m in map(ETA_LINE.match, stdout.splitlines()) if m]


EVAL_NAMES = {
  "disc_accuracy",
  "disc_auc",
  "disc_loss",
  "disc_precision",
  "disc_recall",
  "global_step",
  "loss",
  "masked_lm_accuracy",
  "masked_lm_loss",
  "sampled_masked_lm_accuracy",
}


def original_hparams(fixtures, **kwargs):
  hparams = json.loads((fixtures / "models" / "tiny_hparams.json").read_text())
  hparams.update(
    pretrain_tfrecords=str(fixtures / "pretrain_tfrecords" / "pretrain_data.tfrecord*"),
    vocab_file=str(fixtures / "vocab.txt"),
  )
  hparams.update(kwargs)
  return hparams


def latest_step(model_dir):
  path = tf.train.latest_checkpoint(str(model_dir))
  return None if path is None else int(path.rsplit("-", 1)[1])


def write_swapped_vocab(vocab_file, output):
  """Writes `vocab_file` with its last two tokens swapped to `output`: a
  vocab of the same size whose ids mean other tokens."""
  tokens = vocab_file.read_text().splitlines()
  tokens[-1], tokens[-2] = tokens[-2], tokens[-1]
  output.write_text("\n".join(tokens) + "\n")
  return output

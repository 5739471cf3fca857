"""Tiny fine-tuning data in the original's file layouts, written by tests."""

import json
import os

WORDS = (
  "the a cat dog sat on mat ran fast slow big small red blue is was good bad "
  "movie film great awful paris france capital of what where who city river "
  "long short he she it they runs walks happy sad yes no not and or in at by "
  "rock ##s ##ing ##ed , . ? ! ' \" - 1 2 3 4 5 quickly jumps fox lazy over"
).split()


def write_vocab(path):
  tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(3)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  tokens += WORDS
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return len(tokens)


def tiny_hparams(vocab_size, **overrides):
  hparams = {
    "model_size": "base",
    "embedding_size": 8,
    "vocab_size": vocab_size,
    "model_hparam_overrides": {
      "hidden_size": 16,
      "num_hidden_layers": 2,
      "num_attention_heads": 2,
      "intermediate_size": 32,
    },
    "train_batch_size": 4,
    "eval_batch_size": 4,
    "predict_batch_size": 4,
    "max_seq_length": 32,
    "num_train_epochs": 1.0,
    "seed": 1,
  }
  hparams.update(overrides)
  return hparams


def make_data_dir(tmp_path):
  """`<tmp>/data` with `vocab.txt` and an empty `finetuning_data/`;
  returns (data_dir, vocab_size)."""
  data_dir = os.path.join(str(tmp_path), "data")
  os.makedirs(os.path.join(data_dir, "finetuning_data"), exist_ok=True)
  return data_dir, write_vocab(os.path.join(data_dir, "vocab.txt"))


def write_task_file(data_dir, task, file_name, text):
  d = os.path.join(data_dir, "finetuning_data", task)
  os.makedirs(d, exist_ok=True)
  with open(os.path.join(d, file_name), "w", encoding="utf-8") as f:
    f.write(text)
  return os.path.join(d, file_name)


def tsv(rows):
  return "".join("\t".join(str(c) for c in row) + "\n" for row in rows)


def squad_json(paragraphs, version="2.0"):
  return json.dumps({"version": version, "data": [{"title": "t", "paragraphs": paragraphs}]})


def finetuning_config(model_name, data_dir, **hparams):
  """A `FinetuningConfig` built in code with its default vocab found, as a
  run resolves it (`model_dir.with_found_vocab_file`)."""
  from electra_tf.checkpoints import model_dir
  from electra_tf.configs.finetuning import FinetuningConfig

  return model_dir.with_found_vocab_file(FinetuningConfig(model_name, data_dir, **hparams))

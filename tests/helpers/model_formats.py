"""One small ELECTRA in each of the six model formats electra_tf reads
(`electra_tf.sources.formats`), made from a random official checkpoint by
the converter and publishing."""

import json

import numpy as np

from electra_tf import convert
from electra_tf.sources import formats
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

DIMS = dict(V=50, H=32, L=2, I=64, E=16, Hg=8, Lg=2, Ig=32, P=64)
# Four heads, where the size rule would give another number.
PRETRAINING_HPARAMS = {"model_hparam_overrides": {"num_attention_heads": 4}}
# The same encoder as fine-tuning / task-model sizes.
ENCODER_SIZES = {
  "model_size": "small",
  "embedding_size": DIMS["E"],
  "model_hparam_overrides": {
    "hidden_size": DIMS["H"],
    "num_hidden_layers": DIMS["L"],
    "num_attention_heads": 4,
    "intermediate_size": DIMS["I"],
    "max_position_embeddings": DIMS["P"],
  },
}
TASK = "rte"


def official_checkpoint(directory, heads=None, seed=0):
  """A random official pre-training checkpoint; with `heads`, a fine-tuned
  one instead (its encoder, `electra/...`, and those task heads)."""
  shapes = spec_checkpoint_shapes("default", **DIMS)
  rng = np.random.default_rng(seed)
  tensors = {
    n: (n.endswith("/gamma") + 0.1 * rng.normal(size=s)).astype(np.float32)
    for n, s in shapes.items()
  }
  if heads:
    tensors = {n: t for n, t in tensors.items() if n.startswith("electra/")}
    tensors.update(heads)
  directory.mkdir()
  write_name_based_checkpoint(directory / "model.ckpt-3", tensors)
  return directory


def write_vocab(path):
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(DIMS["V"] - 5)]
  path.write_text("".join(t + "\n" for t in tokens))
  return str(path)


def write_six_formats(root):
  """`({format: path}, vocab_file)` under `root`: the same random encoder as an
  official checkpoint, a fine-tuned one (an `rte` head added), an electra_tf
  training checkpoint, a `.keras` discriminator, a Hugging Face directory and
  a keras-hub preset."""
  official = official_checkpoint(root / "official")
  vocab = write_vocab(root / "vocab.txt")
  head = {
    f"task_specific/{TASK}/dense/kernel": np.full([DIMS["H"], 2], 0.01, np.float32),
    f"task_specific/{TASK}/dense/bias": np.zeros([2], np.float32),
  }
  paths = {
    formats.OFFICIAL: official,
    formats.FINETUNED: official_checkpoint(root / "finetuned", head),
    formats.TRAINING: root / "training",
    formats.KERAS: root / "discriminator.keras",
    formats.HUGGINGFACE: root / "hf",
    formats.KERAS_HUB_PRESET: root / "preset",
  }
  hparams = json.dumps(PRETRAINING_HPARAMS)
  convert.convert(str(official), str(paths[formats.TRAINING]), hparams=hparams)
  convert.convert(str(official), str(paths[formats.KERAS]), part="discriminator", hparams=hparams)
  for target, fmt in (
    ("huggingface", formats.HUGGINGFACE),
    ("keras-hub", formats.KERAS_HUB_PRESET),
  ):
    convert.publish(str(official), str(paths[fmt]), to=target, hparams=hparams, vocab_file=vocab)
  return {fmt: str(path) for fmt, path in paths.items()}, vocab

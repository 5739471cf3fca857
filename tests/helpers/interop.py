"""Test helpers for publishing to Hugging Face / keras-hub: inputs, a
pre-training run to publish, and the optional PyTorch stack."""

import numpy as np
import pytest


def require_transformers():
  """Imports `transformers` and `torch`, or skips with the reason."""
  transformers = pytest.importorskip(
    "transformers", reason="transformers not installed (pip install -e '.[interop]')"
  )
  torch = pytest.importorskip("torch", reason="torch not installed (pip install -e '.[interop]')")
  return transformers, torch


def transformers_logits(class_name, directory, feats):
  """`(model, logits)` of transformers' `class_name` loaded from `directory`
  on electra_tf's `feats`; fails unless every stored tensor is used and
  every parameter loaded."""
  transformers, torch = require_transformers()
  model, info = getattr(transformers, class_name).from_pretrained(
    directory, output_loading_info=True
  )
  assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
  model.eval()
  with torch.no_grad():
    logits = model(
      input_ids=torch.tensor(feats["input_ids"].astype(np.int64)),
      attention_mask=torch.tensor(feats["input_mask"].astype(np.int64)),
      token_type_ids=torch.tensor(feats["segment_ids"].astype(np.int64)),
    ).logits.numpy()
  return model, logits


def features(vocab_size, batch=3, length=24, seed=0):
  """Random ids with `[CLS]`-like first tokens, two segments and padding."""
  rng = np.random.default_rng(seed)
  input_ids = rng.integers(5, vocab_size, size=(batch, length)).astype(np.int32)
  input_mask = np.ones((batch, length), np.int32)
  segment_ids = np.zeros((batch, length), np.int32)
  for row in range(batch):
    real = length - 5 * row
    input_mask[row, real:] = 0
    input_ids[row, real:] = 0
    segment_ids[row, real // 2 : real] = 1
  positions = np.stack(
    [rng.choice(np.arange(1, length - 5 * row - 1), size=4, replace=False) for row in range(batch)]
  ).astype(np.int32)
  return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}, positions


def trained_run(root, num_train_steps=3):
  """Trains the tiny self-made model for a few steps with run_pretraining;
  returns `(model_dir, hparams, vocab_file)`."""
  from tests.helpers.pretraining_data import pretrain_on_self_made_data
  from tests.helpers.pretraining_data import self_made_hparams

  hparams = self_made_hparams(num_train_steps=num_train_steps, seed=5)
  assert pretrain_on_self_made_data(root, hparams) == num_train_steps
  return root / "models" / "m", hparams, root / "vocab.txt"

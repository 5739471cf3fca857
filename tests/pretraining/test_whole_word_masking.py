"""Whole-word masking (`"masking": "whole_word"`): its invariants over many
draws, in the graph, and the hparam that selects it."""

import json

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.pretraining import masking
from electra_tf.pretraining import random_streams
from electra_tf.pretraining import step as pretraining_step
from electra_tf.text import vocab as vocab_lib

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
NUM_STARTS = 40  # ids 5..44 start a word, ids 45..64 are `##` pieces
VOCAB = SPECIAL + [f"w{i}" for i in range(NUM_STARTS)] + [f"##p{i}" for i in range(20)]
FIRST_PIECE = len(SPECIAL) + NUM_STARTS


def _table():
  return masking.continuation_table({token: i for i, token in enumerate(VOCAB)})


def _batch(num_rows, seq_len, rng):
  """Rows of words of 1–4 pieces, `[CLS] A [SEP] B [SEP]`, then padding.

  Returns the ids, the input mask and each position's word number (-1 off
  words), as the test numbers them independently of the code under test."""
  ids = np.full([num_rows, seq_len], PAD, np.int32)
  words = np.full_like(ids, -1)
  for b in range(num_rows):
    length = rng.randint(10, seq_len + 1)
    pos, word = 1, 0
    ids[b, 0] = CLS
    middle = length // 2
    while pos < length - 1:
      if pos == middle:
        ids[b, pos] = SEP
        pos += 1
        continue
      pieces = min(rng.choice([1, 1, 1, 2, 2, 3, 4]), length - 1 - pos)
      if pos < middle:
        pieces = min(pieces, middle - pos)
      for k in range(pieces):
        ids[b, pos + k] = rng.randint(5, FIRST_PIECE) if k == 0 else rng.randint(FIRST_PIECE, 65)
        words[b, pos + k] = word
      pos += pieces
      word += 1
    ids[b, length - 1] = SEP
  return ids, (ids != PAD).astype(np.int32), words


def _mask(ids, input_mask, fn=masking.mask_whole_words, seeds=None, mask_prob=0.15, **kwargs):
  if fn is masking.mask_whole_words:
    kwargs["word_continuation"] = _table()
  out = fn(
    ids,
    input_mask,
    mask_prob=mask_prob,
    max_predictions_per_seq=int((mask_prob + 0.005) * ids.shape[1]),
    cls_id=CLS,
    sep_id=SEP,
    mask_id=MASK,
    position_seeds=seeds,
    replace_seeds=None if seeds is None else seeds[:, ::-1],
    **kwargs,
  )
  return {k: v.numpy() for k, v in out.items()}


def test_continuation_table_and_word_starts():
  table = masking.continuation_table({"[CLS]": 0, "play": 1, "##ing": 2, "##s": 4, "x": 5})
  assert table.tolist() == [False, False, True, False, True, False]  # id 3 is unused
  spm = masking.continuation_table(
    {"<s>": 0, "\u2581Haus": 1, "t\u00fcr": 2}, masking.is_sentencepiece_continuation
  )
  assert spm.tolist() == [True, False, True]
  ids = tf.constant([[0, 2, 1, 2, 4, 5, 0, 2, 9]])
  candidates = tf.constant([[0, 1, 1, 1, 1, 1, 0, 1, 1]]) > 0
  # A piece right after a non-candidate starts its own word; an id past the
  # table's end is a word start.
  got = masking.word_starts(ids, candidates, table).numpy()
  assert got.tolist() == [[False, True, True, False, False, True, False, True, True]]


def test_whole_words_over_many_draws():
  rng = np.random.RandomState(0)
  ids, input_mask, words = _batch(3000, 48, rng)
  out = _mask(ids, input_mask)
  n = out["masked_lm_positions"].shape[1]
  weights = out["masked_lm_weights"].astype(bool)
  positions = out["masked_lm_positions"]
  np.testing.assert_array_equal(
    out["masked_lm_ids"], np.take_along_axis(ids, positions, 1) * weights
  )
  budget = np.maximum(1, np.minimum(n, np.round(input_mask.sum(1) * 0.15)))
  assert np.all(weights.sum(1) <= budget)
  masked_ids = out["input_ids"]
  changed = masked_ids != ids
  assert np.all(masked_ids[changed] == MASK)

  selected = np.zeros_like(ids, bool)
  for b in range(len(ids)):
    pos = positions[b][weights[b]]
    assert len(set(pos.tolist())) == len(pos)  # words drawn without replacement
    assert np.all(weights[b, : len(pos)]) and np.all(positions[b, len(pos) :] == 0)
    selected[b, pos] = True
    chosen = set(words[b, pos].tolist())
    assert -1 not in chosen  # never a special token or padding
    # every piece of a chosen word is selected, and nothing else
    np.testing.assert_array_equal(selected[b], np.isin(words[b], list(chosen)), err_msg=str(b))
  assert not (changed & ~selected).any()

  # 85% of the selected tokens become [MASK], per token.
  rate = changed.sum() / selected.sum()
  assert abs(rate - 0.85) < 3 * np.sqrt(0.85 * 0.15 / selected.sum()), rate
  # The budget is filled on average at least as well as token masking's
  # distinct positions (drawn with replacement), and never exceeded.
  token = _mask(ids, input_mask, fn=masking.mask)
  token_distinct = np.mean(
    [
      len(set(token["masked_lm_positions"][b][token["masked_lm_weights"][b] > 0].tolist()))
      for b in range(len(ids))
    ]
  )
  filled = weights.sum(1).mean()
  assert token_distinct <= filled <= budget.mean(), (token_distinct, filled, budget.mean())
  assert filled > 0.95 * budget.mean()


def test_words_are_chosen_uniformly():
  # [CLS] a ##b ##c d e ##f [SEP]: three words; a budget of 3 fits any one
  # of them, then the rest (the long word fills it alone).
  ids = np.array([[CLS, 5, 45, 46, 6, 7, 47, SEP]] * 3000, np.int32)
  out = _mask(ids, np.ones_like(ids), mask_prob=0.4)
  first = out["masked_lm_positions"][:, 0]
  sets = {tuple(sorted(set(p.tolist()) - {0})) for p in out["masked_lm_positions"]}
  assert sets == {(1, 2, 3), (4, 5, 6)}
  # the long word (3 pieces) is the first drawn in a third of the rows
  assert abs(np.mean(first == 1) - 1 / 3) < 0.04


def test_compiled_and_row_keyed():
  rng = np.random.RandomState(1)
  ids, input_mask, _ = _batch(8, 32, rng)
  seeds = random_streams.step_row_seeds(7, tf.constant(3), 0, 8)[
    random_streams.STREAM_MASK_POSITIONS
  ]
  full = _mask(ids, input_mask, seeds=seeds)
  halves = [_mask(ids[a:b], input_mask[a:b], seeds=seeds[a:b]) for a, b in ((0, 4), (4, 8))]
  for key in full:
    np.testing.assert_array_equal(full[key], np.concatenate([h[key] for h in halves]), key)

  table = _table()

  @tf.function(jit_compile=True)
  def compiled(ids, input_mask, seeds):
    return masking.mask_whole_words(
      ids,
      input_mask,
      mask_prob=0.15,
      max_predictions_per_seq=4,
      cls_id=CLS,
      sep_id=SEP,
      mask_id=MASK,
      word_continuation=table,
      position_seeds=seeds,
      replace_seeds=seeds,
    )

  a, b = compiled(ids, input_mask, seeds), compiled(ids, input_mask, seeds)
  np.testing.assert_array_equal(a["masked_lm_positions"].numpy(), b["masked_lm_positions"].numpy())
  budget = np.maximum(1, np.minimum(4, np.round(input_mask.sum(1) * 0.15)))
  assert np.all(a["masked_lm_weights"].numpy().sum(1) <= budget)
  assert a["masked_lm_weights"].numpy().sum() > 0


def test_masking_hparam_travels_from_the_config_to_the_step(tmp_path):
  with pytest.raises(
    ValueError, match=r"hparam masking='words'; expected one of \['token', 'whole_word'\]"
  ):
    PretrainingConfig("m", str(tmp_path), masking="words")
  hparams = dict(
    vocab_size=len(VOCAB),
    max_seq_length=32,
    embedding_size=16,
    model_hparam_overrides={"hidden_size": 32, "num_hidden_layers": 1, "intermediate_size": 64},
    masking="whole_word",
  )
  with pytest.raises(ValueError, match="vocab_file='.*nothere.txt' does not exist"):
    ElectraPretrainer.from_pretraining_config(
      PretrainingConfig("m", str(tmp_path), vocab_file=str(tmp_path / "nothere.txt"), **hparams)
    )
  (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  model_dir_lib.write_run_config(config)
  recorded = json.loads((tmp_path / "models" / "m" / "config.json").read_text())
  assert recorded["hparams"]["masking"] == "whole_word"

  model = ElectraPretrainer.from_pretraining_config(config)
  model.build()
  vocab = vocab_lib.load_vocab(config.vocab_file)
  np.testing.assert_array_equal(model.word_continuation, [t.startswith("##") for t in vocab])
  again = ElectraPretrainer.from_config(model.get_config())
  np.testing.assert_array_equal(again.word_continuation, model.word_continuation)
  assert again.objective.masking == "whole_word"

  rng = np.random.RandomState(2)
  ids, input_mask, words = _batch(16, 32, rng)
  features = {"input_ids": ids, "input_mask": input_mask, "segment_ids": np.zeros_like(ids)}
  out = pretraining_step.forward(model, features, training=True, seed=0, step=tf.constant(1))
  assert np.isfinite(float(out["loss"]))
  # The step masks with the whole-word function and the step's row seeds.
  seeds = random_streams.step_row_seeds(0, tf.constant(1), 0, len(ids))
  expected = masking.mask_whole_words(
    ids,
    input_mask,
    mask_prob=config.mask_prob,
    max_predictions_per_seq=config.max_predictions_per_seq,
    cls_id=CLS,
    sep_id=SEP,
    mask_id=MASK,
    word_continuation=model.word_continuation,
    position_seeds=seeds[random_streams.STREAM_MASK_POSITIONS],
    replace_seeds=seeds[random_streams.STREAM_MASK_REPLACE],
  )
  assert out["masked_lm_weights"].numpy().sum() > 0
  for key in ("masked_lm_ids", "masked_lm_weights"):
    np.testing.assert_array_equal(out[key].numpy(), expected[key].numpy(), key)

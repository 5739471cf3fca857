"""Parity of the in-graph ElectraTokenizer with the reference FullTokenizer."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import reference_hard_text

MODES = [(True, True), (True, False), (False, True)]  # lower+strip, lower only, cased


@pytest.fixture(scope="module")
def hard_setup(tmp_path_factory):
  lines = reference_hard_text.hard_lines()
  basics = [tokenization.BasicTokenizer(lower, strip) for lower, strip in MODES]
  tokens = reference_hard_text.make_vocab(lines, basics)
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return lines, str(path)


def _reference_ids(vocab_file, lines, lower, strip):
  ref = tokenization.FullTokenizer(vocab_file, do_lower_case=lower, strip_accents=strip)
  return [ref.convert_tokens_to_ids(ref.tokenize(line)) for line in lines]


@pytest.mark.parametrize("lower,strip", MODES)
def test_hard_lines_parity(hard_setup, lower, strip):
  lines, vocab_file = hard_setup
  assert len(lines) >= 400
  tok = ElectraTokenizer(vocab_file=vocab_file, do_lower_case=lower, strip_accents=strip)
  expected = _reference_ids(vocab_file, lines, lower, strip)
  got = tok(tf.constant(lines)).to_list()
  mismatches = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
  assert not mismatches, mismatches[:3]
  # The vocab leaves pieces out on purpose: [UNK] must occur, and so must
  # multi-piece words, or the test would prove little.
  flat = [i for row in expected for i in row]
  assert tok.unk_id in flat
  assert len(set(flat)) > 300


def test_final_sigma_is_context_dependent(hard_setup):
  _, vocab_file = hard_setup
  tok = ElectraTokenizer(vocab_file=vocab_file, do_lower_case=True, strip_accents=False)
  ref = tokenization.FullTokenizer(vocab_file, strip_accents=False)
  lines = ["ΟΔΟΣ", "ΣΑΣ Σ", "Α'Σ", "ΑΣ\u200bΒ", "ΑΣ\u200b"]
  for line in lines:
    assert tok(tf.constant([line])).to_list()[0] == ref.convert_tokens_to_ids(ref.tokenize(line)), (
      line
    )
  assert "ς" in ref.basic_tokenizer.tokenize("ΟΔΟΣ")[0]


def test_lee_corpus_parity(original_fixtures):
  vocab_file = str(original_fixtures / "vocab.txt")
  lines = (original_fixtures / "corpus" / "lee.txt").read_text("utf-8").splitlines()
  lines += reference_hard_text.hard_lines(100)
  for lower, strip in MODES:
    tok = ElectraTokenizer(vocab_file=vocab_file, do_lower_case=lower, strip_accents=strip)
    assert tok(tf.constant(lines)).to_list() == _reference_ids(vocab_file, lines, lower, strip)


def test_invalid_utf8_bytes_are_ignored(hard_setup):
  _, vocab_file = hard_setup
  tok = ElectraTokenizer(vocab_file=vocab_file)
  ref = tokenization.FullTokenizer(vocab_file)
  for raw in [b"caf\xc3\xa9 \xff ok", b"a\xe2\x82b", b"\xed\xa0\x80x"]:
    assert tok(tf.constant([raw])).to_list()[0] == ref.convert_tokens_to_ids(ref.tokenize(raw))


def _small_tokenizer(**kw):
  vocab = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "a",
    "b",
    "c",
    "d",
    "e",
    "##e",
    "##b",
    "##c",
    "##d",
  ]
  return ElectraTokenizer(vocabulary=vocab, **kw)


def test_pack_truncates_like_truncate_seq_pair():
  tok = _small_tokenizer()

  def reference(len_a, len_b, budget):
    while len_a + len_b > budget:
      if len_a > len_b:
        len_a -= 1
      else:
        len_b -= 1
    return len_a, len_b

  pairs = [(la, lb) for la in range(0, 9) for lb in range(0, 9)]
  seg_a = tf.ragged.constant([[5] * la for la, _ in pairs], dtype=tf.int32)
  seg_b = tf.ragged.constant([[6] * lb for _, lb in pairs], dtype=tf.int32)
  out = tok.pack(seg_a, seg_b, max_seq_length=10)
  ids = out["input_ids"].numpy()
  for row, (la, lb) in zip(ids, pairs):
    ka, kb = reference(la, lb, 7)
    expected = [2] + [5] * ka + [3] + ([6] * kb + [3] if kb else [])
    expected += [0] * (10 - len(expected))
    assert row.tolist() == expected, (la, lb)
  np.testing.assert_array_equal(out["input_mask"].numpy(), (ids != 0).astype(np.int32))
  single = tok.pack(tf.ragged.constant([[5] * 12], dtype=tf.int32), max_seq_length=6)
  assert single["input_ids"].numpy().tolist() == [[2, 5, 5, 5, 5, 3]]
  assert single["segment_ids"].numpy().sum() == 0


def test_max_input_chars_per_word_and_config():
  tok = _small_tokenizer(max_input_chars_per_word=3)
  assert tok(tf.constant(["abc abcd", "de"])).to_list() == [[5, 11, 12, 1], [8, 10]]
  clone = ElectraTokenizer.from_config(tok.get_config())
  assert clone.get_config() == tok.get_config()
  assert clone(tf.constant("abcd")).numpy().tolist() == [1]


def test_bad_vocab_errors(tmp_path):
  with pytest.raises(ValueError, match="does not exist"):
    ElectraTokenizer(vocab_file=str(tmp_path / "missing.txt"))
  bad = tmp_path / "vocab.txt"
  bad.write_text("[PAD]\n[UNK]\nhello\n")
  with pytest.raises(ValueError, match=r"\[CLS\]"):
    ElectraTokenizer(vocab_file=str(bad))


def test_saved_model_round_trip(tmp_path):
  tok = _small_tokenizer()

  class Serving(tf.Module):
    def __init__(self):
      super().__init__()
      self.tok = tok

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, text):
      return self.tok.pack(self.tok(text), max_seq_length=6)

  path = str(tmp_path / "saved")
  tf.saved_model.save(Serving(), path)
  loaded = tf.saved_model.load(path)
  out = loaded(tf.constant(["a B c", "de"]))
  assert out["input_ids"].numpy().tolist() == [[2, 5, 6, 7, 3, 0], [2, 8, 10, 3, 0, 0]]


def test_empty_batch_and_empty_strings():
  tok = _small_tokenizer()
  assert tok(tf.constant([], tf.string)).to_list() == []
  fn = tf.function(tok.call, input_signature=[tf.TensorSpec([None], tf.string)])
  assert fn(tf.constant(["", " \t", "a", "é a", "ü a"])).to_list() == [[], [], [5], [9, 5], [1, 5]]

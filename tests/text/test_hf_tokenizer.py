"""`tokenizer.json` built with the `tokenizers` library (no transformers or
torch): the settings a reader depends on, and electra_tf's ids on the
hard-text fixture."""

import json
import os

import pytest
import tensorflow as tf
import tokenizers

from electra_tf.text import hf_tokenizer
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import MAX_PIECE_BYTES
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import reference_hard_text

MODES = [(True, True), (True, False), (False, True)]  # lower+strip, lower only, cased
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _write(tmp_path, tokens, lower=True, strip=True, name="tokenizer.json"):
  path = tmp_path / name
  hf_tokenizer.write_tokenizer_json(str(path), tokens, lower, strip)
  return path


def test_file_holds_the_settings_readers_depend_on(tmp_path):
  tokens = SPECIALS + ["hello", "##s", "world", "x" * (MAX_PIECE_BYTES + 1), " spaced "]
  path = _write(tmp_path, tokens)
  assert os.listdir(tmp_path) == ["tokenizer.json"]  # no temporary file left
  data = json.loads(path.read_text("utf-8"))
  model = data["model"]
  assert model["type"] == "WordPiece" and model["unk_token"] == "[UNK]"
  assert model["max_input_chars_per_word"] == 200 and model["continuing_subword_prefix"] == "##"
  # stripped tokens keep their position; pieces over the byte limit are never produced
  assert model["vocab"] == {t.strip(): i for i, t in enumerate(tokens) if i != 8}
  assert [(t["id"], t["content"], t["special"], t["normalized"]) for t in data["added_tokens"]] == [
    (i, t, True, False) for i, t in enumerate(SPECIALS)
  ]
  post = data["post_processor"]
  assert post["type"] == "TemplateProcessing"
  assert post["special_tokens"]["[CLS]"]["ids"] == [2]
  assert post["special_tokens"]["[SEP]"]["ids"] == [3]
  assert data["decoder"] == {"type": "WordPiece", "prefix": "##", "cleanup": True}
  kinds = [step["type"] for step in data["normalizer"]["normalizers"]]
  assert kinds == [
    "Replace",
    "Replace",
    "Replace",
    "Lowercase",
    "Replace",
    "Replace",
    "NFD",
    "Replace",
  ]

  tokenizer = tokenizers.Tokenizer.from_file(str(path))
  pair = tokenizer.encode("Hellos", "WORLD")
  assert pair.tokens == ["[CLS]", "hello", "##s", "[SEP]", "world", "[SEP]"]
  assert pair.type_ids == [0, 0, 0, 0, 1, 1]
  assert tokenizer.decode(pair.ids) == "hellos world"


def test_normalisation_follows_the_settings(tmp_path):
  tokens = SPECIALS + ["cafe", "café", "Café", "東", "京"]
  cases = {(True, True): "cafe", (True, False): "café", (False, True): "Café"}
  for (lower, strip), word in cases.items():
    path = _write(tmp_path, tokens, lower, strip, name=f"t{int(lower)}{int(strip)}.json")
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    assert tokenizer.encode("Café", add_special_tokens=False).tokens == [word]
    # CJK ideographs are split apart in every mode
    assert tokenizer.encode("東京", add_special_tokens=False).tokens == ["東", "京"]
  cased = json.loads((tmp_path / "t01.json").read_text("utf-8"))
  # cased: strip_accents has no effect (as in the original)
  assert [s["type"] for s in cased["normalizer"]["normalizers"]] == ["Replace", "Replace"]


def test_a_vocab_without_cls_or_sep_is_refused(tmp_path):
  with pytest.raises(ValueError, match=r"lacks the special tokens \['\[SEP\]'\]"):
    _write(tmp_path, ["[PAD]", "[UNK]", "[CLS]", "a"])
  assert not os.listdir(tmp_path)


def test_ids_match_electra_tf_on_the_hard_lines(tmp_path):
  """The hard-text fixture (every P* code point, Greek sigma contexts, words
  over 100 and 200 characters, `[MASK]` in raw text...) in every mode."""
  lines = reference_hard_text.hard_lines()
  lines += ["ΑΣ\u0301 ΑΣ\x00Β ΑΣ\U000e0001 ΑΣ\ue000 x\U00011938 [MASK][SEP]x"]
  basics = [tokenization.BasicTokenizer(lower, strip) for lower, strip in MODES]
  tokens = reference_hard_text.make_vocab(lines, basics)
  for lower, strip in MODES:
    ours = ElectraTokenizer(vocabulary=tokens, do_lower_case=lower, strip_accents=strip)
    expected = ours(tf.constant(lines)).to_list()
    path = _write(tmp_path, tokens, lower, strip, name=f"t{int(lower)}{int(strip)}.json")
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    # The original splits "[MASK]" in raw text (transformers: `split_special_tokens`).
    tokenizer.encode_special_tokens = True
    got = [e.ids for e in tokenizer.encode_batch(lines, add_special_tokens=False)]
    mismatches = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert not mismatches, (lower, strip, len(mismatches), mismatches[:3])
    assert sum(len(row) for row in expected) > 5000

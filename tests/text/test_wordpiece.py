"""Tests of the pure-Python reference tokenizer (`model/tokenization.py`)."""

import unicodedata

import pytest

from electra_tf.text import wordpiece as tokenization


def _write_vocab(path, tokens):
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(path)


# `str.split()` keeps the lists on a few lines; no token holds whitespace.
BASE_TOKENS = (
  "[PAD] [UNK] [CLS] [SEP] [MASK] hello world , ! [ ] mask don ' t 北 京 x y z un ##aff ##able a "
  "##b Hello héllo"
).split()


@pytest.fixture
def vocab_file(tmp_path):
  return _write_vocab(tmp_path / "vocab.txt", BASE_TOKENS)


def test_spec_verified_example(vocab_file):
  tok = tokenization.FullTokenizer(vocab_file)
  text = "Héllo, WORLD! [MASK] don't 北京 x\u00a0y\tz"
  assert (
    tok.basic_tokenizer.tokenize(text) == "hello , world ! [ mask ] don ' t 北 京 x y z".split()
  )
  tokens = tok.tokenize(text)
  assert tok.convert_tokens_to_ids(tokens) == [BASE_TOKENS.index(t) for t in tokens]


def test_cased_never_strips_accents():
  basic = tokenization.BasicTokenizer(do_lower_case=False, strip_accents=True)
  assert basic.tokenize("Héllo") == ["Héllo"]
  basic = tokenization.BasicTokenizer(do_lower_case=True, strip_accents=False)
  assert basic.tokenize("HÉllo") == ["héllo"]


def test_clean_text_and_whitespace():
  basic = tokenization.BasicTokenizer()
  # NUL, U+FFFD, a control char and a zero-width (Cf) char vanish; Zs → space.
  assert basic.tokenize("a\x00b\ufffdc\x07d\u200be\u3000f") == ["abcde", "f"]
  assert basic.tokenize("") == []
  assert basic.tokenize(b"caf\xc3\xa9 \xff ok") == ["cafe", "ok"]


def test_punctuation_rules():
  assert tokenization._is_punctuation("$")
  assert tokenization._is_punctuation("^")
  assert tokenization._is_punctuation("`")
  assert tokenization._is_punctuation("\u00bf")  # Po
  assert tokenization._is_punctuation("+")  # Sm, but ASCII 43 is in 33-47
  assert not tokenization._is_punctuation("\u20ac")  # Sc, not ASCII
  assert tokenization._run_split_on_punc("a$b^^c") == ["a", "$", "b", "^", "^", "c"]


def test_cjk_vs_kana_hangul():
  basic = tokenization.BasicTokenizer()
  # Kana and Hangul stay one word; NFD drops the dakuten (Mn) and splits the
  # Hangul syllables into conjoining jamo (Lo, kept).
  assert basic.tokenize("北京ひらがな한국") == [
    "北",
    "京",
    "ひらかな" + unicodedata.normalize("NFD", "한국"),
  ]
  assert len(basic.tokenize("한국")[0]) == 6  # 한 = ㅎㅏㄴ, 국 = ㄱㅜㄱ


def test_wordpiece_greedy_and_unk(vocab_file):
  tok = tokenization.FullTokenizer(vocab_file)
  assert tok.tokenize("unaffable") == ["un", "##aff", "##able"]
  assert tok.tokenize("unaffablex") == ["[UNK]"]  # whole word unknown
  assert tok.tokenize("a" + "b" * 199) == ["a"] + ["##b"] * 199
  assert tok.tokenize("a" + "b" * 200) == ["[UNK]"]  # > 200 characters


def test_vocab_and_inverse(vocab_file):
  tok = tokenization.FullTokenizer(vocab_file)
  assert tok.convert_ids_to_tokens([0, 4]) == ["[PAD]", "[MASK]"]
  with pytest.raises(KeyError):
    tok.convert_tokens_to_ids(["not-in-vocab"])


def test_lee_corpus_with_shared_vocab(original_fixtures):
  tok = tokenization.FullTokenizer(str(original_fixtures / "vocab.txt"))
  lines = (original_fixtures / "corpus" / "lee.txt").read_text("utf-8").splitlines()
  ids = [tok.convert_tokens_to_ids(tok.tokenize(line)) for line in lines[:50]]
  assert sum(len(i) for i in ids) > 500
  assert all(0 <= i < len(tok.vocab) for row in ids for i in row)

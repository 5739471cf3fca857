"""Generator of hard lines for tokenizer parity tests, and a vocab for them.

Every category the issue names appears: accents and combining marks, CJK
ideographs vs Hangul/Kana, control characters and U+FFFD, NBSP and other
Unicode spaces, zero-width characters, words longer than 200 characters,
ASCII symbols BERT counts as punctuation, every Unicode punctuation category
(every P* code point appears somewhere), emoji, `[MASK]` written literally,
Greek sigma in final and non-final contexts, Turkish dotted I.
"""

import random
import string
import sys
import unicodedata

from electra_tf.text import wordpiece

FRAGMENTS = [
  # accents and combining marks
  "Héllo",
  "naïve",
  "Crème brûlée",
  "e\u0301te\u0301",
  "a\u0300\u0301\u0302b",
  "Ångström",
  "\u212bngstrom",
  "ﬁne",
  "Œuvre",
  "Ça",
  "ÉCOLE",
  "résumé",
  "\u0301leading",
  "Zoë",
  "Dvořák",
  "Nguyễn",
  "ǅemal",
  "ß",
  "ẞ",
  "straße",
  # CJK ideographs vs Hangul / Kana
  "北京",
  "中文字",
  "\U00020000\U0002a700",
  "\uf900\ufa0e",
  "\U0002f800",
  "한국어",
  "ひらがな",
  "カタカナ",
  "ｶﾀｶﾅ",
  "日本語のテキスト",
  "㐀䶵",
  # control characters, U+FFFD, zero-width, private use, unassigned
  "a\x01b",
  "c\x7fd",
  "e\x85f",
  "g\u200bh",
  "i\u200dj",
  "\ufeffk",
  "l\ufffdm",
  "n\x00o",
  "p\u2028q",
  "r\u2029s",
  "\U000e0001t",
  "\ue000u",
  "v\u0378w",
  "x\u00adx",
  "\x1cy\x1f",
  # whitespace
  "x\u00a0y",
  "a\u2003b",
  "c\u3000d",
  "e\u1680f",
  "g\u202fh",
  "i\tj",
  "k\rl",
  "m\nn",
  "o\u2009p",
  "q\u205fr",
  "\x0bs\x0c",
  # long words
  "a" * 201,
  "b" * 200,
  "é" * 150 + "e" * 51,
  "İ" * 120 + "x" * 81,
  "ab" * 99,
  # ASCII symbols that BERT counts as punctuation
  "$5",
  "2^10",
  "`code`",
  "a+b=c",
  "50%",
  "<tag>",
  "~home",
  "|pipe|",
  "x_y",
  "e-mail",
  "don't",
  "U.S.A.",
  "#hash",
  "@user",
  "{brace}",
  "\\path",
  # other symbols (not punctuation unless ASCII)
  "€100",
  "©2020",
  "±5",
  "→",
  "°C",
  "˜",
  "¨",
  "´",
  # emoji
  "😀",
  "👍🏽",
  "👨\u200d👩\u200d👧",
  "🇺🇸",
  "❤️",
  "a😀b",
  # special tokens written literally
  "[MASK]",
  "[CLS] x [SEP]",
  "[UNK]",
  "[PAD]",
  "##suffix",
  # Greek sigma contexts
  "ΟΔΟΣ",
  "ΟΔΟΣ,",
  "ΣΑΣ",
  "Σ",
  "ΑΣ'Β",
  "Α'Σ",
  "ΑΣ\u0301",
  "ὈΔΥΣΣΕΎΣ",
  "ΑΣ\u200bΒ",
  "ΑΣ北",
  "aΣ",
  "ΣΣ",
  "ʰΣ",
  "1Σ",
  # Turkish, numbers, mixed
  "İstanbul",
  "ıi",
  "3.14",
  "1,000",
  "C++",
  "x86_64",
  "Ⅻ",
  "①",
  "ＡＢＣ",
]


def punctuation_code_points():
  return [
    chr(cp) for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)).startswith("P")
  ]


def hard_lines(n=400, seed=1234):
  """Returns `n` deterministic hard lines (plus one line per 40 P* chars)."""
  rng = random.Random(seed)
  words = ["the", "quick", "Brown", "FOX", "jumps", "over", "lazy", "dog"]
  separators = [" ", " ", "", "\t", "\u00a0", ", ", "-", "\u3000"]
  lines = list(FRAGMENTS)
  punct = punctuation_code_points()
  for i in range(0, len(punct), 40):
    lines.append("a".join(punct[i : i + 40]) + " " + " ".join(punct[i : i + 40]))
  while len(lines) < n + len(FRAGMENTS):
    parts = []
    for _ in range(rng.randint(1, 8)):
      pick = rng.random()
      if pick < 0.5:
        parts.append(rng.choice(FRAGMENTS))
      elif pick < 0.7:
        parts.append(rng.choice(words))
      elif pick < 0.8:
        parts.append(rng.choice(punct))
      elif pick < 0.9:
        parts.append("".join(rng.choice(string.printable) for _ in range(5)))
      else:
        cp = rng.randint(0x80, 0x2FFFF)
        if not 0xD800 <= cp <= 0xDFFF:  # lone surrogates cannot be UTF-8 text
          parts.append(chr(cp))
    lines.append("".join(p + rng.choice(separators) for p in parts))
  return lines


def make_vocab(lines, basic_tokenizers, seed=99):
  """A BERT-layout vocab covering most pieces of `lines` (some left out, so
  that `[UNK]` happens): whole words, single characters and `##` characters."""
  rng = random.Random(seed)
  tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  seen = set(tokens)
  for basic in basic_tokenizers:
    for line in lines:
      for word in basic.tokenize(line):
        candidates = []
        if rng.random() < 0.3 and len(word) < 60:
          candidates.append(word)
        if len(word) > 2 and rng.random() < 0.3:
          candidates.append(word[:2])
          candidates.append("##" + word[2:4])
        for ch in word:
          if rng.random() < 0.97:
            candidates.append(ch)
          if rng.random() < 0.97:
            candidates.append("##" + ch)
        for c in candidates:
          if c not in seen:
            seen.add(c)
            tokens.append(c)
  return tokens


def write_corpus(
  root,
  num_files,
  lines_per_file,
  words,
  max_words,
  seed,
  num_hard_lines=80,
  blank_prob=0.1,
  hard_prob=0.2,
):
  """Writes `root/corpus/part<i>.txt` (blank lines, hard lines and runs of up to
  `max_words` of `words`, mixed at random; the hard lines are drawn from the
  first `num_hard_lines` of `hard_lines`) and `root/vocab.txt` covering them.

  Returns:
    (corpus directory, vocab file) as strings.
  """
  corpus_dir = root / "corpus"
  corpus_dir.mkdir()
  rng = random.Random(seed)
  hard = hard_lines(num_hard_lines)
  all_lines = []
  for f in range(num_files):
    lines = []
    for _ in range(lines_per_file):
      r = rng.random()
      if r < blank_prob:
        lines.append("")
      elif r < blank_prob + hard_prob:
        lines.append(rng.choice(hard))
      else:
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, max_words))))
    all_lines += lines
    (corpus_dir / f"part{f}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  tokens = make_vocab(all_lines, [wordpiece.BasicTokenizer(True, True)])
  vocab = root / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(corpus_dir), str(vocab)

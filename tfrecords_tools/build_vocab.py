"""Learns a WordPiece vocab in the BERT layout:
`python -m tfrecords_tools.build_vocab --corpus-dir DIR --vocab-size N --output vocab.txt`.

Words are counted after the same `BasicTokenizer` normalisation the builder
uses (so `--no-lower-case` / `--no-strip-accents` must match the builder's
flags), then tensorflow-text's WordPiece learner picks the pieces. The file
starts `[PAD]`, `[unused0]`…`[unused<k-1>]`, `[UNK]`, `[CLS]`, `[SEP]`,
`[MASK]` like the uncased BERT vocab (ids 0, 1…k, k+1…k+4) and has at most
`--vocab-size` lines.

Example:

    python -m tfrecords_tools.build_vocab --corpus-dir corpus --vocab-size 8000 \
        --output vocab.txt
"""

import argparse
import collections
import os
import sys

import numpy as np
import tensorflow as tf

from electra_tf.utils.file_io import write_atomic
from tfrecords_tools.example_writer import decode_utf8
from tfrecords_tools.text_corpus import list_corpus_files

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")


def reserved_tokens(num_unused=99):
  return ["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)] + list(SPECIAL_TOKENS)


def count_words(corpus_dir, do_lower_case=True, strip_accents=True, batch_lines=8192):
  """{word: count} over every file in `corpus_dir`, normalised as the builder."""
  from electra_tf.text.tokenizer import ElectraTokenizer  # pylint: disable=g-import-not-at-top

  # Only its normalisation is used; the vocab just has to be valid.
  normalizer = ElectraTokenizer(
    vocabulary=list(SPECIAL_TOKENS) + ["a"],
    do_lower_case=do_lower_case,
    strip_accents=strip_accents,
  )
  normalize = tf.function(
    normalizer.normalize_words, input_signature=[tf.TensorSpec([None], tf.string)]
  )
  counts = collections.Counter()
  for name in list_corpus_files(corpus_dir):
    path = os.path.join(corpus_dir, name)
    if tf.io.gfile.isdir(path):
      continue
    with tf.io.gfile.GFile(path, "rb") as f:
      text, _ = decode_utf8(f.read())
    lines = [line for line in text.split("\n") if line.strip()]
    for start in range(0, len(lines), batch_lines):
      words = normalize(
        tf.constant([l.encode("utf-8") for l in lines[start : start + batch_lines]])
      )
      unique, n = np.unique(words.flat_values.numpy(), return_counts=True)
      for word, c in zip(unique.tolist(), n.tolist()):
        counts[word.decode("utf-8")] += c
  return counts


def learn_vocab(word_counts, vocab_size, num_unused=99, max_unique_chars=1000):
  """The vocab list: reserved tokens first, then the learned pieces."""
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner  # pylint: disable=g-import-not-at-top

  reserved = reserved_tokens(num_unused)
  if vocab_size <= len(reserved):
    raise ValueError(
      f"--vocab-size {vocab_size} leaves no room after the {len(reserved)} reserved tokens"
    )
  if not word_counts:
    raise ValueError("the corpus has no words to learn a vocab from")
  vocab = learner.learn(
    list(word_counts.items()),
    vocab_size,
    reserved,
    lower_thresh=1,
    max_unique_chars=max_unique_chars,
    include_joiner_token=True,
  )
  # The learner already lists the reserved tokens first; keep each token once
  # and drop the bare joiner "##" (an empty suffix that is never produced).
  seen, result = set(), []
  for token in vocab:
    if token and token != "##" and token not in seen:
      seen.add(token)
      result.append(token)
  return result[:vocab_size]


def write_vocab(tokens, output):
  write_atomic(output, "".join(t + "\n" for t in tokens))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus-dir", required=True)
  parser.add_argument("--vocab-size", required=True, type=int)
  parser.add_argument("--output", required=True)
  parser.add_argument(
    "--num-unused", default=99, type=int, help="How many [unusedN] tokens follow [PAD]."
  )
  parser.add_argument("--do-lower-case", dest="do_lower_case", action="store_true")
  parser.add_argument("--no-lower-case", dest="do_lower_case", action="store_false")
  parser.add_argument("--do-strip-accents", dest="strip_accents", action="store_true")
  parser.add_argument("--no-strip-accents", dest="strip_accents", action="store_false")
  parser.set_defaults(do_lower_case=True, strip_accents=True)
  args = parser.parse_args(argv)
  try:
    counts = count_words(args.corpus_dir, args.do_lower_case, args.strip_accents)
    tokens = learn_vocab(counts, args.vocab_size, args.num_unused)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  write_vocab(tokens, args.output)
  print(f"Wrote {len(tokens)} tokens to {args.output}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

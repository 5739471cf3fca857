"""Tokenizer throughput: in-graph ElectraTokenizer and SentencePieceTokenizer
vs the pure-Python reference.

    python -m bench.bench_tokenizer [--quick] [--json out.json]

Lines of a real English corpus (bench/corpus.py), tokenized in batches of
8192 lines by a `tf.function` of `ElectraTokenizer.call` and of
`SentencePieceTokenizer.call` (a unigram model of the WordPiece vocab's size
trained on the same corpus; its training is not timed), and line by line by
`tokenization.FullTokenizer` (the original's algorithm).
"""

import os
import tempfile
import time

from bench import common
from bench.bench_build_dataset import _vocab_file
from bench.corpus import build_corpus


def _sentencepiece_model(corpus_dir, lines, vocab_size, quick):
  """A unigram model of `vocab_size` pieces trained on `lines`, cached beside the corpus."""
  from electra_tf.text import vocab as vocab_lib  # pylint: disable=g-import-not-at-top

  path = f"{corpus_dir}_unigram_{vocab_size}{'_quick' if quick else ''}.model"
  if not os.path.exists(path):
    model = vocab_lib.train_sentencepiece(lines, vocab_size, "unigram", input_sentence_size=200000)
    with open(path, "wb") as f:
      f.write(model)
  return path


def run(quick=False):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from electra_tf.text import wordpiece as tokenization  # pylint: disable=g-import-not-at-top
  from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer  # pylint: disable=g-import-not-at-top
  from electra_tf.text.tokenizer import ElectraTokenizer  # pylint: disable=g-import-not-at-top

  megabytes = 4
  corpus_dir = os.path.join(tempfile.gettempdir(), f"electra_tf_bench_corpus_{megabytes}mb")
  build_corpus(corpus_dir, megabytes)
  lines = []
  for name in sorted(os.listdir(corpus_dir)):
    if name.endswith(".txt"):
      with open(os.path.join(corpus_dir, name), encoding="utf-8") as f:
        lines += [l for l in f.read().split("\n") if l.strip()]
  if quick:
    lines = lines[:20000]
  vocab = _vocab_file(tempfile.gettempdir(), corpus_dir)
  n_bytes = sum(len(l.encode("utf-8")) for l in lines)
  rows = []

  batches = [
    tf.constant([l.encode("utf-8") for l in lines[i : i + 8192]])
    for i in range(0, len(lines), 8192)
  ]

  def in_graph(tok, name):
    fn = tf.function(tok.call, input_signature=[tf.TensorSpec([None], tf.string)])
    fn(batches[0])  # trace
    start = time.time()
    n_tokens = sum(int(fn(b).flat_values.shape[0]) for b in batches)
    seconds = time.time() - start
    return {
      "name": f"{name} (tf.function, batch 8192 lines)",
      "mb_per_s": round(n_bytes / 1e6 / seconds, 2),
      "tokens_per_s": round(n_tokens / seconds),
    }

  tok = ElectraTokenizer(vocab_file=vocab)
  rows.append(in_graph(tok, "ElectraTokenizer"))
  model = _sentencepiece_model(corpus_dir, lines, tok.vocab_size, quick)
  rows.append(
    in_graph(SentencePieceTokenizer(model_file=model), "SentencePieceTokenizer (unigram)")
  )

  ref = tokenization.FullTokenizer(vocab)
  subset = lines[: 3000 if quick else 20000]
  sub_bytes = sum(len(l.encode("utf-8")) for l in subset)
  start = time.time()
  n_ref = sum(len(ref.convert_tokens_to_ids(ref.tokenize(l))) for l in subset)
  seconds = time.time() - start
  rows.append(
    {
      "name": "FullTokenizer (pure Python, the original's algorithm)",
      "mb_per_s": round(sub_bytes / 1e6 / seconds, 2),
      "tokens_per_s": round(n_ref / seconds),
    }
  )
  return rows


if __name__ == "__main__":
  common.main(run, "tokenizer throughput")

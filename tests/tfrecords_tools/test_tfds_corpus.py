"""TFDS as a corpus source, with tfds.testing.mock_data."""

import random

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from electra_tf.text import wordpiece as tokenization
from tests.helpers import reference_hard_text
from tests.helpers.records import read_shards
from tests.helpers.reference_builder import ReferenceWriter
from tfrecords_tools import text_corpus
from tfrecords_tools import tfds_corpus

DOCS = [
  "The first document.\nIt has two lines.",
  "Second document, one line: ΟΔΟΣ naïve 北京.",
  "Third\n\nwith a blank line\nand more text here to fill an example up",
] * 6


def _as_dataset_fn(builder, *args, **kwargs):
  del builder, args, kwargs
  return tf.data.Dataset.from_tensor_slices({"text": DOCS, "id": list(range(len(DOCS)))})


@pytest.fixture
def vocab_file(tmp_path):
  tokens = reference_hard_text.make_vocab(
    [line for doc in DOCS for line in doc.split("\n")], [tokenization.BasicTokenizer()]
  )
  path = tmp_path / "vocab.txt"
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(path)


def test_iter_documents_and_errors():
  with tfds.testing.mock_data(as_dataset_fn=_as_dataset_fn):
    assert list(tfds_corpus.iter_documents("lm1b", "train", "text")) == DOCS
    assert (
      list(tfds_corpus.iter_documents("lm1b", "train", "text", num_shards=3, shard_index=1))
      == DOCS[1::3]
    )
    with pytest.raises(ValueError, match="'body' is not a feature.*'text'"):
      list(tfds_corpus.iter_documents("lm1b", "train", "body"))


def test_tfds_build_matches_reference(tmp_path, vocab_file):
  out = tmp_path / "out"
  with tfds.testing.mock_data(as_dataset_fn=_as_dataset_fn):
    stats = text_corpus.build_pretraining_dataset(
      text_corpus.BuildOptions(
        vocab_file=vocab_file,
        output_dir=str(out),
        tfds_name="lm1b",
        tfds_split="train",
        tfds_text_key="text",
        max_seq_length=16,
        seed=3,
        num_out_files=3,
      )
    )
  random.seed(3)
  writer = ReferenceWriter(vocab_file, 16, 1, 0, 3)
  for doc in DOCS:  # lines as the builder reads any text: "\r" dropped, split on "\n"
    writer.write_lines(doc.replace("\r", "").split("\n"))
  assert read_shards(out, 3) == writer.out
  assert stats[0]["examples"] == writer.n_written > 10


@pytest.mark.slow
def test_tfds_build_on_beam_equals_local_jobs(tmp_path, vocab_file):
  pytest.importorskip("apache_beam")
  from tfrecords_tools import beam_pipeline  # pylint: disable=g-import-not-at-top

  def options(out):
    return text_corpus.BuildOptions(
      vocab_file=vocab_file,
      output_dir=str(out),
      tfds_name="lm1b",
      max_seq_length=16,
      seed=3,
      num_processes=2,
      num_out_files=4,
    )

  with tfds.testing.mock_data(as_dataset_fn=_as_dataset_fn):
    # DirectRunner with one worker runs in this process, where the mock holds.
    counters = text_corpus.build_pretraining_dataset(
      options(tmp_path / "beam"), beam_pipeline.pipeline_options("DirectRunner", [])
    )
    text_corpus.prepare_output_dir(str(tmp_path / "local"), overwrite=False)
    stats = [text_corpus.run_job(job, options(tmp_path / "local")) for job in range(2)]
  assert read_shards(tmp_path / "beam", 4) == read_shards(tmp_path / "local", 4)
  assert counters["examples"] == sum(s["examples"] for s in stats) > 10
  assert counters["files"] == len(DOCS)

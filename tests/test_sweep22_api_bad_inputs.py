"""Sweep 22's Python API cases: a task model fit on a dataset without
`.batch()`, and `get_dataset` over a record file cut short."""

import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.data import pretraining_dataset
from electra_tf.data import record_check
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import pretraining_data
from tests.helpers.bad_inputs import TINY_ENCODER

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran", "?"]
TEXTS = ["the cat sat", "the dog ran"]
UNBATCHED = r"\(an unbatched dataset\?\); batch it, e\.g\. dataset\.batch\(32\)$"


def _model(cls, packing, *args):
  preprocessor = ElectraTextPreprocessor(
    ElectraTokenizer(vocabulary=VOCAB), max_seq_length=8, packing=packing
  )
  model = cls(dict(TINY_ENCODER, vocab_size=len(VOCAB)), *args, preprocessor=preprocessor)
  model.compile(num_train_steps=2)
  return model


@pytest.mark.parametrize(
  "cls, packing, args, data",
  [
    (electra_tf.ElectraClassifier, "pair", (2,), (TEXTS, [1, 0])),
    (electra_tf.ElectraClassifier, "pair", (2,), ((TEXTS, TEXTS), [1, 0])),
    (
      electra_tf.ElectraQuestionAnswerer,
      "question_context",
      (),
      ((TEXTS, TEXTS), ([1, 2], [1, 2])),
    ),
  ],
  ids=["classifier", "classifier_pairs", "question_answerer"],
)
def test_fit_on_an_unbatched_dataset_says_to_batch_it(cls, packing, args, data):
  """#62: `clf.fit(tf.data.Dataset.from_tensor_slices((texts, labels)))`,
  `.batch()` forgotten, failed in the loss with Keras' "Argument `output`
  must have rank … target.shape=()", naming neither the labels nor the
  dataset (the question answerer alike)."""
  model = _model(cls, packing, *args)
  unbatched = tf.data.Dataset.from_tensor_slices(data)
  name = cls.__name__
  with pytest.raises(ValueError, match=rf"^{name}\.fit: the labels are scalars " + UNBATCHED):
    model.fit(unbatched, epochs=1, verbose=0)
  with pytest.raises(ValueError, match=rf"^{name}\.evaluate: the labels are scalars " + UNBATCHED):
    model.evaluate(unbatched, verbose=0)
  with pytest.raises(ValueError, match=rf"^{name}\.fit validation_data: the labels are scalars "):
    model.fit(unbatched.batch(2), validation_data=unbatched, epochs=1, verbose=0)


def test_a_tagger_fit_on_an_unbatched_dataset_says_to_batch_it():
  """The tagger's labels stay 1-D unbatched ([S]): its texts give it away."""
  tagger = _model(electra_tf.ElectraTokenTagger, "tagging", 3)
  unbatched = tf.data.Dataset.from_tensor_slices((TEXTS, np.zeros((2, 8), np.int32)))
  with pytest.raises(
    ValueError,
    match=r"^ElectraTokenTagger\.fit: the texts are single strings, not batches " + UNBATCHED,
  ):
    tagger.fit(unbatched, epochs=1, verbose=0)


def test_a_batched_dataset_still_fits():
  classifier = _model(electra_tf.ElectraClassifier, "pair", 2)
  history = classifier.fit(
    tf.data.Dataset.from_tensor_slices((TEXTS, [1, 0])).batch(2), epochs=1, verbose=0
  )
  assert np.isfinite(history.history["loss"][0])


def _cut(path, size):
  path.write_bytes(path.read_bytes()[:size])


def test_get_dataset_names_a_record_file_cut_short(tmp_path):
  """#48: `get_dataset(pattern, …)` over a shard cut in half failed when read
  with TensorFlow's "DataLossError … truncated record at 3364", naming no
  file."""
  pretraining_data.make_data_dir(tmp_path, num_files=2)
  pattern = str(tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-*")
  shard = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-1-of-2"
  offsets = record_check.record_offsets(str(shard))
  _cut(shard, offsets[10] + 20)  # inside record 10's data
  with pytest.raises(
    ValueError,
    match=r"^TFRecord file '.*pretrain_data\.tfrecord-1-of-2': record 10 at byte \d+ is cut "
    r"short \(the file ends at byte \d+\)",
  ):
    pretraining_dataset.get_dataset(pattern, 32, 4, is_training=False, vocab_size=60)
  # Cut at a record's end, the file is whole framing: its records read.
  _cut(shard, offsets[10])
  dataset = pretraining_dataset.get_dataset(pattern, 32, 4, is_training=False, vocab_size=60)
  assert next(iter(dataset))["input_ids"].shape == (4, 32)


def test_the_end_check_finds_every_cut_and_passes_long_records(tmp_path):
  """`get_dataset` reads only each file's tail: a cut at any byte but a
  record's end is found, and a last record longer than the tail read falls
  back to the whole check (and passes)."""
  pretraining_data.make_data_dir(tmp_path, num_examples=5, num_files=1)
  whole = (tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-0-of-1").read_bytes()
  ends = {0, len(whole)} | set(
    record_check.record_offsets(
      str(tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-0-of-1")
    )
  )
  cut = tmp_path / "cut.tfrecord"
  for size in range(len(whole) + 1):
    cut.write_bytes(whole[:size])
    assert pretraining_dataset._ends_after_a_record(str(cut)) == (size in ends), size
  long = tmp_path / "long.tfrecord"
  with tf.io.TFRecordWriter(str(long)) as writer:
    writer.write(b"\0" * (pretraining_dataset._TAIL_BYTES + 100))
  pretraining_dataset._check_file_ends([str(long)])
  _cut(long, long.stat().st_size - 1)
  with pytest.raises(record_check.CorruptRecordError, match=r"long\.tfrecord': record 0 at byte 0"):
    pretraining_dataset._check_file_ends([str(long)])

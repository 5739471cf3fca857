"""Packs tokenized lines into pre-training examples exactly as the original
`ExampleBuilder` does (`build_pretraining_dataset.py:ExampleBuilder`), and serialises them quickly.

The original tokenizes line by line inside `add_line`. Tokenization draws no
random numbers, so the fast path tokenizes a whole file in one batch first and
then replays the lines' token ids through the same state machine: the random
draws (`random.random()` per example, the 50% coin, the 5% target-length
redraw) happen in exactly the original's order.

Example:

```python
builder = ExampleBuilder(FullTokenizer("vocab.txt"), max_length=128)
for line in lines:
  example = builder.add_line(line)  # an Example or None
```
"""

import collections
import functools
import random

import numpy as np


class ExampleBuilder:
  """The original's packing state machine.

  Args:
    tokenizer: an object with `tokenize(text)` and `convert_tokens_to_ids`
      (e.g. `electra_tf.tokenization.FullTokenizer`); only needed for
      `add_line` (the fast path uses `add_ids`).
    max_length: max_seq_length, including [CLS] and the [SEP]s.
    cls_id, sep_id: the special ids; looked up in `tokenizer.vocab` if None.
    rng: the random source; the module-level `random` (as in the original)
      if None.

  Example:

  >>> builder = ExampleBuilder(None, 8, cls_id=1, sep_id=2)
  >>> example = builder.add_ids([5, 6, 7, 8, 9, 10, 11, 12])
  >>> ids, mask, segments = examples_to_features([example], 8, 1, 2)
  """

  def __init__(self, tokenizer, max_length, cls_id=None, sep_id=None, rng=None):
    self._tokenizer = tokenizer
    self._max_length = max_length
    self._target_length = max_length
    self._current_sentences = []
    self._current_length = 0
    self._rng = rng if rng is not None else random
    self.cls_id = tokenizer.vocab["[CLS]"] if cls_id is None else cls_id
    self.sep_id = tokenizer.vocab["[SEP]"] if sep_id is None else sep_id

  def add_line(self, line):
    """Adds one line of text; returns an example tuple or None."""
    line = line.strip().replace("\n", " ")
    if not line and self._current_length != 0:
      return self._create_example()
    ids = self._tokenizer.convert_tokens_to_ids(self._tokenizer.tokenize(line))
    return self.add_ids(ids)

  def add_ids(self, ids, is_blank=None):
    """Adds the token ids of one (already stripped) line.

    Args:
      ids: the line's token ids (a sequence; numpy arrays are fine).
      is_blank: whether the stripped line was empty (a document boundary);
        defaults to `len(ids) == 0`, but a line of only control characters is
        not blank although it has no tokens, so callers that know should say.
    """
    if is_blank is None:
      is_blank = len(ids) == 0
    if is_blank and self._current_length != 0:
      return self._create_example()
    self._current_sentences.append(ids)
    self._current_length += len(ids)
    if self._current_length >= self._target_length:
      return self._create_example()
    return None

  def _split_segments(self):
    """Returns (segment_a, segment_b) as lists of sentences, not truncated."""
    rng = self._rng
    if rng.random() < 0.1:
      first_target = 100000
    else:
      first_target = (self._target_length - 3) // 2
    first, second = [], []
    len_first = 0
    len_second = 0
    for sentence in self._current_sentences:
      n = len(sentence)
      # `or` short-circuits: the coin is drawn only when the first two fail.
      if (
        len_first == 0
        or len_first + n < first_target
        or (len_second == 0 and len_first < first_target and rng.random() < 0.5)
      ):
        first.append(sentence)
        len_first += n
      else:
        second.append(sentence)
        len_second += n
    return first, second, len_first

  def _create_example(self):
    first, second, len_first = self._split_segments()
    self._current_sentences = []
    self._current_length = 0
    if self._rng.random() < 0.05:
      self._target_length = self._rng.randint(5, self._max_length)
    else:
      self._target_length = self._max_length
    return self._make_example(first, second, len_first)

  def _make_example(self, first, second, len_first=None):
    """The example's segments, truncated as the original does.

    Returns `Example(segment_a, segment_b)`: each a list of id arrays (views
    of the sentences) whose total length is the kept length: A at most
    `max_length - 2` tokens, then B at most `max_length - len(A) - 3`. Turn
    a list of them into padded features with `examples_to_features`.
    """
    max_length = self._max_length
    if len_first is None:
      len_first = sum(len(x) for x in first)
    if len_first <= max_length - 2:
      a, len_a = first, len_first  # the common case: nothing to cut
    else:
      a, len_a = _truncate(first, max_length - 2), max_length - 2
    b = _truncate(second, max(0, max_length - len_a - 3))
    return Example(a, b)


class Example(collections.namedtuple("Example", ["segment_a", "segment_b"])):
  """One example: its kept segment pieces (lists of id arrays)."""


def _truncate(sentences, limit):
  """The pieces of `sentences` that make up their first `limit` tokens."""
  kept = []
  for sentence in sentences:
    if limit <= 0:
      break
    if len(sentence) > limit:
      sentence = sentence[:limit]
    if len(sentence):
      kept.append(sentence)
    limit -= len(sentence)
  return kept


def examples_to_features(examples, max_length, cls_id, sep_id):
  """Builds the padded [n, S] int64 features of a list of `Example`s:
  `[CLS] A [SEP]`, then `B [SEP]` if B is not empty, zero padding.

  All token copies happen in one vectorised scatter.

  Returns (input_ids, input_mask, segment_ids).
  """
  n = len(examples)
  pieces, piece_dest = [], []
  len_a = np.zeros([n], np.int64)
  len_b = np.zeros([n], np.int64)
  for i, (a, b) in enumerate(examples):
    pos = i * max_length + 1
    for piece in a:
      pieces.append(piece)
      piece_dest.append(pos)
      pos += len(piece)
    len_a[i] = pos - i * max_length - 1
    pos += 1  # the first [SEP]
    start_b = pos
    for piece in b:
      pieces.append(piece)
      piece_dest.append(pos)
      pos += len(piece)
    len_b[i] = pos - start_b
  input_ids = np.zeros([n * max_length], np.int64)
  if pieces:
    lengths = np.fromiter((len(p) for p in pieces), np.int64, len(pieces))
    tokens = np.concatenate(pieces)
    piece_start = np.cumsum(lengths) - lengths
    dest = np.repeat(np.asarray(piece_dest, np.int64) - piece_start, lengths)
    input_ids[dest + np.arange(len(tokens))] = tokens
  input_ids = input_ids.reshape(n, max_length)
  rows = np.arange(n)
  input_ids[:, 0] = cls_id
  input_ids[rows, len_a + 1] = sep_id
  has_b = len_b > 0
  input_ids[rows[has_b], (len_a + len_b + 2)[has_b]] = sep_id
  length = len_a + 2 + np.where(has_b, len_b + 1, 0)
  position = np.arange(max_length)
  input_mask = (position < length[:, None]).astype(np.int64)
  segment_ids = ((position >= (len_a + 2)[:, None]) & (input_mask == 1)).astype(np.int64)
  return input_ids, input_mask, segment_ids


# -- Serialisation ----------------------------------------------------------
# A tf.train.Example with three int64_list features, encoded by hand: building
# protobuf objects in Python costs more than everything else together.


def _varint(n):
  out = bytearray()
  while n >= 0x80:
    out.append((n & 0x7F) | 0x80)
    n >>= 7
  out.append(n)
  return bytes(out)


def _field(tag_byte, payload):
  return tag_byte + _varint(len(payload)) + payload


def packed_varints(rows):
  """Varint-encodes each row of a non-negative int [n, S] array.

  Returns a list of n bytes objects (the packed payload of each row).
  """
  rows = np.asarray(rows)
  if rows.size == 0:
    return [b""] * rows.shape[0]
  if rows.min() < 0:
    raise ValueError("packed_varints encodes non-negative values only")
  top = int(rows.max())
  if top < 0x80:  # one byte per value: the common case of masks and segments
    data = rows.astype(np.uint8)
    return [row.tobytes() for row in data]
  rows = rows.astype(np.uint64)
  n_groups = (top.bit_length() + 6) // 7
  n_bytes = np.ones(rows.shape, np.int64)
  for k in range(1, n_groups):
    n_bytes += rows >= (np.uint64(1) << np.uint64(7 * k))
  shifts = np.arange(n_groups, dtype=np.uint64) * np.uint64(7)
  groups = ((rows[..., None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
  position = np.arange(n_groups)
  groups |= (position < (n_bytes[..., None] - 1)).astype(np.uint8) << 7
  flat = groups[position < n_bytes[..., None]].tobytes()
  row_bytes = n_bytes.sum(axis=1)
  ends = np.cumsum(row_bytes).tolist()
  starts = [0] + ends[:-1]
  return [flat[s:e] for s, e in zip(starts, ends)]


_FEATURE_KEYS = (b"input_ids", b"input_mask", b"segment_ids")


@functools.lru_cache(maxsize=4096)
def _entry_prefix(key, payload_length):
  """The bytes of a `Features.feature` map entry that precede the payload."""
  int64_list_head = b"\x0a" + _varint(payload_length)  # Int64List.value, packed
  int64_list_length = len(int64_list_head) + payload_length
  feature_head = b"\x1a" + _varint(int64_list_length) + int64_list_head  # .int64_list
  feature_length = len(feature_head) + payload_length
  entry_head = _field(b"\x0a", key) + b"\x12" + _varint(feature_length) + feature_head
  entry_length = len(entry_head) + payload_length
  return b"\x0a" + _varint(entry_length) + entry_head  # Features.feature


def serialize_examples(input_ids, input_mask, segment_ids):
  """Serialises a batch of examples ([n, S] int arrays) to tf.train.Example
  bytes; the result parses to the same features as the original's protos."""
  columns = [packed_varints(input_ids), packed_varints(input_mask), packed_varints(segment_ids)]
  records = []
  for payloads in zip(*columns):
    features = b"".join(
      [_entry_prefix(key, len(payload)) + payload for key, payload in zip(_FEATURE_KEYS, payloads)]
    )
    records.append(b"\x0a" + _varint(len(features)) + features)  # Example.features
  return records

"""Packs tokenized lines into pre-training examples exactly as the original
`ExampleBuilder` does (spec §4.2), and serialises them quickly.

The original tokenizes line by line inside `add_line`. Tokenization draws no
random numbers, so the fast path tokenizes a whole file in one batch first and
then replays the lines' token ids through the same state machine: the random
draws (`random.random()` per example, the 50% coin, the 5% target-length
redraw) happen in exactly the original's order.

Example:

```python
builder = ExampleBuilder(FullTokenizer("vocab.txt"), max_length=128)
for line in lines:
  example = builder.add_line(line)  # (input_ids, input_mask, segment_ids) or None
```
"""

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
  >>> builder.add_ids([5, 6, 7, 8, 9, 10, 11, 12]) is not None
  True
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
      if (len_first == 0 or len_first + n < first_target or
          (len_second == 0 and len_first < first_target and rng.random() < 0.5)):
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
    return self._make_example(first, second)

  def _make_example(self, first, second):
    """[CLS] A [SEP] (B [SEP]) with A/B truncated as the original does."""
    max_length = self._max_length
    a = _concat(first)[:max_length - 2]
    b = _concat(second)[:max(0, max_length - len(a) - 3)]
    input_ids = np.zeros([max_length], np.int64)
    segment_ids = np.zeros([max_length], np.int64)
    input_ids[0] = self.cls_id
    input_ids[1:1 + len(a)] = a
    input_ids[1 + len(a)] = self.sep_id
    n = len(a) + 2
    if len(b):
      input_ids[n:n + len(b)] = b
      input_ids[n + len(b)] = self.sep_id
      segment_ids[n:n + len(b) + 1] = 1
      n += len(b) + 1
    input_mask = np.zeros([max_length], np.int64)
    input_mask[:n] = 1
    return input_ids, input_mask, segment_ids


def _concat(sentences):
  if not sentences:
    return np.zeros([0], np.int64)
  return np.concatenate([np.asarray(s, np.int64) for s in sentences])


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
  rows = np.asarray(rows, np.uint64)
  n_bytes = np.ones(rows.shape, np.int64)
  for k in range(1, 10):
    n_bytes += rows >= (np.uint64(1) << np.uint64(7 * k))
  shifts = (np.arange(10, dtype=np.uint64) * np.uint64(7))
  groups = (rows[..., None] >> shifts) & np.uint64(0x7F)
  position = np.arange(10)
  more = position < (n_bytes[..., None] - 1)
  encoded = (groups | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
  valid = position < n_bytes[..., None]
  flat = encoded[valid].tobytes()
  ends = np.cumsum(n_bytes.sum(axis=1))
  starts = ends - n_bytes.sum(axis=1)
  return [flat[s:e] for s, e in zip(starts.tolist(), ends.tolist())]


_FEATURE_KEYS = (b"input_ids", b"input_mask", b"segment_ids")


def serialize_examples(input_ids, input_mask, segment_ids):
  """Serialises a batch of examples ([n, S] int arrays) to tf.train.Example
  bytes; the result parses to the same features as the original's protos."""
  columns = [packed_varints(input_ids), packed_varints(input_mask),
             packed_varints(segment_ids)]
  records = []
  for payloads in zip(*columns):
    features = b""
    for key, payload in zip(_FEATURE_KEYS, payloads):
      int64_list = _field(b"\x0a", payload)       # Int64List.value (packed)
      feature = _field(b"\x1a", int64_list)       # Feature.int64_list
      entry = _field(b"\x0a", key) + _field(b"\x12", feature)  # map entry
      features += _field(b"\x0a", entry)          # Features.feature
    records.append(_field(b"\x0a", features))     # Example.features
  return records

"""Span <-> tag conversion for tagging tasks (`finetune/tagging/tagging_tasks.py`), with the original's
quirks: adjacent I- tags of different types merge into one span labelled with
the last type, and an S- tag followed by an E- tag merges too."""


def get_span_labels(sentence_tags, inv_label_mapping=None):
  """Returns `[(start, end, type)]` (inclusive) for a list of tags.

  Args:
    sentence_tags: tags such as "B-NP", "I-NP", "O" (or label ids when
      `inv_label_mapping` is given).
    inv_label_mapping: optional dict id -> tag.

  Example:
  >>> get_span_labels(["B-NP", "I-NP", "I-VP", "O", "I-NP", "S-PP", "E-NP"])
  [(0, 2, 'VP'), (4, 4, 'NP'), (5, 6, 'NP')]
  """
  if inv_label_mapping:
    sentence_tags = [inv_label_mapping[int(i)] for i in sentence_tags]
  if len(sentence_tags) == 0:
    raise ValueError("get_span_labels: the tag list is empty")
  spans = []
  last = "O"
  start = -1
  for i, tag in enumerate(sentence_tags):
    position = None if tag == "O" else tag.split("-")[0]
    if (position in ("B", "S") or tag == "O") and last != "O":
      spans.append((start, i - 1, last.split("-")[-1]))
    if position in ("B", "S") or last == "O":
      start = i
    last = tag
  if sentence_tags[-1] != "O":
    spans.append((start, len(sentence_tags) - 1, sentence_tags[-1].split("-")[-1]))
  return spans


def get_tags(span_labels, length, encoding):
  """Tags for `length` tokens from spans, in an encoding such as "BIOES".

  Example:
  >>> get_tags([(0, 1, "NP"), (3, 3, "VP")], 4, "BIOES")
  ['B-NP', 'E-NP', 'O', 'S-VP']
  """
  tags = ["O"] * length
  for start, end, span_type in span_labels:
    for i in range(start, end + 1):
      tags[i] = "I-" + span_type
    if "E" in encoding:
      tags[end] = "E-" + span_type
    if "B" in encoding:
      tags[start] = "B-" + span_type
    if "S" in encoding and start == end:
      tags[start] = "S-" + span_type
  return tags

"""Newcomer sweep 21's bad serving inputs (bench/reports/newcomer_sweep_21.md):
a half-copied export's truncated variables file, and `serve_ids` called with
1-D ids (one text without its batch dimension)."""

import os
import shutil

import pytest
import tensorflow as tf

from electra_tf import serving
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.serving import export as export_lib
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.serving import S
from tests.helpers.serving import tiny_finetuning_model
from tests.helpers.serving import write_vocab


@pytest.fixture(scope="module")
def export_path(tmp_path_factory):
  """A tiny task export's version directory, shared by the tests (each
  damages a copy)."""
  tmp = str(tmp_path_factory.mktemp("sweep21_export"))
  vocab_file = write_vocab(tmp)
  model = tiny_finetuning_model([ClassificationHead("rte", 2, name="task_specific_rte")])
  module = export_lib.build_serving_module(
    model, "task", ElectraTokenizer(vocab_file=vocab_file), S, task="rte"
  )
  return export_lib.save_module_at(module, os.path.join(tmp, "export", "1"))


def test_a_half_copied_export_names_its_truncated_variables(export_path, tmp_path):
  """#47: `serving.load` of an export whose variables data file was cut to
  half its size raised `IndexError: Read less bytes than requested`, naming
  no file."""
  path = str(tmp_path / "export" / "1")
  shutil.copytree(export_path, path)
  data = os.path.join(path, "variables", "variables.data-00000-of-00001")
  size = os.path.getsize(data)
  with open(data, "r+b") as f:
    f.truncate(size // 2)
  prefix = os.path.join(path, "variables", "variables")
  with pytest.raises(ValueError) as e:
    serving.load(path)
  message = str(e.value)
  assert len(message.splitlines()) == 1, message
  assert message.startswith(
    f"load: the SavedModel {path!r} is damaged or only partly copied: its variables "
    f"checkpoint {prefix!r} cannot be read (its .data-* file is truncated: {size // 2:,} bytes"
  ), message
  assert message.endswith("; copy the export again"), message
  # A whole copy of the same export still loads.
  assert "serve_ids" in serving.load(export_path).signatures


def test_serve_ids_with_1d_ids_names_the_input_and_the_expected_shape(export_path):
  """#56: 1-D ids (one text without its batch dimension) failed with
  "slice index 1 of dimension 0 out of bounds", naming no input. The
  signature's [batch, S] is folded into the graph, so assert_rank sees 2."""
  serve_ids = serving.load(export_path).signatures["serve_ids"]
  row = tf.constant([2, 5, 6, 3] + [0] * (S - 4))
  mask = tf.cast(row > 0, tf.int32)
  expected = (
    f"serve_ids: {{name}} must have {S} positions per row (this export's max_seq_length; pad "
    f"shorter rows with 0s, or export with a larger --max-seq-length) and be 2-D, [batch, {S}] "
    "(one row per text; one text goes in a batch of one); got shape] [{shape}]"
  )

  def message(error):  # the assertion prints its string with \' for '
    return str(error.value).replace("\\'", "'")

  with pytest.raises(tf.errors.InvalidArgumentError) as e:
    serve_ids(input_ids=row[:4], input_mask=mask[:4], segment_ids=tf.zeros_like(row[:4]))
  assert expected.format(name="input_ids", shape="4") in message(e)
  assert "slice index" not in message(e)
  # Only input_mask without its batch dimension: it is the one named.
  batch = {
    "input_ids": row[None],
    "input_mask": mask[None],
    "segment_ids": tf.zeros_like(row)[None],
  }
  with pytest.raises(tf.errors.InvalidArgumentError) as e:
    serve_ids(**dict(batch, input_mask=mask))
  assert expected.format(name="input_mask", shape=str(S)) in message(e)
  # A batch of one nested once more ([1, 1, S]) is named as well.
  with pytest.raises(tf.errors.InvalidArgumentError) as e:
    serve_ids(**dict(batch, segment_ids=tf.zeros_like(row)[None, None]))
  assert expected.format(name="segment_ids", shape=f"1 1 {S}") in message(e)
  # The same ids as a batch of one answer.
  assert serve_ids(**batch)["probabilities"].shape == (1, 2)

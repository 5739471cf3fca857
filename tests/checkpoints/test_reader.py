"""Reading the original's name-based checkpoints
(`electra_tf.checkpoints.reader`): a truncated checkpoint is an error that
says so."""

import pytest

from electra_tf import convert
from tests.helpers.conversion import write_layout


def test_truncated_checkpoint(tmp_path):
  prefix = write_layout(tmp_path / "official", "default")
  data = tmp_path / "official" / "model.ckpt-123.data-00000-of-00001"
  data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
  with pytest.raises(ValueError, match=r"cannot be read: its \.data-\* file is truncated"):
    convert.convert(str(prefix), str(tmp_path / "out"))

"""Optional extras: a missing one is one line naming the extra, and the
command lines that need it exit 2 before doing any work."""

import sys

import pytest

from electra_tf import build_pretraining_dataset
from electra_tf.utils import exit_codes
from electra_tf.utils import extras


def test_require_imports_or_names_the_extra(monkeypatch):
  assert extras.require("json", "test", "x").loads("[2]") == [2]
  monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # an import of it now fails
  with pytest.raises(extras.MissingExtra) as raised:
    extras.require("tensorflow_datasets", "tfds", "--tfds-name lm1b")
  assert str(raised.value) == (
    "--tfds-name lm1b needs the optional 'tfds' extra (tensorflow_datasets is not installed): "
    "pip install 'electra_tf[tfds]'"
  )
  # Both an ImportError and a ValueError (which the command lines report as bad input).
  assert isinstance(raised.value, ImportError) and isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
  "module, flags, extra",
  [
    ("tensorflow_datasets", ["--tfds-name", "lm1b"], "tfds"),
    ("apache_beam", ["--corpus-dir", "corpus", "--runner", "DirectRunner"], "beam"),
  ],
)
def test_builder_without_the_extra_exits_2_with_one_line(
  tmp_path, monkeypatch, capsys, module, flags, extra
):
  monkeypatch.setitem(sys.modules, module, None)
  (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text("a a\n")
  monkeypatch.chdir(tmp_path)
  argv = ["--vocab-file", "vocab.txt", "--output-dir", "out"] + flags
  assert build_pretraining_dataset.main(argv) == exit_codes.BAD_INPUT
  err = capsys.readouterr().err.strip()
  assert err.splitlines() == [err], err
  assert f"pip install 'electra_tf[{extra}]'" in err and f"{module} is not installed" in err
  assert not (tmp_path / "out").exists()


def test_finetuning_from_tfds_without_the_extra_is_one_line(tmp_path, monkeypatch):
  from electra_tf.training import finetuning_run
  from tests.helpers.finetuning_testdata import finetuning_config

  (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
  config = finetuning_config(
    "m",
    str(tmp_path),
    data_source="tfds",
    task_names=["sst"],
    vocab_file=str(tmp_path / "vocab.txt"),
  )
  monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
  with pytest.raises(
    extras.MissingExtra, match=r"^hparam data_source=\"tfds\" needs the optional 'tfds' extra"
  ):
    finetuning_run.validate_inputs(finetuning_run.inputs_for(config))

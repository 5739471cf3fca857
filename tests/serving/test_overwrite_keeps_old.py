"""--overwrite keeps the old export until the new one is complete.

A SavedModel version (`save_module`) and a portable export's set of files
(`export_to_dir`: the network, its .json, the tokenizer files) are written
aside and swapped in only when whole; a failure or Ctrl-C midway leaves the
old one in place and no temporary entry behind. The writers are replaced
by fakes here: no model is built.
"""

import os
import types

import pytest

from electra_tf.serving import export as export_lib
from electra_tf.serving import portable
from electra_tf.utils import file_io
from electra_tf.utils import interrupts


def _tree(directory):
  """{relative path: content} of every file under `directory` (hidden ones too)."""
  files = {}
  for root, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(root, name)
      with open(path, "rb") as f:
        files[os.path.relpath(path, directory)] = f.read()
  return files


# --- the helper ------------------------------------------------------------------


def test_replaced_together_swaps_a_whole_set_and_keeps_others(tmp_path):
  (tmp_path / "a.onnx").write_text("old")
  (tmp_path / "v").mkdir()
  (tmp_path / "v" / "old.pb").write_text("old")
  (tmp_path / "other.tflite").write_text("kept")
  with file_io.replaced_together(str(tmp_path), "a.onnx") as staging:
    assert os.path.basename(staging).startswith(".") and os.listdir(staging) == []
    (tmp_path / staging / "a.onnx").write_text("new")
    os.mkdir(os.path.join(staging, "v"))
    (tmp_path / staging / "v" / "new.pb").write_text("new")
    (tmp_path / staging / "a.onnx.json").write_text("new")
    assert (tmp_path / "a.onnx").read_text() == "old"  # untouched until the block ends
  assert _tree(tmp_path) == {
    "a.onnx": b"new",
    "a.onnx.json": b"new",
    os.path.join("v", "new.pb"): b"new",
    "other.tflite": b"kept",
  }


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_replaced_together_keeps_the_old_set_on_an_error(tmp_path, error):
  (tmp_path / "a.onnx").write_text("old")
  (tmp_path / "a.onnx.json").write_text("old")
  before = _tree(tmp_path)
  with pytest.raises(error):
    with file_io.replaced_together(str(tmp_path), "a.onnx") as staging:
      (tmp_path / staging / "a.onnx").write_text("new")
      raise error()
  assert _tree(tmp_path) == before and sorted(os.listdir(tmp_path)) == ["a.onnx", "a.onnx.json"]


def test_replaced_together_rolls_back_an_interrupted_swap(tmp_path, monkeypatch):
  """Ctrl-C between the renames: the entries already moved in go back out,
  the old ones come back."""
  for name in ("a", "b", "c"):
    (tmp_path / name).write_text("old")
  real_replace, calls = os.replace, []

  def replace_then_interrupt(src, dst):
    real_replace(src, dst)
    calls.append(dst)
    if len(calls) == 3:  # a aside, a in, b aside: then Ctrl-C
      raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    with file_io.replaced_together(str(tmp_path), "set") as staging:
      for name in ("a", "b", "c"):
        (tmp_path / staging / name).write_text("new")
      monkeypatch.setattr(file_io.os, "replace", replace_then_interrupt)
  monkeypatch.undo()
  assert _tree(tmp_path) == {"a": b"old", "b": b"old", "c": b"old"}


def test_replaced_together_honours_a_swallowed_ctrl_c(tmp_path, monkeypatch):
  """A Ctrl-C that a finaliser swallowed during the writing: nothing is swapped in."""
  (tmp_path / "1").mkdir()
  (tmp_path / "1" / "saved_model.pb").write_text("old")
  monkeypatch.setattr(interrupts, "check", lambda: (_ for _ in ()).throw(KeyboardInterrupt()))
  with pytest.raises(KeyboardInterrupt):
    with file_io.replaced_together(str(tmp_path), "1") as staging:
      os.mkdir(os.path.join(staging, "1"))
      (tmp_path / staging / "1" / "saved_model.pb").write_text("new")
  assert _tree(tmp_path) == {os.path.join("1", "saved_model.pb"): b"old"}


# --- a SavedModel version (bug: the old version was deleted before the save) ------------


class _Module:
  def get_signatures(self):
    return {}


def _fake_save(content, error=None):
  def save(module, path, signatures=None):
    del module, signatures
    os.makedirs(os.path.join(path, "variables"))
    with open(os.path.join(path, "saved_model.pb"), "w") as f:
      f.write(content)
    if error is not None:
      raise error

  return save


def _old_version(export_dir):
  (export_dir / "1" / "variables").mkdir(parents=True)
  (export_dir / "1" / "saved_model.pb").write_text("old")
  (export_dir / "2").mkdir()
  (export_dir / "2" / "saved_model.pb").write_text("other version")
  return _tree(export_dir)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("save failed")])
def test_an_interrupted_overwrite_keeps_the_old_version(tmp_path, monkeypatch, error):
  export_dir = tmp_path / "exp"
  before = _old_version(export_dir)
  monkeypatch.setattr(export_lib.tf.saved_model, "save", _fake_save("new", error))
  with pytest.raises(type(error)):
    export_lib.save_module(_Module(), str(export_dir), version=1, overwrite=True)
  assert _tree(export_dir) == before
  assert sorted(os.listdir(export_dir)) == ["1", "2"]  # no hidden temporary dir left


def test_an_overwrite_replaces_the_version(tmp_path, monkeypatch):
  export_dir = tmp_path / "exp"
  _old_version(export_dir)
  monkeypatch.setattr(export_lib.tf.saved_model, "save", _fake_save("new"))
  path = export_lib.save_module(_Module(), str(export_dir), version=1, overwrite=True)
  assert path == str(export_dir / "1")
  assert _tree(export_dir) == {
    os.path.join("1", "saved_model.pb"): b"new",
    os.path.join("2", "saved_model.pb"): b"other version",
  }
  assert sorted(os.listdir(export_dir)) == ["1", "2"]
  # A path that is a file is replaced too (save_module_at, export_task_model's way).
  (tmp_path / "file").write_text("not a SavedModel")
  export_lib.save_module_at(_Module(), str(tmp_path / "file"), overwrite=True)
  assert (tmp_path / "file" / "saved_model.pb").read_text() == "new"


# --- a portable export's set of files (bug: a new .onnx beside an old .onnx.json) ------


OLD_SET = {
  "discriminator.onnx": b"old network",
  "discriminator.onnx.json": b'{"max_seq_length": "32"}\n',
  "vocab.txt": b"old vocab\n",
  "tokenizer.json": b"old tokenizer\n",
  "tokenizer_config.json": b"old config\n",
  "discriminator.tflite": b"another export",
}


def _fake_portable(monkeypatch, fail_in=None, error=KeyboardInterrupt):
  """export_portable's converters and writers replaced: the network is
  b"new network", the tokenizer files b"new …"; `fail_in` ("check",
  "tokenizer", "json") raises `error` there, after writing."""
  tokenizer = types.SimpleNamespace(vocab_size=10)
  monkeypatch.setattr(portable, "require", lambda format: None)
  monkeypatch.setattr(portable, "build_network", lambda model, **options: (None, tokenizer, 16, 32))
  monkeypatch.setattr(portable, "_to_onnx", lambda function, quantize, metadata: b"new network")

  def check(path, *args):
    assert open(path, "rb").read() == b"new network"
    if fail_in == "check":
      raise error()

  def tokenizer_files(directory, tokenizer, packing_length):
    for name in ("vocab.txt", "tokenizer.json"):
      with open(os.path.join(directory, name), "wb") as f:
        f.write(b"new " + name.encode())
    if fail_in == "tokenizer":
      raise error()
    with open(os.path.join(directory, "tokenizer_config.json"), "wb") as f:
      f.write(b"new config")

  real_write_atomic = portable.write_atomic

  def write_json(path, data):
    real_write_atomic(path, data)
    if fail_in == "json":
      raise error()

  monkeypatch.setattr(portable, "_check_export", check)
  monkeypatch.setattr(portable, "write_tokenizer_files", tokenizer_files)
  monkeypatch.setattr(portable, "write_atomic", write_json)


def _old_set(export_dir):
  export_dir.mkdir()
  for name, content in OLD_SET.items():
    (export_dir / name).write_bytes(content)


@pytest.mark.parametrize("fail_in", ["check", "tokenizer", "json"])
@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_portable_overwrite_keeps_the_old_set(tmp_path, monkeypatch, fail_in, error):
  export_dir = tmp_path / "exp"
  _old_set(export_dir)
  _fake_portable(monkeypatch, fail_in, error)
  with pytest.raises(error):
    portable.export_to_dir(None, str(export_dir), "onnx", "discriminator", overwrite=True)
  assert _tree(export_dir) == OLD_SET  # nothing mixed, no temporary file or dir left


def test_a_portable_overwrite_replaces_the_whole_set(tmp_path, monkeypatch):
  export_dir = tmp_path / "exp"
  _old_set(export_dir)
  _fake_portable(monkeypatch)
  path = portable.export_to_dir(
    None, str(export_dir), "onnx", "discriminator", overwrite=True, max_seq_length=16
  )
  assert path == str(export_dir / "discriminator.onnx")
  files = _tree(export_dir)
  assert sorted(files) == sorted(OLD_SET)
  assert files["discriminator.onnx"] == b"new network"
  assert b'"max_seq_length": "16"' in files["discriminator.onnx.json"]
  assert files["vocab.txt"] == b"new vocab.txt"
  assert files["tokenizer_config.json"] == b"new config"
  assert files["discriminator.tflite"] == b"another export"  # another export's file stays

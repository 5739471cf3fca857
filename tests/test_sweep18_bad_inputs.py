"""Newcomer sweep 18's bad cases (bench/reports/newcomer_sweep_18.md), one
test per class: the demo over a folder it did not make, a JSON file that
gives a key twice, an output that is a file where a directory is written or
a link to nothing, the Python API's flags and list lengths, and a write
that finds no room (the file-size limit, a file system out of inodes)."""

import errno
import json
import os
import subprocess
import sys

import pytest

import electra_tf
from electra_tf import convert_checkpoint
from electra_tf import demo
from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import model_dir
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.utils import file_io
from tests.conftest import REPO_ROOT
from tests.helpers import file_system
from tests.helpers import pretraining_data
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.subprocesses import TF_START_UP_LINE
from tests.helpers.subprocesses import quiet_env
from tfrecords_tools import build_vocab

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran", "?"]


def _write_vocab(path, size=60):
  words = pretraining_data.SPECIAL + [f"w{i}" for i in range(size - len(pretraining_data.SPECIAL))]
  path.write_text("\n".join(words) + "\n")
  return path


def _message_lines(text):
  return [line for line in text.splitlines() if line.strip() and not TF_START_UP_LINE.search(line)]


def test_the_demo_refuses_a_folder_it_did_not_make(tmp_path, capsys):
  """`demo --output-dir <my data dir> --stages vocab` replaced the user's own
  vocab (300 → 200 tokens) and its settings file, exit 0."""
  mine = tmp_path / "mine"
  (mine / "corpus").mkdir(parents=True)
  (mine / "corpus" / "a.txt").write_text("my own text\n")
  (mine / "vocab.txt").write_text("[PAD]\nmine\n")
  with pytest.raises(SystemExit) as e:
    demo.main(["--output-dir", str(mine), "--stages", "vocab"])
  assert e.value.code == 2
  assert "holds files the demo did not make (such as 'corpus')" in capsys.readouterr().err
  assert (mine / "vocab.txt").read_text() == "[PAD]\nmine\n"
  assert sorted(os.listdir(mine)) == ["corpus", "vocab.txt"]


def test_a_key_given_twice_in_a_json_file_is_refused(tmp_path):
  """A vocab settings file with "do_lower_case": true, then false: the last
  won silently (records not lower-cased for a lower-cased vocab)."""
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(VOCAB) + "\n")
  settings = vocab_lib.settings_path(str(vocab))
  with open(settings, "w") as f:
    f.write('{"kind": "wordpiece", "do_lower_case": true, "do_lower_case": false}')
  with pytest.raises(ValueError) as e:
    vocab_lib.vocab_settings(str(vocab))
  assert str(e.value) == (
    f"vocab settings file {settings!r}: key 'do_lower_case' is given more than once; "
    "give each key once"
  )
  run = tmp_path / "run"
  run.mkdir()
  (run / "config.json").write_text('{"format": 1, "kind": "pretraining", "kind": "finetuning"}')
  with pytest.raises(ValueError, match=r"config\.json': key 'kind' is given more than once"):
    model_dir.read_run_config(str(run))


def test_an_output_that_is_a_file_where_a_directory_is_written_is_refused(tmp_path, capsys):
  """`convert_checkpoint --output /dev/null`-like (an existing file, not a
  .keras one): a 41-line traceback from the checkpoint writer."""
  existing = tmp_path / "out"
  existing.write_text("keep")
  argv = ["--input", str(tmp_path / "missing"), "--output", str(existing)]
  assert convert_checkpoint.main(argv) == 2
  assert one_line(capsys).endswith(f"--output {str(existing)!r} is a file; expected a directory")
  assert existing.read_text() == "keep"


def test_an_output_through_a_link_to_nothing_is_named_before_any_work(tmp_path, capsys):
  """`build_vocab --output o/out/vocab.txt` with `o/out` a link to a missing
  folder: `FileExistsError` after counting the whole corpus."""
  (tmp_path / "o").mkdir()
  os.symlink(tmp_path / "gone", tmp_path / "o" / "out")
  output = tmp_path / "o" / "out" / "vocab.txt"
  argv = [
    "--corpus-dir",
    str(tmp_path / "no_corpus"),
    "--vocab-size",
    "50",
    "--output",
    str(output),
  ]
  assert build_vocab.main(argv) == 2
  assert one_line(capsys) == (
    f"error: --output {str(output)!r} cannot be created: {str(tmp_path / 'o' / 'out')!r} is a "
    f"symbolic link to {str(tmp_path / 'gone')!r}, which does not exist"
  )


def _classifier():
  preprocessor = ElectraTextPreprocessor(ElectraTokenizer(vocabulary=VOCAB), max_seq_length=8)
  return electra_tf.ElectraClassifier(
    dict(TINY_ENCODER, vocab_size=len(VOCAB)), 2, preprocessor=preprocessor
  )


@pytest.mark.parametrize(
  "kwargs, message",
  [
    ({"overwrite": "no"}, r"overwrite='no'; expected True or False"),
    ({"length_multiple": 8.5}, r"length_multiple=8\.5; expected an integer"),
    ({"jit_compile": "false"}, r"jit_compile='false'; expected True or False"),
  ],
)
def test_a_task_export_s_options_take_their_own_types(tmp_path, kwargs, message):
  """`clf.export(dir, overwrite="no")` replaced an existing export ("no" is
  true); `length_multiple=8.5` became 8 silently."""
  target = tmp_path / "1"
  target.mkdir()
  (target / "keep.txt").write_text("keep")
  with pytest.raises(ValueError, match=message):
    _classifier().export(str(target), **kwargs)
  assert os.listdir(target) == ["keep.txt"]


def test_answer_positions_needs_one_answer_per_question():
  """`answer_positions([q], [ctx], [0, 4], ["the cat"])` ignored the extra start."""
  preprocessor = ElectraTextPreprocessor(
    ElectraTokenizer(vocabulary=VOCAB), max_seq_length=16, packing="question_context"
  )
  qa = electra_tf.ElectraQuestionAnswerer(
    dict(TINY_ENCODER, vocab_size=len(VOCAB)), preprocessor=preprocessor
  )
  with pytest.raises(
    ValueError, match=r"^1 questions and contexts but 1 answers and 2 answer_starts"
  ):
    qa.answer_positions(["the cat ?"], ["the cat sat"], [0, 4], ["the cat"])
  starts, ends = qa.answer_positions(["the cat ?"], ["the cat sat"], [0], ["the cat"])
  assert (starts.tolist(), ends.tolist()) == ([5], [6])


@pytest.mark.parametrize(
  "args, kwargs, name",
  [((2,), {"num_train_steps": -1}, "num_train_steps"), ((-5,), {}, "save_checkpoints_steps")],
)
def test_a_checkpoint_callback_s_counts_are_checked(args, kwargs, name):
  """`PretrainingCheckpoint(manager, 2, num_train_steps=-1)` stopped `fit`
  after one step without a word."""
  with pytest.raises(ValueError, match=rf"PretrainingCheckpoint: {name}=-\d; expected None or"):
    checkpointing.PretrainingCheckpoint(None, *args, **kwargs)


def test_the_file_size_limit_is_named_like_a_full_disk():
  """Under `ulimit -f` every writer failed with `File too large` tracebacks:
  the full-disk handlers did not know EFBIG."""
  too_large = OSError(errno.EFBIG, os.strerror(errno.EFBIG))
  library_text = RuntimeError("Error while serializing: IoError(... message: \"File too large\")")
  for error in (too_large, library_text):
    assert file_io.is_disk_full(error)
    assert file_io.no_room_phrase(error)[0].endswith("file-size limit (ulimit -f)")
  full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
  assert file_io.no_room_phrase(full) == ("no space left on device", "free some space")
  assert not file_io.is_disk_full(OSError(errno.EACCES, os.strerror(errno.EACCES)))


def _run(script):
  return subprocess.run(
    ["sh", "-c", script],
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )


def test_commands_under_a_file_size_limit_say_so_in_one_line(tmp_path):
  """build_vocab and the dataset builder under `ulimit -f 8` (4 KiB)."""
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  words = [f"word{i}x" for i in range(2000)]
  (corpus / "a.txt").write_text("\n".join(" ".join(words[i : i + 10]) for i in range(0, 2000, 2)))
  vocab = _write_vocab(tmp_path / "small_vocab.txt")
  py = f"'{sys.executable}'"
  done = _run(
    f"ulimit -f 8; {py} -m tfrecords_tools.build_vocab --corpus-dir '{corpus}' --vocab-size 2000 "
    f"--output '{tmp_path}/out/vocab.txt'; echo rc=$? >&2; "
    f"{py} -m electra_tf.build_pretraining_dataset --corpus-dir '{corpus}' --vocab-file "
    f"'{vocab}' --output-dir '{tmp_path}/records' --max-seq-length 16 --num-processes 1 "
    "--num-out-files 1; "
    "echo rc=$? >&2"
  )
  lines = [line for line in _message_lines(done.stderr) if not line.startswith("warning:")]
  errors = [line for line in lines if "ulimit -f" in line]
  assert [line for line in lines if line.startswith("rc=")] == ["rc=2", "rc=2"], done.stderr
  assert len(errors) == 2 and all("file-size limit (ulimit -f)" in e for e in errors), errors
  assert "Traceback" not in done.stderr
  assert not os.path.exists(tmp_path / "out" / "vocab.txt")
  assert not os.path.exists(tmp_path / "out" / "vocab.txt.json")
  assert not (tmp_path / "records").exists() or not os.listdir(tmp_path / "records")


def test_a_builder_on_a_file_system_out_of_inodes_is_one_line(tmp_path):
  """No shard could even be created (8 MB free, no inode left): a
  `ResourceExhaustedError` traceback from the writers' set-up."""
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("w1 w2 w3 w4\n" * 200)
  vocab = _write_vocab(tmp_path / "vocab.txt")
  (tmp_path / "fs").mkdir()
  build = (
    f"'{sys.executable}' -m electra_tf.build_pretraining_dataset --corpus-dir '{corpus}' "
    f"--vocab-file '{vocab}' --output-dir $FS/records --max-seq-length 16 --num-processes 1 "
    f"--num-out-files 20 2> '{tmp_path}/err'; echo $? > '{tmp_path}/rc'; "
    f"ls -A $FS/records > '{tmp_path}/left' 2>/dev/null || true"
  )
  done = subprocess.run(
    file_system.small_file_system_script(tmp_path / "fs", "8m,nr_inodes=4", build),
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )
  assert done.returncode == 0, done.stderr
  lines = _message_lines((tmp_path / "err").read_text())
  assert (tmp_path / "rc").read_text().strip() == "2", lines
  assert len(lines) == 1 and "no shard could be created" in lines[0], lines
  assert "out of space or of inodes" in lines[0]
  assert (tmp_path / "left").read_text() == ""


def test_a_settings_file_written_before_a_failed_vocab_write_is_put_back(tmp_path):
  """With --overwrite, a vocab write that fails leaves the old settings (not the new ones)."""
  output = tmp_path / "vocab.txt"
  output.write_text("[PAD]\nold\n")
  old_settings = '{"kind": "wordpiece", "do_lower_case": false}\n'
  (tmp_path / "vocab.txt.json").write_text(old_settings)

  def failing_write():
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

  with pytest.raises(ValueError, match=r"^no space left on device writing --output"):
    build_vocab.write_vocab_files(str(output), {"kind": "wordpiece", "new": 1}, failing_write)
  assert (tmp_path / "vocab.txt.json").read_text() == old_settings
  assert json.loads(old_settings)["do_lower_case"] is False
  assert output.read_text() == "[PAD]\nold\n"

"""Newcomer sweep 26's full disks under the model writers
(bench/reports/newcomer_sweep_26.md #39, #51): `save_to_preset` and
`convert_checkpoint --to keras-hub` onto a 64 KiB file system died with a
segmentation fault (h5py's writer, finding no room part way) and left their
staging folder. Every writer of model weights (keras-hub presets, `.keras`
files, Hugging Face directories: `file_io.atomic_path(weights=...)`) now
refuses before writing, in one line that names the path, the room needed and
the room free."""

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT
from tests.helpers import file_system
from tests.helpers import model_formats
from tests.helpers.model_formats import ENCODER_SIZES
from tests.helpers.model_formats import PRETRAINING_HPARAMS
from tests.helpers.subprocesses import quiet_env

# Run on the small file system $FS: a crash is a process's, so not in the test's own.
_SCRIPT = """import json, os, sys
import electra_tf
from electra_tf import convert_checkpoint
model_dir, vocab, fs, hparams, sizes = sys.argv[1:]
argv = ["--input", model_dir, "--output", fs + "/kh", "--to", "keras-hub", "--vocab-file", vocab,
        "--hparams", hparams]
print("rc", convert_checkpoint.main(argv), flush=True)
clf = electra_tf.ElectraClassifier.from_checkpoint(
  model_dir, vocab, num_classes=2, max_seq_length=16, **json.loads(sizes))
for name, write in (("p", clf.save_to_preset), ("clf.keras", clf.save)):
  try:
    write(os.path.join(fs, name))
  except OSError as e:
    print(name, e, flush=True)
print("left", os.listdir(fs), flush=True)
"""


def test_model_writers_on_a_full_disk_refuse_in_one_line_and_leave_nothing(tmp_path):
  model_dir = model_formats.official_checkpoint(tmp_path / "official")
  vocab = model_formats.write_vocab(tmp_path / "vocab.txt")
  fs = tmp_path / "fs"
  fs.mkdir()
  (tmp_path / "write.py").write_text(_SCRIPT)
  hparams, sizes = (json.dumps(x) for x in (PRETRAINING_HPARAMS, ENCODER_SIZES))
  args = f"'{tmp_path}/write.py' '{model_dir}' '{vocab}' \"$FS\" '{hparams}' '{sizes}'"
  done = subprocess.run(
    file_system.small_file_system_script(fs, "64k", f"'{sys.executable}' {args}"),
    cwd=REPO_ROOT, env=quiet_env(PYTHONPATH=str(REPO_ROOT)), capture_output=True, text=True, timeout=300,
  )  # fmt: skip
  assert done.returncode == 0, done.stderr[-3000:]  # was -11, a segmentation fault
  out = done.stdout.splitlines()
  err = [line for line in done.stderr.splitlines() if "convert_checkpoint:" in line]
  assert out[0] == "rc 2" and len(err) == 1, done.stderr[-3000:]
  full = f"convert_checkpoint: error: no space left on device writing --output '{fs}/kh' (about "
  assert err[0].startswith(full), err
  assert " MB needed, 0.07 MB free); nothing was left behind" in err[0]
  for line, name in zip(out[1:3], ("p", "clf.keras")):
    assert line.startswith(f"{name} [Errno 28] no space left on device for '{fs}/{name}': "), out
    assert line.endswith(" MB, 0.07 MB free there; nothing was written"), line
  assert out[3] == "left []"
  assert "h5py" not in done.stderr

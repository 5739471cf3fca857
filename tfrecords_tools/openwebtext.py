"""OpenWebText → pre-training TFRecords (`build_openwebtext_pretraining_dataset.py`, `build_openwebtext_pretraining_dataset.py`).

`<data-dir>/openwebtext/` holds `.xz` tar archives of `.txt` files; each file
is one document (blank lines are skipped, never document ends). Archives are
split over jobs by their index in the sorted listing and shuffled per job;
each archive's files are shuffled too, all in the original's order with the
job's `random.Random(seed)` (as the text builder).

Differences from the original: members are read straight from the archive
into memory, so no temporary files are written (the original extracts into
`<data-dir>/tmp/job_<id>` and never cleans up), member names are sorted
before the shuffle (the original shuffles the directory listing, whose order
depends on the file system), and `<data-dir>/pretrain_tfrecords` is not
deleted (a non-empty one needs `overwrite`).

Example:

```python
build_openwebtext(OpenWebTextOptions(data_dir="data", seed=0))
```
"""

import dataclasses
import os
import tarfile
from typing import Optional

import tensorflow as tf

from electra_tf.data import records_info
from electra_tf.utils import file_io
from tfrecords_tools import example_writer
from tfrecords_tools import text_checks
from tfrecords_tools import text_corpus


@dataclasses.dataclass
class OpenWebTextOptions:
  data_dir: str
  max_seq_length: int = 128
  num_processes: int = 1
  # None: as the vocab was built (see text_corpus.BuildOptions).
  do_lower_case: Optional[bool] = None
  strip_accents: Optional[bool] = None
  seed: Optional[int] = None
  num_out_files: int = 1000
  overwrite: bool = False
  carriage_return_as_space: bool = False

  @property
  def vocab_file(self):
    return os.path.join(self.data_dir, "vocab.txt")

  @property
  def archive_dir(self):
    return os.path.join(self.data_dir, "openwebtext")

  @property
  def output_dir(self):
    return os.path.join(self.data_dir, "pretrain_tfrecords")


def list_archives(archive_dir):
  if not tf.io.gfile.isdir(archive_dir):
    raise ValueError(
      f"{archive_dir!r} is not a directory: --data-dir must hold the "
      "extracted OpenWebText corpus in openwebtext/"
    )
  names = sorted(file_io.list_names(archive_dir, "--data-dir's OpenWebText folder"))
  if not names:
    raise ValueError(f"{archive_dir!r} holds no archives")
  return names


# The first bytes of compressed files and archives: a member that starts so
# is an archive inside the archive (the downloaded openwebtext.tar.xz put in
# openwebtext/ holds the urlsf_subset*.xz archives), not a document.
_ARCHIVE_MAGIC = {
  b"\xfd7zXZ\x00": "xz",
  b"\x1f\x8b": "gzip",
  b"BZh": "bzip2",
  b"PK\x03\x04": "zip",
  b"\x28\xb5\x2f\xfd": "zstd",
}


def check_member(archive_path, member, data, bad_bytes=None):
  """Refuses, in one line naming the archive and the member, a member that
  is itself an archive or mostly not text (`text_checks.is_not_text`): read
  as a document, its compressed bytes would become examples of [UNK]."""
  kind = next((k for magic, k in _ARCHIVE_MAGIC.items() if data.startswith(magic)), None)
  if kind is None and data[257:262] == b"ustar":
    kind = "tar"
  directory, name = os.path.split(archive_path)
  if kind:
    raise ValueError(
      f"OpenWebText archive {archive_path!r}: member {member!r} is an archive ({kind}), not a "
      f"document: extract {name!r} so that {directory!r} holds the archives of .txt documents "
      "it contains (OpenWebText's urlsf_subset*.xz files)"
    )
  if text_checks.is_not_text(data, bad_bytes):
    share = text_checks.not_text_share(data, bad_bytes)
    raise ValueError(
      f"OpenWebText archive {archive_path!r}: member {member!r} is not text ({share:.0%} of "
      f"its bytes are not UTF-8 or control characters): expected {directory!r} to hold "
      "archives of UTF-8 .txt documents"
    )


def check_first_archive(archive_dir, names):
  """`check_member` on the start of the first member of the first archive,
  before any work (the outer openwebtext.tar.xz is caught here); an archive
  that cannot be read is left to the job, which names it."""
  if not names:
    return
  path = os.path.join(archive_dir, names[0])
  try:
    with tarfile.open(path) as archive:
      for member in archive:
        if member.isfile():
          data = archive.extractfile(member).read(text_checks.EXPORT_SAMPLE_BYTES)
          break
      else:
        return
  except (tarfile.TarError, EOFError, OSError):
    return
  check_member(path, member.name, data)


def read_archive(path):
  """{member name: bytes} of every regular file in a (compressed) tar."""
  contents = {}
  try:
    with tarfile.open(path) as archive:  # compression detected automatically
      for member in archive:
        if member.isfile():
          contents[member.name] = archive.extractfile(member).read()
  except (tarfile.TarError, EOFError, OSError) as e:
    raise ValueError(f"OpenWebText archive {path!r} cannot be read: {e}") from e
  return contents


def run_job(job_id, options, cpu=None, on_file=None):
  """One job: its archives → its shards. Returns stats. `cpu`: the core to
  pin this process to (see `text_corpus.start_job`); `on_file`: called with
  the `ExampleWriter` after each archive is read (progress counters)."""
  rng = text_corpus.start_job(options.seed, cpu)
  progress = example_writer.ProgressLog(job_id, 0, unit="archives")
  progress.log("Creating example writer")
  writer = text_corpus.make_example_writer(job_id, options, rng, blanks_separate_docs=False)
  progress.log("Writing tf examples")
  try:
    names = list_archives(options.archive_dir)
    names = [n for i, n in enumerate(names) if i % options.num_processes == job_id]
    rng.shuffle(names)
    progress.total = len(names)
    for file_no, name in enumerate(names):
      if file_no > 0 and file_no % 10 == 0:
        progress.update(file_no, writer.n_written)
      contents = read_archive(os.path.join(options.archive_dir, name))
      members = sorted(contents)
      # Drawn after every example of the previous archive, as in the original
      # (so the pipelined writer is only fed one archive at a time).
      rng.shuffle(members)
      texts = []
      for member in members:
        data = contents[member]
        text, bad = example_writer.decode_utf8(data)
        check_member(os.path.join(options.archive_dir, name), member, data, bad)
        writer.bytes_read += len(data)
        writer.bad_bytes += bad
        texts.append((f"{name}:{member}", text))
      if on_file is not None:
        on_file(writer)
      writer.write_texts(texts)
    writer.finish()
  except BaseException as e:
    writer.abort()
    if file_io.is_disk_full(e):
      raise writer.output_full_error(options.output_dir, error=e) from None
    raise
  progress.log(f"Done! {writer.n_written} examples written")
  return text_corpus.job_stats(job_id, writer)


def build_openwebtext(options, beam_options=None):
  """Validates, then runs the jobs: in spawned processes (when more than
  one), or on Apache Beam with `beam_options`
  (`beam_pipeline.pipeline_options(...)`). Returns the jobs' stats, or with
  Beam the build's counters."""
  if not tf.io.gfile.isdir(options.data_dir):
    raise ValueError(f"--data-dir {options.data_dir!r} is not a directory")
  if not tf.io.gfile.exists(options.vocab_file):
    raise ValueError(f"--data-dir {options.data_dir!r} holds no vocab.txt")
  vocab, normalisation = text_corpus.check_vocab(
    options.vocab_file, options.do_lower_case, options.strip_accents
  )
  check_first_archive(options.archive_dir, list_archives(options.archive_dir))
  if options.num_processes < 1 or options.num_processes > options.num_out_files:
    raise ValueError(
      f"--num-processes must be in [1, {options.num_out_files}], got {options.num_processes}"
    )
  file_io.check_writable(options.output_dir, "--output-dir", directory=True)
  text_corpus.prepare_output_dir(options.output_dir, options.overwrite)

  def build():
    if beam_options is not None:
      from tfrecords_tools import beam_pipeline  # deferred: Apache Beam is an optional extra

      result = beam_pipeline.run_jobs_on_beam(run_job, options, beam_options)
    else:
      result = text_corpus.run_jobs(run_job, options)
    settings = text_corpus.records_settings(options.archive_dir, options, normalisation)
    shards = text_corpus.built_shards(options.output_dir, options.num_out_files)
    records_info.write_records_info(options.output_dir, vocab, settings, shards)
    return result

  return text_corpus.build_with_previous_set_aside(options.output_dir, build)

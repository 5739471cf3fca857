"""Builds pre-training TFRecords from a directory of text files or a TFDS
dataset (`build_pretraining_dataset.py`–4.4), with one or more job processes.

Reproducibility: with `seed` set, every job draws from its own
`random.Random(seed)` (the state `random.seed(seed)` gives the original's
process), shuffles its file list with it and then draws per example in the
original's order. A job never touches the module-level `random`, so jobs that
share a process (Beam workers run bundles in threads) stay independent. With one process and seed S the records therefore equal those of the
original run under `random.seed(S)`. Without a seed, Python seeds from the OS
as in the original (not reproducible).

Example:

```python
build_pretraining_dataset(BuildOptions(corpus_dir="corpus", vocab_file="vocab.txt",
                                       output_dir="out", seed=0))
```
"""

import collections
import ctypes
import dataclasses
import errno
import multiprocessing
import multiprocessing.connection
import os
import pickle
import random
import resource
import signal
import sys
import threading
import time
import traceback
from typing import Optional

import tensorflow as tf

from electra_tf.data import records_info
from electra_tf.text.vocab import NORMALISATION_FLAGS
from electra_tf.text.vocab import Vocab
from electra_tf.text.vocab import resolve_normalisation
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from tfrecords_tools import example_writer
from tfrecords_tools import text_checks


@dataclasses.dataclass
class BuildOptions:
  """Everything a build needs (the CLI flags)."""

  vocab_file: str
  output_dir: str
  corpus_dir: Optional[str] = None
  max_seq_length: int = 128
  num_processes: int = 1
  blanks_separate_docs: bool = True
  # None: as the vocab was built (WordPiece: on; SentencePiece: its <model>.json, else off).
  do_lower_case: Optional[bool] = None
  strip_accents: Optional[bool] = None
  seed: Optional[int] = None
  num_out_files: int = 1000
  overwrite: bool = False
  carriage_return_as_space: bool = False
  tfds_name: Optional[str] = None
  tfds_split: str = "train"
  tfds_text_key: str = "text"
  tfds_data_dir: Optional[str] = None


def make_example_writer(job_id, options, rng, blanks_separate_docs):
  """The `ExampleWriter` of one job of a build with `options` (a `BuildOptions`
  or any options object with the same fields). A full file system (no
  inode, or no byte for a shard) is the one-line `OutputFullError`."""
  try:
    return example_writer.ExampleWriter(
      job_id=job_id,
      vocab_file=options.vocab_file,
      output_dir=options.output_dir,
      max_seq_length=options.max_seq_length,
      num_jobs=options.num_processes,
      blanks_separate_docs=blanks_separate_docs,
      do_lower_case=options.do_lower_case,
      strip_accents=options.strip_accents,
      num_out_files=options.num_out_files,
      rng=rng,
      carriage_return_as_space=options.carriage_return_as_space,
    )
  except Exception as e:  # pylint: disable=broad-except
    if file_io.is_disk_full(e):  # no shard could be created (it removed those it had)
      raise example_writer.output_full_error(options.output_dir, 0, 0, error=e) from None
    if getattr(e, "errno", None) == errno.EMFILE or os.strerror(errno.EMFILE) in str(e):
      # Each job keeps its shards open while it writes.
      limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
      raise ValueError(
        f"--num-out-files {options.num_out_files}: a job writes its shards at once and this "
        f"process may open only {limit} files (ulimit -n); use fewer --num-out-files or "
        "more --num-processes, or raise the limit"
      ) from None
    raise


def job_stats(job_id, writer):
  """What one finished job reports: its id and its writer's counters."""
  return {
    "job_id": job_id,
    "examples": writer.n_written,
    "bytes": writer.bytes_read,
    "lines": writer.lines_read,
    "tokens": writer.tokens_read,
    "unknown_tokens": writer.unknown_tokens,
    "bad_bytes": writer.bad_bytes,
    "bad_bytes_files": writer.bad_bytes_files,
    "bad_bytes_example": writer.bad_bytes_example,
    "not_text_files": writer.not_text_files,
    "not_text_bytes": writer.not_text_bytes,
    "not_text_example": writer.not_text_example,
  }


def check_vocab(vocab_file, do_lower_case=None, strip_accents=None):
  """Clear errors for a missing vocab, one without the special tokens or
  with a token listed twice, or flags that contradict what the vocab was
  built with (its `<vocab>.json`, either kind): its pieces were learned on
  text normalised that way. Returns `(vocab, (do_lower_case, strip_accents))`:
  the `Vocab` read once and the normalisation the build applies."""
  vocab = Vocab.read(vocab_file, "--vocab-file")
  normalisation = resolve_normalisation(
    vocab_file, do_lower_case, strip_accents, vocab.kind, names=NORMALISATION_FLAGS
  )
  return vocab, normalisation


def records_settings(source, options, normalisation):
  """The build's settings `records_info.json` records beside the shards:
  where the text came from, the builder's flags and its normalisation."""
  return {
    "source": source,
    "max_seq_length": options.max_seq_length,
    "num_out_files": options.num_out_files,
    "do_lower_case": normalisation[0],
    "strip_accents": normalisation[1],
    "seed": options.seed,
  }


def built_shards(output_dir, num_out_files):
  """The shard names a build wrote in `output_dir` (`records_info.json` lists them)."""
  names = (example_writer.shard_name(i, num_out_files) for i in range(num_out_files))
  return [n for n in names if tf.io.gfile.exists(os.path.join(output_dir, n))]


def remove_shards(output_dir, keep=()):
  """Removes every shard, complete or temporary, and the records info from
  `output_dir` (what an interrupted build wrote: shards of a build that did
  not finish are not a dataset), but the names in `keep`; other files stay.
  Returns how many were removed."""
  if not tf.io.gfile.isdir(output_dir):
    return 0
  removed = 0
  for name in tf.io.gfile.listdir(output_dir):
    if _is_build_file(name) and name not in keep:
      tf.io.gfile.remove(os.path.join(output_dir, name))
      removed += 1
  return removed


# With --overwrite the earlier build waits in this folder of the output dir
# until the new one is complete: a rebuild that fails or is interrupted puts
# it back instead of leaving nothing.
PREVIOUS_BUILD = records_info.PREVIOUS_BUILD


def _is_build_file(name):
  return name == records_info.RECORDS_INFO or name.startswith(
    (example_writer.SHARD_PREFIX,) + example_writer.TEMP_PREFIXES
  )


def prepare_output_dir(output_dir, overwrite):
  """Creates `output_dir`; refuses a non-empty one unless `overwrite`.

  With `overwrite`, only earlier shards (complete or not) and the records
  info are replaced; other files are left alone (the original deletes the
  whole directory instead). The earlier build is set aside in
  `PREVIOUS_BUILD` until `build_with_previous_set_aside` completes; partial
  shards are removed. One set aside by a rebuild that was killed is kept: it
  is the last complete build.
  """
  if not tf.io.gfile.exists(output_dir):
    tf.io.gfile.makedirs(output_dir)
    return
  entries = [n for n in tf.io.gfile.listdir(output_dir) if n.rstrip("/") != PREVIOUS_BUILD]
  if entries and not overwrite:
    raise ValueError(not_empty_message(output_dir, entries))
  if not overwrite:
    return
  aside = os.path.join(output_dir, PREVIOUS_BUILD)
  if tf.io.gfile.exists(aside):
    remove_shards(output_dir)
    return
  complete = [
    n for n in entries if _is_build_file(n) and not n.startswith(example_writer.TEMP_PREFIXES)
  ]
  remove_shards(output_dir, keep=complete)
  if complete:
    tf.io.gfile.makedirs(aside)
    for name in complete:
      tf.io.gfile.rename(os.path.join(output_dir, name), os.path.join(aside, name))


def restore_previous_build(output_dir):
  """After a failed or interrupted rebuild: removes its shards and puts the
  build set aside by `prepare_output_dir` back. Returns
  `(shards removed, files restored)`."""
  removed = remove_shards(output_dir)
  aside = os.path.join(output_dir, PREVIOUS_BUILD)
  if not tf.io.gfile.isdir(aside):
    return removed, 0
  names = tf.io.gfile.listdir(aside)
  for name in names:
    tf.io.gfile.rename(os.path.join(aside, name), os.path.join(output_dir, name))
  tf.io.gfile.rmtree(aside)
  return removed, len(names)


def build_with_previous_set_aside(output_dir, build):
  """Runs `build()` (which writes the new shards and records info), then
  drops the build `prepare_output_dir` set aside. When `build` raises
  (an error, Ctrl-C), its shards are removed and the earlier build is put
  back first; the exception carries `(shards removed, files restored)` as
  `build_undone` for the runner's one line."""
  try:
    result = build()
  except BaseException as e:
    e.build_undone = restore_previous_build(output_dir)
    raise
  aside = os.path.join(output_dir, PREVIOUS_BUILD)
  if tf.io.gfile.exists(aside):
    tf.io.gfile.rmtree(aside)
  return result


def not_empty_message(output_dir, entries):
  """Why a non-empty `--output-dir` is refused, and what to do: partial
  shards (temporary names) are what an interrupted build leaves behind.
  The builder cannot resume a build; `--overwrite` starts it again."""
  partial = [n for n in entries if n.startswith(example_writer.TEMP_PREFIXES)]
  if partial and len(partial) == len(entries):
    return (
      f"--output-dir {output_dir!r} is not empty: its {len(entries)} entries are partial shards "
      f"(hidden .tmp files such as {partial[0]!r}) left by an interrupted build; pass "
      "--overwrite to remove them and build again (a build cannot be resumed)"
    )
  if partial:
    return (
      f"--output-dir {output_dir!r} is not empty ({len(entries)} entries, {len(partial)} of "
      "them partial .tmp shards left by an interrupted build); pass --overwrite to replace "
      "its shards (other files are kept)"
    )
  return (
    f"--output-dir {output_dir!r} is not empty ({len(entries)} entries); "
    "pass --overwrite to replace its shards"
  )


# What every corpus reader (the builders, build_vocab) says of the sub-folders
# of --corpus-dir: they are skipped, not read.
SUBFOLDERS_NOT_READ = (
  "sub-folders are not read; point --corpus-dir at the folder that holds the text files"
)


def list_corpus_files(corpus_dir):
  """Sorted entries directly inside `corpus_dir` (as `gfile.listdir`).

  The one check of the entries that every corpus reader makes, before any
  work: a broken symbolic link (its file moved or deleted) is refused in one
  line naming it, and so are a name that is not UTF-8 (`file_io.list_names`)
  and a writer's hidden partial file (`file_io.unfinished_write`).
  Sub-folders are listed but every reader skips them (`subfolder_note`)."""
  if not corpus_dir or not tf.io.gfile.isdir(corpus_dir):
    raise ValueError(f"--corpus-dir {corpus_dir!r} is not a directory")
  names = sorted(n.rstrip("/") for n in file_io.list_names(corpus_dir, "--corpus-dir"))
  for name in names:
    broken = file_io.broken_link(os.path.join(corpus_dir, name))
    if broken:
      raise ValueError(
        f"--corpus-dir {corpus_dir!r}: {name!r} is {broken}; remove it or point it at the text file"
      )
    unfinished = file_io.unfinished_write(name)
    if unfinished:
      raise ValueError(f"--corpus-dir {corpus_dir!r}: {name!r} is not text but {unfinished}")
  files = [n for n in names if not tf.io.gfile.isdir(os.path.join(corpus_dir, n))]
  if not files or all(tf.io.gfile.stat(os.path.join(corpus_dir, n)).length == 0 for n in files):
    subfolders = (
      " (it has only sub-folders: " + SUBFOLDERS_NOT_READ + ")" if names and not files else ""
    )
    raise ValueError(
      f"--corpus-dir {corpus_dir!r} holds no text: it has no files or only empty ones{subfolders}"
    )
  return names


def subfolder_note(corpus_dir, names):
  """The one line every corpus reader prints (once, before any work) when
  `corpus_dir` holds sub-folders among `names` (`list_corpus_files`): they
  are skipped; None when there are none."""
  subfolders = [n for n in names if tf.io.gfile.isdir(os.path.join(corpus_dir, n))]
  if not subfolders:
    return None
  shown = ", ".join(repr(n) for n in subfolders[:5]) + (", ..." if len(subfolders) > 5 else "")
  return (
    f"note: --corpus-dir {corpus_dir!r}: skipping {len(subfolders)} sub-folder(s) ({shown}): "
    f"{SUBFOLDERS_NOT_READ}"
  )


def check_corpus_line_ends(corpus_dir, names=None):
  """Refuses, before any work, a corpus file with CR-only (old Mac) line ends
  (`text_checks.check_line_ends` on its first `LINE_ENDS_SAMPLE_BYTES`).
  Entries that are not regular files (directories; named pipes, which a
  job reads once) are left alone."""
  for name in list_corpus_files(corpus_dir) if names is None else names:
    path = os.path.join(corpus_dir, name)
    if tf.io.gfile.isdir(path) or ("://" not in path and not os.path.isfile(path)):
      continue
    with tf.io.gfile.GFile(path, "rb") as f:
      text_checks.check_line_ends(path, f.read(text_checks.LINE_ENDS_SAMPLE_BYTES))


def export_format_line(corpus_dir, names=None, max_files=8):
  """The warning line (without "warning: ") when one of the first
  `max_files` corpus files looks like a JSON-lines or CSV export
  (`text_checks.export_format_warning` on its first
  `EXPORT_SAMPLE_BYTES`), else None. Both corpus commands print it before
  any work; the build goes on (valid UTF-8 can be meant as text)."""
  found = []
  for name in (list_corpus_files(corpus_dir) if names is None else names)[:max_files]:
    path = os.path.join(corpus_dir, name)
    # Only regular files: a named pipe would block this sample (its job reads it).
    if tf.io.gfile.isdir(path) or ("://" not in path and not os.path.isfile(path)):
      continue
    with tf.io.gfile.GFile(path, "rb") as f:
      data = f.read(text_checks.EXPORT_SAMPLE_BYTES)
    if text_checks.is_not_text(data):
      continue
    line = text_checks.export_format_warning(path, data)
    if line:
      found.append(line)
  if not found:
    return None
  more = f" (and {len(found) - 1} more such file(s))" if len(found) > 1 else ""
  return found[0] + more


def corpus_bytes(options):
  """The size of the `--corpus-dir` files in bytes; None for TFDS, or where
  it cannot be read."""
  if options.tfds_name:
    return None
  try:
    paths = [os.path.join(options.corpus_dir, n) for n in list_corpus_files(options.corpus_dir)]
    return sum(tf.io.gfile.stat(p).length for p in paths if not tf.io.gfile.isdir(p))
  except (ValueError, OSError, tf.errors.OpError):
    return None


def start_job(seed, cpu=None):
  """What every job does first: pin its process to core `cpu` (if given; see
  `job_cpus`), so the threads TensorFlow starts afterwards inherit it. Returns
  the job's random source, `random.Random(seed)` (seeded from the OS when
  `seed` is None, as an unseeded original run)."""
  if cpu is not None:
    os.sched_setaffinity(0, {cpu})
  return random.Random(seed)


def job_cpus(num_processes):
  """The core each job process is pinned to, or None for no pinning.

  A job uses more than one core (tokenization runs in a thread beside the
  packing). When there are at least as many jobs as cores, unpinned jobs
  fight over every core; one core per job (round robin) measured about 8%
  faster with 2 jobs on 2 cores. With fewer jobs than cores nothing is
  pinned, so each job can still spread over spare cores.
  """
  if num_processes < 2 or not hasattr(os, "sched_getaffinity"):
    return [None] * num_processes
  cpus = sorted(os.sched_getaffinity(0))
  if num_processes < len(cpus):
    return [None] * num_processes
  return [cpus[j % len(cpus)] for j in range(num_processes)]


# prctl(2) option: the signal a process gets when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1


def _watch_parent(parent_pid, interval=1.0):
  while os.getppid() == parent_pid:
    time.sleep(interval)
  os._exit(1)  # pylint: disable=protected-access


def die_with_parent(parent_pid):
  """Job processes' initializer: end this process when the build's main
  process `parent_pid` dies, even by `kill -9` (which runs no clean-up
  there). Left alone, a worker would write every shard of its job and then
  wait forever for work, holding its memory.

  Linux delivers SIGKILL at once (`prctl(PR_SET_PDEATHSIG)`); elsewhere, and
  as a second line of defence, a daemon thread exits within a second of
  seeing the process re-parented."""
  if sys.platform.startswith("linux"):
    try:
      libc = ctypes.CDLL(None, use_errno=True)
      libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
      pass  # no prctl here: the thread below still watches
  if os.getppid() != parent_pid:  # died before the signal was armed
    os._exit(1)  # pylint: disable=protected-access
  # Ctrl-C reaches every process of the terminal's group, and so do a
  # SIGTERM sent to the group (a scheduler's, `kill -- -PGID`) and the SIGHUP
  # of a closed terminal: the main process handles them (stops the jobs with
  # SIGKILL, removes their shards); a job's traceback would be noise, and a
  # job dying first would be taken for a crash.
  for signum in interrupts.STOP_SIGNALS:
    signal.signal(signum, signal.SIG_IGN)
  threading.Thread(
    target=_watch_parent, args=(parent_pid,), name="watch-parent", daemon=True
  ).start()


def _job_process(connection, parent_pid, job_fn, job_id, options, cpu):
  """A job process's body: runs the job and sends back `("ok", stats)` or
  `("error", exception, traceback text)`."""
  die_with_parent(parent_pid)
  try:
    result = ("ok", job_fn(job_id, options, cpu))
  except Exception as e:  # pylint: disable=broad-except  (sent to the main process, raised there)
    result = ("error", e, traceback.format_exc())
  try:
    connection.send(result)
  except (pickle.PicklingError, TypeError, AttributeError):  # an exception that does not pickle
    connection.send(("error", RuntimeError(f"{type(result[1]).__name__}: {result[1]}"), result[2]))
  connection.close()


def run_jobs(job_fn, options):
  """Runs `job_fn(job_id, options, cpu)` for every job and returns their
  stats: in this process for one job, else one spawned process per job (not
  forked: TensorFlow is not fork-safe, and each job seeds itself), pinned as
  `job_cpus` says. A job's exception is raised here (its traceback as a
  note) after the other jobs are stopped; so is Ctrl-C. The job processes
  die with this one (`die_with_parent`); call it from the main thread, as
  Linux ties that signal to the thread that started them.

  Plain processes and pipes, not a process pool: a pool whose workers are
  killed on Ctrl-C could hang in its own shutdown."""
  if options.num_processes == 1:
    return [job_fn(0, options)]
  context = multiprocessing.get_context("spawn")
  processes, pending = [], {}
  results = [None] * options.num_processes
  try:
    for job_id, cpu in enumerate(job_cpus(options.num_processes)):
      receiver, sender = context.Pipe(duplex=False)
      process = context.Process(
        target=_job_process,
        args=(sender, os.getpid(), job_fn, job_id, options, cpu),
        name=f"build-job-{job_id}",
      )
      process.start()
      sender.close()
      processes.append(process)
      pending[receiver] = job_id
    while pending:
      for receiver in multiprocessing.connection.wait(list(pending)):
        job_id = pending.pop(receiver)
        try:
          message = receiver.recv()
        except EOFError:
          processes[job_id].join()
          raise RuntimeError(
            f"job {job_id}'s process ended (exit status {processes[job_id].exitcode}) "
            "without its result: killed, or out of memory?"
          ) from None
        if message[0] == "error":
          error = message[1]
          error.add_note(f"in job {job_id}:\n{message[2]}")
          raise error
        results[job_id] = message[1]
    for process in processes:
      process.join()
    return results
  except BaseException:
    # Ctrl-C (the jobs ignore it: one message, from here) or a job's error:
    # stop every job now, before the caller removes what they wrote.
    for process in processes:
      if process.is_alive():
        process.kill()
    for process in processes:
      process.join()
    if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
      # A job's error: the jobs killed mid-write could not remove their
      # temporary shards themselves (on Ctrl-C the caller removes and counts them).
      remove_temporary_shards(options.output_dir)
    raise


def remove_temporary_shards(output_dir):
  """Removes the temporary shards (those still being written) from `output_dir`."""
  if not tf.io.gfile.isdir(output_dir):
    return
  for name in tf.io.gfile.listdir(output_dir):
    if name.startswith(example_writer.TEMP_PREFIXES):
      tf.io.gfile.remove(os.path.join(output_dir, name))


def run_job(job_id, options, cpu=None, on_file=None):
  """One job: its files (or TFDS documents) → its shards. Returns stats.

  Args:
    job_id: which job (its files are those with `index % num_processes == job_id`).
    options: the `BuildOptions`.
    cpu: the core to pin this process to (see `start_job`).
    on_file: called with the `ExampleWriter` after each file (or TFDS
      document) is read, for progress counters.
  """
  rng = start_job(options.seed, cpu)
  progress = example_writer.ProgressLog(job_id, 0)
  progress.log("Creating example writer")
  writer = make_example_writer(job_id, options, rng, options.blanks_separate_docs)
  progress.log("Writing tf examples")
  start = time.time()
  try:
    if options.tfds_name:
      from tfrecords_tools import tfds_corpus  # deferred: slow tensorflow_datasets

      docs = tfds_corpus.iter_documents(
        options.tfds_name,
        options.tfds_split,
        options.tfds_text_key,
        data_dir=options.tfds_data_dir,
        num_shards=options.num_processes,
        shard_index=job_id,
      )

      def texts():
        for doc_no, doc in enumerate(docs):
          if doc_no and doc_no % 10000 == 0:
            progress.log(f"processed {doc_no} documents, {writer.n_written} examples written")
          writer.bytes_read += len(doc.encode("utf-8"))
          if on_file is not None:
            on_file(writer)
          yield f"{options.tfds_name} document {doc_no}", doc

      writer.write_texts(texts())
    else:
      names = list_corpus_files(options.corpus_dir)
      names = [n for i, n in enumerate(names) if i % options.num_processes == job_id]
      rng.shuffle(names)
      progress.total = len(names)

      def texts():
        for file_no, name in enumerate(names):
          if file_no > 0:
            progress.update(file_no, writer.n_written)
          path = os.path.join(options.corpus_dir, name)
          if tf.io.gfile.isdir(path):
            continue  # a sub-folder: not read (`subfolder_note`, printed once)
          text = writer.read_file(path)
          if on_file is not None:
            on_file(writer)
          yield path, text

      writer.write_texts(texts())
    writer.finish()
  except BaseException as e:
    writer.abort()
    if file_io.is_disk_full(e):
      # One line instead of TensorFlow's chained tracebacks (from every job).
      raise writer.output_full_error(options.output_dir, corpus_bytes(options), e) from None
    raise
  elapsed = time.time() - start
  # The same clock as the progress lines' ELAPSED (the set-up included).
  progress.log(
    f"Done! {writer.n_written} examples from {writer.bytes_read / 1e6:.2f} MB "
    f"in {time.time() - progress.start:.1f}s ({start - progress.start:.1f}s setting up; "
    f"{writer.bytes_read / 1e6 / max(elapsed, 1e-9):.2f} MB/s while writing)"
  )
  return {
    **job_stats(job_id, writer),
    "seconds": elapsed,
    "start_time": start,
    "end_time": start + elapsed,
    "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
  }


# The longest examples built: a model with more positions than this is not
# one of ELECTRA's; a larger length is a typo that pads every example.
MAX_POSITIONS = 8192


def check_options(options):
  """Every check that needs no output: flags, vocab, corpus. Raises
  ValueError; returns `check_vocab`'s `(vocab, normalisation)`."""
  if options.corpus_dir and options.tfds_name:
    raise ValueError(
      f"--corpus-dir {options.corpus_dir!r} and --tfds-name {options.tfds_name!r} are two "
      "sources; give one (--corpus-dir or --tfds-name), not both"
    )
  if options.max_seq_length < 5:
    raise ValueError(f"--max-seq-length must be at least 5, got {options.max_seq_length}")
  if options.max_seq_length > MAX_POSITIONS:
    # Every example is padded to this length, and no model of the presets reads past 512.
    raise ValueError(
      f"--max-seq-length {options.max_seq_length}: expected at most {MAX_POSITIONS:,} (models "
      "read at most max_position_embeddings tokens; 512 for every ELECTRA size)"
    )
  if options.num_processes < 1:
    raise ValueError(f"--num-processes must be >= 1, got {options.num_processes}")
  if options.num_out_files < 1:
    raise ValueError(f"--num-out-files must be >= 1, got {options.num_out_files}")
  if options.num_processes > options.num_out_files:
    raise ValueError(
      f"--num-processes ({options.num_processes}) must not exceed "
      f"--num-out-files ({options.num_out_files})"
    )
  vocab_and_normalisation = check_vocab(
    options.vocab_file, options.do_lower_case, options.strip_accents
  )
  if not options.tfds_name:
    names = list_corpus_files(options.corpus_dir)
    check_corpus_line_ends(options.corpus_dir, names)
    if os.path.realpath(options.output_dir) == os.path.realpath(options.corpus_dir):
      raise ValueError(
        f"--output-dir {options.output_dir!r} is --corpus-dir: the shards would be read back "
        "as text; choose another directory for them"
      )
    if file_io.is_directly_in(options.vocab_file, options.corpus_dir):
      raise ValueError(
        f"--vocab-file {options.vocab_file!r} is in --corpus-dir {options.corpus_dir!r}: it "
        "(and its settings file) would be read as text; keep the vocab outside the corpus folder"
      )
  return vocab_and_normalisation


def processes_for_files(options):
  """`options` with no more processes than the corpus has files: a job is
  given whole files, so a job without one would write only empty shards
  (with a one-file corpus and 2 processes, half of them, the held-out shard
  among them). Says so on stderr when it lowers the count."""
  if options.tfds_name:
    return options
  files = len(list_corpus_files(options.corpus_dir))
  if options.num_processes <= files:
    return options
  print(
    f"note: --num-processes {options.num_processes} but --corpus-dir {options.corpus_dir!r} has "
    f"{files} file(s), and a process reads whole files: using {files} process(es), so that no "
    "shard is left empty (split the corpus into more files to use more processes)",
    file=sys.stderr,
    flush=True,
  )
  return dataclasses.replace(options, num_processes=files)


def check_no_empty_output(options, examples):
  """Refuses a build that wrote no example (its empty shards removed; the
  ValueError names the corpus), and says in one line when there were fewer
  examples than shards: the original writes the empty ones too (its own
  records of a 812-example corpus fill 812 of 1,000 shards), so they are kept,
  named by the flag to lower."""
  empty = [
    name
    for name in tf.io.gfile.listdir(options.output_dir)
    if name.startswith(example_writer.SHARD_PREFIX)
    and tf.io.gfile.stat(os.path.join(options.output_dir, name)).length == 0
  ]
  if not examples:
    remove_shards(options.output_dir)
    raise ValueError(
      f"--corpus-dir {options.tfds_name or options.corpus_dir!r}: no example was written (every "
      "line blank, or no token in the vocab?); the empty shards were removed"
    )
  if empty:
    print(
      f"warning: --num-out-files {options.num_out_files}: only {examples} example(s), so "
      f"{len(empty)} shard(s) are empty (as the original writes them); use at most {examples} "
      "for none",
      file=sys.stderr,
      flush=True,
    )


def build_pretraining_dataset(options, beam_options=None):
  """Validates the options, then runs the jobs.

  Args:
    options: the `BuildOptions`.
    beam_options: `beam_pipeline.pipeline_options(...)` to run the jobs on
      Apache Beam; None runs them in local processes.

  Returns:
    The jobs' stats (a list of dicts), or with Beam the build's counters
    (`beam_pipeline.counter_totals`).
  """
  vocab, normalisation = check_options(options)
  if not options.tfds_name:
    names = list_corpus_files(options.corpus_dir)
    note = subfolder_note(options.corpus_dir, names)
    if note:
      print(note, file=sys.stderr, flush=True)
    export = export_format_line(options.corpus_dir, names)
    if export:
      print(f"warning: {export}", file=sys.stderr, flush=True)
  options = processes_for_files(options)
  if tf.io.gfile.exists(options.output_dir) and not tf.io.gfile.isdir(options.output_dir):
    raise ValueError(
      f"--output-dir {options.output_dir!r} is a file; expected a directory for the shards"
    )
  file_io.check_writable(options.output_dir, "--output-dir", directory=True)
  lost = normalisation_warning(options)
  if lost:
    print(f"warning: {options.corpus_dir}: {lost}", file=sys.stderr, flush=True)
  created = not tf.io.gfile.exists(options.output_dir)
  prepare_output_dir(options.output_dir, options.overwrite)

  def build():
    if beam_options is not None:
      from tfrecords_tools import beam_pipeline  # deferred: Apache Beam is an optional extra

      result = beam_pipeline.run_jobs_on_beam(run_job, options, beam_options)
    else:
      result = run_jobs(run_job, options)
      for line in skipped_text_lines(result, options.output_dir, created):
        print(f"warning: {options.corpus_dir}: {line}", file=sys.stderr, flush=True)
      unknown = unknown_tokens_line(result, options.vocab_file)
      if unknown:
        print(f"warning: {options.corpus_dir}: {unknown}", file=sys.stderr, flush=True)
      check_no_empty_output(options, sum(s["examples"] for s in result))
    settings = records_settings(options.tfds_name or options.corpus_dir, options, normalisation)
    records_info.write_records_info(
      options.output_dir, vocab, settings, built_shards(options.output_dir, options.num_out_files)
    )
    return result

  return build_with_previous_set_aside(options.output_dir, build)


def skipped_text_lines(stats, output_dir, created=False):
  """The warnings of a build, once for all its jobs: the files skipped as
  not text and the bytes dropped as not UTF-8. When the skipped files are
  most of the corpus, removes the shards (and `output_dir`, if the build
  `created` it and nothing else is there) and raises one `ValueError`."""
  total = sum(s["bytes"] for s in stats)
  lines = []
  not_text = sum(s["not_text_files"] for s in stats)
  if not_text:
    example = next(s["not_text_example"] for s in stats if s["not_text_example"])
    refuse, line = text_checks.skipped_message(
      not_text, sum(s["not_text_bytes"] for s in stats), total, example
    )
    if refuse:
      for name in tf.io.gfile.listdir(output_dir):
        if name.startswith(example_writer.SHARD_PREFIX):
          tf.io.gfile.remove(os.path.join(output_dir, name))
      if created and not tf.io.gfile.listdir(output_dir):
        tf.io.gfile.rmtree(output_dir)
      raise ValueError(f"--corpus-dir: {line}; no shards were written")
    lines.append(line)
  bad = sum(s["bad_bytes"] for s in stats)
  if bad:
    example = next(s["bad_bytes_example"] for s in stats if s["bad_bytes_example"])
    files = sum(s["bad_bytes_files"] for s in stats)
    lines.append(f"ignored {bad} bytes that are not UTF-8 in {files} file(s) (e.g. {example!r})")
  return lines


# A vocab built on a corpus leaves well under 1% of it [UNK] (`build_vocab`
# reports the share); this much says the vocab was made for other text.
UNKNOWN_TOKENS_WARNING_SHARE = 0.05


def unknown_tokens_line(stats, vocab_file):
  """The builder's line when more than `UNKNOWN_TOKENS_WARNING_SHARE` of
  the corpus's tokens are [UNK] (a vocab of another language, casing or
  corpus, or a word list without its `##` pieces); None otherwise."""
  tokens = sum(s["tokens"] for s in stats)
  unknown = sum(s["unknown_tokens"] for s in stats)
  if not tokens or unknown <= UNKNOWN_TOKENS_WARNING_SHARE * tokens:
    return None
  return (
    f"{unknown:,} of the corpus's {tokens:,} tokens ({unknown / tokens:.1%}) are [UNK]: "
    f"--vocab-file {vocab_file} does not spell much of this text (a vocab of another "
    "language, casing or corpus, or a word list without its ## pieces?); the records "
    "are written, but a model learns nothing from [UNK]"
  )


# Bytes read from the start of the first corpus files for `normalisation_warning`.
_SAMPLE_BYTES_PER_FILE = 1 << 18
_SAMPLE_FILES = 8


def normalisation_warning(options):
  """The builder's line about words lower-casing or accent stripping would
  change (`text_checks.normalisation_warning`), from the start of the first
  corpus files; None when little changes, nothing is normalised, or the
  source is TFDS."""
  if options.tfds_name:
    return None
  lower, strip = resolve_normalisation(
    options.vocab_file, options.do_lower_case, options.strip_accents, names=NORMALISATION_FLAGS
  )
  if not lower:
    return None
  counts = collections.Counter()
  for name in list_corpus_files(options.corpus_dir)[:_SAMPLE_FILES]:
    path = os.path.join(options.corpus_dir, name)
    local = "://" not in path
    # Only regular files: a named pipe would block this sample (its job reads it).
    if tf.io.gfile.isdir(path) or (local and not os.path.isfile(path)):
      continue
    with tf.io.gfile.GFile(path, "rb") as f:
      data = f.read(_SAMPLE_BYTES_PER_FILE)
    if not text_checks.is_not_text(data):
      counts.update(data.decode("utf-8", "ignore").split())
  return text_checks.normalisation_warning(counts, lower, strip)

"""Pre-training dataset builder throughput (MB of raw text per second).

    python -m bench.bench_build_dataset [--quick] [--json out.json]

Builds a real English corpus from the installed packages' docstrings and
docs (bench/corpus.py, cached under /tmp), then runs the builder with 1 and 2
processes, and once with 1 process pinned to 1 core: on a 2-core machine one
unpinned process already keeps both cores busy (tokenization runs in a thread
beside the packing), so scaling is reported as 2 processes on 2 cores (the
builder pins each to its own core) against 1 process on 1 core.

`mb_per_s` counts from the first job's start to the last job's end (process
start, TensorFlow import and tokenizer set-up/tracing excluded);
`wall_mb_per_s` includes everything; the steady-state row leaves out the
fixed start-up of a process. The original builds ~1.1 MB/s per process on
this class of machine (37.5 MB in 35 s).
"""

import concurrent.futures
import multiprocessing
import os
import shutil
import tempfile
import time

from bench import common
from bench.corpus import build_corpus

ORIGINAL_MB_PER_S = 1.1


def _vocab_file(work_dir, corpus_dir):
  if os.path.exists(common.FIXTURE_VOCAB):
    return common.FIXTURE_VOCAB
  from tfrecords_tools import build_vocab  # pylint: disable=g-import-not-at-top

  path = os.path.join(work_dir, "vocab.txt")
  build_vocab.write_vocab(build_vocab.learn_vocab(build_vocab.count_words(corpus_dir), 8000), path)
  return path


def _steady_state(corpus_dir, vocab, out):
  """One in-process writer after a warm-up file: the per-process rate without
  the fixed start-up (TensorFlow import, tokenizer construction, tracing)."""
  from tfrecords_tools import example_writer  # pylint: disable=g-import-not-at-top

  os.makedirs(out)
  writer = example_writer.ExampleWriter(0, vocab, out, 128, num_out_files=100)
  names = sorted(n for n in os.listdir(corpus_dir) if n.endswith(".txt"))
  writer.write_file(os.path.join(corpus_dir, names[0]))
  start_bytes, start = writer.bytes_read, time.time()
  writer.write_texts(writer.read_file(os.path.join(corpus_dir, n)) for n in names[1:])
  seconds = time.time() - start
  writer.finish()
  mb = (writer.bytes_read - start_bytes) / 1e6
  return {
    "name": "ExampleWriter steady state, 1 process (after a warm-up file)",
    "corpus_mb": round(mb, 2),
    "mb_per_s": round(mb / seconds, 2),
    "speedup_vs_original_per_process": round(mb / seconds / ORIGINAL_MB_PER_S, 1),
  }


def _options(corpus_dir, vocab, out, processes):
  from tfrecords_tools import text_corpus  # pylint: disable=g-import-not-at-top

  return text_corpus.BuildOptions(
    corpus_dir=corpus_dir, vocab_file=vocab, output_dir=out, num_processes=processes, seed=0
  )


def _row(name, stats, processes, wall):
  busy = max(s["end_time"] for s in stats) - min(s["start_time"] for s in stats)
  mb = sum(s["bytes"] for s in stats) / 1e6
  return {
    "name": name,
    "corpus_mb": round(mb, 2),
    "examples": sum(s["examples"] for s in stats),
    "mb_per_s": round(mb / busy, 2),
    "mb_per_s_per_process": round(mb / busy / processes, 2),
    "sum_of_job_mb_per_s": round(sum(s["bytes"] / 1e6 / s["seconds"] for s in stats), 2),
    "wall_mb_per_s": round(mb / wall, 2),
    "speedup_vs_original_per_process": round(mb / busy / processes / ORIGINAL_MB_PER_S, 1),
  }


def _run_pinned_job(options, cpu):
  """The builder's single job in a spawned process pinned to core `cpu`."""
  from tfrecords_tools import text_corpus  # pylint: disable=g-import-not-at-top

  context = multiprocessing.get_context("spawn")
  with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
    return [pool.submit(text_corpus.run_job, 0, options, cpu).result()]


def run(quick=False):
  from tfrecords_tools import text_corpus  # pylint: disable=g-import-not-at-top

  megabytes = 4 if quick else 96
  corpus_dir = os.path.join(tempfile.gettempdir(), f"electra_tf_bench_corpus_{megabytes}mb")
  total_bytes = build_corpus(corpus_dir, megabytes)
  rows = []
  work_dir = tempfile.mkdtemp(prefix="bench_build_dataset_")
  try:
    vocab = _vocab_file(work_dir, corpus_dir)
    for processes in (1, 2):
      out = os.path.join(work_dir, f"out{processes}")
      start = time.time()
      stats = text_corpus.build_pretraining_dataset(_options(corpus_dir, vocab, out, processes))
      rows.append(
        _row(
          f"build_pretraining_dataset, {processes} process(es), S=128",
          stats,
          processes,
          time.time() - start,
        )
      )
      shutil.rmtree(out, ignore_errors=True)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
      out = os.path.join(work_dir, "pinned1")
      options = _options(corpus_dir, vocab, out, 1)
      text_corpus.prepare_output_dir(out, overwrite=False)
      start = time.time()
      stats = _run_pinned_job(options, cpus[0])
      row = _row(
        "build_pretraining_dataset, 1 process pinned to 1 core, S=128",
        stats,
        1,
        time.time() - start,
      )
      rows.append(row)
      rows[1]["scaling_vs_1_process_on_1_core"] = round(rows[1]["mb_per_s"] / row["mb_per_s"], 2)
      shutil.rmtree(out, ignore_errors=True)
    rows.append(_steady_state(corpus_dir, vocab, os.path.join(work_dir, "steady")))
  finally:
    shutil.rmtree(work_dir, ignore_errors=True)
  del total_bytes
  return rows


if __name__ == "__main__":
  common.main(run, "pre-training dataset builder throughput")

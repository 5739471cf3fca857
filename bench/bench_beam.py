"""Beam's overhead on one machine: the pre-training dataset builder on the
DirectRunner with 2 worker processes against the local builder with 2
processes, same corpus, same jobs, in one run.

    python -m bench.bench_beam [--quick] [--json out.json]

Both build the same 2 jobs (`--num-processes 2 --seed 0`) and must write the
same shards (checked). Times are wall clock from the call to the last shard,
start-up included (spawned processes or Beam's workers importing TensorFlow,
tokenizer tracing); `beam_over_local` > 1 means Beam is slower. On a shared
machine the figure is indicative only. Needs the `beam` extra.
"""

import filecmp
import os
import shutil
import tempfile
import time

from bench import common
from bench.bench_build_dataset import _vocab_file
from bench.corpus import build_corpus

NUM_JOBS = 2


def _same_shards(dir_a, dir_b):
  names_a, names_b = sorted(os.listdir(dir_a)), sorted(os.listdir(dir_b))
  if names_a != names_b:
    return False
  _, mismatch, errors = filecmp.cmpfiles(dir_a, dir_b, names_a, shallow=False)
  return not mismatch and not errors


def run(quick=False):
  from tfrecords_tools import beam_pipeline  # pylint: disable=g-import-not-at-top
  from tfrecords_tools import text_corpus  # pylint: disable=g-import-not-at-top

  megabytes = 4 if quick else 24
  corpus_dir = os.path.join(tempfile.gettempdir(), f"electra_tf_bench_corpus_{megabytes}mb")
  build_corpus(corpus_dir, megabytes)
  work_dir = tempfile.mkdtemp(prefix="bench_beam_")
  try:
    vocab = _vocab_file(work_dir, corpus_dir)

    def options(name):
      return text_corpus.BuildOptions(
        corpus_dir=corpus_dir,
        vocab_file=vocab,
        output_dir=os.path.join(work_dir, name),
        num_processes=NUM_JOBS,
        seed=0,
      )

    start = time.time()
    stats = text_corpus.build_pretraining_dataset(options("local"))
    local_seconds = time.time() - start
    beam_options = beam_pipeline.pipeline_options(
      "DirectRunner",
      [
        f"--direct_num_workers={NUM_JOBS}",
        "--direct_running_mode=multi_processing",
      ],
    )
    start = time.time()
    counters = text_corpus.build_pretraining_dataset(options("beam"), beam_options)
    beam_seconds = time.time() - start
    same = _same_shards(os.path.join(work_dir, "local"), os.path.join(work_dir, "beam"))
  finally:
    shutil.rmtree(work_dir, ignore_errors=True)
  mb = sum(s["bytes"] for s in stats) / 1e6
  return [
    {
      "name": f"local builder, {NUM_JOBS} processes, S=128",
      "corpus_mb": round(mb, 2),
      "examples": sum(s["examples"] for s in stats),
      "seconds": round(local_seconds, 1),
      "wall_mb_per_s": round(mb / local_seconds, 2),
    },
    {
      "name": f"Beam DirectRunner, {NUM_JOBS} workers (multi_processing), S=128",
      "corpus_mb": round(counters["bytes"] / 1e6, 2),
      "examples": counters["examples"],
      "seconds": round(beam_seconds, 1),
      "wall_mb_per_s": round(mb / beam_seconds, 2),
      "beam_over_local": round(beam_seconds / local_seconds, 2),
      "same_shards_as_local": same,
    },
  ]


if __name__ == "__main__":
  common.main(run, "Beam DirectRunner vs local builder (overhead on one machine)")

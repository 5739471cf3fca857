"""Vocab learning: `build_vocab`'s trainers against HF `tokenizers` and SentencePiece.

    python -m bench.bench_vocab --corpus-mb 100 --big-mb 1000 \\
        --work-dir /work/runs/vocab_bench --report bench/reports/vocab

On one English corpus (bench/corpus.py, the installed packages' docs, which
repeat past ~45 MB), each trainer runs as its own process, one after the
other, and is measured for wall time and peak resident memory (the child's
own, from `wait4`):

- `build_vocab` (WordPiece, the default `tokenizers` learner) on the corpus;
- HF `tokenizers`' `BertWordPieceTokenizer.train` on the same files
  (lower-casing and stripping accents): the reference for speed;
- `build_vocab --model-type unigram` (SentencePiece) on a sample of
  `--sentencepiece-lines` lines (its `--input-sentence-size`);
- `build_vocab --learner tensorflow-text` (today's learner before this
  one) and the default learner on the first `--small-mb` MB, where the old
  one finishes;
- `build_vocab` on `--big-mb` MB: the corpus's files again and again
  (links), to show the time and memory at scale.

Quality: held-out lines (about 0.5% of the distinct lines, chosen by a hash
of the line, so every repeat of a held-out line is left out of training)
are tokenised with each vocab as its readers do (the in-graph
`ElectraTokenizer` for WordPiece vocabs, lower-cased and accent-stripped;
the in-graph SentencePiece tokenizer with the model's settings): tokens per
whitespace-separated word and the share of tokens that are the unknown id.

The report (JSON and Markdown) names the machine, its fp32 GEMM rate and the
load average before and after (the machine may be shared).
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import zlib

from bench import common
from bench.corpus import build_corpus

# Lines whose CRC32 modulo HELD_OUT_MODULUS is below HELD_OUT_BELOW are held out.
HELD_OUT_MODULUS = 1000
HELD_OUT_BELOW = 5
MAX_HELD_OUT_LINES = 4000

HF_SCRIPT = """
import sys
from tokenizers import BertWordPieceTokenizer
files, vocab_size, out_dir = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3]
tok = BertWordPieceTokenizer(lowercase=True, strip_accents=True)
special = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
tok.train(files, vocab_size=vocab_size, special_tokens=special, limit_alphabet=1000,
          show_progress=False)
tok.save_model(out_dir)
"""


def _loadavg():
  with open("/proc/loadavg") as f:
    return " ".join(f.read().split()[:3])


def split_corpus(source_dir, train_dir, held_out_file):
  """Writes `source_dir`'s files to `train_dir` without the held-out lines
  and the distinct held-out lines (at most `MAX_HELD_OUT_LINES`) to
  `held_out_file`; returns `(training bytes, held-out lines)`."""
  # Beside the folder, not in it: build_vocab reads every file of its corpus.
  marker = train_dir.rstrip("/") + ".complete"
  if os.path.exists(marker):
    with open(held_out_file, encoding="utf-8") as f:
      return int(open(marker).read()), f.read().splitlines()
  os.makedirs(train_dir, exist_ok=True)
  held_out, seen, total = [], set(), 0
  for name in sorted(os.listdir(source_dir)):
    if not name.endswith(".txt"):
      continue
    with open(os.path.join(source_dir, name), encoding="utf-8") as f:
      lines = f.read().split("\n")
    kept = []
    for line in lines:
      if line.strip() and zlib.crc32(line.encode()) % HELD_OUT_MODULUS < HELD_OUT_BELOW:
        if line not in seen and len(held_out) < MAX_HELD_OUT_LINES:
          seen.add(line)
          held_out.append(line)
        continue
      kept.append(line)
    data = "\n".join(kept).encode("utf-8")
    with open(os.path.join(train_dir, name), "wb") as f:
      f.write(data)
    total += len(data)
  with open(held_out_file, "w", encoding="utf-8") as f:
    f.write("\n".join(held_out) + "\n")
  with open(marker, "w") as f:
    f.write(str(total))
  return total, held_out


def linked_corpus(train_dir, out_dir, megabytes):
  """`out_dir` holding links to `train_dir`'s files, again and again, until
  they add up to `megabytes` MB; returns the byte count."""
  names = sorted(n for n in os.listdir(train_dir) if n.endswith(".txt"))
  os.makedirs(out_dir, exist_ok=True)
  total, copy = 0, 0
  while total < megabytes * 1e6:
    for name in names:
      if total >= megabytes * 1e6:
        break
      link = os.path.join(out_dir, f"r{copy:03d}-{name}")
      if not os.path.exists(link):
        os.symlink(os.path.join(os.path.abspath(train_dir), name), link)
      total += os.path.getsize(link)
    copy += 1
  return total


# Runs `sys.argv[1]` (a module, "-c" code after it otherwise) and writes the
# process's own peak RSS (VmHWM, KiB) to $BENCH_PEAK_FILE at exit. VmHWM, not
# wait4's ru_maxrss: that one also counts the parent's resident size at fork
# time (TensorFlow loaded here), which Linux keeps across exec.
PEAK_WRAPPER = """
import atexit, os, runpy, sys

def _peak():
  with open("/proc/self/status") as f:
    hwm = [l.split()[1] for l in f if l.startswith("VmHWM:")][0]
  with open(os.environ["BENCH_PEAK_FILE"], "w") as f:
    f.write(hwm)

atexit.register(_peak)
if sys.argv[1] == "-m":
  sys.argv = sys.argv[2:]
  runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
  code, sys.argv = sys.argv[2], ["-c"] + sys.argv[3:]
  exec(compile(code, "<bench>", "exec"), {"__name__": "__main__"})
"""


def _timed(argv, log_file):
  """Runs `argv` (`[sys.executable, "-m", module, ...]` or `[sys.executable,
  "-c", code, ...]`), its output to `log_file`; returns `(wall s, its own
  peak RSS MiB, CPU s, rc)`."""
  peak_file = log_file + ".peak"
  wrapped = [sys.executable, "-c", PEAK_WRAPPER, *argv[1:]]
  with open(log_file, "w") as log:
    start = time.time()
    proc = subprocess.Popen(
      wrapped,
      stdout=log,
      stderr=subprocess.STDOUT,
      cwd=common.REPO_ROOT,
      env={**os.environ, "BENCH_PEAK_FILE": peak_file},
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - start
  rc = os.waitstatus_to_exitcode(status)
  with open(peak_file) as f:
    peak_mib = int(f.read()) / 1024.0
  return wall, peak_mib, usage.ru_utime + usage.ru_stime, rc


def _build_vocab(corpus_dir, output, vocab_size, log_file, *flags):
  argv = [sys.executable, "-m", "tfrecords_tools.build_vocab", "--corpus-dir", corpus_dir]
  argv += ["--vocab-size", str(vocab_size), "--output", output, "--overwrite", *flags]
  wall, peak, cpu, rc = _timed(argv, log_file)
  if rc != 0:
    with open(log_file) as f:
      raise RuntimeError(f"build_vocab failed ({rc}): {f.read()[-2000:]}")
  return {"wall_s": round(wall, 1), "peak_rss_mb": round(peak), "cpu_s": round(cpu, 1)}


def quality(vocab_file, held_out, wordpiece_flags=None):
  """Tokens per whitespace-separated word and the unknown id's share of the
  tokens of `held_out` (lines) under the vocab, tokenised as its readers do.
  `wordpiece_flags`: `(do_lower_case, strip_accents)` for a vocab.txt with
  no settings file beside it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  # TF only in the measuring process

  from electra_tf.text import tokenizer_for  # pylint: disable=g-import-not-at-top  # loads TF
  from electra_tf.text.tokenizer import ElectraTokenizer  # pylint: disable=g-import-not-at-top  # loads TF

  if wordpiece_flags is None:
    tokenizer = tokenizer_for(vocab_file)
  else:
    tokenizer = ElectraTokenizer(
      vocab_file=vocab_file, do_lower_case=wordpiece_flags[0], strip_accents=wordpiece_flags[1]
    )
  tokens = unknown = 0
  for start in range(0, len(held_out), 512):
    batch = [line.encode("utf-8") for line in held_out[start : start + 512]]
    ids = tokenizer(tf.constant(batch)).flat_values.numpy()
    tokens += ids.size
    unknown += int((ids == tokenizer.unk_id).sum())
  words = sum(len(line.split()) for line in held_out)
  return {
    "tokens_per_word": round(tokens / max(words, 1), 4),
    "unk_share": round(unknown / max(tokens, 1), 6),
    "held_out_words": words,
  }


def run(args):
  work = args.work_dir
  os.makedirs(work, exist_ok=True)
  out = os.path.join(work, "vocabs")
  os.makedirs(out, exist_ok=True)
  logs = os.path.join(work, "logs")
  os.makedirs(logs, exist_ok=True)
  source = os.path.join(work, f"source_{args.corpus_mb}mb")
  # A little more than asked, so that the training part is at least that.
  build_corpus(source, args.corpus_mb * 1.01 + 1)
  train = os.path.join(work, f"train_{args.corpus_mb}mb")
  train_bytes, held_out = split_corpus(source, train, os.path.join(work, "held_out.txt"))
  files = sorted(os.path.join(train, n) for n in os.listdir(train) if n.endswith(".txt"))
  small = os.path.join(work, f"small_{args.small_mb}mb")
  small_bytes = linked_corpus(train, small, args.small_mb)
  rows = []
  size = args.vocab_size

  def add(name, corpus_bytes, vocab, measured, flags=None, **extra):
    row = {"name": name, "corpus_mb": round(corpus_bytes / 1e6, 1), **measured, **extra}
    if vocab:
      row.update(quality(vocab, held_out, flags))
    rows.append(row)
    print(json.dumps(row), flush=True)

  vocab = os.path.join(out, "build_vocab.txt")
  add(
    "build_vocab (tokenizers learner)",
    train_bytes,
    vocab,
    _build_vocab(train, vocab, size, os.path.join(logs, "build_vocab.log")),
  )
  hf_dir = os.path.join(out, "hf")
  os.makedirs(hf_dir, exist_ok=True)
  wall, peak, cpu, rc = _timed(
    [sys.executable, "-c", HF_SCRIPT, ",".join(files), str(size), hf_dir],
    os.path.join(logs, "hf.log"),
  )
  if rc != 0:
    raise RuntimeError(f"HF tokenizers training failed ({rc}), see {logs}/hf.log")
  add(
    "HF tokenizers BertWordPieceTokenizer.train",
    train_bytes,
    os.path.join(hf_dir, "vocab.txt"),
    {"wall_s": round(wall, 1), "peak_rss_mb": round(peak), "cpu_s": round(cpu, 1)},
    flags=(True, True),
  )
  model = os.path.join(out, "unigram.model")
  add(
    f"build_vocab --model-type unigram (SentencePiece, {args.sentencepiece_lines:,}-line sample)",
    train_bytes,
    model,
    _build_vocab(
      train,
      model,
      size,
      os.path.join(logs, "sentencepiece.log"),
      "--model-type",
      "unigram",
      "--input-sentence-size",
      str(args.sentencepiece_lines),
    ),
  )
  for learner in ("tensorflow-text", "tokenizers"):
    vocab = os.path.join(out, f"small_{learner}.txt")
    add(
      f"build_vocab --learner {learner}, first {args.small_mb} MB",
      small_bytes,
      vocab,
      _build_vocab(
        small, vocab, size, os.path.join(logs, f"small_{learner}.log"), "--learner", learner
      ),
    )
  if args.big_mb:
    big = os.path.join(work, f"big_{args.big_mb}mb")
    big_bytes = linked_corpus(train, big, args.big_mb)
    vocab = os.path.join(out, "big.txt")
    add(
      f"build_vocab (tokenizers learner), {args.big_mb} MB (the corpus repeated)",
      big_bytes,
      vocab,
      _build_vocab(big, vocab, size, os.path.join(logs, "big.log")),
    )
  return rows


def markdown(report):
  rows = report["rows"]
  lines = [
    f"# Vocab learning ({report['date']})",
    "",
    f"Vocab size {report['vocab_size']}; {report['held_out_lines']} held-out lines "
    f"({report['held_out_words']:,} words) of the same corpus for the quality columns.",
    "",
    "| trainer | corpus MB | wall s | CPU s | peak RSS MiB | tokens/word | [UNK] share |",
    "|---|---|---|---|---|---|---|",
  ]
  for r in rows:
    lines.append(
      f"| {r['name']} | {r['corpus_mb']} | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mb']} | "
      f"{r.get('tokens_per_word', '')} | {r.get('unk_share', '')} |"
    )
  lines += [
    "",
    f"build_vocab / HF tokenizers wall time: {report['wall_ratio_vs_hf']}.",
    "",
    f"Machine: {report['machine']}; fp32 GEMM rate {report['fp32_matmul_gflop_per_s']} GFLOP/s; "
    f"load average (1, 5, 15 min) before {report['loadavg_before']}, after "
    f"{report['loadavg_after']} (a shared machine: timings are noisy, the rows ran one after "
    "the other in one run).",
    "",
    f"Command: `{report['command']}`",
  ]
  return "\n".join(lines) + "\n"


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus-mb", type=int, default=100)
  parser.add_argument(
    "--small-mb", type=int, default=4, help="for today's (tensorflow-text) learner"
  )
  parser.add_argument("--big-mb", type=int, default=1000, help="0: no run at scale")
  parser.add_argument("--vocab-size", type=int, default=8000)
  parser.add_argument("--sentencepiece-lines", type=int, default=200_000)
  parser.add_argument(
    "--work-dir",
    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "vocab_bench"),
    help="corpora and vocabs (GBs with the default sizes)",
  )
  parser.add_argument("--json", help="also write the report's JSON here (`python -m bench`)")
  parser.add_argument("--report", help="write REPORT.json and REPORT.md")
  parser.add_argument(
    "--quick", action="store_true", help="a smoke run: 3 MB, 1 MB for today's learner, 6 MB repeats"
  )
  args = parser.parse_args(argv)
  if args.quick:
    args.corpus_mb, args.small_mb, args.big_mb = 3, 1, 6
    args.vocab_size, args.sentencepiece_lines = 2000, 20_000
    args.work_dir = os.path.join(args.work_dir, "quick")
  from bench.bench_pretraining_step import matmul_flops_per_s  # pylint: disable=g-import-not-at-top  # loads TF

  loadavg_before = _loadavg()
  start = time.time()
  rows = run(args)
  with open(os.path.join(args.work_dir, "held_out.txt"), encoding="utf-8") as f:
    held_out = f.read().splitlines()
  ours, hf = rows[0], rows[1]
  report = {
    "benchmark": "vocab learning",
    "date": datetime.date.today().isoformat(),
    "command": "python -m bench.bench_vocab "
    + " ".join(argv if argv is not None else sys.argv[1:]),
    "machine": common.machine_description(),
    "fp32_matmul_gflop_per_s": round(matmul_flops_per_s() / 1e9, 1),
    "loadavg_before": loadavg_before,
    "loadavg_after": _loadavg(),
    "seconds": round(time.time() - start, 1),
    "vocab_size": args.vocab_size,
    "held_out_lines": len(held_out),
    "held_out_words": sum(len(l.split()) for l in held_out),
    "wall_ratio_vs_hf": round(ours["wall_s"] / hf["wall_s"], 2),
    "rows": rows,
  }
  text = json.dumps(report, indent=2)
  print(text)
  if args.json:
    common.write_atomic(args.json, text + "\n")
  if args.report:
    common.write_atomic(args.report + ".json", text + "\n")
    common.write_atomic(args.report + ".md", markdown(report))
  return 0


if __name__ == "__main__":
  sys.exit(main())

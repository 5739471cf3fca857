"""A task-adaptive pre-training corpus from GLUE training files:
`python -m tfrecords_tools.glue_sentences_corpus --glue-dir DIR --output-dir OUT`.

Why this corpus: pre-training on the unlabelled text of the task one will
fine-tune on (task-adaptive pre-training) is standard practice, it can be
rebuilt offline from the GLUE files themselves, and it is small enough to
pass over several times in a CPU budget. Only the sentences of the
*training* files are read (SST-2's `sentence` column, CoLA's fourth
column); labels are dropped and no dev file is ever opened.

SST-2's training file holds every phrase of each sentence's parse tree
(67k rows from about 7k sentences); with `--sentences-only` a row is dropped
when its text is a run of words inside a longer row's, which leaves the
sentences themselves. Sentences are de-duplicated (exact text, after
stripping whitespace),
shuffled with a fixed seed (SST-2's file is grouped by phrase, CoLA's by
source) and written in the original's corpus format: one sentence per line,
a blank line after every `--sentences-per-document` sentences, documents
dealt round-robin over `<output-dir>/corpus/glue_sentences_<i>.txt` (so
that every builder process gets a file). `<output-dir>/manifest.json` records
the inputs' sha256 and the counts.
"""

import argparse
import hashlib
import json
import os
import random
import sys

from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils.file_io import write_atomic
from tfrecords_tools import runner_flags

# GLUE folder -> (column of the sentence, whether the file has a header row).
SOURCES = {"SST-2": (0, True), "CoLA": (3, False)}


def _sha256(path):
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def read_sentences(glue_dir, tasks=tuple(SOURCES)):
  """The training sentences of `tasks` under `glue_dir`, in file order, and
  what was read: `(sentences, {task: {"path", "sha256", "rows"}})`.

  Raises ValueError naming the file and line when a row has too few columns.
  """
  if not tasks:
    raise ValueError(
      f"--tasks names no task; expected a comma-separated subset of {sorted(SOURCES)}"
    )
  sentences, inputs = [], {}
  for task in tasks:
    if task not in SOURCES:
      raise ValueError(f"task {task!r}: expected one of {sorted(SOURCES)}")
    column, header = SOURCES[task]
    path = os.path.join(glue_dir, task, "train.tsv")
    if not os.path.isfile(path):
      raise FileNotFoundError(f"{path}: no such file (expected GLUE's {task}/train.tsv)")
    rows = 0
    with open(path, encoding="utf-8") as f:
      for number, line in enumerate(f, start=1):
        if header and number == 1:
          continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) <= column:
          raise ValueError(
            f"{path}:{number}: {len(fields)} columns; expected at least {column + 1}"
          )
        text = " ".join(fields[column].split())
        if text:
          sentences.append(text)
          rows += 1
    if not rows:
      raise ValueError(f"{path}: no sentence read (empty file?)")
    inputs[task] = {"path": os.path.abspath(path), "sha256": _sha256(path), "rows": rows}
  return sentences, inputs


def documents(sentences, sentences_per_document, seed=0):
  """De-duplicates `sentences` (first occurrence kept), shuffles them with
  `seed` and groups them into documents of `sentences_per_document`.

  Example:
  >>> documents(["a b", "c", "a b", "d"], 2, seed=0)
  [['a b', 'd'], ['c']]
  """
  unique = list(dict.fromkeys(sentences))
  random.Random(seed).shuffle(unique)
  return [
    unique[i : i + sentences_per_document] for i in range(0, len(unique), sentences_per_document)
  ]


def drop_contained(sentences):
  """Keeps the texts that are not a run of whole words inside a longer one
  (in their original order).

  Example:
  >>> drop_contained(["a good film", "good", "film a", "a good"])
  ['a good film', 'film a']
  """
  unique = list(dict.fromkeys(sentences))
  spans, kept = set(), set()
  # Longest first, so that a sentence is kept before any of its phrases is seen.
  for text in sorted(unique, key=lambda t: -len(t.split())):
    if text in spans:
      continue
    kept.add(text)
    words = text.split()
    for i in range(len(words)):
      for j in range(i + 1, len(words) + 1):
        spans.add(" ".join(words[i:j]))
  return [t for t in unique if t in kept]


def write_corpus(output_dir, docs, num_files):
  """Deals `docs` round-robin over `num_files` files in `<output_dir>/corpus`;
  returns each file's path, lines and sha256. Stopped part-way (an error,
  Ctrl-C), the exception carries the count written as `files_removed`
  (`build` writes into a staging folder that is then removed)."""
  files = []
  try:
    for index in range(num_files):
      mine = docs[index::num_files]
      text = "".join("".join(s + "\n" for s in doc) + "\n" for doc in mine)
      path = os.path.join(output_dir, "corpus", f"glue_sentences_{index}.txt")
      write_atomic(path, text)
      files.append(
        {
          "path": os.path.basename(path),
          "sentences": sum(len(d) for d in mine),
          "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        }
      )
  except BaseException as e:
    e.files_removed = len(files)
    raise
  return files


def build(
  glue_dir,
  output_dir,
  tasks=tuple(SOURCES),
  num_files=4,
  sentences_per_document=64,
  sentences_only=False,
):
  """Reads, de-duplicates, shuffles and writes the corpus; returns the manifest."""
  if num_files < 1 or sentences_per_document < 1:
    raise ValueError("num_files and sentences_per_document must be positive")
  sentences, inputs = read_sentences(glue_dir, tasks)
  if sentences_only:
    sentences = drop_contained(sentences)
  docs = documents(sentences, sentences_per_document)
  # corpus/ and manifest.json are written into a hidden staging folder and
  # replace the old ones together when all are written: stopped or killed
  # part-way, no part of a corpus stands under corpus/ (part of a corpus is
  # not the corpus); the next run removes a killed run's staging folder.
  with file_io.replaced_together(output_dir, "corpus") as staging:
    files = write_corpus(staging, docs, num_files)
    manifest = _manifest(inputs, sentences, docs, sentences_per_document, sentences_only, files)
    write_atomic(os.path.join(staging, "manifest.json"), json.dumps(manifest, indent=2) + "\n")
  return manifest


def _manifest(inputs, sentences, docs, sentences_per_document, sentences_only, files):
  unique = sum(len(d) for d in docs)
  return {
    "inputs": inputs,
    "sentences_read": len(sentences),
    "sentences_unique": unique,
    "words": sum(len(s.split()) for d in docs for s in d),
    "sentences_per_document": sentences_per_document,
    "sentences_only": sentences_only,
    "files": files,
  }


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--glue-dir", required=True, help="folder holding SST-2/ and CoLA/")
  parser.add_argument("--output-dir", required=True)
  parser.add_argument("--tasks", default=",".join(SOURCES), help="comma-separated GLUE folders")
  parser.add_argument("--num-files", type=int, default=4)
  parser.add_argument("--sentences-per-document", type=int, default=64)
  parser.add_argument(
    "--sentences-only",
    action="store_true",
    help="drop a row whose text lies inside a longer row's (SST-2's phrases)",
  )
  args = parser.parse_args(argv)
  try:
    with interrupts.ctrl_c_remembered():  # SIGTERM and SIGHUP stop it as Ctrl-C does
      runner_flags.check_positive(args, "num_files", "sentences_per_document")
      runner_flags.check_paths_given(args, "output_dir")
      manifest = build(
        args.glue_dir,
        args.output_dir,
        tuple(t for t in args.tasks.split(",") if t),
        args.num_files,
        args.sentences_per_document,
        args.sentences_only,
      )
  except (OSError, ValueError) as e:
    print(f"glue_sentences_corpus: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  except KeyboardInterrupt as e:
    removed = getattr(e, "files_removed", 0)
    print(
      f"{interrupts.stopped_line('glue_sentences_corpus', e)}; removed the {removed} corpus "
      "file(s) it had written",
      file=sys.stderr,
    )
    return interrupts.stop_status(e)
  print(
    f"wrote {manifest['sentences_unique']:,} sentences ({manifest['words']:,} words) of "
    f"{manifest['sentences_read']:,} read into {len(manifest['files'])} files under "
    f"{os.path.join(args.output_dir, 'corpus')}"
  )
  return exit_codes.OK


if __name__ == "__main__":
  sys.exit(main())

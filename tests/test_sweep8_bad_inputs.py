"""Bad input of the builders, pre-training and fine-tuning readers: one
line, exit 2, before any work and without writing anything."""

import json
import os

import pytest

from electra_tf import build_pretraining_dataset
from electra_tf import run_pretraining
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification import tasks as glue
from electra_tf.text import wordpiece as tokenization
from tests.helpers import finetuning_testdata
from tests.helpers import pretraining_data
from tests.helpers.finetuning_testdata import finetuning_config
from tfrecords_tools import build_vocab
from tfrecords_tools import english_prose_corpus
from tfrecords_tools import glue_sentences_corpus
from tfrecords_tools import python_docs_corpus


@pytest.mark.parametrize(
  "flags, named",
  [
    (["--tfds-split", "validation"], "--tfds-split"),
    (["--tfds-text-key", "body"], "--tfds-text-key"),
    (["--tfds-data-dir", "tfds"], "--tfds-data-dir"),
    (["--tfds-split", "train", "--tfds-data-dir", "d"], "--tfds-split, --tfds-data-dir"),
  ],
)
def test_tfds_only_flags_without_tfds_name_are_refused(tmp_path, capsys, flags, named):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("one line.\n")
  out = tmp_path / "out"
  argv = ["--corpus-dir", str(corpus), "--vocab-file", str(tmp_path / "vocab.txt")]
  assert build_pretraining_dataset.main(argv + ["--output-dir", str(out)] + flags) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1, err
  assert f"{named} applies only with --tfds-name" in err
  assert not out.exists()


def test_tfds_defaults_are_resolved_after_the_check():
  parser = build_pretraining_dataset.make_parser()
  args = parser.parse_args(["--tfds-name", "x", "--vocab-file", "v", "--output-dir", "o"])
  build_pretraining_dataset.check_tfds_only_flags(args)
  for name, default in build_pretraining_dataset.TFDS_ONLY_FLAGS.items():
    if getattr(args, name) is None:
      setattr(args, name, default)
  assert (args.tfds_split, args.tfds_text_key, args.tfds_data_dir) == ("train", "text", None)


def test_build_vocab_output_dash_is_refused(tmp_path, capsys, monkeypatch):
  monkeypatch.chdir(tmp_path)
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("one line.\n")
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "50", "--output", "-"]
  assert build_vocab.main(argv) == 2
  assert capsys.readouterr().err.strip() == (
    "error: --output '-' (standard output) is not supported; give a file path (the vocab "
    "needs a settings file beside it)"
  )
  assert sorted(os.listdir(tmp_path)) == ["corpus"]


@pytest.mark.parametrize(
  "flags, named",
  [
    (["--max-mb", "0", "--num-files", "2"], "--max-mb 0.0"),
    (["--num-files", "-1"], "--num-files -1"),
    (["--num-files", "0"], "--num-files 0"),
    (["--max-mb", "nan"], "--max-mb nan"),
  ],
)
def test_python_docs_corpus_non_positive_numbers_are_refused(tmp_path, capsys, flags, named):
  out = tmp_path / "out"
  assert python_docs_corpus.main(["--output-dir", str(out)] + flags) == 2
  err = capsys.readouterr().err.strip()
  assert err == f"error: {named}: expected a positive number"
  assert not out.exists()


@pytest.mark.parametrize(
  "flags, named",
  [(["--num-files", "0"], "--num-files 0"), (["--max-mb", "-2"], "--max-mb -2.0")],
)
def test_english_prose_corpus_non_positive_numbers_are_refused(tmp_path, capsys, flags, named):
  out = tmp_path / "out"
  assert english_prose_corpus.main(["--output-dir", str(out)] + flags) == 2
  assert capsys.readouterr().err.strip() == f"error: {named}: expected a positive number"
  assert not out.exists()


@pytest.mark.parametrize(
  "flags, named",
  [
    (["--num-files", "0"], "--num-files 0"),
    (["--sentences-per-document", "-3"], "--sentences-per-document -3"),
  ],
)
def test_glue_sentences_corpus_non_positive_numbers_are_refused(tmp_path, capsys, flags, named):
  out = tmp_path / "out"
  argv = ["--glue-dir", str(tmp_path / "glue"), "--output-dir", str(out)] + flags
  assert glue_sentences_corpus.main(argv) == 2
  err = capsys.readouterr().err.strip()
  assert err == f"glue_sentences_corpus: {named}: expected a positive number"
  assert not out.exists()


@pytest.mark.parametrize("hparam", ["results_txt", "results_pkl"])
def test_a_results_path_that_is_a_directory_is_refused_before_any_work(tmp_path, capsys, hparam):
  pretraining_data.make_data_dir(tmp_path)
  results = tmp_path / "resdir"
  results.mkdir()
  hparams = pretraining_data.self_made_hparams(**{hparam: str(results)})
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1, err
  assert err.endswith(f"hparam {hparam}={str(results)!r} is a directory; expected a file path")
  assert os.listdir(results) == []
  assert pretraining_data.latest_step(tmp_path / "models" / "m") is None


@pytest.fixture
def finetune_env(tmp_path):
  data_dir, vocab_size = finetuning_testdata.make_data_dir(tmp_path)
  tokenizer = tokenization.FullTokenizer(os.path.join(data_dir, "vocab.txt"))

  def task(name):
    hparams = finetuning_testdata.tiny_hparams(vocab_size, task_names=[name])
    return task_builder.get_task(finetuning_config("m", data_dir, **hparams), name, tokenizer)

  return data_dir, task


def test_a_sst_test_file_in_dev_layout_is_refused(finetune_env):
  data_dir, task = finetune_env
  rows = [["sentence", "label"], ["a fine film", "1"]]
  finetuning_testdata.write_task_file(data_dir, "sst", "test.tsv", finetuning_testdata.tsv(rows))
  path = os.path.join(data_dir, "finetuning_data", "sst", "test.tsv")
  with pytest.raises(ValueError) as e:
    task("sst").get_examples("test")
  assert str(e.value) == (
    f"{path}, line 1: header 'sentence\\tlabel' is not task sst's test header "
    "'index\\tsentence' (GLUE's test layout, without labels; a copy of dev.tsv has another layout)"
  )


def test_a_cola_test_file_in_dev_layout_is_refused_and_the_glue_layout_read(finetune_env):
  data_dir, task = finetune_env
  rows = [["gj04", "1", "", "the cat sat"]]
  finetuning_testdata.write_task_file(data_dir, "cola", "test.tsv", finetuning_testdata.tsv(rows))
  with pytest.raises(ValueError, match=r"is not task cola's test header 'index\\tsentence'"):
    task("cola").get_examples("test")
  rows = [["index", "sentence"], ["0", "the cat sat"]]
  finetuning_testdata.write_task_file(data_dir, "cola", "test.tsv", finetuning_testdata.tsv(rows))
  assert [e.text_a for e in task("cola").get_examples("test")] == ["the cat sat"]


def _paragraph(qid, answers, **fields):
  context = "the answer is paris ."
  return {"context": context, "qas": [dict(id=qid, question="what?", answers=answers, **fields)]}


def test_squadv1_questions_without_an_answer_are_named(finetune_env):
  data_dir, task = finetune_env
  answer = [{"text": "paris", "answer_start": 14}]
  data = finetuning_testdata.squad_json([_paragraph("q0", answer), _paragraph("q1", [])], "1.1")
  finetuning_testdata.write_task_file(data_dir, "squadv1", "train.json", data)
  path = os.path.join(data_dir, "finetuning_data", "squadv1", "train.json")
  with pytest.raises(ValueError) as e:
    task("squadv1").get_examples("train")
  assert str(e.value) == (
    f"{path}: question 'q1' has no answer (\"answers\": []); task squadv1 (SQuAD 1.1) needs "
    "an answer for every question; unanswerable questions belong to task squad (SQuAD 2.0)"
  )


# GLUE's dev and test layouts (header, one row) of the tasks whose test
# reader takes other columns than its dev reader: a copy of dev.tsv as
# test.tsv would be read with ids or the label as text.
_GLUE_DEV_AND_TEST = {
  "qqp": (
    [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"], [7, 1, 2, "who", "why", 0]],
    [["id", "question1", "question2"], [0, "who is he", "who is she"]],
  ),
  "sts": (
    [
      ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
       "sentence2", "score"],
      [0, "g", "f", "y", "0", "s", "s", "a cat", "a dog", "2.5"],
    ],
    [
      ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
       "sentence2"],
      [0, "g", "f", "y", "0", "s", "s", "who is he", "who is she"],
    ],
  ),
  "sst": ([["sentence", "label"], ["a fine film", 1]], [["index", "sentence"], [0, "who is he"]]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_GLUE_DEV_AND_TEST))
def test_every_glue_test_reader_refuses_a_copy_of_dev_and_reads_glue_s_layout(finetune_env, name):
  data_dir, task = finetune_env
  dev, test = _GLUE_DEV_AND_TEST[name]
  path = finetuning_testdata.write_task_file(
    data_dir, name, "test.tsv", finetuning_testdata.tsv(dev)
  )
  with pytest.raises(ValueError) as e:
    task(name).get_examples("test")
  assert str(e.value).startswith(
    f"{path}, line 1: header {chr(9).join(dev[0])[:80]!r} is not task "
  )
  assert str(e.value).endswith(
    "(GLUE's test layout, without labels; a copy of dev.tsv has another layout)"
  )
  finetuning_testdata.write_task_file(data_dir, name, "test.tsv", finetuning_testdata.tsv(test))
  texts = [(e.text_a, e.text_b) for e in task(name).get_examples("test")]
  assert texts == [("who is he", None if name == "sst" else "who is she")]


def test_every_glue_task_but_the_unlabelled_diagnostic_names_its_test_header():
  """Each GLUE task's test reader checks the columns it reads (see above)."""
  classes = [glue.CoLA, glue.SST, glue.MRPC, glue.QQP, glue.RTE, glue.QNLI, glue.MNLI, glue.STS]
  assert [c.__name__ for c in classes if not c.test_header] == []

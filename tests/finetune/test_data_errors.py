"""Bad fine-tuning data is one line naming the file and the line, found
before training: an extra TSV column, a label outside the task's set, a
target that is not a number, in the train, dev or test file the run reads."""

import json
import os
import shutil

import pytest

from electra_tf import convert
from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.sources import any_format
from electra_tf.text import wordpiece as tokenization
from electra_tf.training import finetuning_run
from tests.helpers.conversion import write_layout
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file

RTE = [
  ["index", "sentence1", "sentence2", "label"],
  [0, "the cat sat on the mat", "a cat is on a mat", "entailment"],
  [1, "the dog ran fast", "a dog is slow", "not_entailment"],
  [2, "he walks in paris", "he is in france", "entailment"],
  [3, "she runs by the river", "she is sad", "not_entailment"],
]
STS = [
  ["index", "genre", "sentence1", "sentence2", "score"],
  [0, "g", "the cat sat", "a cat sat", "4.5"],
  [1, "g", "the dog ran", "a dog is slow", "1.0"],
]
# One answerable SQuAD question in its paragraph.
SQUAD_PARAGRAPH = {
  "context": "the cat sat on the mat",
  "qas": [{"id": "q0", "question": "who sat ?", "is_impossible": False,
           "answers": [{"text": "the cat", "answer_start": 0}]}],
}  # fmt: skip


@pytest.fixture
def data(tmp_path):
  data_dir, vocab_size = make_data_dir(tmp_path)
  write_task_file(data_dir, "rte", "train.tsv", tsv(RTE))
  write_task_file(data_dir, "rte", "dev.tsv", tsv(RTE))
  write_task_file(data_dir, "rte", "test.tsv", tsv([r[:3] for r in RTE]))
  write_task_file(data_dir, "sts", "train.tsv", tsv(STS))
  write_task_file(data_dir, "sts", "dev.tsv", tsv(STS))
  return data_dir, vocab_size


def _run(data, capsys, task_names, **hparams):
  data_dir, vocab_size = data
  hparams = tiny_hparams(
    vocab_size, task_names=task_names, **dict({"init_checkpoint": None}, **hparams)
  )
  code = run_finetuning.main(
    ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  )
  err = capsys.readouterr().err
  return code, [line for line in err.splitlines() if line.strip()]


def test_bad_rows_fail_before_training_naming_file_and_line(data, capsys):
  data_dir, _ = data
  models = os.path.join(data_dir, "models", "m", "finetuning_models")
  # A tab inside a sentence of dev.tsv (line 3): the label column is text.
  dev = RTE[:2] + [[2, "he walks\tin paris", "he is in france", "entailment"]] + RTE[3:]
  dev_path = write_task_file(data_dir, "rte", "dev.tsv", tsv(dev))
  code, lines = _run(data, capsys, ["rte"])
  assert code == 2 and len(lines) == 1, lines
  assert lines[0].startswith(f"run_finetuning: error: {dev_path}, line 3 (5 tab-separated")
  assert "the header has 4" in lines[0] and "'he is in france' is not one of" in lines[0]
  assert not os.path.exists(models)  # found before training
  write_task_file(data_dir, "rte", "dev.tsv", tsv(RTE))
  # A label outside the task's set in train.tsv.
  train_path = write_task_file(data_dir, "rte", "train.tsv", tsv(RTE[:3] + [[2, "a", "b", "yes"]]))
  code, lines = _run(data, capsys, ["rte"])
  assert code == 2 and len(lines) == 1, lines
  assert f"{train_path}, line 4: label 'yes' is not one of" in lines[0]
  assert "task rte" in lines[0]
  # Regression: a target that is not a number, then one outside [0, 5].
  dev_path = write_task_file(data_dir, "sts", "dev.tsv", tsv(STS + [[2, "g", "a", "b", "high"]]))
  code, lines = _run(data, capsys, ["rte", "sts"], do_train=False)
  assert code == 2 and len(lines) == 1, lines
  assert f"{dev_path}, line 4: target 'high' is not a number (task sts)" in lines[0]
  write_task_file(data_dir, "sts", "dev.tsv", tsv(STS + [[2, "g", "a", "b", "7.5"]]))
  code, lines = _run(data, capsys, ["sts"], do_train=False)
  assert code == 2 and f"{dev_path}, line 4: target 7.5 is outside [0.0, 5.0]" in lines[0]
  assert not os.path.exists(models)


def test_test_file_is_checked_only_where_the_run_reads_it(data, capsys):
  data_dir, _ = data
  test_path = os.path.join(data_dir, "finetuning_data", "rte", "test.tsv")
  with open(test_path, "wb") as f:
    f.write(b"index\tsentence1\tsentence2\n0\tthe caf\xe9\tb\n")
  code, lines = _run(data, capsys, ["rte"], do_train=False, write_test_outputs=True)
  assert code == 2 and len(lines) == 1, lines
  assert f"{test_path}, line 2: not UTF-8 text" in lines[0]
  data_dir, vocab_size = data
  hparams = tiny_hparams(vocab_size, task_names=["rte"], write_test_outputs=False)
  finetuning_run.validate_inputs(
    finetuning_run.inputs_for(finetuning_config("m", data_dir, **hparams))
  )


def test_label_errors_while_featurizing_name_the_file_and_line(data):
  data_dir, vocab_size = data
  path = write_task_file(data_dir, "rte", "train.tsv", tsv(RTE[:2] + [[1, "a", "b", "maybe"]]))
  config = finetuning_config("m", data_dir, **tiny_hparams(vocab_size, task_names=["rte"]))
  tokenizer = tokenization.FullTokenizer(config.vocab_file, do_lower_case=True)
  (task,) = task_builder.get_tasks(config, tokenizer)
  examples = task.get_examples("train")
  assert task.featurize(examples[0], is_training=True)[0]["rte_label_ids"] == 0
  with pytest.raises(ValueError, match=rf"^{path}, line 3: label 'maybe' is not one of"):
    task.featurize(examples[1], is_training=True)


def test_qa_and_tagging_data_errors_name_the_file_and_line(data, capsys):
  data_dir, vocab_size = data
  paragraph = SQUAD_PARAGRAPH
  write_task_file(data_dir, "squad", "train.json", squad_json([paragraph]))
  dev_path = write_task_file(data_dir, "squad", "dev.json", squad_json([paragraph])[:-3] + "\n,")
  code, lines = _run(data, capsys, ["squad"])
  assert code == 2 and len(lines) == 1, lines
  assert f"{dev_path}, line 2: not valid JSON" in lines[0]
  no_question = {"context": "the cat", "qas": [{"id": "q1", "answers": []}]}
  write_task_file(data_dir, "squad", "dev.json", squad_json([paragraph, no_question]))
  code, lines = _run(data, capsys, ["squad"])
  assert code == 2 and len(lines) == 1, lines
  assert f"paragraph 2 (of {dev_path})" in lines[0] and "'question'" in lines[0]
  header = json.dumps({"header": {"dataset": "NewsQA"}})
  jsonl = write_task_file(data_dir, "newsqa", "dev.jsonl", f"{header}\n\n{{'context': 1}}\n")
  code, lines = _run(data, capsys, ["newsqa"], do_train=False)
  assert code == 2 and f"{jsonl}, line 3: not valid JSON" in lines[0], lines
  not_bool = dict(SQUAD_PARAGRAPH, qas=[dict(SQUAD_PARAGRAPH["qas"][0], is_impossible="yes")])
  write_task_file(data_dir, "squad", "train.json", squad_json([not_bool]))
  code, lines = _run(data, capsys, ["squad"])
  assert code == 2 and lines == [
    "run_finetuning: error: task squad: SQuAD 2.0 training question 'q0': 'is_impossible' is "
    "'yes'; expected true or false"
  ], lines
  write_task_file(data_dir, "squad", "train.json", squad_json([paragraph]))
  write_task_file(data_dir, "squad", "dev.json", json.dumps({"data": {"title": "x"}}))
  code, lines = _run(data, capsys, ["squad"])
  assert code == 2 and lines == [
    f"run_finetuning: error: {dev_path}: 'data' is a JSON dict; expected a list of articles, "
    "each with a 'paragraphs' list (SQuAD's layout)"
  ], lines
  write_task_file(data_dir, "squad", "dev.json", json.dumps({"data": [{"title": "x"}]}))
  code, lines = _run(data, capsys, ["squad"])
  assert code == 2 and "article 1 of 'data' has no 'paragraphs' list" in lines[0], lines
  # CoLA's files (no header, 4 columns) in sst/: SST would train on CoLA's source column.
  cola = "gj04\t1\t\tOur friends won't buy this analysis.\ngj04\t0\t*\tThey drank the pub.\n"
  sst_train = write_task_file(data_dir, "sst", "train.tsv", cola)
  write_task_file(data_dir, "sst", "dev.tsv", cola)
  code, lines = _run(data, capsys, ["sst"])
  assert code == 2 and lines == [
    f"run_finetuning: error: {sst_train}, line 1: \"gj04\\t1\\t\\tOur friends won't buy this "
    "analysis.\" is not task sst's header 'sentence\\tlabel'; are these another task's files?"
  ], lines
  # Chunking: a word line without its tag would make the word a tag.
  one_column = write_task_file(data_dir, "chunk", "train.txt", "the DT B-NP\ncat\n\n")
  write_task_file(data_dir, "chunk", "dev.txt", "the DT B-NP\n\n")
  code, lines = _run(data, capsys, ["chunk"])
  assert code == 2 and len(lines) == 1, lines
  assert f"{one_column}, line 2: 'cat' has one column; expected the word, then the tag" in lines[0]
  # Chunking: a tag missing from the label mapping an earlier run saved.
  conll = "the DT B-NP\ncat NN I-NP\n\nsat VBD B-VP\n\n"
  train_path = write_task_file(data_dir, "chunk", "train.txt", conll)
  config = finetuning_config("m", data_dir, **tiny_hparams(vocab_size, task_names=["chunk"]))
  (task,) = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  os.makedirs(os.path.dirname(task.label_mapping_path), exist_ok=True)
  with open(task.label_mapping_path, "w") as f:
    json.dump({"B-NP": 0, "E-NP": 1}, f)
  with pytest.raises(ValueError, match=rf"^{train_path}, line 4: tag 'S-VP' is not in the label"):
    task.get_examples("train")


def test_a_skipped_row_is_reported_once_however_often_the_run_reads_it(data):
  import logging

  import tensorflow as tf

  data_dir, vocab_size = data
  short = tsv(RTE + [[4, "only two columns"]])  # line 6: too few columns, skipped
  write_task_file(data_dir, "rte", "train.tsv", short)
  config = finetuning_config("m", data_dir, **tiny_hparams(vocab_size, task_names=["rte"]))
  records = []
  handler = logging.Handler()
  handler.emit = records.append
  tf.get_logger().addHandler(handler)
  try:
    # What a run does: the check, then featurising from the tasks it checked.
    inputs = finetuning_run.validate_inputs(finetuning_run.inputs_for(config))
    (task,) = inputs.tasks
    examples = task.get_examples("train")
  finally:
    tf.get_logger().removeHandler(handler)
  skips = [r.getMessage() for r in records if "Skipping line" in r.getMessage()]
  assert len(examples) == 4
  assert len(skips) == 1, skips
  assert "Skipping line 6" in skips[0] and "train.tsv" in skips[0]


def test_vocab_size_defaults_to_the_vocab_s_ids(data):
  """Without a vocab_size hparam (and no source run recording one), the
  encoder's embedding table has the vocab's rows, not the original's 30,522;
  a vocab_size below the vocab's ids is refused, naming both."""
  from electra_tf.training import finetuning_run

  data_dir, vocab_size = data
  hparams = tiny_hparams(vocab_size, task_names=["rte"], init_checkpoint=None)
  del hparams["vocab_size"]
  config = finetuning_run.make_config("m", data_dir, hparams)
  assert config.vocab_size == vocab_size != 30522
  config = finetuning_run.make_config("m", data_dir, dict(hparams, vocab_size=vocab_size + 5))
  assert config.vocab_size == vocab_size + 5  # set by the user: kept (unused rows)
  with pytest.raises(ValueError, match=f"vocab_size={vocab_size - 1} but vocab file .* has "):
    finetuning_run.make_config("m", data_dir, dict(hparams, vocab_size=vocab_size - 1))


def test_a_task_name_or_length_the_run_cannot_take_is_one_line_before_any_trial(data, capsys):
  data_dir, _ = data
  models = os.path.join(data_dir, "models", "m", "finetuning_models")
  code, lines = _run(data, capsys, ["RTE"])
  assert (
    code == 2 and len(lines) == 1 and "Unknown task(s) ['RTE'] in hparam task_names" in lines[0]
  )
  code, lines = _run(data, capsys, ["rte"], max_seq_length=1024)
  assert code == 2 and len(lines) == 1, lines
  assert "max_seq_length=1024 exceeds the model's max_position_embeddings=512" in lines[0]
  assert not os.path.exists(models)
  # Epochs too few for one step: bad input (exit 2) in one line, not a traceback.
  code, lines = _run(data, capsys, ["rte"], num_train_epochs=0.01)
  assert code == 2 and "no training steps" in lines[-1], lines


def test_a_data_file_that_is_a_directory_is_named_as_such(data, capsys):
  data_dir, _ = data
  train = os.path.join(data_dir, "finetuning_data", "rte", "train.tsv")
  if os.path.exists(train):
    os.remove(train)
  os.makedirs(train)
  code, lines = _run(data, capsys, ["rte"])
  assert code == 2 and len(lines) == 1, lines
  assert "train.tsv' is a directory; expected a tab-separated file" in lines[0]


def test_a_generator_keras_file_as_init_checkpoint_is_one_line_before_any_trial(
  data, capsys, tmp_path
):
  """A standalone generator `.keras` cannot start fine-tuning: refused from
  its archive's config (no weights read), naming the file, before any trial
  dir exists; a discriminator `.keras` passes the same check."""
  source = write_layout(tmp_path / "official", "default", with_slots=False)
  generator = str(tmp_path / "g.keras")
  convert.official_to_keras(source, generator, part="generator")
  convert.official_to_keras(source, str(tmp_path / "d.keras"), part="discriminator")
  any_format.open_source(str(tmp_path / "d.keras")).check_starts_finetuning()
  code, lines = _run(data, capsys, ["rte"], init_checkpoint=generator)
  assert code == 2 and len(lines) == 1, lines
  assert f"{generator!r} is a .keras model (ElectraEmbeddings, ElectraGenerator)" in lines[0]
  assert "no ELECTRA discriminator encoder to fine-tune from" in lines[0]
  # A Hugging Face generator directory: the same, from its config.json alone.
  hf_generator = tmp_path / "hf_generator"
  hf_generator.mkdir()
  sizes = {"vocab_size": 30, "embedding_size": 8, "hidden_size": 8, "num_hidden_layers": 1}
  sizes.update(num_attention_heads=1, intermediate_size=16, hidden_act="gelu")
  sizes.update(max_position_embeddings=64, type_vocab_size=2)
  config = {"architectures": ["ElectraForMaskedLM"], "model_type": "electra", **sizes}
  (hf_generator / "config.json").write_text(json.dumps(config))
  code, lines = _run(data, capsys, ["rte"], init_checkpoint=str(hf_generator))
  assert code == 2 and len(lines) == 1, lines
  assert f"{str(hf_generator)!r} is a Hugging Face ELECTRA generator directory" in lines[0]
  assert not os.path.exists(os.path.join(data[0], "models", "m", "finetuning_models"))


def test_a_question_that_leaves_no_room_for_its_document_is_one_line_before_any_trial(data, capsys):
  """max_seq_length at most max_query_length + 3: the first question long
  enough to fill the window is named (file and id) before any trial; short
  questions with the same lengths train."""
  data_dir, _ = data
  paragraph = SQUAD_PARAGRAPH
  long_question = dict(paragraph["qas"][0], id="q_long", question=" ".join(["the cat"] * 12))
  long_paragraph = dict(paragraph, qas=[long_question])
  train = write_task_file(data_dir, "squad", "train.json", squad_json([paragraph, long_paragraph]))
  write_task_file(data_dir, "squad", "dev.json", squad_json([paragraph]))
  lengths = {"max_seq_length": 16, "max_query_length": 16, "beam_size": 4}
  code, lines = _run(data, capsys, ["squad"], **lengths)
  assert code == 2 and len(lines) == 1, lines
  assert f"{train}: train question 'q_long' is 16 tokens" in lines[0], lines
  assert "max_seq_length above 19 or lower max_query_length (now 16)" in lines[0]
  assert not os.path.exists(os.path.join(data_dir, "models", "m", "finetuning_models"))
  write_task_file(data_dir, "squad", "train.json", squad_json([paragraph]))
  code, lines = _run(data, capsys, ["squad"], **lengths)
  assert code == 0, lines
  # A window shorter than the beam the head takes its best starts and ends from.
  code, lines = _run(data, capsys, ["squad"], **dict(lengths, beam_size=20))
  assert code == 2 and len(lines) == 1, lines
  assert "task squad: hparam max_seq_length=16 is below beam_size=20" in lines[0]


def test_a_task_s_data_path_that_is_a_file_is_named_as_a_file(data, capsys):
  data_dir, _ = data
  task_dir = os.path.join(data_dir, "finetuning_data", "rte")
  shutil.rmtree(task_dir)
  with open(task_dir, "w") as f:
    f.write("index\tsentence1\tsentence2\tlabel\n")
  code, lines = _run(data, capsys, ["rte"])
  assert code == 2 and len(lines) == 1, lines
  assert lines[0] == (
    f"run_finetuning: error: hparam task_names: the data of task 'rte', {task_dir}, is a file; "
    "expected a directory holding the task's data files"
  )

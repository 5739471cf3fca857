"""Readers and featurisation of every task on tiny files in the original's
formats (`finetune/preprocessing.py`–12.7)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune import preprocessing
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification import tasks as classification_tasks
from electra_tf.finetune.qa import tasks as qa_tasks
from electra_tf.finetune.tagging import tasks as tagging_tasks
from electra_tf.text import wordpiece as tokenization
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file


@pytest.fixture
def env(tmp_path):
  data_dir, vocab_size = make_data_dir(tmp_path)
  tokenizer = tokenization.FullTokenizer(os.path.join(data_dir, "vocab.txt"))

  def config(**kwargs):
    return finetuning_config("m", data_dir, **tiny_hparams(vocab_size, **kwargs))

  return data_dir, tokenizer, config


def _task(env, name, **kwargs):
  data_dir, tokenizer, config = env
  c = config(task_names=[name], **kwargs)
  return task_builder.get_task(c, name, tokenizer), c


def _texts(examples):
  return [(e.eid, e.text_a, e.text_b, e.label) for e in examples]


def test_cola_columns_and_header_rules(env):
  data_dir = env[0]
  write_task_file(
    data_dir,
    "cola",
    "train.tsv",
    tsv([["src", "1", "x", "the cat sat"], ["src", "0", "*", "cat the sat"]]),
  )
  write_task_file(data_dir, "cola", "test.tsv", tsv([["index", "sentence"], [0, "a dog ran"]]))
  task, _ = _task(env, "cola")
  assert _texts(task.get_examples("train")) == [
    (0, "the cat sat", None, "1"),
    (1, "cat the sat", None, "0"),
  ]
  assert _texts(task.get_examples("test")) == [(0, "a dog ran", None, "0")]  # dummy label


def test_sst_qqp_rte_qnli_columns(env):
  data_dir = env[0]
  write_task_file(data_dir, "sst", "dev.tsv", tsv([["sentence", "label"], ["good movie", 1]]))
  write_task_file(data_dir, "sst", "test.tsv", tsv([["index", "sentence"], [0, "bad film"]]))
  write_task_file(
    data_dir,
    "qqp",
    "dev.tsv",
    tsv([["id", "q1id", "q2id", "q1", "q2", "dup"], [7, 1, 2, "who is he", "who is she", 0]]),
  )
  write_task_file(
    data_dir, "qqp", "test.tsv", tsv([["id", "question1", "question2"], [0, "what", "where"]])
  )
  for name in ("rte", "qnli"):
    write_task_file(
      data_dir,
      name,
      "dev.tsv",
      tsv([["index", "s1", "s2", "label"], [0, "a cat", "a dog", "entailment"]]),
    )
  sst, _ = _task(env, "sst")
  assert _texts(sst.get_examples("dev")) == [(0, "good movie", None, "1")]
  assert _texts(sst.get_examples("test")) == [(0, "bad film", None, "0")]
  qqp, _ = _task(env, "qqp")
  assert _texts(qqp.get_examples("dev")) == [(0, "who is he", "who is she", "0")]
  assert _texts(qqp.get_examples("test")) == [(0, "what", "where", "0")]
  for name in ("rte", "qnli"):
    task, _ = _task(env, name)
    assert _texts(task.get_examples("dev")) == [(0, "a cat", "a dog", "entailment")]


def test_quotes_stay_literal(env):
  write_task_file(env[0], "sst", "train.tsv", tsv([["sentence", "label"], ['"good" movie', 1]]))
  task, _ = _task(env, "sst")
  assert task.get_examples("train")[0].text_a == '"good" movie'


def test_mrpc_double_unordered(env):
  rows = [
    ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
    [1, 1, 2, "a cat", "the cat"],
    [0, 3, 4, "a dog", "red river"],
  ]
  write_task_file(env[0], "mrpc", "train.tsv", tsv(rows))
  write_task_file(env[0], "mrpc", "dev.tsv", tsv(rows))
  task, _ = _task(env, "mrpc")
  assert _texts(task.get_examples("train")) == [
    (0, "a cat", "the cat", "1"),
    (1, "a dog", "red river", "0"),
    (2, "the cat", "a cat", "1"),
    (3, "red river", "a dog", "0"),
  ]
  assert len(task.get_examples("dev")) == 2  # only train is doubled
  task_off, _ = _task(env, "mrpc", double_unordered=False)
  assert len(task_off.get_examples("train")) == 2


def test_mnli_splits(env):
  header = ["index"] + [f"c{i}" for i in range(7)] + ["sentence1", "sentence2", "gold"]
  row = [0] + ["x"] * 7 + ["a cat", "a dog", "neutral"]
  write_task_file(env[0], "mnli", "dev_matched.tsv", tsv([header + ["label1"], row + ["neutral"]]))
  write_task_file(env[0], "mnli", "test_mismatched.tsv", tsv([header[:10], row[:10]]))
  write_task_file(
    env[0], "mnli", "diagnostic.tsv", tsv([["index", "s1", "s2"], [0, "he ran", "she ran"]])
  )
  task, _ = _task(env, "mnli")
  assert _texts(task.get_examples("dev")) == [(0, "a cat", "a dog", "neutral")]
  assert _texts(task.get_examples("test_mismatched")) == [(0, "a cat", "a dog", "contradiction")]
  assert _texts(task.get_examples("diagnostic")) == [(0, "he ran", "she ran", "contradiction")]
  assert task.get_test_splits() == ["test_matched", "test_mismatched", "diagnostic"]


def test_sts_scaling_and_swap(env):
  rows = [["index", "genre", "s1", "s2", "score"], [0, "g", "a cat", "a dog", "2.5"]]
  write_task_file(env[0], "sts", "train.tsv", tsv(rows))
  write_task_file(env[0], "sts", "dev.tsv", tsv(rows + [[1, "g", "he", "she", "7.0"]]))
  task, _ = _task(env, "sts")
  train = task.get_examples("train")
  assert _texts(train) == [(0, "a cat", "a dog", "2.5"), (1, "a dog", "a cat", "2.5")]
  features = task.featurize(train[0], True)[0]
  assert features["sts_targets"] == pytest.approx(0.5)
  with pytest.raises(ValueError, match="outside"):
    task.featurize(task.get_examples("dev")[1], False)


def test_classification_featurize_layout_and_truncation(env):
  task, c = _task(env, "rte", max_seq_length=10)
  example = classification_tasks.InputExample(
    3, "rte", "the big red cat sat on the mat", "a dog ran fast", "not_entailment"
  )
  f = task.featurize(example, True)[0]
  vocab = env[1].vocab
  # budget 10 - 3 = 7: a (8 tokens) and b (4) -> pop the longer until 7 -> a 4, b 3 (ties pop b)
  tokens = ["[CLS]", "the", "big", "red", "cat", "[SEP]", "a", "dog", "ran", "[SEP]"]
  assert f["input_ids"] == [vocab[t] for t in tokens]
  assert f["segment_ids"] == [0] * 6 + [1] * 4
  assert f["input_mask"] == [1] * 10
  assert (f["rte_label_ids"], f["rte_eid"], f["task_id"]) == (1, 3, 0)
  single = classification_tasks.InputExample(0, "rte", "the cat sat on the mat", None, "entailment")
  f = task.featurize(single, True)[0]
  assert f["input_ids"][:4] == [vocab["[CLS]"], vocab["the"], vocab["cat"], vocab["sat"]]
  assert f["input_mask"] == [1] * 8 + [0] * 2
  assert classification_tasks.truncate_seq_pair(["a", "b"], ["c", "d"], 3) is None


CONLL = """-DOCSTART- -X- O

The DT B-NP
cat NN I-NP
sat VBD B-VP
. . O

Rocks NNS B-NP
ran VBD B-VP

dangling NN B-NP
"""


def test_conll_reader_and_bioes_labels(env):
  write_task_file(env[0], "chunk", "train.txt", CONLL)
  write_task_file(env[0], "chunk", "dev.txt", "big JJ B-ADJP\n\n")
  task, c = _task(env, "chunk")
  examples = task.get_examples("train")
  # the final sentence lacks a trailing blank line: read all the same (the original drops it)
  assert [e.words for e in examples] == [["The", "cat", "sat", "."], ["Rocks", "ran"], ["dangling"]]
  assert examples[0].tags == ["B-NP", "E-NP", "S-VP", "O"]
  mapping = task.get_label_mapping()
  assert mapping == {
    t: i for i, t in enumerate(sorted({"B-NP", "E-NP", "S-VP", "O", "S-NP", "S-ADJP"}))
  }
  assert examples[1].labels == [mapping["S-NP"], mapping["S-VP"]]
  assert os.path.exists(task.label_mapping_path)
  f = task.featurize(examples[1], True)[0]
  vocab = env[1].vocab
  # "Rocks" -> rock ##s: the label sits on the first sub-token
  assert f["input_ids"][:5] == [vocab[t] for t in ["[CLS]", "rock", "##s", "ran", "[SEP]"]]
  assert f["chunk_labeled_positions"][:3] == [1, 3, 0]
  assert f["chunk_labels_mask"][:3] == [1.0, 1.0, 0.0]
  assert f["segment_ids"][:6] == [1, 1, 1, 1, 1, 0]  # all real tokens get segment 1


def test_tagging_truncation_rule(env):
  task, _ = _task(env, "chunk", max_seq_length=128)
  example = tagging_tasks.TaggingExample(0, "chunk", ["cat"] * 100, ["O"] * 100, [0] * 100)
  f = task.featurize(example, True)[0]
  assert sum(f["chunk_labels_mask"]) == 25  # verified: 100 one-token words keep 25
  assert sum(f["input_mask"]) == 27  # [CLS] + 25 words + [SEP]


def _squad_paragraphs():
  context = "the cat sat on the mat . the dog ran fast in paris"
  return [
    {
      "context": context,
      "qas": [
        {
          "id": "q1",
          "question": "where is the dog ?",
          "is_impossible": False,
          "answers": [{"text": "paris", "answer_start": context.index("paris")}],
        },
        {
          "id": "q2",
          "question": "who sat ?",
          "is_impossible": False,
          "answers": [{"text": "the cat", "answer_start": 0}],
        },
        {"id": "q3", "question": "what is red ?", "is_impossible": True, "answers": []},
        {
          "id": "q4",
          "question": "who ?",
          "is_impossible": False,
          "answers": [{"text": "the cow", "answer_start": 0}],
        },
      ],
    }
  ]


def test_squad_examples_and_windows(env, capsys):
  write_task_file(env[0], "squad", "train.json", squad_json(_squad_paragraphs()))
  task, c = _task(env, "squad", max_seq_length=16, doc_stride=4, max_query_length=3)
  examples = task.get_examples("train")
  # q4's answer text is not in the document: skipped as a failure, as the original does, and said
  assert [e.qas_id for e in examples] == ["q1", "q2", "q3"]
  (warning,) = capsys.readouterr().err.strip().splitlines()
  assert "train.json: 1 of 4 train questions left out" in warning
  assert "question 'q4': answer 'the cow' at character 0 is not in the context there" in warning
  assert (examples[0].start_position, examples[0].end_position) == (12, 12)
  assert (examples[2].start_position, examples[2].is_impossible) == (-1, True)
  features = task.featurize(examples[0], True, for_eval=True)
  # query "where is the" (3 tokens, cut from 5) -> 16 - 3 - 3 = 10 doc tokens per window;
  # 13 doc tokens, stride 4 -> windows start at 0 and 4
  assert len(features) == 2
  assert [f["squad_eid"] for f in features] == [0, 1]
  assert features[0]["squad_tokens"][:5] == ["[CLS]", "where", "is", "the", "[SEP]"]
  assert features[0]["segment_ids"] == [0] * 5 + [1] * 11
  # "paris" (doc token 12) is outside window 0 (tokens 0-9) -> [CLS] target
  assert (features[0]["squad_start_positions"], features[0]["squad_end_positions"]) == (0, 0)
  # window 1 covers tokens 4-13: position = 12 - 4 + 3 + 2 = 13
  assert (features[1]["squad_start_positions"], features[1]["squad_end_positions"]) == (13, 13)
  assert features[1]["squad_tokens"][13] == "paris"
  assert features[1]["squad_is_impossible"] == 0
  # max context of doc token 8: window 0 min(8, 1) + 0.10 = 1.1; window 1 min(4, 4) + 0.09
  # -> window 1 (position 13 in window 0, 9 in window 1); doc token 6: window 0 wins (3.1 > 2.09)
  assert features[0]["squad_token_is_max_context"][13] is False
  assert features[1]["squad_token_is_max_context"][9] is True
  assert features[0]["squad_token_is_max_context"][11] is True
  assert features[1]["squad_token_is_max_context"][7] is False
  impossible = task.featurize(examples[2], True)
  assert all((f["squad_start_positions"], f["squad_is_impossible"]) == (0, 1) for f in impossible)
  two = task.featurize(examples[1], True)[0]
  assert two["squad_start_positions"] == 5  # [CLS] who sat ? [SEP] the cat
  assert two["squad_end_positions"] == 6


def test_squad_dev_has_no_labels_and_debug_file(env):
  write_task_file(env[0], "squadv1", "dev-debug.json", squad_json(_squad_paragraphs(), "1.1"))
  task, _ = _task(env, "squadv1", debug=True)
  examples = task.get_examples("dev")
  assert len(examples) == 4 and examples[0].start_position is None
  assert "squadv1_start_positions" not in task.featurize(examples[0], False)[0]


def test_mrqa_jsonl_reader(env):
  context = "the cat sat on the mat"
  lines = [
    json.dumps({"header": {"dataset": "NewsQA"}}),
    json.dumps(
      {
        "context": context,
        "qas": [
          {
            "qid": "n1",
            "question": "who sat ?",
            "answers": ["the cat"],
            "detected_answers": [{"text": "cat", "char_spans": [[4, 6]]}],
          }
        ],
      }
    ),
  ]
  write_task_file(env[0], "newsqa", "train.jsonl", "\n".join(lines) + "\n")
  task, c = _task(env, "newsqa")
  assert c.max_seq_length == 32 and c.num_train_epochs == 1.0  # user values win
  (example,) = task.get_examples("train")
  assert (example.qid, example.start_position, example.end_position) == ("n1", 1, 1)
  assert example.orig_answer_text == "cat"


def test_get_final_text():
  assert qa_tasks.get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
  assert qa_tasks.get_final_text("xyz", "Steve", True) == "Steve"


def test_doc_spans():
  assert qa_tasks.get_doc_spans(13, 10, 4) == [(0, 10), (4, 9)]
  assert qa_tasks.get_doc_spans(5, 10, 4) == [(0, 5)]
  assert qa_tasks.get_doc_spans(25, 10, 10) == [(0, 10), (10, 10), (20, 5)]


def test_preprocessing_padding_metadata_and_cache(env):
  rows = [["index", "s1", "s2", "label"]] + [[i, "a cat", "a dog", "entailment"] for i in range(5)]
  write_task_file(env[0], "rte", "train.tsv", tsv(rows))
  task, c = _task(env, "rte", train_batch_size=4, num_train_epochs=3.0)
  pre = preprocessing.Preprocessor(c, [task])
  dataset, steps = pre.prepare_train()
  path, meta = pre.dataset_paths([task], "train")
  assert os.path.basename(path) == "rte_train.tfrecord"
  with open(meta) as f:
    assert json.load(f)["n_examples"] == 8  # 5 padded to a multiple of 4
  assert steps == 8 // 4 * 3
  records = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(path)]
  task_ids = sorted(int(r.features.feature["task_id"].int64_list.value[0]) for r in records)
  assert task_ids == [0] * 5 + [1] * 3  # padding records have task_id = n_tasks
  batch = next(iter(dataset))
  assert batch["input_ids"].shape == (4, 32) and batch["input_ids"].dtype == tf.int32
  # the cache is reused while its settings and files are unchanged
  assert pre.serialize([task], True, "train")[1] == 8
  c.use_tfrecords_if_existing = False
  assert preprocessing.Preprocessor(c, [task]).serialize([task], True, "train")[1] == 8


def test_multitask_dataset_name_and_float_padding(env):
  write_task_file(
    env[0],
    "sts",
    "dev.tsv",
    tsv([["i", "g", "s1", "s2", "score"], [0, "g", "a cat", "a dog", "5.0"]]),
  )
  write_task_file(
    env[0],
    "rte",
    "dev.tsv",
    tsv([["index", "s1", "s2", "label"], [0, "a cat", "a dog", "entailment"]]),
  )
  data_dir, tokenizer, config = env
  c = config(task_names=["sts", "rte"], eval_batch_size=3)
  tasks = task_builder.get_tasks(c, tokenizer)
  pre = preprocessing.Preprocessor(c, tasks)
  path, n = pre.serialize(tasks, False, "dev")
  assert os.path.basename(path) == "rte_sts_dev.tfrecord" and n == 3
  rows = list(tf.data.TFRecordDataset(path).map(pre.decode))
  assert sorted(int(r["task_id"]) for r in rows) == [0, 1, 2]
  assert float(rows[-1]["sts_targets"]) == 0.0
  np.testing.assert_allclose(sorted(float(r["sts_targets"]) for r in rows), [0.0, 0.0, 1.0])


def test_unknown_task(env):
  with pytest.raises(ValueError, match="Unknown task 'foo'"):
    task_builder.get_tasks(env[2](task_names=["foo"]), env[1])

"""End-to-end fine-tuning on tiny files: training reduces the loss,
evaluation writes the results with the right metric names, checkpoints use
the original's names (the variable names of the original's fine-tuned checkpoints, the original's `finetune/` package)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.text import wordpiece as tokenization
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file
from tests.helpers.lock_holder import another_trainer_holding

PAIRS = [
  ("the cat sat on the mat", "a cat is on a mat", "entailment"),
  ("the dog ran fast", "a dog is slow", "not_entailment"),
  ("he walks in paris", "he is in france", "entailment"),
  ("she runs by the river", "she is sad", "not_entailment"),
  ("the red fox jumps over the dog", "a fox jumps", "entailment"),
  ("they sat on the rock", "they ran fast", "not_entailment"),
  ("it was a great film", "the film was good", "entailment"),
  ("the movie is awful", "the movie is great", "not_entailment"),
]


def _write_glue(data_dir):
  rte = [["index", "sentence1", "sentence2", "label"]] + [
    [i, a, b, l] for i, (a, b, l) in enumerate(PAIRS)
  ]
  write_task_file(data_dir, "rte", "train.tsv", tsv(rte))
  write_task_file(data_dir, "rte", "dev.tsv", tsv(rte[:5]))
  write_task_file(data_dir, "rte", "test.tsv", tsv([r[:3] for r in rte[:4]]))
  cola = [["src", int(i % 2), "", a] for i, (a, _, _) in enumerate(PAIRS)]
  write_task_file(data_dir, "cola", "train.tsv", tsv(cola))
  write_task_file(data_dir, "cola", "dev.tsv", tsv(cola))
  sts = [["index", "genre", "sentence1", "sentence2", "score"]] + [
    [i, "g", a, b, f"{(i * 0.7) % 5:.1f}"] for i, (a, b, _) in enumerate(PAIRS)
  ]
  write_task_file(data_dir, "sts", "train.tsv", tsv(sts))
  write_task_file(data_dir, "sts", "dev.tsv", tsv(sts))
  write_task_file(
    data_dir,
    "sts",
    "test.tsv",
    tsv(
      [["index", "genre", "sentence1", "sentence2"]]
      + [[i, "g", a, b] for i, (a, b, _) in enumerate(PAIRS[:3])]
    ),
  )


CHUNK = """the DT B-NP
big JJ I-NP
cat NN I-NP
sat VBD B-VP
on IN B-PP
the DT B-NP
mat NN I-NP

he PRP B-NP
runs VBZ B-VP
quickly RB B-ADVP

a DT B-NP
dog NN I-NP
ran VBD B-VP
in IN B-PP
paris NNP B-NP

"""


def _qa_paragraphs():
  context = "the cat sat on the mat . the dog ran fast in paris . paris is the capital of france"
  qas = [
    ("where did the dog run ?", "paris", context.index("paris")),
    ("who sat on the mat ?", "the cat", 0),
    ("what is the capital of france ?", "paris", context.rindex("paris")),
    ("what did the dog do ?", "ran fast", context.index("ran fast")),
  ]
  squad = [
    {
      "context": context,
      "qas": [
        {
          "id": f"q{i}",
          "question": q,
          "is_impossible": False,
          "answers": [{"text": t, "answer_start": s}],
        }
        for i, (q, t, s) in enumerate(qas)
      ]
      + [{"id": "qx", "question": "who is red ?", "is_impossible": True, "answers": []}],
    }
  ]
  mrqa = [
    {
      "context": context,
      "qas": [
        {
          "qid": f"n{i}",
          "question": q,
          "answers": [t],
          "detected_answers": [{"text": t, "char_spans": [[s, s + len(t) - 1]]}],
        }
        for i, (q, t, s) in enumerate(qas)
      ],
    }
  ]
  return squad, mrqa


def _write_qa(data_dir):
  squad, mrqa = _qa_paragraphs()
  write_task_file(
    data_dir,
    "squad",
    "test.json",
    squad_json(
      [
        {
          "context": p["context"],
          "qas": [{"id": "t" + q["id"], "question": q["question"]} for q in p["qas"]],
        }
        for p in squad
      ]
    ),
  )
  for split in ("train", "dev"):
    write_task_file(data_dir, "squad", f"{split}.json", squad_json(squad))
    write_task_file(
      data_dir,
      "squadv1",
      f"{split}.json",
      squad_json(
        [
          {"context": p["context"], "qas": [q for q in p["qas"] if not q["is_impossible"]]}
          for p in squad
        ],
        "1.1",
      ),
    )
    lines = [json.dumps({"header": {"dataset": "NewsQA", "split": split}})]
    lines += [json.dumps(p) for p in mrqa]
    write_task_file(data_dir, "newsqa", f"{split}.jsonl", "\n".join(lines) + "\n")


@pytest.fixture
def data(tmp_path):
  data_dir, vocab_size = make_data_dir(tmp_path)
  _write_glue(data_dir)
  write_task_file(data_dir, "chunk", "train.txt", CHUNK)
  write_task_file(data_dir, "chunk", "dev.txt", CHUNK)
  _write_qa(data_dir)
  return data_dir, vocab_size


def _runner(data, task_names, **kwargs):
  data_dir, vocab_size = data
  kwargs.setdefault("init_checkpoint", None)
  config = finetuning_config(
    "m", data_dir, **tiny_hparams(vocab_size, task_names=task_names, **kwargs)
  )
  config.model_dir = config.model_dir + "_1"
  tokenizer = tokenization.FullTokenizer(config.vocab_file)
  tasks = task_builder.get_tasks(config, tokenizer)
  return config, run_finetuning.ModelRunner(config, tasks)


def _falls(losses):
  k = max(2, len(losses) // 5)
  return np.mean(losses[-k:]) < 0.8 * np.mean(losses[:k])


FAST = {"learning_rate": 3e-3, "layerwise_lr_decay": 0.0, "num_train_epochs": 15.0}


def test_classification_trains_evaluates_and_checkpoints(data):
  config, runner = _runner(data, ["rte"], write_test_outputs=True, **FAST)
  losses = runner.train()
  assert runner.train_steps == 8 // 4 * 15 == len(losses)
  assert _falls(losses), losses
  results = runner.evaluate()
  assert list(results["rte"]) == ["accuracy", "loss"]
  run_finetuning.write_results(config, [results])
  with open(config.results_txt) as f:
    line = f.read()
  assert line.startswith("rte: accuracy: ") and " - loss: " in line
  with open(config.results_json) as f:
    assert json.load(f) == [results]
  runner.write_test_outputs(1)
  with open(config.test_predictions("rte", "test", 1)) as f:
    test_preds = json.load(f)
  assert sorted(test_preds) == ["0", "1", "2"] and len(test_preds["0"]) == 2
  # checkpoints: the original's names, slots and global_step
  prefix = tf.train.latest_checkpoint(config.model_dir)
  assert prefix.endswith("model.ckpt-30")
  assert os.path.exists(os.path.join(config.model_dir, "model.ckpt-0.index"))
  names = dict(tf.train.list_variables(prefix))
  assert names["task_specific/rte/dense/kernel"] == [16, 2]
  assert names["task_specific/rte/dense/bias"] == [2]
  assert "task_specific/rte/dense/kernel/adam_m" in names
  assert "electra/encoder/layer_1/attention/self/query/kernel/adam_v" in names
  assert names["electra/embeddings_project/kernel"] == [8, 16]
  assert int(tf.train.load_checkpoint(prefix).get_tensor("global_step")) == 30
  assert not any(n.startswith(("generator", "discriminator_predictions")) for n in names)
  # re-evaluating the fine-tuned checkpoint (do_train=false) reproduces the results
  config2, runner2 = _runner(data, ["rte"], do_train=False, init_checkpoint=config.model_dir)
  assert runner2.evaluate()["rte"] == pytest.approx(results["rte"], abs=1e-4)


@pytest.mark.slow
def test_cola_and_sts_metric_names_and_test_outputs(data):
  _, runner = _runner(data, ["cola"], **FAST)
  assert _falls(runner.train())
  assert list(runner.evaluate()["cola"]) == ["mcc", "loss"]
  config, runner = _runner(data, ["sts"], write_test_outputs=True, **FAST)
  losses = runner.train()
  assert runner.train_steps == 16 // 4 * 15  # train doubled by double_unordered
  assert _falls(losses), losses
  assert list(runner.evaluate()["sts"]) == ["pearson", "spearman", "mse", "loss"]
  runner.write_test_outputs(2)
  with open(config.test_predictions("sts", "test", 2)) as f:
    assert all(isinstance(v, float) for v in json.load(f).values())


def test_chunking_end_to_end(data):
  config, runner = _runner(data, ["chunk"], **FAST)
  names = runner.model.official_name_map()
  n_tags = len(runner._tasks[0].get_label_mapping())
  assert tuple(names["task_specific/chunk/dense/kernel"].shape) == (16, n_tags)
  losses = runner.train()
  assert _falls(losses), losses
  results = runner.evaluate()["chunk"]
  assert list(results) == ["precision", "recall", "f1", "loss"]
  assert 0.0 <= results["f1"] <= 100.0


def test_squad_v2_end_to_end(data):
  config, runner = _runner(
    data, ["squad"], max_seq_length=32, beam_size=5, write_test_outputs=True, **FAST
  )
  assert config.max_seq_length == 32
  names = runner.model.official_name_map()
  shapes = {n: tuple(v.shape) for n, v in names.items() if n.startswith("task_specific")}
  assert shapes == {
    "task_specific/squad/dense/kernel": (16, 1),
    "task_specific/squad/dense/bias": (1,),
    "task_specific/squad/qa_hidden/kernel": (32, 512),
    "task_specific/squad/qa_hidden/bias": (512,),
    "task_specific/squad/dense_1/kernel": (512, 1),
    "task_specific/squad/dense_1/bias": (1,),
    "task_specific/squad/dense_2/kernel": (32, 512),
    "task_specific/squad/dense_2/bias": (512,),
    "task_specific/squad/dense_3/kernel": (512, 1),
    "task_specific/squad/dense_3/bias": (1,),
  }
  losses = runner.train()
  assert _falls(losses), losses
  results = runner.evaluate()["squad"]
  assert list(results) == sorted(
    [
      "exact",
      "f1",
      "total",
      "HasAns_exact",
      "HasAns_f1",
      "HasAns_total",
      "NoAns_exact",
      "NoAns_f1",
      "NoAns_total",
      "best_exact",
      "best_exact_thresh",
      "best_f1",
      "best_f1_thresh",
    ]
  )
  assert results["total"] == 5
  with open(config.qa_preds_file("squad")) as f:
    preds = json.load(f)
  with open(config.qa_na_file("squad")) as f:
    null_odds = json.load(f)
  assert sorted(preds) == sorted(null_odds) == ["q0", "q1", "q2", "q3", "qx"]
  assert all(isinstance(v, float) for v in null_odds.values())
  with open(config.qa_eval_file("squad")) as f:
    assert json.load(f)["total"] == 5
  # after training on the dev questions, some answers are right
  assert results["HasAns_f1"] > 0.0
  # test outputs: test examples decoded (not dev), dev files left alone
  runner.write_test_outputs(1)
  with open(config.test_predictions("squad", "test", 1)) as f:
    test_answers = json.load(f)
  assert sorted(test_answers) == ["tq0", "tq1", "tq2", "tq3", "tqx"]
  with open(config.test_predictions("squad", "test", 1)[:-5] + "_null_odds.json") as f:
    test_odds = json.load(f)
  assert all(
    (test_answers[q] == "") == (test_odds[q] > config.qa_na_threshold) for q in test_answers
  )
  with open(config.qa_preds_file("squad")) as f:
    assert json.load(f) == preds


@pytest.mark.slow
@pytest.mark.parametrize("task", ["squadv1", "newsqa"])
def test_squadv1_and_mrqa_metric_names(data, task):
  config, runner = _runner(data, [task], max_seq_length=32, beam_size=4, **FAST)
  losses = runner.train()
  assert _falls(losses), losses
  results = runner.evaluate()[task]
  assert list(results) == ["exact_match", "f1"]
  with open(config.qa_preds_file(task)) as f:
    assert len(json.load(f)) == 4
  assert not os.path.exists(config.qa_na_file(task))


def test_qa_variants_variable_names(data):
  _, runner = _runner(
    data,
    ["squadv1"],
    max_seq_length=32,
    beam_size=4,
    joint_prediction=False,
    answerable_uses_start_logits=False,
  )
  shapes = {
    n: tuple(v.shape)
    for n, v in runner.model.official_name_map().items()
    if n.startswith("task_specific") and n.endswith("kernel")
  }
  assert shapes == {
    "task_specific/squadv1/dense/kernel": (16, 1),
    "task_specific/squadv1/dense_1/kernel": (16, 1),
    "task_specific/squadv1/dense_2/kernel": (16, 1),
  }
  runner.train()
  assert list(runner.evaluate()["squadv1"]) == ["exact_match", "f1"]


@pytest.mark.slow
def test_multitask_cli_trials_and_layout(data):
  data_dir, vocab_size = data
  hparams = tiny_hparams(
    vocab_size,
    task_names=["rte", "sts", "chunk"],
    num_trials=2,
    keep_all_models=False,
    init_checkpoint=None,
  )
  run_finetuning.main(
    ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  )
  model_root = os.path.join(data_dir, "models", "m")
  with open(os.path.join(model_root, "results", "rte,sts,chunk_results.txt")) as f:
    lines = f.read().splitlines()
  assert [line.split(":")[0] for line in lines] == ["rte", "sts", "chunk"] * 2
  with open(os.path.join(model_root, "results", "rte,sts,chunk_results.json")) as f:
    trials = json.load(f)
  assert len(trials) == 2 and set(trials[0]) == {"rte", "sts", "chunk"}
  with open(os.path.join(model_root, "results", "rte,sts,chunk_results_median.json")) as f:
    median = json.load(f)
  assert median["rte"]["accuracy"] == pytest.approx(
    float(np.median([t["rte"]["accuracy"] for t in trials]))
  )
  models = os.path.join(model_root, "finetuning_models")
  assert sorted(os.listdir(models)) == ["rte,sts,chunk_model_2"]  # trial 1 deleted
  records = os.listdir(os.path.join(model_root, "finetuning_tfrecords", "rte,sts,chunk_tfrecords"))
  assert "chunk_rte_sts_train.tfrecord" in records and "rte_dev.metadata" in records
  assert "chunk_label_mapping.json" in records
  names = dict(tf.train.list_variables(os.path.join(models, "rte,sts,chunk_model_2")))
  for task in ("rte", "sts", "chunk"):
    assert f"task_specific/{task}/dense/kernel" in names
  assert names["task_specific/sts/dense/kernel"] == [16, 1]


@pytest.mark.slow
def test_a_pretraining_run_dir_gives_the_model_and_nothing_replaces_it(tmp_path, capsys):
  """Fine-tuning a `run_pretraining` model dir takes the encoder's sizes,
  vocab and `do_lower_case` from its config.json; sizes that contradict it,
  a resumed trial asked to change its architecture and a second trainer are
  one line each (exit 2, config.json untouched); the trial's config.json
  is enough for `--hparams`, `export_saved_model --model task` and
  `from_checkpoint`."""
  import keras

  import electra_tf
  from electra_tf import export_saved_model
  from electra_tf.checkpoints import model_dir as model_dir_lib
  from electra_tf.convert import api as convert_api
  from tests.helpers.pretraining_data import pretrain_on_self_made_data
  from tests.helpers.pretraining_data import self_made_hparams

  root = tmp_path / "pt"
  pretrain_on_self_made_data(root, self_made_hparams(num_train_steps=1, do_lower_case=False))
  _write_glue(str(root))
  ft = {"task_names": ["rte"], "train_batch_size": 4, "eval_batch_size": 4}
  ft.update(predict_batch_size=4, max_seq_length=32, num_train_epochs=1.0, seed=1)

  def main(hparams):
    capsys.readouterr()
    args = ["--data-dir", str(root), "--model-name", "m", "--hparams"]
    return run_finetuning.main(
      args + [hparams if isinstance(hparams, str) else json.dumps(hparams)]
    )

  assert main(ft) == 0
  trial = root / "models" / "m" / "finetuning_models" / "rte_model_1"
  recorded = model_dir_lib.read_run_config(str(trial))
  assert recorded["architecture"]["encoder"]["num_attention_heads"] == 2  # not the size rule's 1
  assert recorded["architecture"]["encoder"]["hidden_size"] == 32
  assert recorded["architecture"]["embedding_size"] == 16
  assert recorded["vocab"]["file"] == str(root / "vocab.txt")
  assert recorded["vocab"]["do_lower_case"] is False
  config_json = (trial / "config.json").read_bytes()

  def refused(hparams, *fragments):
    assert main(hparams) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(f in err for f in fragments), err
    assert (trial / "config.json").read_bytes() == config_json

  refused(dict(ft, embedding_size=8), "embedding_size 16 → 8", "config.json")
  refused(dict(ft, model_size="base"), 'model_size "small" → "base"', "config.json")
  # Other training hparams on a trained trial: its checkpoint and results are another run's.
  refused(dict(ft, learning_rate=1e-3), "trained with other hparams: learning_rate", "→ 0.001")
  # Evaluating a task no fine-tuned model exists for: the pre-trained model has no head for it.
  refused(
    dict(ft, task_names=["cola"], do_train=False),
    "do_train=false: hparam init_checkpoint=",
    "holds no fine-tuned head for task(s) ['cola']",
  )
  # A vocab the model was not pre-trained with: every id would mean another token.
  other = tmp_path / "other_vocab.txt"
  other.write_text("\n".join((root / "vocab.txt").read_text().splitlines()[:40]) + "\n")
  refused(
    dict(ft, vocab_file=str(other)),
    f"the model in {str(root / 'models' / 'm')!r} was pre-trained with vocab",
    "(60 tokens",
    f"but the vocab given is {str(other)!r} (40 tokens",
  )
  # The trial's own checkpoint: heads 2 → 4 changes no shape, and is refused.
  sizes = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4}
  explicit = dict(ft, init_checkpoint=None, embedding_size=16, vocab_size=60)
  explicit.update(model_hparam_overrides=dict(sizes, intermediate_size=64))
  refused(explicit, "encoder.num_attention_heads 2 → 4", str(trial))
  # A second trainer of the same tasks.
  lock = root / "models" / "m" / "finetuning_models" / "rte_model.lock"
  with another_trainer_holding(lock, "x") as pid:
    refused(ft, f"pid {pid}", "in use by")
  # The trial's config.json as --hparams: the same run (resumed at its end, evaluated again).
  assert main(str(trial / "config.json")) == 0
  assert not lock.exists()  # the stale lock was taken over, then released
  # Export and from_checkpoint need nothing but the dir.
  args = ["--checkpoint", str(trial), "--model", "task", "--task", "rte"]
  args += ["--export-dir", str(tmp_path / "serving"), "--max-seq-length", "16"]
  assert export_saved_model.main(args) == 0, capsys.readouterr().err
  exported = (tmp_path / "serving" / "1" / "assets" / "vocab.txt").read_text()
  assert exported == (root / "vocab.txt").read_text()
  for path in (root / "models" / "m", trial):
    classifier = electra_tf.ElectraClassifier.from_checkpoint(str(path), num_classes=2)
    assert classifier.bert_config["num_attention_heads"] == 2
    assert classifier.preprocessor.tokenizer.vocab_size == 60
  # The trial's one classification head is the classifier's (not a new random one).
  assert classifier.task_name == "rte"
  trained = tf.train.load_checkpoint(str(trial)).get_tensor("task_specific/rte/dense/kernel")
  np.testing.assert_array_equal(
    classifier.finetuning_model.official_name_map()["task_specific/rte/dense/kernel"].numpy(),
    trained,
  )
  capsys.readouterr()
  tagger = electra_tf.ElectraTokenTagger.from_checkpoint(str(trial), num_tags=3)
  assert tagger.task_name == "tagger"
  assert "none of them has a head for ElectraTokenTagger, so it gets a new 'tagger' head" in (
    capsys.readouterr().err
  )
  with pytest.raises(ValueError, match="encoder.hidden_size 32 → 256"):
    electra_tf.ElectraClassifier.from_checkpoint(str(trial), num_classes=2, model_size="small")
  # The converter builds the trial's model from its config.json too (heads are no shape).
  keras_path = tmp_path / "rte.keras"
  report = convert_api.convert(str(trial), str(keras_path), part="finetuned")
  assert report["part"] == "finetuned"
  converted = keras.saving.load_model(str(keras_path))
  assert converted.bert_config["num_attention_heads"] == 2
  # A moved data dir: the vocab path its config.json recorded is gone, and the error says so.
  moved = tmp_path / "moved"
  os.rename(root, moved)
  capsys.readouterr()
  args = ["--data-dir", str(moved), "--model-name", "m", "--hparams", json.dumps(ft)]
  assert run_finetuning.main(args) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1, err
  assert f"vocab file {str(root / 'vocab.txt')!r}, recorded in " in err
  assert str(moved / "models" / "m" / "config.json") in err and "pass hparam vocab_file" in err

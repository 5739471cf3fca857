"""The fine-tuning model's loss and learning rates, and QA span decoding on
hand-made model outputs (`model/optimization.py:create_optimizer`, `run_finetuning.py:FinetuningModel`, `finetune/qa/qa_tasks.py`)."""

import json

import numpy as np
import pytest

from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.optimization import factory as optimizer_factory
from electra_tf.text import wordpiece as tokenization
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file

BERT = {
  "vocab_size": 50,
  "hidden_size": 16,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 32,
}


def test_loss_is_summed_over_the_batch_and_routed_by_task_id():
  model = FinetuningModel(
    BERT,
    [
      ClassificationHead("rte", 2, name="task_specific_rte"),
      ClassificationHead("sts", 1, regression=True, name="task_specific_sts"),
    ],
    embedding_size=8,
  )
  rng = np.random.RandomState(0)
  features = {
    "input_ids": rng.randint(1, 50, (4, 6)),
    "input_mask": np.ones((4, 6), "int32"),
    "segment_ids": np.zeros((4, 6), "int32"),
    "task_id": np.array([0, 1, 0, 2]),
    "rte_label_ids": np.array([1, 0, 0, 0]),
    "rte_eid": np.arange(4),
    "sts_targets": np.array([0.0, 0.4, 0.0, 0.0], "float32"),
    "sts_eid": np.arange(4),
  }
  out = model(features, training=False)
  rte_loss = np.asarray(out["rte"]["loss"])
  sts_loss = np.asarray(out["sts"]["loss"])
  # row 3 is padding (task_id == n_tasks): no loss
  expected = rte_loss[0] + sts_loss[1] + rte_loss[2]
  assert float(out["loss"]) == pytest.approx(expected, rel=1e-5)
  logits = np.asarray(out["rte"]["logits"])
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  assert rte_loss[0] == pytest.approx(-log_probs[0, 1], rel=1e-5)
  assert sts_loss[1] == pytest.approx((float(out["sts"]["predictions"][1]) - 0.4) ** 2, rel=1e-5)


def test_head_variable_names_and_init():
  model = FinetuningModel(
    BERT,
    [
      ClassificationHead("mnli", 3, name="task_specific_mnli"),
      TaggingHead("chunk", 7, name="task_specific_chunk"),
    ],
    embedding_size=16,
  )
  names = model.official_name_map()
  assert tuple(names["task_specific/mnli/dense/kernel"].shape) == (16, 3)
  assert tuple(names["task_specific/chunk/dense/kernel"].shape) == (16, 7)
  assert np.all(np.asarray(names["task_specific/chunk/dense/bias"]) == 0)
  assert "electra/embeddings_project/kernel" not in names  # E == H: no projection
  # Glorot-uniform: |w| <= sqrt(6 / (fan_in + fan_out))
  limit = np.sqrt(6.0 / (16 + 3))
  kernel = np.asarray(names["task_specific/mnli/dense/kernel"])
  assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > limit / 4
  assert len(names) == len(model.weights)


@pytest.mark.parametrize(
  "variant,embedding_exponent,top_exponent", [("faithful", 4, 2), ("fixed", 3, 1)]
)
def test_optimizer_gets_layerwise_rates(tmp_path, variant, embedding_exponent, top_exponent):
  data_dir, vocab_size = make_data_dir(tmp_path)
  write_task_file(
    data_dir,
    "rte",
    "train.tsv",
    tsv([["i", "a", "b", "label"], [0, "a cat", "a dog", "entailment"]]),
  )
  config = finetuning_config(
    "m",
    data_dir,
    **tiny_hparams(
      vocab_size,
      task_names=["rte"],
      init_checkpoint=None,
      layerwise_lr_decay=0.5,
      layerwise_lr_decay_variant=variant,
    ),
  )
  config.model_dir += "_1"
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  runner = run_finetuning.ModelRunner(config, tasks)
  optimizer = optimizer_factory.finetuning_optimizer_from_config(config, runner.model, 10)
  m = optimizer.learning_rate_multipliers
  assert m["electra/embeddings/word_embeddings"] == 0.5**embedding_exponent
  assert m["electra/embeddings_project/kernel"] == 0.5**embedding_exponent
  assert m["electra/encoder/layer_1/output/dense/bias"] == 0.5**top_exponent
  assert m["task_specific/rte/dense/kernel"] == 1.0
  assert optimizer.epsilon == 1e-6 and optimizer.weight_decay_rate == 0.01
  assert (
    optimizer.variable_names[names_path(runner, "task_specific/rte/dense/kernel")]
    == "task_specific/rte/dense/kernel"
  )


def names_path(runner, official):
  return runner.name_map[official].path


def _qa_setup(tmp_path, task_name, **kwargs):
  data_dir, vocab_size = make_data_dir(tmp_path)
  context = "the cat sat on the mat"
  qas = [
    {"id": "q", "question": "who sat ?", "answers": [{"text": "the cat", "answer_start": 0}]},
    {"id": "qx", "question": "what ran ?", "answers": [], "is_impossible": True},
  ]
  write_task_file(data_dir, task_name, "dev.json", squad_json([{"context": context, "qas": qas}]))
  config = finetuning_config(
    "m",
    data_dir,
    **tiny_hparams(vocab_size, task_names=[task_name], max_seq_length=16, beam_size=2, **kwargs),
  )
  (task,) = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  return config, task


def _row(eid, starts, start_lp, ends, end_lp, answerable=0.0):
  return {
    "eid": eid,
    "loss": 0.0,
    "start_logits": np.zeros(16),
    "end_logits": np.zeros(16),
    "answerable_logit": answerable,
    "start_top_index": np.array(starts),
    "start_top_log_probs": np.array(start_lp),
    "end_top_index": np.array(ends),
    "end_top_log_probs": np.array(end_lp),
  }


def test_qa_joint_beam_decoding_and_v2_null_odds(tmp_path):
  config, task = _qa_setup(tmp_path, "squad")
  features = task.featurize(task.get_examples("dev")[0], False, for_eval=True)
  tokens = features[0]["squad_tokens"]
  # [CLS] who sat ? [SEP] the cat sat on the mat [SEP]
  assert tokens[5:7] == ["the", "cat"]
  scorer = task.get_scorer("dev")
  # start candidates: [CLS] (excluded) and "the" (5); ends for "the": "cat" (6) best
  scorer.update(
    _row(0, [0, 5], [-0.1, -0.5], [[0, 0], [6, 7]], [[-0.1, -0.1], [-0.2, -1.0]], answerable=-5.0)
  )
  # second question: best span "mat" but the answerable logit says no answer
  scorer.update(
    _row(
      1000, [10, 5], [-0.3, -2.0], [[10, 9], [5, 6]], [[-0.1, -1.0], [-0.5, -0.5]], answerable=1.0
    )
  )
  results = dict(scorer.get_results())
  with open(config.qa_preds_file("squad")) as f:
    assert json.load(f) == {"q": "the cat", "qx": "mat"}
  with open(config.qa_na_file("squad")) as f:
    assert json.load(f) == {"q": -5.0, "qx": 1.0}
  # q: -5 <= -2.75 -> answered "the cat" (exact); qx: 1.0 > -2.75 -> no answer (exact)
  assert results["exact"] == 100.0 and results["HasAns_exact"] == 100.0
  assert results["NoAns_exact"] == 100.0
  assert "loss" not in results


def test_qa_non_joint_decoding_uses_raw_logits(tmp_path):
  config, task = _qa_setup(tmp_path, "squadv1", joint_prediction=False, n_best_size=3)
  scorer = task.get_scorer("dev")
  start = np.full(16, -10.0)
  end = np.full(16, -10.0)
  start[[6, 7]] = [3.0, 2.0]  # "cat", "sat"
  end[[7, 10]] = [2.5, 4.0]  # "sat", "mat"
  row = _row(0, [0, 0], [0, 0], [[0, 0], [0, 0]], [[0, 0], [0, 0]])
  row.update(start_logits=start, end_logits=end)
  scorer.update(row)
  row2 = dict(row, eid=1000)
  scorer.update(row2)
  predictions, _ = scorer.write_predictions()
  # best valid (start <= end, length <= 30): cat..mat = 3 + 4
  assert predictions["q"] == "cat sat on the mat"
  results = dict(scorer.get_results())
  assert list(results) == ["exact_match", "f1"]
  # gold "the cat" -> "cat"; prediction -> "cat sat on mat": P = 1/4, R = 1, F1 = 0.4;
  # qx has no gold answer and scores 0 but counts
  assert results["f1"] == pytest.approx(100 * 0.4 / 2)
  assert results["exact_match"] == 0.0

"""GLUE and SQuAD read from TensorFlow Datasets, with `tfds.testing.mock_data`."""

import json
import os

import pytest
import tensorflow_datasets as tfds

from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.finetune import tfds_source
from electra_tf.text import wordpiece as tokenization
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams


def _tasks(tmp_path, task_names, **kwargs):
  data_dir, vocab_size = make_data_dir(tmp_path)
  config = finetuning_config(
    "m",
    data_dir,
    **tiny_hparams(
      vocab_size, task_names=task_names, data_source="tfds", init_checkpoint=None, **kwargs
    ),
  )
  tokenizer = tokenization.FullTokenizer(os.path.join(data_dir, "vocab.txt"))
  return config, task_builder.get_tasks(config, tokenizer)


def test_glue_splits_mapping():
  assert tfds_source.glue_tfds_split("sst", "dev") == ("glue/sst2", "validation")
  assert tfds_source.glue_tfds_split("mnli", "dev") == ("glue/mnli", "validation_matched")
  assert tfds_source.glue_tfds_split("mnli", "test_mismatched") == ("glue/mnli", "test_mismatched")
  assert tfds_source.glue_tfds_split("mnli", "diagnostic") == ("glue/ax", "test")
  assert tfds_source.glue_tfds_split("sts", "train") == ("glue/stsb", "train")


def test_glue_from_mock_tfds(tmp_path):
  config, (rte, mrpc, sts) = _tasks(tmp_path, ["rte", "mrpc", "sts"])
  with tfds.testing.mock_data(num_examples=6):
    examples = rte.get_examples("dev")
    mrpc_train = mrpc.get_examples("train")
    sts_train = sts.get_examples("train")
    test = rte.get_examples("test")
  assert len(examples) == 6
  assert all(e.label in rte.label_list and e.text_a and e.text_b for e in examples)
  assert all(e.label == "entailment" for e in test)  # test labels are dummies
  assert len(mrpc_train) == 12  # doubled with swapped pairs
  assert (mrpc_train[6].text_a, mrpc_train[6].text_b) == (
    mrpc_train[0].text_b,
    mrpc_train[0].text_a,
  )
  assert all(isinstance(e.label, float) for e in sts_train)
  assert all(e.label in ("0", "1") for e in mrpc_train)


def test_squad_from_mock_tfds(tmp_path):
  config, (squad,) = _tasks(tmp_path, ["squadv1"], max_seq_length=32)
  with tfds.testing.mock_data(num_examples=4):
    examples = squad.get_examples("dev")
    data = tfds_source.squad_data(squad, "dev")
  assert len(examples) == 4
  assert [e.qas_id for e in examples] == [p["qas"][0]["id"] for p in data[0]["paragraphs"]]
  result = squad.evaluate_predictions("dev", {e.qas_id: "" for e in examples}, None)
  assert set(result) == {"exact_match", "f1"} and 0.0 <= result["f1"] <= 100.0


@pytest.mark.slow
def test_finetune_rte_from_mock_tfds(tmp_path):
  config, _ = _tasks(tmp_path, ["rte"])
  with tfds.testing.mock_data(num_examples=8):
    results = run_finetuning.run_finetuning(config)
  assert list(results[0]["rte"]) == ["accuracy", "loss"]
  assert os.path.exists(config.results_txt)


def test_tfds_rejects_other_tasks(tmp_path):
  with pytest.raises(ValueError, match="data_source=tfds supports GLUE and SQuAD"):
    _tasks(tmp_path, ["chunk"])


def test_an_unprepared_tfds_split_is_one_line_before_any_trial(tmp_path, capsys):
  """Nothing prepared in tfds_data_dir: named before a trial dir exists,
  as a missing task dir is for data_source=files."""
  data_dir, vocab_size = make_data_dir(tmp_path)
  hparams = tiny_hparams(
    vocab_size,
    task_names=["sst"],
    data_source="tfds",
    tfds_data_dir=str(tmp_path / "tfds"),
    init_checkpoint=None,
  )
  argv = ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) == 2
  # TFDS itself may warn first that the folder has no dataset_info.json.
  err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
  assert len(err) == 1, err
  assert err[0].startswith(
    "run_finetuning: error: TFDS dataset 'glue/sst2' split 'train' is not available "
    f"(data_source=tfds, tfds_data_dir={str(tmp_path / 'tfds')!r}): "
  )
  assert not os.path.exists(os.path.join(data_dir, "models", "m", "finetuning_models"))

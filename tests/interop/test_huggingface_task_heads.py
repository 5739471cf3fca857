"""Publishing fine-tuned heads to Hugging Face (`convert_checkpoint --to
huggingface` of a fine-tuning run): a classifier and a regression head load
as `ElectraForSequenceClassification`, a tagger as
`ElectraForTokenClassification`, with electra_tf's logits (within 1e-5) and
the task's label names; heads with no transformers class are refused in
one line."""

import json
import math
import os

import numpy as np
import pytest

from electra_tf import convert_checkpoint
from electra_tf import run_finetuning
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.qa.head import QAHead
from electra_tf.interop import huggingface
from electra_tf.sources import any_format
from tests.finetune.test_run import CHUNK
from tests.finetune.test_run import PAIRS
from tests.helpers import interop
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
  """A classifier (rte), a regression head (sts) and a tagger (chunk),
  fine-tuned together for a few steps by `run_finetuning`; the trial dir."""
  data_dir, vocab_size = make_data_dir(tmp_path_factory.mktemp("ft"))
  rte = [["index", "sentence1", "sentence2", "label"]]
  rte += [[i, a, b, label] for i, (a, b, label) in enumerate(PAIRS)]
  sts = [["index", "genre", "sentence1", "sentence2", "score"]]
  sts += [[i, "g", a, b, f"{(i * 0.7) % 5:.1f}"] for i, (a, b, _) in enumerate(PAIRS)]
  for split in ("train", "dev"):
    write_task_file(data_dir, "rte", f"{split}.tsv", tsv(rte))
    write_task_file(data_dir, "sts", f"{split}.tsv", tsv(sts))
    write_task_file(data_dir, "chunk", f"{split}.txt", CHUNK)
  hparams = tiny_hparams(
    vocab_size,
    task_names=["rte", "sts", "chunk"],
    init_checkpoint=None,
    do_eval=False,
    learning_rate=3e-3,
    num_train_epochs=2.0,
  )
  argv = ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) in (0, None)
  path = os.path.join(data_dir, "models", "m", "finetuning_models", "rte,sts,chunk_model_1")
  assert os.path.isdir(path), os.listdir(os.path.dirname(path))
  return path, vocab_size


def _publish(source, output, *extra):
  argv = ["--input", str(source), "--output", str(output), "--to", "huggingface", *extra]
  return convert_checkpoint.main(argv)


def _electra_tf_logits(model, task, feats):
  head = model.heads[model.task_names.index(task)]
  sequence = model.encoder(feats)["sequence_output"]
  out = head(sequence, head.prediction_features(dict(feats)))
  return np.asarray(out["logits"] if "logits" in out else out["predictions"][:, None])


def _hf(directory, class_name, feats):
  model, logits = interop.transformers_logits(class_name, directory, feats)
  return model.config, logits


@pytest.mark.parametrize(
  "task, class_name",
  [
    ("rte", huggingface.SEQUENCE_CLASSIFICATION),
    ("sts", huggingface.SEQUENCE_CLASSIFICATION),
    ("chunk", huggingface.TOKEN_CLASSIFICATION),
  ],
)
def test_a_fine_tuned_head_loads_as_its_transformers_class(trial, tmp_path, task, class_name):
  path, vocab_size = trial
  output = tmp_path / "hf"
  assert _publish(path, output, "--hparams", json.dumps({"task": task})) == 0
  written = json.loads((output / huggingface.CONFIG_FILE).read_text())
  assert written["architectures"] == [class_name]
  model = any_format.load(path, any_format.FINETUNED).model
  feats, _ = interop.features(vocab_size, batch=3, length=24)
  expected = _electra_tf_logits(model, task, feats)
  config, logits = _hf(str(output), class_name, feats)
  real = feats["input_mask"].astype(bool)
  if class_name == huggingface.TOKEN_CLASSIFICATION:
    logits, expected = logits[real], expected[real]
  assert logits.shape == expected.shape
  assert np.abs(logits - expected).max() < TOLERANCE
  # The comparison can fail: the logits vary over examples (and tokens).
  assert expected.std(axis=0).max() > 1e-4
  labels = [config.id2label[i] for i in range(config.num_labels)]
  if task == "rte":
    assert labels == ["entailment", "not_entailment"]
    assert config.problem_type == "single_label_classification"
  elif task == "sts":
    assert labels == ["sts"] and config.problem_type == "regression"
  else:
    mapping_file = os.path.join(
      os.path.dirname(os.path.dirname(path)),
      "finetuning_tfrecords",
      "rte,sts,chunk_tfrecords",
      "chunk_label_mapping.json",
    )
    with open(mapping_file, encoding="utf-8") as f:
      mapping = json.load(f)
    assert labels == sorted(mapping, key=mapping.get) and len(labels) > 2
  assert config.label2id == {label: i for i, label in enumerate(labels)}


def test_label_names_may_be_given_and_a_head_must_be_chosen(trial, tmp_path, capsys):
  path, _ = trial
  assert _publish(path, tmp_path / "a") == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1 and "['rte', 'sts', 'chunk']" in err and '"task"' in err
  names = {"task": "rte", "label_names": {"rte": ["yes", "no"]}}
  assert _publish(path, tmp_path / "b", "--hparams", json.dumps(names)) == 0
  config = json.loads((tmp_path / "b" / huggingface.CONFIG_FILE).read_text())
  assert config["id2label"] == {"0": "yes", "1": "no"}
  names["label_names"]["rte"] = ["yes"]
  assert _publish(path, tmp_path / "c", "--hparams", json.dumps(names)) == 2
  assert "label_names for task 'rte'" in capsys.readouterr().err
  assert not (tmp_path / "c").exists()


def test_the_sequence_head_is_exact_only_where_it_fits():
  rng = np.random.default_rng(0)
  kernel, bias = rng.normal(size=(6, 3)), rng.normal(size=3)
  tensors = huggingface.sequence_classification_tensors(kernel, bias)
  h = rng.normal(size=(5, 6)) * 4
  hidden = h @ tensors["classifier.dense.weight"].T + tensors["classifier.dense.bias"]
  # transformers' head: out_proj(gelu(dense(h))), the exact GELU.
  gelu = 0.5 * hidden * (1 + np.vectorize(math.erf)(hidden / np.sqrt(2)))
  logits = gelu @ tensors["classifier.out_proj.weight"].T + tensors["classifier.out_proj.bias"]
  np.testing.assert_allclose(logits, h @ kernel + bias, atol=1e-6)  # float32 weights
  with pytest.raises(ValueError, match="2 x num_labels <= hidden_size"):
    huggingface.sequence_classification_tensors(rng.normal(size=(6, 4)), np.zeros(4))


@pytest.fixture
def squad_checkpoint(tmp_path):
  """A fine-tuned checkpoint with ELECTRA's joint SQuAD head (random weights)."""
  bert = {
    "vocab_size": 40,
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
  }
  model = FinetuningModel(bert, [QAHead("squad", name="task_specific_squad")], embedding_size=8)
  model.build()
  rng = np.random.default_rng(1)
  tensors = {
    name: rng.normal(size=tuple(v.shape)).astype(np.float32)
    for name, v in model.official_name_map().items()
  }
  (tmp_path / "squad").mkdir()
  write_name_based_checkpoint(tmp_path / "squad" / "model.ckpt-3", tensors)
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]
  (tmp_path / "squad" / "vocab.txt").write_text("".join(t + "\n" for t in tokens))
  return tmp_path / "squad"


def test_heads_without_a_class_are_refused_in_one_line(squad_checkpoint, tmp_path, capsys):
  hparams = json.dumps({"model_hparam_overrides": {"num_attention_heads": 2}})
  assert _publish(squad_checkpoint, tmp_path / "hf", "--hparams", hparams) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1, err
  assert "question-answering head" in err and "no transformers class" in err
  assert not (tmp_path / "hf").exists()
  argv = ["--input", str(squad_checkpoint), "--output", str(tmp_path / "kh")]
  argv += ["--to", "keras-hub", "--part", "finetuned"]
  assert convert_checkpoint.main(argv) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1 and "keras-hub has no ELECTRA task class" in err


def test_keras_hub_has_no_electra_task_class():
  # What the keras-hub refusal and docs/publish.md say, checked on the installed keras-hub.
  keras_hub = pytest.importorskip("keras_hub")
  electra = sorted(n for n in dir(keras_hub.models) if n.startswith("Electra"))
  assert electra == ["ElectraBackbone", "ElectraTokenizer"], electra

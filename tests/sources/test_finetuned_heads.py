"""Fine-tuned checkpoints (`electra_tf.sources.finetuned_heads`):
electra/* plus task_specific/<task>/* as the original names them, to a
`FinetuningModel` and back bit-exact, identical outputs after the way back,
the original's tiny encoder with heads, and the errors for unknown or
mismatched heads."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert
from electra_tf import convert_checkpoint
from tests.helpers.conversion import TINY_TRANSFORMER
from tests.helpers.conversion import assert_bit_exact
from tests.helpers.conversion import encoder_features
from tests.helpers.conversion import finetuned_shapes
from tests.helpers.conversion import layout_shapes
from tests.helpers.conversion import read_all
from tests.helpers.conversion import spec_task_head_shapes
from tests.helpers.conversion import write_finetuned
from tests.helpers.conversion import write_layout
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

# name → (tasks, --hparams, expected (head class, attributes) per task in head order)
FINETUNED = {
  "classification": (
    {"rte": ("classification", 2)},
    None,
    [("ClassificationHead", {"num_labels": 2, "regression": False})],
  ),
  "regression": (
    {"sts": ("regression", 1)},
    None,
    [("ClassificationHead", {"num_labels": 1, "regression": True})],
  ),
  "tagging": ({"chunk": ("tagging", 5)}, None, [("TaggingHead", {"num_labels": 5})]),
  "qa": (
    {"squad": ("qa", None)},
    None,
    [
      (
        "QAHead",
        {
          "joint_prediction": True,
          "answerable_classifier": True,
          "answerable_uses_start_logits": True,
        },
      )
    ],
  ),
  "qa_no_joint": (
    {"newsqa": ("qa_no_joint", None)},
    None,
    [
      (
        "QAHead",
        {
          "joint_prediction": False,
          "answerable_classifier": True,
          "answerable_uses_start_logits": True,
        },
      )
    ],
  ),
  "qa_plain_answerable": (
    {"triviaqa": ("qa_plain_answerable", None)},
    None,
    [
      (
        "QAHead",
        {
          "joint_prediction": True,
          "answerable_classifier": True,
          "answerable_uses_start_logits": False,
        },
      )
    ],
  ),
  "multi_task": (
    {
      "mnli": ("classification", 3),
      "sts": ("regression", 1),
      "chunk": ("tagging", 7),
      "squadv1": ("qa", None),
    },
    {"task_names": ["sts", "squadv1", "mnli", "chunk"], "beam_size": 4},
    [
      ("ClassificationHead", {"num_labels": 1, "regression": True}),
      ("QAHead", {"joint_prediction": True, "beam_size": 4}),
      ("ClassificationHead", {"num_labels": 3, "regression": False}),
      ("TaggingHead", {"num_labels": 7}),
    ],
  ),
  "unknown_tasks_typed": (
    {"mytagger": ("tagging", 4), "myscore": ("regression", 1), "myqa": ("qa", None)},
    {"task_types": {"mytagger": "tagging", "myscore": "regression"}},
    [
      ("QAHead", {"joint_prediction": True}),
      ("ClassificationHead", {"num_labels": 1, "regression": True}),
      ("TaggingHead", {"num_labels": 4}),
    ],
  ),
}


@pytest.mark.parametrize("name", sorted(FINETUNED))
def test_finetuned_official_to_keras_to_official_is_bit_exact(tmp_path, name):
  tasks, hparams, expected_heads = FINETUNED[name]
  source = write_finetuned(tmp_path / "ft", tasks)
  # No --part: a checkpoint with task heads is converted as a fine-tuning model.
  report = convert.convert(str(tmp_path / "ft"), str(tmp_path / "ft.keras"), hparams=hparams)
  assert report["part"] == "finetuned"
  assert report["not_converted"] == ["global_step"] and report["global_step"] == 42
  assert sorted(report["converted"]) == sorted(finetuned_shapes(tasks))

  model = keras.saving.load_model(str(tmp_path / "ft.keras"), compile=False)
  assert type(model).__name__ == "FinetuningModel"
  order = hparams["task_names"] if hparams and "task_names" in hparams else sorted(tasks)
  assert model.task_names == order
  for head, (cls, attributes) in zip(model.heads, expected_heads):
    assert type(head).__name__ == cls, head.task_name
    for key, value in attributes.items():
      assert getattr(head, key) == value, (head.task_name, key)
  # The weights are the checkpoint's, under the one name map.
  original, _ = read_all(source)
  for n, variable in model.official_name_map().items():
    assert np.asarray(variable).tobytes() == original[n].tobytes(), n

  back = convert.convert(str(tmp_path / "ft.keras"), str(tmp_path / "back"), global_step=42)
  assert back["output"].endswith("model.ckpt-42")
  assert_bit_exact(source, back["output"])


def test_finetuned_checkpoint_with_slots_lists_them(tmp_path):
  """As run_finetuning writes it: Adam slots and global_step next to the
  weights; the .keras model holds the weights, the rest is listed."""
  tasks = {"rte": ("classification", 2), "squad": ("qa", None)}
  source = write_finetuned(tmp_path / "ft", tasks, with_slots=True, global_step=9)
  report = convert.official_to_keras(tmp_path / "ft", str(tmp_path / "ft.keras"), part="finetuned")
  original, _ = read_all(source)
  assert sorted(report["converted"] + report["not_converted"]) == sorted(original)
  assert sorted(report["not_converted"]) == sorted(
    [n for n in original if n.endswith(("/adam_m", "/adam_v"))] + ["global_step"]
  )
  back = convert.keras_to_official(tmp_path / "ft.keras", tmp_path / "back", global_step=9)
  written, dtypes = read_all(back["output"])
  assert set(written) == set(report["converted"]) | {"global_step"}
  assert dtypes["global_step"] == tf.int64 and int(written["global_step"]) == 9
  for n in report["converted"]:
    assert written[n].tobytes() == original[n].tobytes(), n
  with pytest.raises(ValueError, match="without optimizer state"):
    convert.keras_to_official(tmp_path / "ft.keras", tmp_path / "slots", with_optimizer_slots=True)


def _finetuning_features(vocab, batch=3, length=24, seed=0):
  rng, features = encoder_features(vocab, batch, length, 15, 8, seed)
  features["task_id"] = np.array([0, 1, 2], "int32")
  for task in ("rte", "sts", "chunk", "squad"):
    features[task + "_eid"] = np.arange(batch, dtype="int32")
  features["rte_label_ids"] = np.array([1, 0, 1], "int32")
  features["sts_targets"] = np.array([0.2, 0.9, 0.5], "float32")
  features["chunk_labels"] = rng.integers(0, 5, size=(batch, length)).astype("int32")
  features["chunk_labels_mask"] = (rng.random((batch, length)) < 0.5).astype("float32")
  features["chunk_labeled_positions"] = rng.integers(0, length, size=(batch, length)).astype(
    "int32"
  )
  features["squad_start_positions"] = np.array([9, 10, 0], "int32")
  features["squad_end_positions"] = np.array([11, 12, 0], "int32")
  features["squad_is_impossible"] = np.array([0, 0, 1], "int32")
  return features


def _flat_outputs(outputs):
  flat = {}
  for key, value in outputs.items():
    if isinstance(value, dict):
      flat.update({f"{key}/{k}": np.asarray(v) for k, v in value.items()})
    else:
      flat[key] = np.asarray(value)
  return flat


@pytest.mark.parametrize(
  "tasks", [["rte"], ["sts"], ["chunk"], ["squad"], ["squad", "rte", "chunk", "sts"]]
)
def test_finetuned_keras_to_official_to_keras_gives_identical_outputs(tmp_path, tasks):
  from electra_tf.finetune.classification.head import ClassificationHead
  from electra_tf.finetune.model import FinetuningModel
  from electra_tf.finetune.qa.head import QAHead
  from electra_tf.finetune.tagging.head import TaggingHead

  make = {
    "rte": lambda: ClassificationHead("rte", 2, name="task_specific_rte"),
    "sts": lambda: ClassificationHead("sts", 1, regression=True, name="task_specific_sts"),
    "chunk": lambda: TaggingHead("chunk", 5, name="task_specific_chunk"),
    "squad": lambda: QAHead("squad", beam_size=3, name="task_specific_squad"),
  }
  bert = dict(TINY_TRANSFORMER, vocab_size=40, max_position_embeddings=32)
  keras.utils.set_random_seed(5)
  model = FinetuningModel(
    bert, [make[t]() for t in tasks], embedding_size=8, name="finetuning_model"
  )
  model.build()
  # Random values everywhere (heads start with zero biases), so a swapped
  # or dropped variable changes the outputs.
  rng = np.random.default_rng(1)
  for variable in model.weights:
    variable.assign(0.2 * rng.standard_normal(variable.shape).astype("float32"))
  model.save(str(tmp_path / "m.keras"))
  features = _finetuning_features(40)
  features["task_id"] = features["task_id"] % len(tasks)
  expected = _flat_outputs(model(features, training=False))

  report = convert.keras_to_official(tmp_path / "m.keras", tmp_path / "official")
  written, dtypes = read_all(report["output"])
  # Exactly the original's names and shapes, float32, and global_step int64.
  spec = finetuned_shapes(
    {
      "rte": ("classification", 2),
      "sts": ("regression", 1),
      "chunk": ("tagging", 5),
      "squad": ("qa", None),
    }
  )
  spec = {
    n: s for n, s in spec.items() if not n.startswith("task_specific/") or n.split("/")[1] in tasks
  }
  assert {n: tuple(v.shape) for n, v in written.items() if n != "global_step"} == spec
  assert all(d == tf.float32 for n, d in dtypes.items() if n != "global_step")
  assert dtypes["global_step"] == tf.int64

  hparams = {
    "task_names": tasks,
    "beam_size": 3,
    "model_hparam_overrides": {"num_attention_heads": 2},
  }
  convert.official_to_keras(tmp_path / "official", str(tmp_path / "back.keras"), hparams=hparams)
  restored = keras.saving.load_model(str(tmp_path / "back.keras"), compile=False)
  actual = _flat_outputs(restored(features, training=False))
  assert sorted(actual) == sorted(expected)
  for key, value in expected.items():
    np.testing.assert_array_equal(actual[key], value, err_msg=key)


def test_finetuned_unknown_task_type_is_an_error(tmp_path):
  write_finetuned(tmp_path / "ft", {"rte": ("classification", 2), "mytask": ("tagging", 4)})
  with pytest.raises(ValueError) as error:
    convert.convert(str(tmp_path / "ft"), str(tmp_path / "m.keras"))
  message = str(error.value)
  assert "'mytask'" in message
  assert '{"task_types": {"mytask": "classification"}}' in message
  assert "classification, regression, tagging, qa" in message
  # Given its type, it converts.
  report = convert.convert(
    str(tmp_path / "ft"), str(tmp_path / "m.keras"), hparams={"task_types": {"mytask": "tagging"}}
  )
  assert dict(report["tasks"])["mytask"] == "tagging, 4 tags"
  assert (
    convert_checkpoint.main(
      ["--input", str(tmp_path / "ft"), "--output", str(tmp_path / "n.keras")]
    )
    == 2
  )


@pytest.mark.parametrize(
  "tasks,hparams,shown",
  [
    # a known regression task with three outputs
    (
      {"sts": ("classification", 3)},
      None,
      "regression task (one output) but task_specific/sts/dense/kernel is [16, 3]",
    ),
    # a QA variant forced by --hparams that the shapes contradict
    (
      {"squad": ("qa", None)},
      {"joint_prediction": False},
      "task_specific/squad/dense_1/kernel: config gives [16, 1], checkpoint has [512, 1]",
    ),
    # the encoder's size from --hparams is checked too
    (
      {"rte": ("classification", 2)},
      {"embedding_size": 12},
      "config gives [40, 12], checkpoint has [40, 8]",
    ),
    (
      {"rte": ("classification", 2), "sts": ("regression", 1)},
      {"task_names": ["rte", "mnli"]},
      "not in the checkpoint: ['mnli']; not in task_names: ['sts']",
    ),
    (
      {"rte": ("classification", 2)},
      {"task_types": {"mnli": "classification"}},
      "task_types names ['mnli'], which the checkpoint has no heads for",
    ),
    (
      {"rte": ("classification", 2)},
      {"task_types": {"rte": "ranking"}},
      "'rte' has type 'ranking'",
    ),
    (
      {"rte": ("classification", 2)},
      {"generator_hidden_size": 0.5},
      "Unknown hparam 'generator_hidden_size'",
    ),
  ],
)
def test_finetuned_mismatches_show_both(tmp_path, tasks, hparams, shown):
  write_finetuned(tmp_path / "ft", tasks)
  with pytest.raises(ValueError) as error:
    convert.official_to_keras(
      tmp_path / "ft", str(tmp_path / "m.keras"), part="finetuned", hparams=hparams
    )
  assert shown in str(error.value)


def test_finetuned_head_with_an_extra_layer_is_an_error(tmp_path):
  shapes = finetuned_shapes({"rte": ("classification", 2)})
  shapes.update(
    {"task_specific/rte/dense_1/kernel": (16, 2), "task_specific/rte/dense_1/bias": (2,)}
  )
  write_finetuned(tmp_path / "ft", None, shapes=shapes)
  with pytest.raises(ValueError) as error:
    convert.official_to_keras(tmp_path / "ft", str(tmp_path / "m.keras"))
  message = str(error.value)
  assert "in the checkpoint but not in the config's model" in message
  assert "task_specific/rte/dense_1/kernel [16, 2]" in message


def test_finetuned_part_options(tmp_path):
  write_finetuned(tmp_path / "ft", {"rte": ("classification", 2)})
  with pytest.raises(ValueError, match="written as a .keras model only"):
    convert.convert(str(tmp_path / "ft"), str(tmp_path / "dir"), part="finetuned")
  with pytest.raises(ValueError, match="already has the original's names"):
    convert.convert(str(tmp_path / "ft"), str(tmp_path / "o"), direction="to-official")
  pretraining = write_layout(tmp_path / "official", "default", with_slots=False)
  with pytest.raises(ValueError, match="not a fine-tuned model"):
    convert.official_to_keras(pretraining, str(tmp_path / "p.keras"), part="finetuned")
  # A pre-training checkpoint with a task head is neither layout.
  shapes = dict(layout_shapes("default"), **spec_task_head_shapes("rte", "classification", 16, 2))
  write_finetuned(tmp_path / "mixed", None, shapes=shapes)
  with pytest.raises(ValueError, match=r"also the scopes \['discriminator_predictions', "):
    convert.official_to_keras(tmp_path / "mixed", str(tmp_path / "m.keras"))


def test_finetuned_encoder_of_tiny_matches_the_original_outputs(original_fixtures, tmp_path):
  """The shared fixtures hold no fine-tuned checkpoint; the nearest is the
  original's tiny pre-training checkpoint. Its encoder plus two heads, as a
  fine-tuned checkpoint: the converted model's encoder gives the original's
  discriminator outputs, and a classification head's logits are the [CLS]
  vector times the checkpoint's kernel."""
  reader = tf.train.load_checkpoint(str(original_fixtures / "models" / "tiny" / "model.ckpt-50"))
  values = {
    n: reader.get_tensor(n)
    for n in reader.get_variable_to_shape_map()
    if n.startswith("electra/") and not n.endswith(("/adam_m", "/adam_v"))
  }
  rng = np.random.default_rng(0)
  heads = dict(
    spec_task_head_shapes("mnli", "classification", 64, 3),
    **spec_task_head_shapes("squad", "qa", 64),
  )
  values.update({n: rng.normal(size=s).astype("float32") for n, s in heads.items()})
  (tmp_path / "ft").mkdir()
  write_name_based_checkpoint(
    tmp_path / "ft" / "model.ckpt-3", values, with_slots=False, global_step=3
  )
  hparams = json.loads((original_fixtures / "models" / "tiny_hparams.json").read_text())
  hparams = {k: hparams[k] for k in ("model_hparam_overrides", "embedding_size", "vocab_size")}
  report = convert.official_to_keras(
    tmp_path / "ft", str(tmp_path / "m.keras"), hparams=dict(hparams, task_names=["mnli", "squad"])
  )
  assert report["not_converted"] == ["global_step"]
  model = keras.saving.load_model(str(tmp_path / "m.keras"), compile=False)
  golden = dict(np.load(original_fixtures / "golden" / "tiny.npz"))
  batch = golden["input_ids"].shape[0]
  features = {
    "input_ids": golden["input_ids"],
    "input_mask": golden["input_mask"],
    "segment_ids": golden["segment_ids"],
    "task_id": np.zeros(batch, "int32"),
    "mnli_label_ids": np.zeros(batch, "int32"),
    "mnli_eid": np.arange(batch),
    "squad_start_positions": np.zeros(batch, "int32"),
    "squad_end_positions": np.zeros(batch, "int32"),
    "squad_is_impossible": np.zeros(batch, "int32"),
    "squad_eid": np.arange(batch),
  }
  encoder = model.encoder({k: features[k] for k in ("input_ids", "input_mask", "segment_ids")})
  np.testing.assert_allclose(
    np.asarray(encoder["sequence_output"]), golden["disc_sequence_output"], atol=1e-5
  )
  out = model(features, training=False)
  cls = golden["disc_sequence_output"][:, 0]
  expected = (
    cls @ values["task_specific/mnli/dense/kernel"] + values["task_specific/mnli/dense/bias"]
  )
  np.testing.assert_allclose(np.asarray(out["mnli"]["logits"]), expected, atol=1e-4)
  # start logits: sequence · dense kernel, −1000 outside the second segment and [CLS]
  start = np.asarray(out["squad"]["start_logits"])
  allowed = golden["input_mask"] * golden["segment_ids"]
  allowed[:, 0] = 1
  raw = (golden["disc_sequence_output"] @ values["task_specific/squad/dense/kernel"])[..., 0] + (
    values["task_specific/squad/dense/bias"][0]
  )
  np.testing.assert_allclose(start, raw + 1000.0 * (allowed - 1.0), atol=1e-3)

"""The trained length travels with the model: an export with no length flag
serves the length the model was trained at (its run's `config.json`, a task
model's preprocessor), a given length is used and printed, and a length
above the position table is refused in one line."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf import convert
from electra_tf import export_saved_model
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.serving import export as export_lib
from electra_tf.serving import loading as serving_loading
from electra_tf.serving import portable
from electra_tf.sources import any_format
from electra_tf.training import finetuning_run
from electra_tf.training import pretraining_run
from tests.helpers import finetuning_testdata
from tests.helpers import pretraining_data
from tests.helpers.task_models import TINY_SIZE
from tests.helpers.task_models import pretrained_dir

PRETRAINING_LENGTH = 256
QA_LENGTH = 384


@pytest.fixture(scope="module")
def pretraining_run_256(tmp_path_factory):
  """A tiny pre-training run at 256 tokens (two steps); returns its model dir."""
  root = tmp_path_factory.mktemp("pretrain256")
  pretraining_data.make_data_dir(root, max_seq_length=PRETRAINING_LENGTH, num_examples=8)
  hparams = pretraining_data.self_made_hparams(
    max_seq_length=PRETRAINING_LENGTH, num_train_steps=2, save_checkpoints_steps=2, do_eval=False
  )
  config = PretrainingConfig("m", str(root), **hparams)
  pretraining_run.train_or_eval(config)
  return config.model_dir


def _packed(length, batch=1):
  """A request whose every position is a real token."""
  ids = np.full([batch, length], 7, np.int32)
  ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP] of pretraining_data's vocab
  return {
    "input_ids": tf.constant(ids),
    "input_mask": tf.ones([batch, length], tf.int32),
    "segment_ids": tf.zeros([batch, length], tf.int32),
  }


def _signature_length(export_path):
  module = serving_loading.load(str(export_path))
  spec = module.signatures["serve_ids"].structured_input_signature[1]["input_ids"]
  return module, spec.shape[1]


def test_lengths_given_recorded_or_default_and_where_from(pretraining_run_256, tmp_path):
  model, config = export_lib.load_model(checkpoint=pretraining_run_256)
  recorded = any_format.recorded_inputs(pretraining_run_256)
  assert recorded.max_seq_length == PRETRAINING_LENGTH
  assert recorded.max_query_length is None  # a pre-training run has no question budget
  run_config = os.path.join(pretraining_run_256, "config.json")
  lengths = export_lib.serving_lengths(model, "discriminator", pretraining_run_256, config=config)
  assert (lengths.max_seq_length, lengths.max_query_length) == (PRETRAINING_LENGTH, None)
  assert lengths.line == f"Serving max_seq_length 256 (recorded in {run_config})"
  given = export_lib.serving_lengths(model, "discriminator", pretraining_run_256, 64)
  assert given.line == "Serving max_seq_length 64 (given: --max-seq-length)"
  # The same network without its run dir (a bare .keras file) records nothing.
  keras_path = str(tmp_path / "disc.keras")
  convert.convert(pretraining_run_256, keras_path, part="discriminator")
  default = export_lib.serving_lengths(model, "discriminator", keras_path)
  assert default.max_seq_length == any_format.DEFAULT_MAX_SEQ_LENGTH
  assert "(the default:" in default.line and "records no trained length" in default.line


def test_a_length_above_the_position_table_is_one_line(pretraining_run_256, tmp_path, capsys):
  positions = model_dir_lib.read_run_config(pretraining_run_256)["architecture"]["discriminator"][
    "max_position_embeddings"
  ]
  argv = ["--checkpoint", pretraining_run_256, "--export-dir", str(tmp_path / "out")]
  for extra in (["--max-seq-length", str(positions + 1)], ["--format", "onnx"]):
    if extra[0] == "--format":
      extra += ["--max-seq-length", str(positions * 2)]
    assert export_saved_model.main(argv + extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"exceeds the model's max_position_embeddings {positions}" in err
  assert not os.path.exists(tmp_path / "out" / "1")


@pytest.mark.slow
def test_pretraining_run_at_256_serves_256_with_no_flag(pretraining_run_256, tmp_path, capsys):
  out = tmp_path / "serving"
  argv = ["--checkpoint", pretraining_run_256, "--export-dir", str(out)]
  assert export_saved_model.main(argv) == 0
  assert "Serving max_seq_length 256 (recorded in" in capsys.readouterr().out
  module, length = _signature_length(out / "1")
  assert length == PRETRAINING_LENGTH
  result = module.signatures["serve_ids"](**_packed(PRETRAINING_LENGTH))
  assert result["rtd_probs"].shape == (1, PRETRAINING_LENGTH)


def _squad_data(data_dir):
  """SQuAD 2.0-format train/dev files with contexts of ~150 words (one
  window at 384 tokens, several at 128)."""
  words = finetuning_testdata.WORDS[:40]
  context = " ".join(words[i % len(words)] for i in range(150)) + " paris is the capital of france"
  qas = [
    {
      "id": f"q{i}",
      "question": question,
      "is_impossible": False,
      "answers": [{"text": answer, "answer_start": context.index(answer)}],
    }
    for i, (question, answer) in enumerate(
      [("what is the capital of france ?", "paris"), ("paris is the capital of what ?", "france")]
    )
  ]
  paragraphs = [{"context": context, "qas": qas}]
  for split in ("train", "dev"):
    finetuning_testdata.write_task_file(
      data_dir, "squad", f"{split}.json", finetuning_testdata.squad_json(paragraphs)
    )


@pytest.fixture(scope="module")
def qa_trial_384(tmp_path_factory):
  """A tiny SQuAD trial fine-tuned at 384 tokens; returns its trial dir."""
  data_dir, vocab_size = finetuning_testdata.make_data_dir(tmp_path_factory.mktemp("qa384"))
  _squad_data(data_dir)
  hparams = finetuning_testdata.tiny_hparams(
    vocab_size,
    task_names=["squad"],
    max_seq_length=QA_LENGTH,
    max_query_length=16,
    init_checkpoint=None,
    do_eval=False,
    num_train_epochs=1.0,
    train_batch_size=2,
  )
  config = finetuning_run.make_config("qa", data_dir, hparams)
  trial_dir = config.model_dir + "_1"
  finetuning_run.run_finetuning(config)
  return trial_dir


@pytest.mark.slow
def test_qa_trial_at_384_serves_384_with_no_flag_savedmodel_and_onnx(
  qa_trial_384, tmp_path, capsys
):
  with open(os.path.join(qa_trial_384, "config.json"), encoding="utf-8") as f:
    hparams = json.load(f)["hparams"]
  assert (hparams["max_seq_length"], hparams["max_query_length"]) == (QA_LENGTH, 16)

  out = tmp_path / "serving"
  argv = ["--checkpoint", qa_trial_384, "--model", "task", "--export-dir", str(out)]
  assert export_saved_model.main(argv) == 0
  printed = capsys.readouterr().out
  assert "Serving max_seq_length 384, max_query_length 16 (recorded in" in printed
  module, length = _signature_length(out / "1")
  assert length == QA_LENGTH
  result = module.signatures["serve_ids"](**_packed(QA_LENGTH))
  assert result["start_logits"].shape == (1, QA_LENGTH)
  # A raw-text request longer than 384 tokens is packed to 384.
  question, context = tf.constant(["what is the capital ?"]), tf.constant(["paris " * 500])
  text = module.signatures["serving_default"](text_a=question, text_b=context)
  assert int(tf.reduce_sum(text["input_mask"])) == QA_LENGTH

  onnx_dir = tmp_path / "onnx"
  argv = ["--checkpoint", qa_trial_384, "--model", "task", "--export-dir", str(onnx_dir)]
  assert export_saved_model.main(argv + ["--format", "onnx"]) == 0
  assert "Serving max_seq_length 384" in capsys.readouterr().out
  outputs = portable.run_exported(
    str(onnx_dir / "squad.onnx"), {k: v.numpy() for k, v in _packed(QA_LENGTH).items()}
  )
  assert outputs["start_logits"].shape[-1] == QA_LENGTH
  with open(onnx_dir / "tokenizer_config.json", encoding="utf-8") as f:
    assert json.load(f)["model_max_length"] == QA_LENGTH
  with open(onnx_dir / "squad.onnx.json", encoding="utf-8") as f:
    assert json.load(f)["max_seq_length"] == str(QA_LENGTH)


def test_task_models_keep_their_length_through_keras_and_preset(tmp_path):
  model_dir = str(tmp_path / "pretrained")
  pretrained_dir(model_dir)
  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(
    model_dir,
    os.path.join(model_dir, "vocab.txt"),
    max_seq_length=48,
    max_query_length=12,
    **TINY_SIZE,
  )
  keras_path = str(tmp_path / "qa.keras")
  qa.save(keras_path)
  preset = str(tmp_path / "preset")
  qa.save_to_preset(preset)
  for path, restored in (
    (keras_path, keras.saving.load_model(keras_path)),
    (preset, electra_tf.ElectraQuestionAnswerer.from_preset(preset)),
  ):
    preprocessor = restored.preprocessor
    assert (preprocessor.max_seq_length, preprocessor.max_query_length) == (48, 12)
    recorded = any_format.recorded_inputs(path)
    assert (recorded.max_seq_length, recorded.max_query_length) == (48, 12)
    model = export_lib.load_model(checkpoint=path, kind="task")[0]
    lengths = export_lib.serving_lengths(model, "task", path, recorded=recorded)
    assert (lengths.max_seq_length, lengths.max_query_length) == (48, 12)


def test_from_checkpoint_of_a_fine_tuned_trial_takes_its_length(qa_trial_384):
  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(qa_trial_384)
  assert (qa.preprocessor.max_seq_length, qa.preprocessor.max_query_length) == (QA_LENGTH, 16)


@pytest.mark.slow
def test_a_qa_trial_s_question_budget_is_cut_to_a_shorter_length(qa_trial_384, tmp_path, capsys):
  """Sweep 14 (37, 77, 81): the trial's budget (16) at a length of 16 left no
  context token: from_checkpoint stopped, and an export served questions that
  filled the whole input. A recorded budget is cut to S - 4; one given
  explicitly is refused; a task_name the trial was not fine-tuned for is said."""
  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(qa_trial_384, max_seq_length=16)
  assert qa.preprocessor.max_query_length == 12
  assert "a trial fine-tuned for ['squad']" in capsys.readouterr().err  # the joint head is not its

  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(
    qa_trial_384, max_seq_length=16, task_name="squadv1"
  )
  err = capsys.readouterr().err
  assert "task_name='squadv1' is not one of them, so it gets a new head" in err

  argv = ["--checkpoint", qa_trial_384, "--model", "task", "--max-seq-length", "16"]
  assert export_saved_model.main(argv + ["--export-dir", str(tmp_path / "cut")]) == 0
  assert "max_query_length 12 (recorded in" in capsys.readouterr().out
  refused = argv + ["--max-query-length", "13", "--export-dir", str(tmp_path / "long")]
  assert export_saved_model.main(refused) == 2
  assert (
    "max_query_length 13 (given: --max-query-length) leaves no room for the context in "
    "max_seq_length 16 (given: --max-seq-length); pass --max-query-length 12 or less"
  ) in capsys.readouterr().err
  assert not (tmp_path / "long").exists()
  # The trial's encoder converted alone keeps its recorded attention heads (2;
  # the size rule max(1, H // 64) would give 1 and compute another attention).
  keras_path = str(tmp_path / "encoder.keras")
  report = convert.convert(qa_trial_384, keras_path, part="discriminator")
  assert report["hparams"]["model_hparam_overrides"]["num_attention_heads"] == 2
  assert not [n for n in report["notes"] if "attention heads are not stored" in n]
  encoder = keras.saving.load_model(keras_path, compile=False)
  heads = {
    layer.get_config()["num_attention_heads"]
    for layer in encoder._flatten_layers()  # pylint: disable=protected-access
    if "num_attention_heads" in layer.get_config()
  }
  assert heads == {2}

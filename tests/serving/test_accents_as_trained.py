"""`strip_accents` as trained: a lower-cased model that keeps accents (its
run's `config.json` records `strip_accents: false`) is tokenised the same way
by fine-tuning, the task models' preprocessor, the exported SavedModel and
the published Hugging Face tokenizer."""

import json

import pytest
import tensorflow as tf

import electra_tf
from electra_tf import convert
from electra_tf import export_saved_model
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification.tasks import InputExample
from electra_tf.text import wordpiece
from electra_tf.training import finetuning_run
from tests.helpers import model_formats

TEXT = "Café Ökonomie"
WORDS = ["café", "cafe", "ökonomie", "okonomie"]


@pytest.mark.slow  # an export and a publish (about 20 s)
def test_a_model_that_keeps_accents_is_tokenised_alike_everywhere(tmp_path):
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
  tokens += [f"w{i}" for i in range(model_formats.DIMS["V"] - len(tokens))]
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in tokens))
  ids = {t: i for i, t in enumerate(tokens)}
  expected = [ids["[CLS]"], ids["café"], ids["ökonomie"], ids["[SEP]"]]
  # The original's default would give the stripped words.
  stripping = wordpiece.FullTokenizer(str(vocab))
  assert stripping.convert_tokens_to_ids(stripping.tokenize(TEXT)) == [ids["cafe"], ids["okonomie"]]

  official = model_formats.official_checkpoint(tmp_path / "official")
  model_dir = tmp_path / "data" / "models" / "accents"
  hparams = dict(model_formats.PRETRAINING_HPARAMS, vocab_file=str(vocab), strip_accents=False)
  convert.convert(str(official), str(model_dir), hparams=json.dumps(hparams))
  # The run's config.json, as run_pretraining writes it.
  converted = json.loads((model_dir / "converted_hparams.json").read_text())
  run_config = PretrainingConfig("accents", str(tmp_path / "data"), **converted)
  model_dir_lib.write_run_config(run_config)
  recorded = json.loads((model_dir / "config.json").read_text())
  assert recorded["vocab"]["strip_accents"] is False
  assert recorded["vocab"]["do_lower_case"] is True

  # Fine-tuning from it: the tokenizer and a classification task's features.
  config = finetuning_run.make_config(
    "ft",
    str(tmp_path / "data"),
    {"init_checkpoint": str(model_dir), "task_names": ["rte"], "max_seq_length": 8},
  )
  assert config.strip_accents is False and config.do_lower_case is True
  tokenizer = finetuning_run.finetuning_tokenizer(config)
  (task,) = task_builder.get_tasks(config, tokenizer)
  (features,) = task.featurize(InputExample(0, "rte", TEXT, label="entailment"), False)
  assert features["input_ids"][:4] == expected

  # The task models' preprocessor.
  classifier = electra_tf.ElectraClassifier.from_checkpoint(str(model_dir), num_classes=2)
  packed = classifier.preprocessor(tf.constant([TEXT]))
  assert packed["input_ids"].numpy()[0, :4].tolist() == expected

  # The SavedModel's in-graph tokenizer (the command line, loaded in-process).
  export_dir = tmp_path / "export"
  argv = ["--checkpoint", str(model_dir), "--export-dir", str(export_dir), "--max-seq-length", "8"]
  assert export_saved_model.main(argv) == 0
  (version,) = list(export_dir.iterdir())
  served = tf.saved_model.load(str(version)).signatures["serving_default"](
    text_a=tf.constant([TEXT]), text_b=tf.constant([""])
  )
  assert served["input_ids"].numpy()[0, :4].tolist() == expected

  # The Hugging Face tokenizer.json.
  tokenizers = pytest.importorskip("tokenizers")
  hf_dir = tmp_path / "hf"
  convert.publish(str(model_dir), str(hf_dir), to="huggingface")
  steps = json.loads((hf_dir / "tokenizer.json").read_text())["normalizer"]["normalizers"]
  kinds = [step["type"] for step in steps]
  assert "Lowercase" in kinds and "NFD" not in kinds  # lower-cases, keeps accents
  hf = tokenizers.Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
  assert hf.encode(TEXT).ids == expected
  tokenizer_config = json.loads((hf_dir / "tokenizer_config.json").read_text())
  assert tokenizer_config["strip_accents"] is False and tokenizer_config["do_lower_case"] is True

"""Newcomer sweep 20's bad cases (bench/reports/newcomer_sweep_20.md), one
test per class: a vocab kept in the corpus folder, a flag given twice, a
model name with white space, a pre-training preset for fine-tuning, a Hugging
Face folder without safetensors, and tag ids that are not tag ids."""

import json

import pytest

import electra_tf
from electra_tf import build_pretraining_dataset
from electra_tf import convert_checkpoint
from electra_tf import run_finetuning
from electra_tf import run_pretraining
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.pretraining_data import SPECIAL
from tfrecords_tools import build_vocab

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]


def test_a_vocab_kept_in_the_corpus_folder_is_refused(tmp_path, capsys):
  """`build_vocab --output c/vocab.txt` then the builder over `c`: the vocab
  and its settings file were read as text (96 examples instead of 70)."""
  corpus = tmp_path / "c"
  corpus.mkdir()
  (corpus / "a.txt").write_text("the cat sat\n" * 20)
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output", str(corpus / "v.txt")]
  assert build_vocab.main(argv) == 2
  assert one_line(capsys).endswith("write it outside the corpus folder")
  (corpus / "vocab.txt").write_text("\n".join(SPECIAL + ["the", "cat", "sat"]) + "\n")
  argv = ["--corpus-dir", str(corpus), "--vocab-file", str(corpus / "vocab.txt")]
  argv += ["--output-dir", str(tmp_path / "out"), "--num-processes", "1"]
  assert build_pretraining_dataset.main(argv) == 2
  assert "is in --corpus-dir" in one_line(capsys)
  assert not (tmp_path / "out").exists()


def test_a_run_flag_given_twice_is_refused(tmp_path, capsys):
  """`--hparams file.json --hparams '{...}'`: argparse kept the second and
  the run blamed a value the dropped file had set."""
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", "a.json"]
  with pytest.raises(SystemExit) as e:
    run_pretraining.main(argv + ["--hparams", "{}"])
  assert e.value.code == 2
  assert "--hparams is given more than once; give it once" in capsys.readouterr().err


def test_a_model_name_with_white_space_around_it_is_refused(tmp_path, capsys):
  """`--model-name "n "` trained into `models/n ` (a later `n` finds nothing)."""
  argv = ["--data-dir", str(tmp_path), "--model-name", "n ", "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert one_line(capsys).endswith(
    "--model-name 'n ' starts or ends with white space; expected the name of a model "
    "directory (such as 'n')"
  )


def test_a_pre_training_preset_for_fine_tuning_is_named(tmp_path, capsys):
  """`run_finetuning --hparams debug` (its help listed the presets): "Unknown
  hparam 'num_train_steps'"."""
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", "debug"]
  assert run_finetuning.main(argv) == 2
  assert "'debug' names a packaged pre-training preset" in one_line(capsys)
  with pytest.raises(SystemExit):
    run_finetuning.main(["--help"])
  assert "preset" not in capsys.readouterr().out


def test_a_hugging_face_folder_without_safetensors_is_one_line(tmp_path, capsys):
  """A folder with `pytorch_model.bin` only: a 40-line FileNotFoundError traceback."""
  hf = tmp_path / "hf"
  hf.mkdir()
  config = {
    "architectures": ["ElectraForPreTraining"],
    "model_type": "electra",
    "vocab_size": 8,
    "embedding_size": 8,
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
  }
  (hf / "config.json").write_text(json.dumps(config))
  (hf / "pytorch_model.bin").write_bytes(b"not read")
  (hf / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
  argv = ["--input", str(hf), "--output", str(tmp_path / "back.keras")]
  assert convert_checkpoint.main(argv) == 2
  line = one_line(capsys)
  assert "has no model.safetensors (it holds pytorch_model.bin)" in line
  assert line.endswith("save_pretrained(..., safe_serialization=True)")
  assert not (tmp_path / "back.keras").exists()


@pytest.mark.parametrize(
  "tags, message",
  [
    ([0, 1, 2.5], r"tag 2\.5 is not a tag id \(an integer\)"),
    ([0, 1, 7], r"tag 7 is outside \[0, 3\)"),
    ([0, True, 1], r"tag True is not a tag id"),
  ],
)
def test_tag_ids_must_be_tag_ids(tags, message):
  """`wordpiece_labels(["the cat sat"], [[0, 1, 2.5]])` gave 2.5 as tag 2."""
  preprocessor = ElectraTextPreprocessor(
    ElectraTokenizer(vocabulary=VOCAB), max_seq_length=8, packing="tagging"
  )
  tagger = electra_tf.ElectraTokenTagger(
    dict(TINY_ENCODER, vocab_size=len(VOCAB)), 3, preprocessor=preprocessor
  )
  with pytest.raises(ValueError, match=message):
    tagger.wordpiece_labels(["the cat sat"], [tags])
  assert tagger.wordpiece_labels(["the cat sat"], [[0, -1, 2]])[0, 1:4].tolist() == [0, -1, 2]

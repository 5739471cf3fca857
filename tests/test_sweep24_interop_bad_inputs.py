"""Newcomer sweep 24: converting and publishing models of other origins
(a Git LFS clone, a sharded Hugging Face save, --hparams that contradict
the model)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert_checkpoint
from electra_tf.interop import huggingface
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line

LFS_POINTER = (
  "version https://git-lfs.github.com/spec/v1\n"
  "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
  "size 145748\n"
)
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]


def _hf_dir(tmp_path):
  """A tiny discriminator published as a Hugging Face directory."""
  from electra_tf.models.electra_discriminator import ElectraDiscriminator

  bert = dict(TINY_ENCODER, max_position_embeddings=16, type_vocab_size=2)
  model = ElectraDiscriminator(bert, embedding_size=8, include_head=True, name="discriminator")
  model.build()
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in TOKENS), encoding="utf-8")
  huggingface.write_huggingface(huggingface.discriminator_part(model), tmp_path / "hf", vocab)
  return tmp_path / "hf"


def test_git_lfs_pointers_are_named(tmp_path, capsys):
  """#47: a clone without Git LFS (model.safetensors a 130-byte pointer) was
  'damaged or only partly copied? copy it again'."""
  from electra_tf.text import vocab as vocab_lib

  hf = tmp_path / "hf"
  hf.mkdir()
  (hf / "config.json").write_text(
    json.dumps({"model_type": "electra", "architectures": ["ElectraForPreTraining"]})
  )
  (hf / "model.safetensors").write_text(LFS_POINTER)
  argv = ["--input", str(hf), "--output", str(tmp_path / "d.keras")]
  assert convert_checkpoint.main(argv) == 2
  size = len(LFS_POINTER)
  assert one_line(capsys).endswith(
    f"{str(hf / 'model.safetensors')!r} is a Git LFS pointer ({size} bytes), not the file: "
    "run git lfs pull in that clone"
  )
  assert not (tmp_path / "d.keras").exists()
  # A vocab (WordPiece or SentencePiece: the same read) and a .keras file.
  (tmp_path / "vocab.txt").write_text(LFS_POINTER)
  with pytest.raises(ValueError, match=r"vocab.txt' is a Git LFS pointer \(\d+ bytes\)"):
    vocab_lib.load_vocab(str(tmp_path / "vocab.txt"))
  (tmp_path / "m.keras").write_text(LFS_POINTER)
  assert convert_checkpoint.main(["--input", str(tmp_path / "m.keras"), "--output", "x"]) == 2
  assert "m.keras' is a Git LFS pointer" in one_line(capsys)


def test_a_sharded_hugging_face_save_is_read_through_its_index(tmp_path, capsys):
  """#40: model-0000N-of-0000M.safetensors with model.safetensors.index.json
  was 'has no model.safetensors ... re-save it with safe_serialization=True'."""
  from safetensors.numpy import load_file
  from safetensors.numpy import save_file

  hf = _hf_dir(tmp_path)
  whole = load_file(str(hf / huggingface.WEIGHTS_FILE))
  os.remove(hf / huggingface.WEIGHTS_FILE)
  names = sorted(whole)
  weight_map = {}
  for i, shard_names in enumerate((names[::2], names[1::2])):
    shard = f"model-0000{i + 1}-of-00002.safetensors"
    save_file({n: whole[n] for n in shard_names}, str(hf / shard), metadata={"format": "pt"})
    weight_map.update(dict.fromkeys(shard_names, shard))
  index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
  (hf / huggingface.WEIGHTS_INDEX_FILE).write_text(json.dumps(index))
  model, _, name_map, _ = huggingface.load_huggingface(hf)
  for official, variable in name_map.items():
    value = whole[huggingface.hf_name(official)]
    value = value.T if huggingface.is_transposed(official) else value
    np.testing.assert_array_equal(variable.numpy(), value)
  argv = ["--input", str(hf), "--output", str(tmp_path / "d.keras")]
  assert convert_checkpoint.main(argv) == 0
  capsys.readouterr()
  os.remove(hf / "model-00002-of-00002.safetensors")
  assert convert_checkpoint.main([*argv[:3], str(tmp_path / "e.keras")]) == 2
  assert one_line(capsys).endswith(
    "names the shard 'model-00002-of-00002.safetensors', which "
    f"{str(hf)!r} does not hold: copy every model-*-of-*.safetensors file"
  )


def test_label_names_of_a_task_the_model_lacks_are_refused(tmp_path, capsys):
  """#14: label_names for 'rte' over an SST-only model were dropped silently."""
  from electra_tf.finetune.classification.head import ClassificationHead
  from electra_tf.finetune.model import FinetuningModel
  from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

  head = ClassificationHead("sst", 2, name="task_specific_sst")
  model = FinetuningModel(TINY_ENCODER, [head], embedding_size=8)
  model.build()
  tensors = {n: np.zeros(v.shape, np.float32) for n, v in model.official_name_map().items()}
  (tmp_path / "sst").mkdir()
  write_name_based_checkpoint(tmp_path / "sst" / "model.ckpt-3", tensors)
  (tmp_path / "sst" / "vocab.txt").write_text("".join(t + "\n" for t in TOKENS))
  hparams = {
    "model_hparam_overrides": {"num_attention_heads": 2},
    "label_names": {"rte": ["entailment", "not_entailment"]},
  }
  argv = ["--input", str(tmp_path / "sst"), "--output", str(tmp_path / "hf")]
  argv += ["--to", "huggingface", "--hparams", json.dumps(hparams)]
  assert convert_checkpoint.main(argv) == 2
  assert one_line(capsys).endswith(
    "--hparams label_names names task 'rte', but the model's heads are ['sst']"
  )
  assert not (tmp_path / "hf").exists()


def test_hparams_that_contradict_the_runs_config_json_are_refused(tmp_path, capsys):
  """#09: 4 attention heads over a run whose config.json records 2 converted
  with rc 0 (the same weights then compute another function)."""
  from electra_tf.checkpoints import model_dir
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.models.electra_pretrainer import built_pretrainer
  from tests.helpers.pretraining_data import self_made_hparams

  hparams = self_made_hparams()
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  model = built_pretrainer(config)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model), config.model_dir, 1).save()
  model_dir.write_run_config(config)
  overrides = dict(hparams["model_hparam_overrides"], num_attention_heads=4)
  argv = ["--input", config.model_dir, "--output", str(tmp_path / "d.keras")]
  argv += ["--part", "discriminator"]
  argv += ["--hparams", json.dumps({"model_hparam_overrides": overrides})]
  assert convert_checkpoint.main(argv) == 2
  err = one_line(capsys)
  assert f"--hparams contradict {os.path.join(config.model_dir, 'config.json')}" in err
  assert "discriminator.num_attention_heads 2 → 4" in err
  assert not (tmp_path / "d.keras").exists()

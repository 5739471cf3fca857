"""Newcomer sweep 24's bad cases (bench/reports/newcomer_sweep_24.md) of
what a stopped or mixed-up run leaves for the next command, one test per
class."""

import json
import types

import pytest

from electra_tf import demo
from electra_tf.data import records_info
from electra_tf.text.vocab import Vocab

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _vocab(path, words):
  path.write_text("\n".join(SPECIAL + words) + "\n")
  return Vocab.read(str(path))


def test_a_demo_rerun_over_a_stopped_model_keeps_its_vocab_and_records(
  tmp_path, monkeypatch, capsys
):
  """Sweep 24 #03: the demo killed (or stopped by Ctrl-C, "re-run to
  resume") in its pretrain stage, then run again: it rebuilt vocab.txt with
  other ids and the records, then refused to resume the model made with the
  old vocab. The re-run keeps what the model was made from."""
  out = tmp_path / "demo"
  (out / "corpus").mkdir(parents=True)
  vocab = _vocab(out / "vocab.txt", ["a", "b"])
  (out / "pretrain_tfrecords").mkdir()
  records_info.write_records_info(
    str(out / "pretrain_tfrecords"), vocab, {"max_seq_length": 128, "num_out_files": 8}
  )
  (out / "models" / "demo").mkdir(parents=True)
  (out / "models" / "demo" / "config.json").write_text(json.dumps({"vocab": vocab.fingerprint()}))
  demo._write_marker(str(out), {"corpus_mb": 0.3, "vocab_size": 300})
  ran = []
  stages = {
    name: (lambda out_, args, name=name: ran.append(name), reads, writer)
    for name, (_, reads, writer) in demo.STAGES.items()
  }
  monkeypatch.setattr(demo, "STAGES", stages)
  flags = ["--output-dir", str(out), "--corpus-mb", "0.3"]
  assert demo.main(flags + ["--vocab-size", "300"]) == 0
  assert ran == ["pretrain", "eval", "export", "score"]
  assert "=== stage vocab: kept (the model in " in capsys.readouterr().out
  # Another --vocab-size cannot resume that model: refused before any stage.
  with pytest.raises(SystemExit) as e:
    demo.main(flags + ["--vocab-size", "500"])
  assert e.value.code == 2
  assert (
    f"--vocab-size 500: the model in '{out}/models/demo' was pre-trained with "
    f"'{out}/vocab.txt', made with --vocab-size 300: give those to resume it, or a new "
    "--output-dir" in capsys.readouterr().err
  )
  # Records of another vocab are rebuilt; a model of another vocab keeps nothing.
  args = types.SimpleNamespace(corpus_mb=0.3, vocab_size=300)
  other = _vocab(tmp_path / "other.txt", ["c"])
  records_info.write_records_info(
    str(out / "pretrain_tfrecords"), other, {"max_seq_length": 128, "num_out_files": 8}
  )
  assert demo.kept_stages(str(out), args) == {"corpus", "vocab"}
  (out / "models" / "demo" / "config.json").write_text(json.dumps({"vocab": other.fingerprint()}))
  assert demo.kept_stages(str(out), args) == set()


def test_an_interrupted_finetuning_trial_is_exported_and_evaluated_with_a_warning(tmp_path):
  """Sweep 24 #02: a trial killed before training (only its step-0 save)
  was exported and scored (accuracy 50 in the results) without a word."""
  from electra_tf.checkpoints import model_dir as model_dir_lib

  trial = tmp_path / "sst_model_1"
  trial.mkdir()
  (trial / "config.json").write_text(
    json.dumps(
      {
        "format": model_dir_lib.RUN_CONFIG_FORMAT,
        "version": model_dir_lib.RUN_CONFIG_VERSION,
        "kind": model_dir_lib.KIND_FINETUNING,
      }
    )
  )
  # An older trial (no planned steps recorded) says nothing.
  assert model_dir_lib.unfinished_trial_warning(trial, "exporting") is None
  model_dir_lib.record_planned_steps(str(trial), 20000)
  for step in (0, 20000):
    (trial / f"model.ckpt-{step}.index").write_bytes(b"")
  (trial / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-0"\n')
  assert model_dir_lib.unfinished_trial_warning(str(trial) + "/", "exporting") == (
    f"warning: '{trial}' stopped at step 0 of 20000 (an interrupted fine-tuning run): "
    "re-run run_finetuning to finish it; exporting it as it is"
  )
  prefix = str(trial / "model.ckpt-0")
  assert "step 0 of 20000" in model_dir_lib.unfinished_trial_warning(prefix, "evaluating")
  # A finished trial: no warning.
  (trial / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-20000"\n')
  assert model_dir_lib.unfinished_trial_warning(trial, "exporting") is None

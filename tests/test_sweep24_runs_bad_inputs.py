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
    f"'{trial}' stopped at step 0 of 20000 (an interrupted fine-tuning run): "
    "re-run run_finetuning to finish it; exporting it as it is"
  )
  prefix = str(trial / "model.ckpt-0")
  assert "step 0 of 20000" in model_dir_lib.unfinished_trial_warning(prefix, "evaluating")
  # A finished trial: no warning.
  (trial / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-20000"\n')
  assert model_dir_lib.unfinished_trial_warning(trial, "exporting") is None


def test_a_shard_of_another_build_copied_into_a_records_folder_is_refused(tmp_path):
  """Sweep 24 #11: another build's shard copied beside a build's shards
  and records_info.json was trained on silently (its ids mean other tokens)."""
  import shutil

  from tests.helpers import reference_hard_text
  from tfrecords_tools import text_corpus

  corpus, vocab = reference_hard_text.write_corpus(
    tmp_path, num_files=2, lines_per_file=40, words="a b c the of".split(), max_words=9, seed=1
  )
  for out, n in (("d", 2), ("other", 1)):
    text_corpus.build_pretraining_dataset(
      text_corpus.BuildOptions(
        corpus_dir=corpus, vocab_file=vocab, output_dir=str(tmp_path / out), num_out_files=n
      )
    )
  d = tmp_path / "d"
  shards = ["pretrain_data.tfrecord-0-of-2", "pretrain_data.tfrecord-1-of-2"]
  assert sorted(records_info.read_records_info(str(d))["shards"]) == shards
  read = Vocab.read(vocab)
  records_info.check_records_vocab([str(d / s) for s in shards], read)  # the build's own
  shutil.copy(tmp_path / "other" / "pretrain_data.tfrecord-0-of-1", d)
  files = sorted(str(p) for p in d.glob("pretrain_data.tfrecord*"))
  with pytest.raises(ValueError) as e:
    records_info.check_records_vocab(files, read)
  assert str(e.value) == (
    f"'{d}/pretrain_data.tfrecord-0-of-1' is not one of the 2 shards '{d}/records_info.json' "
    f"describes (built with vocab '{vocab}'): it comes from another build; move it to a "
    "folder of its own (with its build's records_info.json)"
  )
  # A shard replaced by another build's (the same name, another size) is named too.
  shutil.copy(tmp_path / "other" / "pretrain_data.tfrecord-0-of-1", d / shards[0])
  with pytest.raises(ValueError, match="it was replaced by another build's shard"):
    records_info.check_records_vocab([str(d / shards[0])], read)
  # An older build's info (no shard list) is read as before.
  info = json.loads((d / "records_info.json").read_text())
  del info["shards"]
  (d / "records_info.json").write_text(json.dumps(info))
  records_info.check_records_vocab(files, read)
  # do_train=false evaluation of such a trial ends its results text with the warning.
  from electra_tf.training import finetuning_run

  config = types.SimpleNamespace(
    results_txt=str(tmp_path / "sst_results.txt"), results_json=str(tmp_path / "sst_results.json")
  )
  finetuning_run.write_results(config, [{"sst": {"accuracy": 50.0}}], "'t' stopped at step 0")
  assert (tmp_path / "sst_results.txt").read_text().splitlines() == [
    "sst: accuracy: 50.00",
    "warning: 't' stopped at step 0",
  ]


def test_a_killed_glue_sentences_corpus_leaves_no_part_of_a_corpus(tmp_path, monkeypatch):
  """Sweep 24 #04: glue_sentences_corpus killed by SIGKILL while writing
  left 406 of its 1,000 files under their final names (build_vocab then
  counted part of the corpus) and a hidden .tmp the re-run kept. The files
  are written into a hidden staging folder that replaces corpus/ in one
  rename; a dead run's staging folder goes on the next run."""
  import os
  import subprocess

  from tfrecords_tools import glue_sentences_corpus

  glue = tmp_path / "glue" / "SST-2"
  glue.mkdir(parents=True)
  rows = "".join(f"sentence number {i} here\t1\n" for i in range(40))
  (glue / "train.tsv").write_text("sentence\tlabel\n" + rows)
  out = tmp_path / "out"
  dead = subprocess.Popen(["true"])
  dead.wait()
  leftover = out / f".corpus.{dead.pid}.tmp" / "corpus"
  leftover.mkdir(parents=True)
  (leftover / "glue_sentences_0.txt").write_text("a dead run's file\n")
  real_write = glue_sentences_corpus.write_atomic
  seen = []

  def write(path, text):
    seen.append(sorted(os.listdir(out)))  # what a kill at this moment would leave
    real_write(path, text)

  monkeypatch.setattr(glue_sentences_corpus, "write_atomic", write)
  argv = ["--glue-dir", str(tmp_path / "glue"), "--output-dir", str(out), "--tasks", "SST-2"]
  assert glue_sentences_corpus.main(argv + ["--num-files", "3"]) == 0
  staging = f".corpus.{os.getpid()}.tmp"
  # The dead run's folder gone, never a part-written corpus/; the manifest with it.
  assert seen == [[staging]] * 4
  assert sorted(os.listdir(out)) == ["corpus", "manifest.json"]
  assert sorted(os.listdir(out / "corpus")) == [f"glue_sentences_{i}.txt" for i in range(3)]

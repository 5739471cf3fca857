"""README Quickstart command (1)'s main job, end to end with a reduced step count."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from electra_tf import demo
from electra_tf.training import held_out_evaluation
from electra_tf.training.callbacks import TrainingSummaries
from tests.conftest import REPO_ROOT
from tests.helpers import doc_blocks

# The demo's reduced run: a tenth of its corpus, 200 steps.
DEMO_TRAIN_STEPS = 200


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
  """One reduced run of the demo (about 4 minutes on 2 cores), shared by the
  tests that check it and those that run the documented commands on its
  output: `(output dir, stdout)`; the output dir is `<tmp>/demo_output`, as
  the docs name it."""
  out = tmp_path_factory.mktemp("demo") / "demo_output"
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "electra_tf.demo",
      "--output-dir",
      str(out),
      "--train-steps",
      str(DEMO_TRAIN_STEPS),
      "--corpus-mb",
      "0.6",
      "--vocab-size",
      "3000",
    ],
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=1500,
  )
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return out, proc.stdout


@pytest.mark.slow
def test_demo_runs_every_stage(demo_run):
  out, stdout = demo_run
  # every stage left its output
  assert len(list((out / "corpus").glob("*.txt"))) == 8
  assert (out / "vocab.txt").read_text().splitlines()[100:104] == [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
  ]
  assert len(list((out / "pretrain_tfrecords").glob("pretrain_data.tfrecord-*-of-8"))) == 8
  model_dir = out / "models" / "demo"
  assert (model_dir / "model.ckpt-200.index").exists()
  results = (model_dir / "results" / "unsup_results.txt").read_text()
  assert "disc_auc = " in results and "masked_lm_accuracy = " in results
  measured = json.loads((model_dir / "results" / "demo_vs_baselines.json").read_text())
  assert 0.0 <= measured["disc_auc_real_tokens"] <= 1.0
  assert 0.0 < measured["unigram_masked_lm_accuracy"] < 1.0
  # The discriminator learns visibly even in this short run on a tenth of the
  # corpus (AUC about 0.82; the full demo reaches about 0.9).
  assert measured["disc_auc_real_tokens"] >= 0.75
  assert (
    held_out_evaluation.verdict(
      measured["disc_auc_real_tokens_margin"], measured["disc_auc_real_tokens_margin_se"]
    )
    == "above"
  )
  assert measured["disc_prob_std_real_tokens"] > 0.05  # no collapse to one score
  # the report's verdicts follow the margins and their noise
  for key, _, name, _ in held_out_evaluation.METRIC_ROWS:
    margin, se = measured[f"{key}_margin"], measured[f"{key}_margin_se"]
    assert se >= 0.0
    line = next(line for line in stdout.splitlines() if line.strip().startswith(name))
    assert f"{margin:+.3f} ± {2 * se:.3f} -> {held_out_evaluation.verdict(margin, se)}" in line
  assert "NOT above" not in stdout and "above baseline" not in stdout
  history = json.loads((model_dir / "demo_eval_history.json").read_text())
  assert [h["step"] for h in history] == [0, 33, 66, 99, 132, 165, 198]
  # the held-out history holds the real-token metrics the PNG plots
  assert all(0.0 <= h["disc_auc_real_tokens"] <= 1.0 for h in history)
  assert all(h["real_tokens"] > 0 and "all_original_accuracy" in h for h in history)
  assert (out / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert (out / "export" / "1" / "saved_model.pb").exists()
  assert (out / "export" / "1" / "assets" / "vocab.txt").exists()
  # the scored example and the closing directions
  assert "corrupted 'return the color of items" in stdout
  assert "most suspicious words" in stdout
  assert "baseline" in stdout and "Next steps" in stdout
  # its settings, in files a user passes on as --hparams
  vocab_size = len((out / "vocab.txt").read_text().splitlines())
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["num_train_steps"] == DEMO_TRAIN_STEPS and hparams["vocab_size"] == vocab_size
  assert hparams["pretrain_tfrecords"].endswith("pretrain_data.tfrecord-[0-6]-of-8")
  evaluation = json.loads((out / "eval_hparams.json").read_text())
  assert evaluation["pretrain_tfrecords"].endswith("pretrain_data.tfrecord-7-of-8")
  assert (evaluation["do_train"], evaluation["do_eval"]) == (False, True)
  assert json.loads((out / "finetune_hparams.json").read_text())["task_names"] == ["rte"]
  assert f"--hparams {os.path.relpath(out, REPO_ROOT)}/eval_hparams.json" in stdout


# What each documented demo block leaves under the folder holding demo_output.
DEMO_BLOCK_OUTPUTS = {
  "readme-python-classifier": [],  # README's Python example: prints, writes nothing
  "build-data": [
    f"demo_output/pretrain_tfrecords_64/pretrain_data.tfrecord-{i}-of-8" for i in range(8)
  ],
  "build-vocab": ["demo_output/vocab_4k.txt"],
  "pretrain": [f"demo_output/models/demo/model.ckpt-{DEMO_TRAIN_STEPS}.index"],
  "evaluate": ["demo_output/models/demo/results/unsup_results.txt"],
  "convert": ["demo_output/demo_disc.keras", "demo_output/official/demo/checkpoint"],
  "publish": [
    "demo_output/hf_demo/model.safetensors",
    "demo_output/hf_demo/tokenizer.json",
    "demo_output/hf_demo_generator/model.safetensors",
    "demo_output/kh_demo/config.json",
  ],
  "finetune-rte": [
    "demo_output/models/demo/finetuning_models/rte_model_1/checkpoint",
    "demo_output/models/demo/results/rte_results.txt",
  ],
  "finetune-keras-classifier": [
    "demo_output/mnli.keras",
    "demo_output/serving/mnli/1/saved_model.pb",
  ],
  "finetune-keras-question-answerer": [
    "demo_output/squad.keras",
    "demo_output/serving/squad/1/saved_model.pb",
  ],
  "finetune-keras-token-tagger": [
    "demo_output/chunk.keras",
    "demo_output/serving/chunk/1/saved_model.pb",
  ],
  "serve-finetuned": ["demo_output/serving/rte/1/saved_model.pb"],
  "serve-portable": [
    "demo_output/serving/rte_portable/rte.onnx",
    "demo_output/serving/rte_portable/rte-int8.tflite",
    "demo_output/serving/rte_portable/tokenizer.json",
  ],
  "serve-portable-runtimes": [],
  "keras-pretraining-script": [
    "demo_output/models/keras_demo/model.ckpt-10.index",
    "demo_output/models/keras_demo/config.json",
  ],
  "keras-script-export": ["demo_output/serving/keras_demo/1/saved_model.pb"],
}


def _run_block(block, cwd):
  """A documented block as written: bash with `-e`, Python in a fresh
  interpreter; `python` is this interpreter."""
  env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
  env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
  command = (
    ["bash", "-e", "-c", block.code] if block.lang == "bash" else [sys.executable, "-c", block.code]
  )
  return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _files(root):
  """{path under root: (mtime, size)} of every file."""
  found = {}
  for folder, _, names in os.walk(root):
    for name in names:
      path = os.path.join(folder, name)
      stat = os.stat(path)
      found[os.path.relpath(path, root)] = (stat.st_mtime_ns, stat.st_size)
  return found


def _error_line(stderr):
  """The error's line ("ValueError: ...", "tool: error: ...") of a failed run."""
  lines = stderr.strip().splitlines() or [""]
  error = re.compile(r"^(\w+Error|\S+: error):")
  return next((line for line in reversed(lines) if error.match(line)), lines[-1])[:400]


@pytest.mark.slow
def test_documented_commands_run_in_order_on_the_demo_output(demo_run):
  """Every block of README.md and docs/ marked `<!-- demo:NAME -->` runs as
  written, in the documented order, in the folder holding the demo's output,
  and leaves what it is for; no block rewrites a file another block wrote."""
  out, _ = demo_run
  blocks = doc_blocks.demo_blocks()
  assert [b.label for b in blocks] == list(DEMO_BLOCK_OUTPUTS), "demo blocks or their order changed"
  unsup_results = out / "models" / "demo" / "results" / "unsup_results.txt"
  eval_stage_results = unsup_results.read_text()
  assert f"global_step = {DEMO_TRAIN_STEPS}" in eval_stage_results
  failed, collisions = [], []
  files, written_by = _files(out), {}
  for block in blocks:
    result = _run_block(block, out.parent)
    before, files = files, _files(out)
    for path, stamp in files.items():
      if path not in before:
        written_by[path] = block.label
      elif stamp != before[path] and written_by.get(path, block.label) != block.label:
        collisions.append(f"{block.label} rewrote {path}, written by {written_by[path]}")
    missing = [p for p in DEMO_BLOCK_OUTPUTS[block.label] if not (out.parent / p).exists()]
    if result.returncode or missing:
      failed.append(
        f"{block.label} ({block.where()}): exit {result.returncode}, missing {missing}: "
        f"{_error_line(result.stderr)}: {result.stderr.strip()[-1500:]}"
      )
    if block.label == "pretrain":
      assert "nothing to train" in result.stdout + result.stderr, result.stdout[-2000:]
    if block.label == "evaluate":
      # eval_hparams.json holds what the eval stage ran: the same numbers.
      assert unsup_results.read_text() == eval_stage_results
  assert not failed, "documented commands failed on the demo's output:\n" + "\n".join(failed)
  assert not collisions, collisions


def _fake_training_run(out, steps=200):
  """TensorBoard losses and a held-out history in the demo's model dir."""
  paths = demo._paths(str(out))
  rng = np.random.default_rng(0)
  summaries = TrainingSummaries(paths["model_dir"])
  for step in range(0, steps, 10):
    losses = {
      "disc_loss": 0.6 * np.exp(-step / 80) + 0.05 * rng.random(),
      "generator_loss": 9.0 - step / 40 + 0.3 * rng.random(),
    }
    summaries.write(step, losses, learning_rate=False)
  history = []
  for step in range(0, steps + 1, steps // 4):
    entry = {"step": step, "all_original_accuracy": 0.86, "unigram_masked_lm_accuracy": 0.06}
    for key, _, _, _ in held_out_evaluation.METRIC_ROWS:
      entry[key] = 0.5 + 0.4 * step / steps
    history.append(entry)
  (out / "models" / "demo" / "demo_eval_history.json").write_text(json.dumps(history))
  return paths


def test_training_curves_show_smoothed_losses_and_metrics_against_baselines(tmp_path):
  paths = _fake_training_run(tmp_path)
  figure = demo._write_curves(paths)
  assert (tmp_path / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  titles = [axes.get_title() for axes in figure.axes]
  assert titles[:2] == ["Generator MLM loss", "Discriminator loss"]
  assert titles[2:] == [f"Held-out {name}" for _, _, name, _ in held_out_evaluation.METRIC_ROWS]
  loss = {line.get_label(): line for line in figure.axes[1].get_lines()}
  assert set(loss) == {"training batches (raw)", "training batches (EMA 0.9)"}
  assert list(loss["training batches (raw)"].get_xdata()) == list(range(0, 200, 10))
  baselines = {}
  for axes, (key, _, _, how) in zip(figure.axes[2:], held_out_evaluation.METRIC_ROWS):
    lines = {line.get_label(): line for line in axes.get_lines()}
    held_out = lines["held-out data, real tokens"]
    assert list(held_out.get_xdata()) == [0, 50, 100, 150, 200]  # from step 0
    (label,) = [name for name in lines if name.startswith(f"baseline: {how}")]
    baselines[key] = lines[label].get_ydata()[0]
  assert baselines == {
    "masked_lm_accuracy": 0.06,
    "disc_auc_real_tokens": 0.5,
    "disc_accuracy_real_tokens": 0.86,
    "disc_recall_real_tokens": 0.0,
  }


def test_stage_table_runs_in_order_and_names_each_input_writer():
  names = list(demo.STAGES)
  assert names == ["corpus", "vocab", "data", "pretrain", "eval", "export", "score"]
  paths = demo._paths("/out")
  for index, (name, (run_stage, reads, writer)) in enumerate(demo.STAGES.items()):
    assert run_stage is getattr(demo, f"stage_{name}")
    if reads is not None:
      assert reads in paths and names.index(writer) < index


def test_help_lists_the_stages(capsys):
  with pytest.raises(SystemExit) as exit_info:
    demo.main(["--help"])
  assert exit_info.value.code == 0
  assert "corpus,vocab,data,pretrain,eval,export,score" in capsys.readouterr().out


def test_a_stage_without_its_input_names_the_stage_to_run_first(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    demo.main(["--output-dir", str(tmp_path), "--stages", "score"])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert f"--stages score: {tmp_path / 'export'} does not exist; run the export stage first" in err
  # Each stage names the one before it in the chain.
  (tmp_path / "corpus").mkdir()
  with pytest.raises(SystemExit):
    demo.main(["--output-dir", str(tmp_path), "--stages", "data"])
  assert "run the vocab stage first" in capsys.readouterr().err


@pytest.mark.parametrize("stages", ["", " , ", "score"])
def test_a_refused_stage_list_leaves_no_output_dir(tmp_path, capsys, stages):
  out = tmp_path / "demo_out"
  with pytest.raises(SystemExit) as exit_info:
    demo.main(["--output-dir", str(out), "--stages", stages])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert "--stages" in err and ("names no stage" in err) == (stages != "score")
  assert not out.exists()


def test_ctrl_c_in_a_stage_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
  """Ctrl-C in the pretrain stage saves a checkpoint and raises
  TrainingPreempted (as in run_pretraining): the demo ends with one line and
  130, not a traceback, and runs no later stage."""
  import signal

  from electra_tf.checkpoints.checkpointing import TrainingPreempted

  ran = []

  def interrupted(out, args):
    raise TrainingPreempted(7, "model.ckpt-7", signal.SIGINT)

  stages = {
    "corpus": (lambda out, args: ran.append("corpus"), None, None),
    "pretrain": (interrupted, None, None),
    "eval": (lambda out, args: ran.append("eval"), None, None),
  }
  monkeypatch.setattr(demo, "STAGES", stages)
  assert demo.main(["--output-dir", str(tmp_path), "--stages", "corpus,pretrain,eval"]) == 130
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [
    "demo: interrupted (Ctrl-C): stopped at global step 7 after saving its checkpoint "
    "(model.ckpt-7); re-run to resume."
  ]
  assert ran == ["corpus"]


@pytest.mark.parametrize(
  "flag", ["--train-steps", "--corpus-mb", "--vocab-size", "--num-processes"]
)
def test_a_number_that_cannot_work_is_refused_before_any_stage(tmp_path, capsys, flag):
  with pytest.raises(SystemExit) as e:
    demo.main(["--output-dir", str(tmp_path / "out"), flag, "0"])
  assert e.value.code == 2
  assert re.search(rf"{flag} 0(\.0)?: expected a positive number", capsys.readouterr().err)
  assert not (tmp_path / "out").exists()

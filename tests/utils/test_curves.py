import os
import struct

import numpy as np
import pytest

from electra_tf.utils import curves


def _png_size(path):
  """(width, height) from a PNG's IHDR chunk."""
  data = open(path, "rb").read(24)
  assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
  return struct.unpack(">II", data[16:24])


def _lines(axes):
  return {line.get_label(): line for line in axes.get_lines()}


def _panels():
  steps = np.arange(0, 101)
  rng = np.random.default_rng(0)
  loss = 3.0 * np.exp(-steps / 30.0) + 0.2 * rng.standard_normal(len(steps))
  return [
    curves.Panel(
      "Discriminator loss",
      [curves.Series("training batches", steps, loss, smoothing=0.9)],
      y_label="loss",
    ),
    curves.Panel(
      "Held-out AUC",
      [curves.Series("held-out", [0, 50, 100], [0.5, 0.8, float("nan")])],
      y_label="AUC",
      y_range=(0.5, 1.0),
      baselines=[curves.Baseline(0.5, "baseline: random scores")],
    ),
  ]


def test_writes_a_png_of_the_requested_size_atomically(tmp_path):
  path = tmp_path / "out" / "curves.png"
  figure = curves.write_training_curves_png(str(path), _panels(), width=900, height=500)
  assert _png_size(path) == (900, 500)
  assert len(figure.axes) == 2
  assert os.listdir(path.parent) == ["curves.png"]  # no temporary file left


def test_figure_draws_labelled_axes_series_smoothing_and_baselines():
  figure = curves.training_curves_figure(_panels(), width=900, height=500, title="Demo")
  loss_axes, auc_axes = figure.axes
  assert figure.get_suptitle() == "Demo"
  assert loss_axes.get_title() == "Discriminator loss"
  assert loss_axes.get_xlabel() == "training step" and loss_axes.get_ylabel() == "loss"
  assert auc_axes.get_ylabel() == "AUC"
  assert len(loss_axes.get_xticks()) > 2 and len(loss_axes.get_yticks()) > 2

  # the raw loss, faint, and its moving average over it in the same colour
  lines = _lines(loss_axes)
  raw, smooth = lines["training batches (raw)"], lines["training batches (EMA 0.9)"]
  assert raw.get_alpha() < 0.5 and smooth.get_alpha() is None
  assert raw.get_color() == smooth.get_color()
  assert len(raw.get_xdata()) == 101
  np.testing.assert_allclose(smooth.get_ydata(), curves.ema(raw.get_ydata(), 0.9))
  # the EMA is smoother than the raw line
  assert np.abs(np.diff(smooth.get_ydata())).sum() < 0.5 * np.abs(np.diff(raw.get_ydata())).sum()

  # the held-out metric drops its NaN; the baseline is a labelled dashed line at 0.5
  lines = _lines(auc_axes)
  held_out = lines["held-out"]
  assert list(held_out.get_xdata()) == [0, 50] and list(held_out.get_ydata()) == [0.5, 0.8]
  baseline = lines["baseline: random scores (0.500)"]
  assert baseline.get_linestyle() == "--" and list(baseline.get_ydata()) == [0.5, 0.5]

  # legends name every line
  legend = [t.get_text() for t in loss_axes.get_legend().get_texts()]
  assert legend == ["training batches (raw)", "training batches (EMA 0.9)"]
  legend = [t.get_text() for t in auc_axes.get_legend().get_texts()]
  assert legend == ["held-out", "baseline: random scores (0.500)"]
  # steps start at 0
  assert loss_axes.get_xlim()[0] == 0 and auc_axes.get_xlim()[0] == 0


def test_fixed_range_keeps_noise_flat_but_widens_to_the_data():
  rng = np.random.default_rng(0)
  noise = 0.55 + 0.005 * rng.standard_normal(20)
  fitted, fixed, below = curves.training_curves_figure(
    [
      curves.Panel("fitted", [curves.Series("auc", np.arange(20), noise)], y_label="AUC"),
      curves.Panel(
        "fixed", [curves.Series("auc", np.arange(20), noise)], y_label="AUC", y_range=(0.5, 1.0)
      ),
      curves.Panel(
        "below", [curves.Series("auc", [0, 1], [0.4, 0.6])], y_label="AUC", y_range=(0.5, 1.0)
      ),
    ]
  ).axes
  # autoscaled, +-0.01 fills the panel; on 0.5-1.0 it stays a nearly flat line
  assert fitted.get_ylim()[1] - fitted.get_ylim()[0] < 0.1
  lo, hi = fixed.get_ylim()
  assert lo <= 0.5 and hi >= 1.0 and hi - lo < 0.6
  # a value outside the range is still shown
  assert below.get_ylim()[0] < 0.4


def test_empty_panel_says_so_and_a_missing_baseline_is_left_out():
  (axes,) = curves.training_curves_figure(
    [
      curves.Panel(
        "nothing yet",
        [curves.Series("held-out", [], [])],
        y_label="AUC",
        baselines=[curves.Baseline(None, "baseline")],
      )
    ]
  ).axes
  assert [line.get_label() for line in axes.get_lines()] == ["held-out"]
  assert len(axes.get_lines()[0].get_xdata()) == 0


def test_ema_starts_at_the_first_value_and_skips_gaps():
  smoothed = curves.ema([2.0, 2.0, float("nan"), 2.0], weight=0.9)
  np.testing.assert_allclose(smoothed, [2.0, 2.0, 2.0, 2.0])
  assert np.isnan(curves.ema([float("nan"), 1.0], weight=0.5)[0])
  with pytest.raises(ValueError, match="smoothing weight"):
    curves.ema([1.0], weight=1.0)


def test_malformed_input_is_rejected():
  with pytest.raises(TypeError, match="panel 0"):
    curves.training_curves_figure([("A", [1], [1.0])])
  with pytest.raises(ValueError, match="differ in shape"):
    curves.training_curves_figure(
      [curves.Panel("A", [curves.Series("a", [1, 2], [1.0])], y_label="y")]
    )

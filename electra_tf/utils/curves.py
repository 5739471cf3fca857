"""Training curves as a PNG, drawn with matplotlib's Agg canvas (no display,
no pyplot state): panels of step-indexed series, trivial baselines as dashed
lines, and for noisy series an exponential moving average over the raw line.

Example:
>>> panel = Panel(
...   "Held-out discriminator AUC",
...   [Series("AUC", [0, 100, 200], [0.5, 0.7, 0.8])],
...   y_label="AUC",
...   y_range=(0.5, 1.0),
...   baselines=[Baseline(0.5, "random scores")],
... )
>>> figure = training_curves_figure([panel], width=600, height=400)
>>> [line.get_label() for line in figure.axes[0].get_lines()]
['AUC', 'random scores (0.500)']
>>> write_training_curves_png("curves.png", [panel]).axes[0].get_title()
'Held-out discriminator AUC'
"""

import dataclasses
import io
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
import numpy as np

from electra_tf.utils.file_io import write_atomic

DPI = 100
# The smoothing weight of `Series.smoothing` that TensorBoard's slider starts at.
DEFAULT_SMOOTHING = 0.9
_BASELINE_COLOR = "0.35"


@dataclasses.dataclass(frozen=True)
class Series:
  """One line: `values` at `steps` (non-finite values are skipped); with
  `smoothing` (0 ≤ w < 1), the raw values faintly and their `ema` over them."""

  label: str
  steps: Sequence[float]
  values: Sequence[float]
  smoothing: float | None = None
  color: str | None = None
  linestyle: str = "-"


@dataclasses.dataclass(frozen=True)
class Baseline:
  """A trivial baseline's value, drawn as a dashed horizontal line."""

  value: float
  label: str


@dataclasses.dataclass(frozen=True)
class Panel:
  """One axes: its series, axis labels and baselines.

  `y_range` `(lo, hi)` is the least the vertical axis shows (so that a wiggle
  does not fill the panel like a trend); `None` fits the axis to the data.
  """

  title: str
  series: Sequence[Series]
  y_label: str
  y_range: tuple[float, float] | None = None
  baselines: Sequence[Baseline] = ()
  x_label: str = "training step"


def ema(values, weight=DEFAULT_SMOOTHING):
  """Exponential moving average with TensorBoard's start-up correction
  (divided by `1 - weight**t`); non-finite values keep the previous average.

  >>> ema([1.0, 3.0, float("nan"), 3.0], weight=0.5).round(3).tolist()
  [1.0, 2.333, 2.333, 2.714]
  """
  if not 0.0 <= weight < 1.0:
    raise ValueError(f"smoothing weight {weight}: expected 0 <= weight < 1")
  smoothed = np.full(len(values), np.nan)
  average, count = 0.0, 0
  for i, value in enumerate(np.asarray(values, dtype=np.float64)):
    if np.isfinite(value):
      average = weight * average + (1.0 - weight) * value
      count += 1
    if count:
      smoothed[i] = average / (1.0 - weight**count)
  return smoothed


def _finite(steps, values):
  steps = np.asarray(steps, dtype=np.float64)
  values = np.asarray(values, dtype=np.float64)
  if steps.shape != values.shape:
    raise ValueError(f"steps {steps.shape} and values {values.shape} differ in shape")
  keep = np.isfinite(steps) & np.isfinite(values)
  return steps[keep], values[keep]


def _draw_series(axes, series):
  steps, values = _finite(series.steps, series.values)
  marker = "o" if len(steps) <= 30 else None
  if series.smoothing is None:
    axes.plot(
      steps,
      values,
      label=series.label,
      color=series.color,
      linestyle=series.linestyle,
      marker=marker,
      markersize=4,
      linewidth=1.8,
    )
    return values
  (raw,) = axes.plot(
    steps,
    values,
    label=f"{series.label} (raw)",
    color=series.color,
    linestyle=series.linestyle,
    alpha=0.25,
    linewidth=1.0,
  )
  axes.plot(
    steps,
    ema(values, series.smoothing),
    label=f"{series.label} (EMA {series.smoothing:g})",
    color=raw.get_color(),
    linestyle=series.linestyle,
    linewidth=2.0,
  )
  return values


def _draw_panel(axes, panel):
  drawn = [_draw_series(axes, series) for series in panel.series]
  baselines = [b for b in panel.baselines if b.value is not None and np.isfinite(b.value)]
  for baseline in baselines:
    axes.axhline(
      baseline.value,
      color=_BASELINE_COLOR,
      linestyle="--",
      linewidth=1.2,
      label=f"{baseline.label} ({baseline.value:.3f})",
    )
  if panel.y_range is not None:
    values = np.concatenate([np.ravel(panel.y_range)] + drawn + [[b.value] for b in baselines])
    lo, hi = float(values.min()), float(values.max())
    pad = 0.03 * (hi - lo)
    axes.set_ylim(lo - pad, hi + pad)
  lines = axes.get_lines()
  if lines and min(float(np.min(line.get_xdata(), initial=0.0)) for line in lines) >= 0:
    axes.set_xlim(left=0)
  axes.set_title(panel.title, fontsize=11)
  axes.set_xlabel(panel.x_label)
  axes.set_ylabel(panel.y_label)
  axes.grid(True, alpha=0.3)
  if lines:
    axes.legend(fontsize=8, loc="best")
  else:
    axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)


def training_curves_figure(panels, width=1200, height=800, columns=None, title=None):
  """A matplotlib `Figure` of `panels` in a grid, not yet saved.

  Args:
    panels: `Panel`s, drawn row by row.
    width: figure width in pixels (at `DPI`).
    height: figure height in pixels.
    columns: panels per row (default: 2 when there is more than one panel).
    title: optional figure title.

  Returns:
    A `matplotlib.figure.Figure` on an Agg canvas; its `axes` follow `panels`.
  """
  panels = list(panels)
  for index, panel in enumerate(panels):
    if not isinstance(panel, Panel):
      raise TypeError(f"panel {index}: expected a curves.Panel, got {type(panel).__name__}")
  if columns is None:
    columns = 2 if len(panels) > 1 else 1
  rows = max(1, -(-len(panels) // columns))
  figure = Figure(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")
  FigureCanvasAgg(figure)
  for index, panel in enumerate(panels):
    _draw_panel(figure.add_subplot(rows, columns, index + 1), panel)
  if title:
    figure.suptitle(title, fontsize=13)
  return figure


def write_training_curves_png(path, panels, width=1200, height=800, columns=None, title=None):
  """Draws `training_curves_figure(panels, ...)` and writes it to `path` as a
  `width` × `height` PNG, atomically. Returns the figure."""
  figure = training_curves_figure(panels, width, height, columns=columns, title=title)
  buffer = io.BytesIO()
  figure.savefig(buffer, format="png", dpi=DPI)
  write_atomic(path, buffer.getvalue())
  return figure

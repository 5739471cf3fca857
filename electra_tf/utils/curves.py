"""A PNG of training curves, drawn with numpy and `tf.io.encode_png`.

Keeps the demo free of plotting dependencies: a small bitmap font for titles
and axis labels, one panel per series, a polyline per panel.
"""

import numpy as np
import tensorflow as tf

from electra_tf.utils.file_io import atomic_path

# 5x7 glyphs, one string of 7 rows of 5 pixels each ("1" = ink).
_GLYPHS = {
  "0": "01110100011001110101110011000101110",
  "1": "00100011000010000100001000010001110",
  "2": "01110100010000100010001000100011111",
  "3": "11110000010000101110000010000111110",
  "4": "00010001100101010010111110001000010",
  "5": "11111100001111000001000011000101110",
  "6": "00110010001000011110100011000101110",
  "7": "11111000010001000100010000100001000",
  "8": "01110100011000101110100011000101110",
  "9": "01110100011000101111000010001001100",
  ".": "00000000000000000000000000110001100",
  "-": "00000000000000011111000000000000000",
  " ": "00000000000000000000000000000000000",
  "A": "01110100011000111111100011000110001",
  "C": "01110100011000010000100001000101110",
  "D": "11100100101000110001100011001011100",
  "E": "11111100001000011110100001000011111",
  "G": "01110100011000010111100011000101111",
  "I": "01110001000010000100001000010001110",
  "L": "10000100001000010000100001000011111",
  "M": "10001110111010110101100011000110001",
  "N": "10001100011100110101100111000110001",
  "O": "01110100011000110001100011000101110",
  "P": "11110100011000111110100001000010000",
  "R": "11110100011000111110101001001010001",
  "S": "01111100001000001110000010000111110",
  "T": "11111001000010000100001000010000100",
  "U": "10001100011000110001100011000101110",
  "e": "00000000000111010001111111000001110",
  "H": "10001100011000111111100011000110001",
  "B": "11110100011000111110100011000111110",
  "F": "11111100001000011110100001000010000",
  "K": "10001100101010011000101001001010001",
  "V": "10001100011000110001100010101000100",
  "W": "10001100011000110101101011010101010",
  "Y": "10001100010101000100001000010000100",
  "X": "10001100010101000100010101000110001",
  "Z": "11111000010001000100010001000011111",
  "+": "00000001000010011111001000010000000",
}
_COLORS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189)]


def _text(canvas, x, y, text, color=(0, 0, 0), scale=2):
  for char in text:
    glyph = _GLYPHS.get(char, _GLYPHS[" "])
    for row in range(7):
      for col in range(5):
        if glyph[row * 5 + col] == "1":
          canvas[
            y + row * scale : y + (row + 1) * scale, x + col * scale : x + (col + 1) * scale
          ] = color
    x += 6 * scale


def _line(canvas, x0, y0, x1, y1, color):
  steps = int(max(abs(x1 - x0), abs(y1 - y0), 1))
  xs = np.round(np.linspace(x0, x1, steps + 1)).astype(int)
  ys = np.round(np.linspace(y0, y1, steps + 1)).astype(int)
  for dx in (0, 1):  # two pixels wide
    canvas[np.clip(ys, 0, canvas.shape[0] - 1), np.clip(xs + dx, 0, canvas.shape[1] - 1)] = color


def _number(value):
  text = f"{value:.3g}"
  return text if len(text) <= 8 else f"{value:.1e}"


def _panel(canvas, left, top, width, height, title, steps, values, color, y_range, reference):
  _text(canvas, left, top, title.upper())
  box_top, box_left = top + 24, left + 90
  box_w, box_h = width - 110, height - 60
  canvas[box_top, box_left : box_left + box_w] = 0
  canvas[box_top + box_h, box_left : box_left + box_w] = 0
  canvas[box_top : box_top + box_h, box_left] = 0
  canvas[box_top : box_top + box_h, box_left + box_w] = 0
  steps = np.asarray(steps, dtype=np.float64)
  values = np.asarray(values, dtype=np.float64)
  keep = np.isfinite(values)
  steps, values = steps[keep], values[keep]
  if len(values) == 0:
    return
  if y_range is not None:
    # A fixed range keeps a wiggle of 0.01 from filling the panel like a trend.
    lo, hi = float(y_range[0]), float(y_range[1])
    values = np.clip(values, lo, hi)
  else:
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-12:
      lo, hi = lo - 0.5, hi + 0.5
  first, last = float(steps.min()), float(steps.max())
  span = max(last - first, 1.0)
  xs = box_left + (steps - first) / span * (box_w - 1)
  ys = box_top + box_h - 1 - (values - lo) / (hi - lo) * (box_h - 1)
  if reference is not None and lo <= reference <= hi:
    y = int(round(box_top + box_h - 1 - (reference - lo) / (hi - lo) * (box_h - 1)))
    for x in range(box_left + 1, box_left + box_w, 8):  # dashed grey line
      canvas[y, x : min(x + 4, box_left + box_w)] = (150, 150, 150)
  if len(xs) == 1:
    canvas[int(ys[0]) - 2 : int(ys[0]) + 3, int(xs[0]) - 2 : int(xs[0]) + 3] = color
  for i in range(len(xs) - 1):
    _line(canvas, xs[i], ys[i], xs[i + 1], ys[i + 1], color)
  _text(canvas, left, box_top, _number(hi))
  _text(canvas, left, box_top + box_h - 14, _number(lo))
  _text(canvas, box_left, box_top + box_h + 6, _number(first))
  _text(canvas, box_left + box_w - 6 * 2 * len(_number(last)), box_top + box_h + 6, _number(last))
  _text(canvas, box_left + box_w // 2 - 24, box_top + box_h + 6, "STEP")


def write_training_curves_png(path, panels, width=1200, height=800):
  """Writes a PNG with one panel per series.

  Args:
    path: output file; written to a temporary name, then renamed.
    panels: list of `(title, steps, values)` or `(title, steps, values,
      y_range)` or `(title, steps, values, y_range, reference)`. Titles use
      A–Z, digits, spaces. `y_range` `(lo, hi)` fixes the vertical axis
      (values outside are drawn at the edge); `None` fits it to the values.
      `reference`, if given, is drawn as a dashed horizontal line (e.g. a
      trivial baseline).
    width: image width in pixels.
    height: image height in pixels.

  Example:
  >>> write_training_curves_png(
  ...   "/tmp/c.png",
  ...   [("TOTAL LOSS", [1, 2], [3.0, 2.0]), ("AUC", [1, 2], [0.6, 0.8], (0.5, 1.0), 0.5)],
  ... )
  """
  canvas = np.full((height, width, 3), 255, dtype=np.uint8)
  columns = 2 if len(panels) > 1 else 1
  rows = (len(panels) + columns - 1) // columns
  panel_w, panel_h = width // columns, height // rows
  for index, panel in enumerate(panels):
    if not 3 <= len(panel) <= 5:
      raise ValueError(
        f"panel {index}: expected (title, steps, values[, y_range[, reference]]), got "
        f"{len(panel)} items"
      )
    title, steps, values, y_range, reference = (*panel, None, None)[:5]
    row, col = divmod(index, columns)
    _panel(
      canvas,
      col * panel_w + 10,
      row * panel_h + 10,
      panel_w - 20,
      panel_h - 20,
      title,
      steps,
      values,
      _COLORS[index % len(_COLORS)],
      y_range,
      reference,
    )
  with atomic_path(path) as tmp:
    tf.io.write_file(tmp, tf.io.encode_png(canvas))

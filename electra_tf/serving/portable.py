"""Portable exports (LiteRT, ONNX) of the ids-in network: a placeholder for
the signature the task models' `export(format=...)` calls; the exporter
replaces it."""

PORTABLE_FORMATS = ("litert", "onnx")


def export_portable(model, filepath, format, quantize=None):  # pylint: disable=redefined-builtin
  """Writes `model`'s ids-in network as a `format` file at `filepath`."""
  raise NotImplementedError(f"export format {format!r} is not implemented yet")

"""What the newcomer sweeps' bad-input tests share: a tiny encoder for task
models and the one-line stderr check."""

# A task model's encoder small enough to build in milliseconds.
TINY_ENCODER = {
  "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
  "intermediate_size": 32,
}  # fmt: skip


def one_line(capsys):
  """The captured stderr, asserted to be one line."""
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1, err
  return err

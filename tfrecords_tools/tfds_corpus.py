"""A TFDS text dataset as a corpus source for the pre-training builder.

Each TFDS example is one document (like one corpus file): its text's lines
are the sentences and its end ends a document. With several jobs, job j
takes examples j, j+n, j+2n, ... of the split.

Example:

```python
for doc in iter_documents("lm1b", "train", "text"):
  ...
```

or, from the command line:

    python -m electra_tf.build_pretraining_dataset --tfds-name wikipedia/20230601.en \
        --tfds-split train --tfds-text-key text --vocab-file vocab.txt --output-dir out
"""

from electra_tf.utils import extras


def require_tfds(name):
  """Imports TensorFlow Datasets for the dataset `name`; a one-line
  `MissingExtra` (a `ValueError`) naming the `tfds` extra when it is not
  installed."""
  return extras.require("tensorflow_datasets", "tfds", f"--tfds-name {name}")


def iter_documents(
  name, split="train", text_key="text", data_dir=None, num_shards=1, shard_index=0, download=True
):
  """Yields the text of every example of a TFDS split as str.

  Args:
    name: TFDS dataset name (with config/version if needed).
    split: TFDS split string.
    text_key: the feature holding the text; nested features as "a/b".
    data_dir: TFDS data_dir.
    num_shards, shard_index: take every `num_shards`-th example from
      `shard_index`.
    download: let TFDS download and prepare the dataset if absent.

  Raises:
    ValueError: unknown dataset, or `text_key` not among its features.
  """
  tfds = require_tfds(name)

  try:
    dataset = tfds.load(
      name, split=split, data_dir=data_dir, download=download, shuffle_files=False
    )
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(f"--tfds-name {name!r} / --tfds-split {split!r} cannot be loaded: {e}") from e
  if num_shards > 1:
    dataset = dataset.shard(num_shards, shard_index)
  keys = text_key.split("/")
  spec = dataset.element_spec
  for key in keys:
    if not isinstance(spec, dict) or key not in spec:
      available = sorted(spec) if isinstance(spec, dict) else []
      raise ValueError(
        f"--tfds-text-key {text_key!r} is not a feature of {name!r}; its features are {available}"
      )
    spec = spec[key]
  for example in tfds.as_numpy(dataset):
    value = example
    for key in keys:
      value = value[key]
    if isinstance(value, bytes):
      value = value.decode("utf-8", "ignore")
    yield str(value)

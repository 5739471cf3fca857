"""What a folder of pre-training TFRecords was made with: `records_info.json`.

The records hold token ids only, so the builders record the vocab's
`fingerprint`, the build's settings and its shards beside them
(`write_records_info`); `run_pretraining` checks them against its vocab
before any work (`check_records_vocab`). Folders without one are read as
before.
"""

import json
import os

from electra_tf.utils.file_io import read_json
from electra_tf.utils.file_io import write_atomic

RECORDS_INFO = "records_info.json"
# Where a rebuild with --overwrite keeps the earlier build until it completes.
PREVIOUS_BUILD = ".previous_build"
FORMAT = "electra_tf.records_info"


def info_path(records_dir):
  return os.path.join(records_dir, RECORDS_INFO)


def write_records_info(records_dir, vocab, settings, shards=None):
  """Records `vocab` (a `vocab.Vocab`), the build's `settings` (a JSON-able
  dict) and, given, its `shards` (file names) with their sizes in
  `records_dir`, atomically."""
  info = {"format": FORMAT, "vocab": vocab.fingerprint(), "settings": settings}
  if shards is not None:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  # gfile, for scheme:// paths

    info["shards"] = {
      name: tf.io.gfile.stat(os.path.join(records_dir, name)).length for name in sorted(shards)
    }
  write_atomic(info_path(records_dir), json.dumps(info, indent=2, sort_keys=True) + "\n")


def read_records_info(records_dir):
  """The folder's records info, or None when it has none; a one-line
  ValueError naming the file when it is not one."""
  path = info_path(records_dir)
  info = read_json(path, "records info")
  if info is None:
    return None
  if not isinstance(info, dict) or info.get("format") != FORMAT:
    raise ValueError(f"records info {path!r}: expected a JSON object with format {FORMAT!r}")
  if not isinstance(info.get("vocab"), dict) or "sha256" not in info["vocab"]:
    raise ValueError(f"records info {path!r}: expected a 'vocab' object with its 'sha256'")
  return info


def _check_listed(folder, info, files):
  """Refuses `files` of `folder` that its info's shard list (if any) does not
  hold, or holds with another size: another build's shards."""
  shards = info.get("shards")
  if not isinstance(shards, dict):
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  # gfile, for scheme:// paths

  vocab = info["vocab"].get("file")
  for path in files:
    name = os.path.basename(path)
    if name not in shards:
      raise ValueError(
        f"{path!r} is not one of the {len(shards)} shards {info_path(folder)!r} describes "
        f"(built with vocab {vocab!r}): it comes from another build; move it to a folder "
        "of its own (with its build's records_info.json)"
      )
    size = tf.io.gfile.stat(path).length
    if size != shards[name]:
      raise ValueError(
        f"{path!r} has {size} bytes but {info_path(folder)!r} describes it with {shards[name]} "
        f"(built with vocab {vocab!r}): it was replaced by another build's shard; rebuild "
        "the records"
      )


def check_records_vocab(files, vocab, normalisation=None):
  """Refuses record `files` whose folder's info names another vocab than
  `vocab` (a `text.vocab.Vocab`), or, given `normalisation` (the run's
  `(do_lower_case, strip_accents)`), text normalised otherwise; returns the
  infos found, by folder."""
  infos = {}
  for folder in sorted({os.path.dirname(f) for f in files}):
    info = read_records_info(folder)
    if info is None:
      continue
    vocab.check_made_with(info["vocab"], f"the TFRecords in {folder!r} were made")
    _check_listed(folder, info, [f for f in files if os.path.dirname(f) == folder])
    # The builder's normalisation (its flags over the vocab's settings).
    built = info.get("settings") if isinstance(info.get("settings"), dict) else {}
    recorded = (built.get("do_lower_case"), built.get("strip_accents"))
    if normalisation is not None and None not in recorded and recorded != tuple(normalisation):
      raise ValueError(
        f"the TFRecords in {folder!r} were made with do_lower_case={recorded[0]}, "
        f"strip_accents={recorded[1]}, but this run reads text with do_lower_case="
        f"{normalisation[0]}, strip_accents={normalisation[1]} (its hparams or the vocab's "
        "settings file): rebuild the records, or set those hparams to match them"
      )
    infos[folder] = info
  return infos

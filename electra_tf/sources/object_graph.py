"""Walking the object graph of an electra_tf (object-based
`tf.train.Checkpoint`) training checkpoint: which networks it has and the
shapes of its variables, from which its hparams are inferred.

Example:
  >>> find_block_runs(block_pattern(4, 16) * 2 + [(4,)])
  [(4, 16, 2)]
"""

import json
import os

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints.reader import open_reader
from electra_tf.configs import pretraining as pretraining_config_lib
from electra_tf.hparams_input import load_hparams
from electra_tf.sources.layout import NO_DATA_DIR
from electra_tf.sources.layout import fit_length_to_positions
from electra_tf.sources.layout import generator_size_hparams
from electra_tf.sources.layout import model_overrides
from electra_tf.utils import keras_compat

# Written next to a converted training checkpoint: the hparams its model was
# built with, read back when no --hparams is given.
HPARAMS_FILE = "converted_hparams.json"


class ObjectGraph:
  """The object graph of an electra_tf (object-based) training checkpoint:
  which sub-objects the pretrainer has, and the shapes of its variables."""

  def __init__(self, prefix):
    self.reader = open_reader(prefix)
    self.graph = keras_compat.trackable_object_graph_pb2.TrackableObjectGraph()
    self.graph.ParseFromString(self.reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    self.shapes = self.reader.get_variable_to_shape_map()

  def node(self, path):
    """Node id at a `/`-separated path of attribute names from the root, or None."""
    node_id = 0
    for part in path.split("/"):
      children = {c.local_name: c.node_id for c in self.graph.nodes[node_id].children}
      if part not in children:
        return None
      node_id = children[part]
    return node_id

  def shape(self, path_or_node):
    node_id = self.node(path_or_node) if isinstance(path_or_node, str) else path_or_node
    if node_id is None:
      return None
    for attribute in self.graph.nodes[node_id].attributes:
      if attribute.name == "VARIABLE_VALUE":
        return tuple(int(d) for d in self.shapes[attribute.checkpoint_key])
    return None

  def subtree_shapes(self, path):
    """Shapes of every variable at or below `path` (each node once)."""
    start = self.node(path)
    seen, stack, shapes = set(), [start] if start is not None else [], []
    while stack:
      node_id = stack.pop()
      if node_id in seen:
        continue
      seen.add(node_id)
      shape = self.shape(node_id)
      if shape is not None:
        shapes.append(shape)
      stack.extend(c.node_id for c in self.graph.nodes[node_id].children)
    return shapes

  def trainable_shapes(self):
    """Shapes of the optimizer's trainable variables (the model's, in order)."""
    optimizer = (
      "optimizer/inner_optimizer" if self.node("optimizer/inner_optimizer") else "optimizer"
    )
    root = self.node(f"{optimizer}/_trainable_variables")
    if root is None:
      raise ValueError("the electra_tf checkpoint has no optimizer state")
    children = sorted(self.graph.nodes[root].children, key=lambda c: int(c.local_name))
    return [self.shape(c.node_id) for c in children]


def describe_shapes(shapes, limit=6):
  """A short description of a list of shapes."""
  text = ", ".join(official_checkpoint.describe_shape(s) for s in shapes[:limit])
  return f"[{text}{', …' if len(shapes) > limit else ''}]"


def block_pattern(h, x):
  """Shapes of one transformer block's trainable variables, in creation order."""
  return [(h, h), (h,)] * 4 + [(h,), (h,)] + [(h, x), (x,), (x, h), (h,), (h,), (h,)]


def find_block_runs(shapes):
  """Runs of consecutive transformer blocks in a trainable-shape list:
  `[(width, ffn, number_of_blocks), ...]` in order."""
  runs, i, size = [], 0, len(block_pattern(1, 1))
  while i + size <= len(shapes):
    first = shapes[i]
    window = shapes[i : i + size]
    if (
      len(first) == 2
      and first[0] == first[1]
      and len(window[10]) == 2
      and window == block_pattern(first[0], window[10][1])
    ):
      h, x = first[0], window[10][1]
      if runs and runs[-1][3] == i and runs[-1][:2] == (h, x):
        runs[-1] = (h, x, runs[-1][2] + 1, i + size)
      else:
        runs.append((h, x, 1, i + size))
      i += size
    else:
      i += 1
  return [r[:3] for r in runs]


def infer_hparams_from_training_checkpoint(path):
  """Pre-training hparams of an electra_tf training checkpoint, from its
  object graph (which networks exist, embedding shapes) and the runs of
  transformer blocks among the optimizer's variables. Attention heads follow
  the size rule; the caller verifies the result against the checkpoint.

  Returns:
    `(hparams, notes)`.
  """
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  graph = ObjectGraph(prefix)
  word = graph.shape("model/embeddings/word_embeddings")
  if word is None:
    raise ValueError(
      f"{prefix!r} is not an electra_tf pre-training checkpoint "
      "(no model/embeddings/word_embeddings in its object graph)"
    )
  vocab_size, embedding_size = word
  # The other two tables are [P, E] and [T, E] (T < P).
  tables = sorted(
    s[0] for s in graph.subtree_shapes("model/embeddings") if len(s) == 2 and s != word
  )
  if len(tables) != 2:
    raise ValueError(
      f"{prefix!r}: expected position and token-type tables next to the word "
      f"embeddings, found first dims {tables}; pass --hparams"
    )
  types, positions = tables
  runs = find_block_runs(graph.trainable_shapes())
  has_discriminator = graph.node("model/discriminator") is not None
  has_generator = graph.node("model/generator") is not None
  two_tower = graph.node("model/generator/rtl_encoder") is not None
  if not runs:
    raise ValueError(
      f"{prefix!r}: no transformer blocks found among the optimizer's variables; pass --hparams"
    )
  # The pretrainer creates the discriminator (or the full-size generator)
  # first: its blocks are the first run.
  hidden, ffn, layers = runs[0]
  notes = []
  hparams = {"vocab_size": vocab_size, "embedding_size": embedding_size}
  if not has_discriminator:
    hparams["electra_objective"] = False
  elif not has_generator:
    hparams["uniform_generator"] = True
  elif graph.node("model/generator/encoder") == graph.node("model/discriminator/encoder"):
    hparams["untied_generator"] = False
  else:
    towers = 2 if two_tower else 1
    if two_tower:
      hparams.update(electra_objective=False, electric_objective=True)
      notes.append("two-tower generator: assuming the Electric objective")
    hparams["untied_generator_embeddings"] = graph.node("model/generator/embeddings") != graph.node(
      "model/embeddings"
    )
    generator_runs = runs[1:]
    if len(runs) == 1 and runs[0][2] % (1 + towers) == 0:
      # Same block shapes and no variable in between: split evenly.
      layers = runs[0][2] // (1 + towers)
      generator_runs = [(hidden, ffn, layers * towers)]
      notes.append(
        "generator blocks follow the discriminator's with the same shapes: "
        "assuming generator_layers 1.0"
      )
    widths = {(h, x) for h, x, _ in generator_runs}
    if len(widths) != 1:
      raise ValueError(
        f"{prefix!r}: cannot tell the generator's blocks apart (runs of "
        f"(width, ffn, count): {runs}); pass --hparams"
      )
    ((gen_hidden, gen_ffn),) = widths
    gen_layers = sum(n for _, _, n in generator_runs)
    if gen_layers % towers:
      raise ValueError(
        f"{prefix!r}: {gen_layers} generator blocks for {towers} towers; pass --hparams"
      )
    gen_layers //= towers
    hparams.update(
      generator_size_hparams(hidden, layers, gen_hidden, gen_layers, gen_ffn, repr(prefix))
    )
  hparams["model_hparam_overrides"] = model_overrides(hidden, layers, ffn, positions, types)
  notes.append(
    "hparams inferred from the checkpoint's shapes (attention heads by the size "
    "rule; they do not change the converted weights)"
  )
  return hparams, notes


def training_checkpoint_config(
  prefix, hparams=None, model_name="converted", data_dir=None, infer_from_shapes=True
):
  """The `PretrainingConfig` an electra_tf training checkpoint was written with:
  from the model dir's `config.json` with `hparams` over it; without one, from
  `hparams`, else `converted_hparams.json` next to it, else its shapes.

  Args:
    prefix: the checkpoint prefix.
    hparams: dict, JSON string or `.json` path, or None.
    model_name, data_dir: the config's arguments when there is no
      `config.json` (`data_dir` None: no data dir).
    infer_from_shapes: False refuses to guess the sizes from the shapes
      (attention heads are not in them) and asks for `--hparams`.

  Returns:
    `(config, notes, described)`: `described` says where the sizes came from.
  """
  notes = []
  run_config = model_dir_lib.read_run_config(prefix)
  if run_config is not None:
    user = load_hparams(hparams)
    config = model_dir_lib.pretraining_config_from_run_config(run_config, user)
    described = run_config["path"] + (
      f" with --hparams {json.dumps(user, sort_keys=True)} over it" if user else ""
    )
    if user:  # sizes another run's: the same weights would compute something else
      differences = model_dir_lib.architecture_differences(
        run_config, model_dir_lib.run_config_dict(config, run_config.get("kind"))
      )
      if differences:
        raise model_dir_lib.ModelDirMismatch(
          f"--hparams contradict {run_config['path']}, which records the model the checkpoint "
          f"holds: {'; '.join(differences)} (leave those hparams out: config.json gives them)"
        )
    notes.append(f"model from {described}")
    return config, notes, described
  if hparams is None:
    saved = os.path.join(os.path.dirname(prefix), HPARAMS_FILE)
    if os.path.isfile(saved):
      hparams = saved
      notes.append(f"hparams from {saved}")
    elif not infer_from_shapes:
      raise ValueError(
        f"{prefix!r} is an electra_tf checkpoint without config.json (written by "
        "run_pretraining since it describes its model dir): pass the run's --hparams "
        "(its sizes and layout come from them)"
      )
    else:
      hparams, inferred_notes = infer_hparams_from_training_checkpoint(prefix)
      notes += inferred_notes
  hparams = load_hparams(hparams)
  config = pretraining_config_lib.PretrainingConfig(
    model_name, data_dir or NO_DATA_DIR, **fit_length_to_positions(hparams)
  )
  described = f"the hparams {json.dumps(hparams, sort_keys=True)}"
  return config, notes, described

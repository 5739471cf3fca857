"""Why a pre-trained encoder does or does not fine-tune: measurements of the
encoders a fine-tuning run starts from, on labelled sentences.

  python -m bench.pretraining_diagnosis --vocab-file V --train-tsv T --dev-tsv D \\
      --init random=RUN/model.ckpt-0 --init electra=RUN/model.ckpt-3000 ... \\
      --output bench/reports/pretraining_diagnosis.json

For every init (anything `ElectraClassifier.from_checkpoint` reads; a run's
step-0 checkpoint is its random init), on `--rows` training sentences:

- per layer: the RMS of the block's output; the mean cosine similarity of
  the [CLS] vectors of different sentences (1: every sentence gets the same
  [CLS]); the mean cosine similarity of a sentence's token vectors (1: the
  tokens collapsed to one vector); the attention entropy of the [CLS] query
  over the real tokens, as a share of the uniform distribution's (1: [CLS]
  averages the sentence, 0: it reads one token), and the weight [CLS] puts
  on itself and on [SEP]; the output LayerNorm's mean |gamma|;
- the gradient of the classification loss (a fresh head, the true labels)
  per layer, as a norm and relative to the layer's weight norm: how far one
  step of the fine-tuning recipe can move each layer;
- linear probes, trained on frozen features of `--rows` training rows and
  scored on the dev file: the final [CLS] vector (what the original's
  classifier reads) and the mean of the final token vectors. A probe that
  scores well on mean-pooled features but not on [CLS] says the knowledge
  is in the encoder and the [CLS] route does not reach it.
"""

import argparse
import json
import math
import sys

import numpy as np

from electra_tf.utils.file_io import write_atomic


def read_tsv(path, max_rows=None, text_column=0, label_column=1, header=True):
  """`(texts, labels)` of a GLUE single-sentence TSV."""
  texts, labels = [], []
  with open(path, encoding="utf-8") as f:
    for number, line in enumerate(f):
      if header and number == 0:
        continue
      fields = line.rstrip("\n").split("\t")
      texts.append(fields[text_column])
      labels.append(int(fields[label_column]))
      if max_rows and len(texts) >= max_rows:
        break
  return texts, np.asarray(labels, "int64")


def _mean_offdiag_cosine(vectors):
  """Mean cosine similarity of distinct rows of `vectors` `[N, H]`."""
  unit = vectors / (np.linalg.norm(vectors, axis=-1, keepdims=True) + 1e-12)
  sims = unit @ unit.T
  n = len(unit)
  return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def _spread(vectors):
  """How much `vectors` `[N, H]` differ from one another, relative to what
  they share: the mean distance to their mean over the mean's norm."""
  mean = vectors.mean(0)
  return float(np.linalg.norm(vectors - mean, axis=-1).mean() / (np.linalg.norm(mean) + 1e-12))


def attention_statistics(layer, x, input_mask, sep_positions):
  """Statistics of `layer`'s attention from its input `x` `[B, S, H]`:
  the [CLS] query's entropy over the real tokens (share of log n), its
  weight on itself and on the [SEP]s, and the mean entropy share of every
  real token's query."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  batch, seq, hidden = x.shape
  heads, size = layer.num_attention_heads, layer.head_size

  def split(t):
    return tf.transpose(tf.reshape(t, (batch, seq, heads, size)), (0, 2, 1, 3))

  q, k = split(layer.query(x)), split(layer.key(x))
  scores = tf.matmul(q, k, transpose_b=True) / math.sqrt(size)
  mask = tf.cast(input_mask, scores.dtype)[:, None, None, :]
  probs = tf.nn.softmax(scores + (1.0 - mask) * -10000.0, axis=-1).numpy()  # [B, A, S, S]
  real = input_mask.astype(bool)
  n = real.sum(axis=1)  # real tokens per row
  entropy = -(probs * np.log(probs + 1e-12)).sum(-1)  # [B, A, S]
  share = entropy / np.log(np.maximum(n, 2))[:, None, None]
  cls_share = share[:, :, 0].mean()
  token_share = (share.mean(1) * real).sum() / real.sum()
  on_self = probs[:, :, 0, 0].mean()
  on_sep = np.mean([probs[b, :, 0, sep_positions[b]].sum(-1).mean() for b in range(batch)])
  return {
    "cls_attention_entropy_share": float(cls_share),
    "token_attention_entropy_share": float(token_share),
    "cls_attention_on_cls": float(on_self),
    "cls_attention_on_sep": float(on_sep),
  }


def ridge_probe(train_x, train_y, test_x, test_y, l2=1.0):
  """Accuracy on `test` of a ridge-regression classifier (targets ±1) fit
  on standardised `train` features: a linear probe with no tuning."""
  mean, std = train_x.mean(0), train_x.std(0) + 1e-6
  a, b = (train_x - mean) / std, (test_x - mean) / std
  a = np.concatenate([a, np.ones((len(a), 1))], 1)
  b = np.concatenate([b, np.ones((len(b), 1))], 1)
  target = 2.0 * train_y - 1.0
  w = np.linalg.solve(a.T @ a + l2 * len(a) * np.eye(a.shape[1]), a.T @ target)
  return float(((b @ w > 0).astype("int64") == test_y).mean())


def _features(model, texts, batch=128):
  """Packed features and the encoder's outputs (embedding output and every
  block's output) for `texts`, in batches, as numpy."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  packed, outputs = [], []
  for start in range(0, len(texts), batch):
    features = model.pack(tf.constant(texts[start : start + batch]))
    out = model.finetuning_model.encoder(
      {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False
    )
    packed.append({k: np.asarray(v) for k, v in features.items()})
    outputs.append(
      [np.asarray(out["embedding_output"])] + [np.asarray(h) for h in out["hidden_states"]]
    )
  features = {k: np.concatenate([p[k] for p in packed]) for k in packed[0]}
  layers = [np.concatenate([o[i] for o in outputs]) for i in range(len(outputs[0]))]
  return features, layers


def measure(model, texts, labels, dev_texts, dev_labels, sep_id):
  """Every measurement of the module docstring for one initialised model."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  features, layers = _features(model, texts)
  mask = features["input_mask"]
  real = mask.astype(bool)
  seps = [np.nonzero(features["input_ids"][b] == sep_id)[0] for b in range(len(mask))]
  encoder = model.finetuning_model.encoder.encoder
  rows = []
  for index, hidden in enumerate(layers):
    row = {
      "layer": index,  # 0: the embeddings (after the projection)
      "rms": float(np.sqrt((hidden[real] ** 2).mean())),
      "cls_cosine_across_sentences": _mean_offdiag_cosine(hidden[:, 0]),
      "cls_spread": _spread(hidden[:, 0]),
      "token_cosine_within_sentence": float(
        np.mean([_mean_offdiag_cosine(hidden[b][real[b]]) for b in range(min(64, len(hidden)))])
      ),
    }
    if index < len(encoder.transformer_layers):
      sub = slice(0, 64)
      row.update(
        {
          f"next_block_{k}": v
          for k, v in attention_statistics(
            encoder.transformer_layers[index],
            tf.constant(hidden[sub]),
            mask[sub],
            seps[sub],
          ).items()
        }
      )
    if index > 0:
      gamma = encoder.transformer_layers[index - 1].output_layer_norm.gamma
      row["output_layer_norm_mean_abs_gamma"] = float(np.abs(np.asarray(gamma)).mean())
    rows.append(row)

  # One fine-tuning step's gradient per block: a fresh head, the true labels.
  sub = {k: tf.constant(features[k][:64]) for k in ("input_ids", "input_mask", "segment_ids")}
  with tf.GradientTape() as tape:
    logits = model(sub, training=False)  # packed features pass through the preprocessor
    loss = tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels[:64], tf.cast(logits, tf.float32))
    )
  names = model.official_name_map()
  grads = tape.gradient(loss, list(names.values()))
  per_block = {}
  for (name, var), grad in zip(names.items(), grads):
    if grad is None:
      continue
    parts = name.split("/")
    # electra/encoder/layer_<i>/..., electra/embeddings/..., task_specific/...
    key = parts[2] if len(parts) > 2 and parts[1] == "encoder" else parts[1]
    if parts[0] == "task_specific":
      key = "head"
    g = np.asarray(tf.convert_to_tensor(grad))
    entry = per_block.setdefault(key, [0.0, 0.0])
    entry[0] += float((g**2).sum())
    entry[1] += float((np.asarray(var) ** 2).sum())
  gradients = {
    k: {"grad_norm": math.sqrt(g), "grad_over_weight": math.sqrt(g) / (math.sqrt(w) + 1e-12)}
    for k, (g, w) in per_block.items()
  }

  dev_features, dev_layers = _features(model, dev_texts)
  dev_real = dev_features["input_mask"].astype(bool)

  def mean_pool(hidden, real_mask):
    return (hidden * real_mask[..., None]).sum(1) / real_mask.sum(1, keepdims=True)

  probes = {
    "cls_final": ridge_probe(layers[-1][:, 0], labels, dev_layers[-1][:, 0], dev_labels),
    "mean_final": ridge_probe(
      mean_pool(layers[-1], real), labels, mean_pool(dev_layers[-1], dev_real), dev_labels
    ),
    "mean_embeddings": ridge_probe(
      mean_pool(layers[0], real), labels, mean_pool(dev_layers[0], dev_real), dev_labels
    ),
  }
  return {
    "initial_loss": float(loss),
    "layers": rows,
    "gradients": gradients,
    "probes": probes,
  }


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--init", action="append", required=True, help="NAME=CHECKPOINT")
  parser.add_argument("--vocab-file", required=True)
  parser.add_argument("--train-tsv", required=True)
  parser.add_argument("--dev-tsv", required=True)
  parser.add_argument("--rows", type=int, default=2000)
  parser.add_argument("--max-seq-length", type=int, default=64)
  parser.add_argument("--output", required=True)
  args = parser.parse_args(argv)
  import keras  # pylint: disable=g-import-not-at-top

  import electra_tf  # pylint: disable=g-import-not-at-top

  texts, labels = read_tsv(args.train_tsv, args.rows)
  dev_texts, dev_labels = read_tsv(args.dev_tsv)
  results = {"rows": len(texts), "dev_rows": len(dev_texts), "inits": {}}
  for spec in args.init:
    name, _, path = spec.partition("=")
    keras.utils.set_random_seed(0)  # the same fresh head for every init
    model = electra_tf.ElectraClassifier.from_checkpoint(
      path, vocab_file=args.vocab_file, num_classes=2, max_seq_length=args.max_seq_length
    )
    sep_id = model.preprocessor.tokenizer.vocab["[SEP]"]
    results["inits"][name] = dict(
      measure(model, texts, labels, dev_texts, dev_labels, sep_id), checkpoint=path
    )
    print(name, json.dumps(results["inits"][name]["probes"]), flush=True)
  write_atomic(args.output, json.dumps(results, indent=1) + "\n")
  print(f"wrote {args.output}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

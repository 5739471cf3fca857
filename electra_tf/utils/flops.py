"""FLOPs estimates for transformer pre-training and inference, by the counting
rules of the original's `flops_computation.py` (its slips included), so the
numbers match its table (`python -m electra_tf.flops_computation`): a matmul
of [m, n] by [n] costs 2·m·n, the backward pass as much as the forward one,
and embedding lookups are one-hot matmuls unless `sparse_embed_lookup`.

Example:
>>> TransformerHparams(256, 12, e=128, s=128).get_infer_flops()
3677281792
"""

import collections
import dataclasses

# Cost, in operations per element, of the elementwise pieces.
DROPOUT_FLOPS = 4
LAYER_NORM_FLOPS = 5
ACTIVATION_FLOPS = 8
SOFTMAX_FLOPS = 5


@dataclasses.dataclass(eq=False)
class TransformerHparams:
  """Sizes of a BERT-style transformer, with FLOPs counters.

  Args:
    h: hidden size.
    l: number of layers.
    s: sequence length.
    v: vocabulary size.
    e: embedding size; None means `h`.
    i: FFN (intermediate) size; None means `4 * h`.
    heads: attention heads; None means `max(h // 64, 1)`.
    head_size: per-head size; None means the heads split `h`.
    output_frac: fraction of positions that go through the output softmax
      (0.15625 = 20/128, the masked positions of BERT).
    sparse_embed_lookup: count the input embedding lookup as free instead of
      as a one-hot matmul.
    decoder: the block also has cross-attention (attention costs double).

  Example:
  >>> TransformerHparams(768, 12).get_train_flops(256, 1e6)
  6.428335104e+19
  """

  h: int
  l: int
  s: int = 512
  v: int = 30522
  e: int | None = None
  i: int | None = None
  heads: int | None = None
  head_size: int | None = None
  output_frac: float = 0.15625
  sparse_embed_lookup: bool = False
  decoder: bool = False

  def __post_init__(self):
    h = self.h
    if self.e is None:
      self.e = h
    if self.i is None:
      self.i = h * 4
    # As the original: the given `heads` (not the default) times head_size.
    self.kqv = h if self.head_size is None else self.head_size * self.heads
    if self.heads is None:
      self.heads = max(h // 64, 1)

  def get_block_flops(self):
    """FLOPs of one transformer layer over the whole sequence."""
    attn_mul = 2 if self.decoder else 1
    h, s, i, kqv, heads = self.h, self.s, self.i, self.kqv, self.heads
    per_token = dict(
      kqv=3 * 2 * h * kqv * attn_mul,
      kqv_bias=3 * kqv * attn_mul,
      attention_scores=2 * kqv * s * attn_mul,
      attn_softmax=SOFTMAX_FLOPS * s * heads * attn_mul,
      attention_dropout=DROPOUT_FLOPS * s * heads * attn_mul,
      attention_scale=s * heads * attn_mul,
      attention_weighted_avg_values=2 * h * s * attn_mul,
      attn_output=2 * h * h * attn_mul,
      attn_output_bias=h * attn_mul,
      attn_output_dropout=DROPOUT_FLOPS * h * attn_mul,
      attn_output_residual=h * attn_mul,
      # The original omits the `* h` here; kept for identical numbers.
      attn_output_layer_norm=LAYER_NORM_FLOPS * attn_mul,
      intermediate=2 * h * i,
      intermediate_act=ACTIVATION_FLOPS * i,
      intermediate_bias=i,
      output=2 * h * i,
      output_bias=h,
      output_dropout=DROPOUT_FLOPS * h,
      output_residual=h,
      output_layer_norm=LAYER_NORM_FLOPS * h,
    )
    return sum(per_token.values()) * s

  def get_embedding_flops(self, output=False):
    """FLOPs of the input embeddings (`output=False`) or of the output
    softmax head (`output=True`, scaled by `output_frac`)."""
    h, s, v, e = self.h, self.s, self.v, self.e
    per_token = {}
    if output or not self.sparse_embed_lookup:
      per_token["main_multiply"] = 2 * e * v
    if not output:
      per_token.update(
        tok_type_and_position=2 * e * (s + 2),
        add_tok_type_and_position=2 * e,
        emb_layer_norm=LAYER_NORM_FLOPS * e,
        emb_dropout=DROPOUT_FLOPS * e,
      )
    if e != h or output:
      per_token.update(hidden_kernel=2 * h * e, hidden_bias=e if output else h)
    if output:
      per_token.update(
        hidden_activation=ACTIVATION_FLOPS * e,
        hidden_layernorm=LAYER_NORM_FLOPS * e,
        output_softmax=SOFTMAX_FLOPS * v,
        output_target_word=2 * v,
      )
      return self.output_frac * sum(per_token.values()) * s
    return sum(per_token.values()) * s

  def get_binary_classification_flops(self):
    """FLOPs of a per-token dense + GELU + 1-unit output (the discriminator head)."""
    h = self.h
    per_token = dict(hidden=2 * h * h, hidden_bias=h, hidden_act=ACTIVATION_FLOPS * h, logits=2 * h)
    return sum(per_token.values()) * self.s

  def get_train_flops(self, batch_size, train_steps, discriminator=False):
    """Training FLOPs: forward and backward over `train_steps` batches, with
    the binary head (`discriminator=True`) or the softmax output head."""
    if discriminator:
      head = self.get_binary_classification_flops()
    else:
      head = self.get_embedding_flops(output=True)
    encoder = self.l * self.get_block_flops() + self.get_embedding_flops(output=False)
    return 2 * batch_size * train_steps * (encoder + head)

  def get_infer_flops(self):
    """FLOPs of one forward pass of one sequence through the encoder and a binary head."""
    return (
      self.l * self.get_block_flops()
      + self.get_embedding_flops(output=False)
      + self.get_binary_classification_flops()
    )


def get_electra_train_flops(
  h_d, l_d, h_g, l_g, batch_size, train_steps, tied_embeddings, e=None, s=512, output_frac=0.15625
):
  """Training FLOPs of ELECTRA: the discriminator (binary head) plus the
  generator (softmax head); a tied generator uses the discriminator's
  embedding size, an untied one its own hidden size."""
  if e is None:
    e = h_d
  discriminator = TransformerHparams(h_d, l_d, s=s, e=e, output_frac=output_frac)
  generator = TransformerHparams(
    h_g, l_g, s=s, e=e if tied_embeddings else None, output_frac=output_frac
  )
  return discriminator.get_train_flops(
    batch_size, train_steps, discriminator=True
  ) + generator.get_train_flops(batch_size, train_steps)


def model_flops():
  """The original's table of training FLOPs of published models, in order."""
  table = collections.OrderedDict()
  # Numbers quoted from the respective papers, as in the original.
  table["elmo"] = 2 * 10 * 768648884 * 568093262680 / (20 * 128)
  table["xlnet"] = 2 * 500000 * 8192 * 15064773691518 / 32
  table["gpt"] = TransformerHparams(768, 12, v=40000, output_frac=1.0).get_train_flops(128, 960800)
  table["bert_small"] = TransformerHparams(256, 12, e=128, s=128).get_train_flops(128, 1.45e6)
  table["bert_base"] = TransformerHparams(768, 12).get_train_flops(256, 1e6)
  table["bert_large"] = TransformerHparams(1024, 24).get_train_flops(256, 1e6)
  table["electra_small"] = get_electra_train_flops(256, 12, 64, 12, 128, 1e6, True, s=128, e=128)
  table["electra_base"] = get_electra_train_flops(768, 12, 256, 12, 256, 766000, True)
  table["electra_400k"] = get_electra_train_flops(1024, 24, 256, 24, 2048, 400000, True)
  table["electra_1.75M"] = get_electra_train_flops(1024, 24, 256, 24, 2048, 1750000, True)
  table["roberta"] = TransformerHparams(1024, 24, v=50265).get_train_flops(8000, 500000)
  table["albert"] = TransformerHparams(4096, 12, v=30000, e=128).get_train_flops(4096, 1.5e6)
  t5_args = dict(v=32000, i=65536, heads=128, head_size=128)
  table["t5_11b"] = TransformerHparams(1024, 24, output_frac=0.0, **t5_args).get_train_flops(
    2048, 1e6
  ) + TransformerHparams(1024, 24, output_frac=1.0, decoder=True, **t5_args).get_train_flops(
    2048, 1e6
  )
  return table


MODEL_FLOPS = model_flops()

"""The FLOPs calculator reproduces the original's verified table (`flops_computation.py`)."""

import subprocess
import sys

import pytest

from electra_tf.utils import flops as flops_computation
from electra_tf.utils.flops import TransformerHparams
from tests.conftest import REPO_ROOT

# Values printed by the original `flops_computation.py` (`flops_computation.py`, verified).
ORIGINAL_TABLE = {
  "elmo": 3.4114394716164127e18,
  "xlnet": 3.856582065028608e21,
  "gpt": 3.968752230785352e19,
  "bert_small": 1.4187399146496e18,
  "bert_base": 6.428335104e19,
  "bert_large": 1.91720905883648e20,
  "electra_small": 1.293743798272e18,
  "electra_base": 6.424541834277683e19,
  "electra_400k": 7.117606040895488e20,
  "electra_1.75M": 3.113952642891776e21,
  "roberta": 3.187221435776e21,
  "albert": 3.113923955392512e22,
  "t5_11b": 4.581900124212429e22,
}


def test_table_matches_original_values_and_order():
  assert list(flops_computation.MODEL_FLOPS) == list(ORIGINAL_TABLE)
  for name, expected in ORIGINAL_TABLE.items():
    assert flops_computation.MODEL_FLOPS[name] == pytest.approx(expected, rel=1e-12), name


@pytest.mark.parametrize(
  "hparams, expected",
  [
    (dict(h=256, l=12, e=128, s=128), 3.6773e9),
    (dict(h=768, l=12, s=512), 1.2230e11),
  ],
)
def test_inference_flops(hparams, expected):
  assert TransformerHparams(**hparams).get_infer_flops() == pytest.approx(expected, rel=5e-5)


def test_attention_layer_norm_term_lacks_hidden_factor():
  # The whole block against a hand sum of `flops_computation.py` for a tiny size.
  h, s, i, heads = 64, 4, 256, 1
  expected_per_token = (
    3 * 2 * h * h
    + 3 * h
    + 2 * h * s
    + 5 * s * heads
    + 4 * s * heads
    + s * heads
    + 2 * h * s
    + 2 * h * h
    + h
    + 4 * h
    + h
    + 5  # attention LayerNorm: 5, not 5*h
    + 2 * h * i
    + 8 * i
    + i
    + 2 * h * i
    + h
    + 4 * h
    + h
    + 5 * h
  )
  assert TransformerHparams(h, 1, s=s).get_block_flops() == expected_per_token * s


def test_decoder_doubles_attention_only():
  enc = TransformerHparams(64, 1, s=8)
  dec = TransformerHparams(64, 1, s=8, decoder=True)
  ffn_per_token = 2 * 64 * 256 + 8 * 256 + 256 + 2 * 64 * 256 + 64 + 4 * 64 + 64 + 5 * 64
  attention = enc.get_block_flops() - ffn_per_token * 8
  assert dec.get_block_flops() == enc.get_block_flops() + attention


def test_sparse_lookup_drops_input_matmul_only():
  dense = TransformerHparams(64, 1, s=8, v=100)
  sparse = TransformerHparams(64, 1, s=8, v=100, sparse_embed_lookup=True)
  assert dense.get_embedding_flops() - sparse.get_embedding_flops() == 2 * 64 * 100 * 8
  assert dense.get_embedding_flops(output=True) == sparse.get_embedding_flops(output=True)


def test_untied_generator_uses_its_own_embedding_size():
  tied = flops_computation.get_electra_train_flops(256, 2, 64, 2, 8, 10, True, e=128, s=16)
  untied = flops_computation.get_electra_train_flops(256, 2, 64, 2, 8, 10, False, e=128, s=16)
  gen_tied = TransformerHparams(64, 2, s=16, e=128).get_train_flops(8, 10)
  gen_untied = TransformerHparams(64, 2, s=16).get_train_flops(8, 10)
  assert tied - untied == pytest.approx(gen_tied - gen_untied)


def test_module_prints_name_value_lines():
  out = subprocess.run(
    [sys.executable, "-m", "electra_tf.flops_computation"],
    cwd=REPO_ROOT,
    capture_output=True,
    text=True,
    check=True,
  ).stdout
  lines = out.strip().splitlines()
  assert [line.split()[0] for line in lines] == list(ORIGINAL_TABLE)
  for line in lines:
    name, value = line.split()
    assert float(value) == pytest.approx(ORIGINAL_TABLE[name], rel=1e-12)

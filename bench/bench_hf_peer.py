"""Peer: the same ELECTRA-Small replaced-token-detection training step in
Hugging Face transformers on PyTorch (CPU), written here from scratch.

Same shapes as `bench_pretraining_step`: discriminator H=256, L=12, A=4,
I=1024, E=128; generator 0.25 (Hg=64, Ag=1, Ig=256, 12 layers); tied
embeddings; 15% dynamic masking (85% [MASK]); Gumbel-max sampling; loss
MLM + 50·RTD; AdamW; global-norm clipping at 1.0. Batch 128, sequence 128.

`finetuning_examples_per_s` is the fine-tuning peer: ELECTRA-Small with a
classification head (`ElectraForSequenceClassification`, a GLUE-style
sentence-pair task) or a span head (`ElectraForQuestionAnswering`, SQuAD
shapes), batch 32 × 128, AdamW, clipping at 1.0, in examples/s; the
fine-tuning benchmark puts its rows next to electra_tf's.

Needs the `bench` extra: `pip install -e '.[bench]'` (torch==2.13.0, transformers).
"""

import time

from bench.common import main

BATCH = 128
SEQ = 128
# `ElectraConfig` arguments of ELECTRA-Small's discriminator and of its 0.25 generator.
SMALL_DISCRIMINATOR = dict(
  embedding_size=128,
  hidden_size=256,
  num_hidden_layers=12,
  num_attention_heads=4,
  intermediate_size=1024,
  max_position_embeddings=512,
)
SMALL_GENERATOR = dict(
  SMALL_DISCRIMINATOR, hidden_size=64, num_attention_heads=1, intermediate_size=256
)


def _step_fn(vocab_size):
  import torch
  from transformers import ElectraConfig
  from transformers import ElectraForMaskedLM
  from transformers import ElectraForPreTraining

  torch.manual_seed(0)
  disc_config = ElectraConfig(vocab_size=vocab_size, **SMALL_DISCRIMINATOR)
  gen_config = ElectraConfig(vocab_size=vocab_size, **SMALL_GENERATOR)
  discriminator = ElectraForPreTraining(disc_config)
  generator = ElectraForMaskedLM(gen_config)
  # Tie the whole embedding block, as the original does.
  generator.electra.embeddings = discriminator.electra.embeddings
  generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
  params = list(
    {id(p): p for p in list(discriminator.parameters()) + list(generator.parameters())}.values()
  )
  optimizer = torch.optim.AdamW(params, lr=5e-4, eps=1e-6, weight_decay=0.01)
  num_predictions = int((0.15 + 0.005) * SEQ)
  mask_id, cls_id, sep_id = 103, 101, 102

  def step():
    input_ids = torch.randint(1000, vocab_size, (BATCH, SEQ))
    input_ids[:, 0] = cls_id
    input_ids[:, -1] = sep_id
    attention_mask = torch.ones_like(input_ids)
    # mask: num_predictions positions per row, sampled with replacement
    candidates = torch.ones(BATCH, SEQ)
    candidates[:, 0] = 0
    candidates[:, -1] = 0
    positions = torch.multinomial(candidates, num_predictions, replacement=True)
    replace = torch.rand(BATCH, num_predictions) < 0.85
    masked_ids = input_ids.clone()
    masked_ids.scatter_(1, positions, torch.where(replace, mask_id, input_ids.gather(1, positions)))
    targets = input_ids.gather(1, positions)
    gen_hidden = generator.electra(masked_ids, attention_mask=attention_mask).last_hidden_state
    picked = gen_hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, gen_hidden.shape[-1]))
    logits = generator.generator_lm_head(generator.generator_predictions(picked))
    mlm_loss = torch.nn.functional.cross_entropy(
      logits.reshape(-1, vocab_size), targets.reshape(-1)
    )
    with torch.no_grad():
      gumbel = -torch.log(-torch.log(torch.rand_like(logits) + 1e-9) + 1e-9)
      sampled = torch.argmax(logits + gumbel, dim=-1)
    fake_ids = input_ids.clone()
    fake_ids.scatter_(1, positions, sampled)
    labels = (fake_ids != input_ids).float()
    disc_logits = discriminator(fake_ids, attention_mask=attention_mask).logits
    disc_loss = torch.nn.functional.binary_cross_entropy_with_logits(disc_logits, labels)
    loss = mlm_loss + 50.0 * disc_loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    return float(loss.detach())

  return step


FINETUNE_BATCH = 32
FINETUNE_SEQ = 128
FINETUNE_TASKS = ("classification", "squad")


def _finetuning_step_fn(task, vocab_size, num_labels=3, batch=FINETUNE_BATCH, seq=FINETUNE_SEQ):
  """One fine-tuning step of ELECTRA-Small on `task` ("classification" or
  "squad") at `batch` × `seq`, on random token ids."""
  import torch
  from transformers import ElectraConfig
  from transformers import ElectraForQuestionAnswering
  from transformers import ElectraForSequenceClassification

  if task not in FINETUNE_TASKS:
    raise ValueError(f"task={task!r}; expected one of {FINETUNE_TASKS}")
  torch.manual_seed(0)
  config = ElectraConfig(
    vocab_size=vocab_size,
    **SMALL_DISCRIMINATOR,
    # the span head reads its start and end logits from two labels
    num_labels=num_labels if task == "classification" else 2,
  )
  if task == "classification":
    model = ElectraForSequenceClassification(config)
  else:
    model = ElectraForQuestionAnswering(config)
  model.train()
  optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6, weight_decay=0.01)
  b, s = batch, seq
  generator = torch.Generator().manual_seed(1)

  def step():
    input_ids = torch.randint(1000, vocab_size, (b, s), generator=generator)
    input_ids[:, 0] = 101
    input_ids[:, s // 2] = 102
    input_ids[:, -1] = 102
    token_type_ids = torch.zeros_like(input_ids)
    token_type_ids[:, s // 2 + 1 :] = 1
    inputs = dict(
      input_ids=input_ids,
      attention_mask=torch.ones_like(input_ids),
      token_type_ids=token_type_ids,
    )
    if task == "classification":
      inputs["labels"] = torch.randint(0, num_labels, (b,), generator=generator)
    else:
      start = torch.randint(s // 2 + 1, s - 8, (b,), generator=generator)
      inputs["start_positions"] = start
      inputs["end_positions"] = start + torch.randint(0, 8, (b,), generator=generator)
    loss = model(**inputs).loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())

  return step


def _seconds_per_step(step, warmup, measured):
  """Mean wall-clock seconds of `measured` calls of `step` after `warmup` untimed ones."""
  for _ in range(warmup):
    step()
  start = time.perf_counter()
  for _ in range(measured):
    step()
  return (time.perf_counter() - start) / measured


def finetuning_examples_per_s(
  task, vocab_size=30522, warmup=2, measured=5, batch=FINETUNE_BATCH, seq=FINETUNE_SEQ
):
  """The HF transformers / PyTorch fine-tuning step's speed on this CPU.

  Args:
    task: "classification" (GLUE-style, 3 labels) or "squad" (start/end
      span head).
    vocab_size: ELECTRA-Small's 30,522 by default.
    warmup: untimed steps first.
    measured: timed steps.
    batch, seq: the shapes (ELECTRA-Small fine-tuning's 32 × 128 by
      default; a smoke run uses smaller ones: seq > 18, vocab > 1000).

  Returns:
    dict with `name`, `examples_per_s`, `seconds_per_step` and the shapes.

  Example:
    >>> finetuning_examples_per_s("squad", warmup=1, measured=1)["examples_per_s"] > 0
    True
  """
  import torch

  step = _finetuning_step_fn(task, vocab_size, batch=batch, seq=seq)
  seconds = _seconds_per_step(step, warmup, measured)
  return {
    "name": f"hf_transformers_pytorch_finetune_{task}",
    "framework": "pytorch",
    "torch": torch.__version__,
    "task": task,
    "vocab_size": vocab_size,
    "batch": batch,
    "seq": seq,
    "seconds_per_step": round(seconds, 3),
    "examples_per_s": round(batch / seconds, 2),
  }


def run(quick=False):
  import torch

  torch.set_num_threads(torch.get_num_threads())
  rows = []
  for task in FINETUNE_TASKS:
    warmup, measured = (1, 1) if quick else (2, 5)
    rows.append(finetuning_examples_per_s(task, warmup=warmup, measured=measured))
  for vocab_size in (7814, 30522):
    warmup, measured = (1, 2) if quick else (2, 5)
    seconds = _seconds_per_step(_step_fn(vocab_size), warmup, measured)
    rows.append(
      {
        "name": f"hf_transformers_pytorch_rtd_step_v{vocab_size}",
        "framework": "pytorch",
        "torch": torch.__version__,
        "vocab_size": vocab_size,
        "batch": BATCH,
        "seq": SEQ,
        "seconds_per_step": round(seconds, 3),
        "sequences_per_s": round(BATCH / seconds, 2),
      }
    )
  return rows


if __name__ == "__main__":
  main(
    run,
    "ELECTRA-Small RTD pre-training and fine-tuning steps in HF transformers / PyTorch (peer)",
  )

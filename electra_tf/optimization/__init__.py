"""Optimizers and schedules: the original's `AdamWeightDecay`, its warm-up ×
polynomial-decay schedule, layer-wise learning-rate decay, and `factory`, the
one place where the pre-training and fine-tuning optimizers are built. A new
optimizer goes here; callers pass the official variable names, so nothing
here imports a model."""

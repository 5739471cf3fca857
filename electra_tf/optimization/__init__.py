"""Optimizers and schedules: the original's `AdamWeightDecay`, its schedule,
layer-wise learning-rate decay, LAMB, and `factory`, where the pre-training
and fine-tuning optimizers are built (from official names, without a model)."""

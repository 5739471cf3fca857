"""The pre-training objective, step by step: masking, the generator's
sampling, the losses (ELECTRA, MLM, Electric), the per-example random streams,
the metrics and `step.forward`, which chains them around a pretrainer's
generator and discriminator (taken as arguments, so this room sits below
`models`)."""

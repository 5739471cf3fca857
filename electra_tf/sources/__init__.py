"""What a path holds, and loading it: `formats` tells every checkpoint and
model format apart by content, and `any_format` is the one door through
which every entry point loads a part (discriminator, generator, pretrainer,
fine-tuning model) of any of them. Beside it the readers of one format each:
`layout` (the original's name-based checkpoints: shapes, config, models),
`finetuned_heads` (its fine-tuned task heads) and `object_graph` (electra_tf's
training checkpoints without their `config.json`). Sits above `checkpoints`
and `interop`, whose readers it dispatches to."""

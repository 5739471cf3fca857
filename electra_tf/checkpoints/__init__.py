"""Every checkpoint and model format electra_tf reads and writes:
`formats` tells them apart by content and `any_format` is the one door
through which every entry point reads them (with the readers `reader`,
`layout`, `finetuned_heads` and `object_graph`); the training checkpoint
managers (`checkpointing`: electra_tf's own and the name-based one of
fine-tuning); the original's name-based checkpoints (`official`,
`name_based`); Hugging Face and keras-hub directories; and `convert`, the
converter and publishing. Sits
above `models` and `finetune` (it builds their models) and below the runs."""

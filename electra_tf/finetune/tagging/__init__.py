"""Token tagging (chunking): the tasks, the label scheme, the per-token head
and the word-level scorer. The Keras task model over them is
`electra_tf.task_models.ElectraTokenTagger`."""

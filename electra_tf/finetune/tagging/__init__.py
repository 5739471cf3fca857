"""Token tagging (chunking): the tasks, the label scheme, the per-token head
and the word-level scorer."""

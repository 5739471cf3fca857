"""Text to ids: the vocab file (`vocab`), the original's WordPiece
tokenization in Python (`wordpiece`) and the in-graph tokenizer built on
tensorflow-text (`tokenizer`). A new tokenizer kind goes here; it imports only
`utils`."""

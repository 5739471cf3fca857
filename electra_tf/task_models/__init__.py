"""Keras task models that take raw strings through a preprocessor and `fit`:
`ElectraClassifier`, `ElectraQuestionAnswerer`, `ElectraTokenTagger` and their
base `ElectraTaskModel` (in keras-hub's manner). They sit on top of
`finetune` (heads, the fine-tuning model) and `serving` (their `export`)."""

"""Other libraries' formats, read and written: `huggingface` (transformers
ELECTRA directories: config, weights, the tokenizer files) and `keras_hub`
(keras-hub presets). The `tokenizer.json` builders they write with are in
`text`. Sits above `models` and `finetune`, whose layers the weights map onto."""

"""The LiteRT (`.tflite`) export: a trained translator as models for phones and browsers.

- `exporter`: `LiteRTExporter` writes one model per decoding mode (the loop inside,
  builtin ops only), the text files and the manifest (`keras_attention_client.litert_contract`).
- `checker`: `LiteRTChecker` checks an export (ops, the interpreter, translations against
  a reference); `check_report`: its report.
- `settings`: `LiteRTSettings`; `encoder`: the encoder as a loop over plain tensors;
  `weights`: int8 weight-only storage; `ops`: a model's op kinds; `text_files`: `text.json`.
- `function_converter`: `convert_function`, any `tf.function` of fixed inputs (e.g. a
  `keras_attention.seq2seq` decoder's) as a builtin-ops model, run and checked against
  TensorFlow; `builtin_converter`, the converter both use.
"""

"""`AUTO`: a setting's value that is resolved later, from the machine, the data or the model."""

from __future__ import annotations

AUTO = "auto"
"""The one spelling of `auto`, in every setting that takes it:

- `precision` (`keras_attention.precision`): the dtype policy this machine computes fastest in;
- `tokenizer`, `source_vocabulary_size`, `target_vocabulary_size` and `epochs` of a run
  (`keras_attention.runs.train_config.TrainConfig`): resolved from the training split and the
  time budget;
- an export's `--weights` (`keras_attention.export.weight_choices`): the storage picked from the
  model's compute dtype;
- an export's shortlist size (`keras_attention.vocabulary_shortlist.auto_shortlist_size`):
  resolved from the model.
"""

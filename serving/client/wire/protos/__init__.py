"""The wire messages, compiled from this folder's `.proto` files.

- A subset of TensorFlow's and TF Serving's protos (the messages and methods
  our clients use) with the same package names, field numbers and types, so
  the bytes on the wire are identical; no `tensorflow` import.
- `model_listing.proto`: `keras_attention.ModelListing/ListModels`, a service
  of our own (TF Serving has no call that lists models), so TF Serving's
  protos stay byte-identical.

Regenerate with `python serving/client/wire/protos/generate.py`.
"""

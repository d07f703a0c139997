"""The wire messages of TF Serving's gRPC API, compiled from this folder's `.proto` files.

A subset of TensorFlow's and TF Serving's protos (the messages and methods the
client uses) with the same package names, field numbers and types, so the
bytes on the wire are identical; no `tensorflow` import. Regenerate with
`python serving/client/protos/generate.py`.
"""

"""A local model server with TF Serving's gRPC and REST APIs (`python -m keras_attention.serving`).

For development and tests where `tensorflow_model_server` cannot run; `ModelServer`
(`model_server.py`) is the entry point, `docs/serving.md` maps the other modules.
The wire (protos, tensors, REST JSON, errors, contract) is `keras_attention_client.wire`.
"""

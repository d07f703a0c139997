"""A local model server with TF Serving's gRPC and REST APIs; `docs/serving.md` maps its modules.

`ModelServer` (`model_server.py`) is the entry point; the wire is `keras_attention_client.wire`.
"""

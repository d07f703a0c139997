"""A local model server with TF Serving's gRPC and REST APIs (`python -m keras_attention.serving`).

For development and tests where `tensorflow_model_server` cannot run. Needs
TensorFlow (it runs each version in a TF1 Session, as the real server does).

- `model_server.ModelServer` / `server_options.ServerOptions`: the server and
  its settings (`tensorflow_model_server`'s flag names).
- `servable_manager.ServableManager`: which versions are loaded and served.
- `saved_model`: the one SavedModel Session loader and warmup reader, also
  used by `export`.
- `batching`: server-side batching (`--enable_batching`).
- `prediction_service`, `model_service`, `rest_api_handler`, `inference`:
  the APIs.

It uses the client's `ServingError` and tensor conversions
(`keras_attention_client`), never the other way round.
"""

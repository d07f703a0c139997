"""A local model server with TF Serving's gRPC and REST APIs (`python -m keras_attention.serving`).

For development and tests where `tensorflow_model_server` cannot run. Needs
TensorFlow (it runs each version in a TF1 Session, as the real server does).

- `model_server.ModelServer` / `server_options.ServerOptions`: the server and
  its settings (`tensorflow_model_server`'s flag names).
- `servable_manager.ServableManager`: which versions are loaded and served.
- `serving_session.ServingSession`: one loaded version (also `export`'s).
- `batching`: server-side batching (`--enable_batching`).
- `inference`: Predict and metadata, shared by `grpc_services` (the gRPC
  services) and `rest_app` (the REST API on Uvicorn, with `json_tensor`).
- `translation_page.TranslationPage`: the page `--ui` serves (its files in `ui/`).

The wire (protos, tensors, errors, the translation contract) is the client
distribution's `keras_attention_client.wire`; nothing imports the server back.
"""

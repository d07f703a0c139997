"""A local model server with TF Serving's gRPC and REST APIs (`python -m keras_attention.serving`).

For development and tests where `tensorflow_model_server` cannot run: `model_server.ModelServer`
with its `server_options.ServerOptions`; `servable_manager.ServableManager` (versions);
`serving_session.ServingSession` (one loaded version, also `export`'s); `batching`;
`inference` (Predict and metadata) shared by `grpc_services` and `rest_app` (with
`json_tensor`); `translation_page` (`--ui`). The wire is `keras_attention_client.wire`.
"""

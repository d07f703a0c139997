"""Clients and a local server for TensorFlow Serving's gRPC and REST APIs.

    serving/
      client/   what a client machine needs (grpcio, protobuf, NumPy; no TensorFlow):
                TranslationClient, RestTranslationClient, Translation, ServingError,
                the translation contract, the wire protos; its own distribution
                (`pip install ./serving/client`, `keras-attention-client`).
      server/   the local model server (`python -m serving`), with TensorFlow.

`serving` never imports `keras_attention`, `export` or Keras: once a model is
exported, only the client (and TF Serving, or this package's server) are
needed.

The client's and the server's main names are importable from here (lazily, so
`import serving` is cheap): `from serving import TranslationClient`. A machine
with only `keras-attention-client` installed imports them from
`serving.client`.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "client.serving_error": ["ServingError"],
        "client.translation": ["Translation"],
        "client.translation_client": ["TranslationClient"],
        "client.rest_translation_client": ["RestTranslationClient"],
        "client.model_version_status": ["ModelVersionStatus"],
        "client.model_metadata": ["ModelMetadata"],
        "server.model_server": ["ModelServer"],
        "server.server_options": ["ServerOptions"],
        "server.servable_manager": ["ServableManager"],
    },
)

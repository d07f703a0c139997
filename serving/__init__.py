"""The local model server, with TF Serving's gRPC and REST APIs (`keras_attention.serving`).

    serving/
      server/   the local model server (`python -m keras_attention.serving`), with TensorFlow.
      client/   the `keras-attention-client` distribution: its own top-level package,
                `keras_attention_client` (grpcio, protobuf, NumPy; no TensorFlow):
                TranslationClient, RestTranslationClient, Translation, ServingError,
                the translation contract, the wire protos.

`keras_attention.serving` never imports Keras, the rest of `keras_attention`
or `keras_attention.export`, but for `keras_attention.saved_model_session`
(TF Serving's Session path and warmup reader, TensorFlow only, shared with the
export's check): once a model is exported, only the client (and TF Serving, or
this package's server) are needed.

The server's main names are importable from here, lazily (so the import is
cheap): `from keras_attention.serving import ModelServer`. The clients come from
their own package: `from keras_attention_client import TranslationClient`.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "server.model_server": ["ModelServer"],
        "server.server_options": ["ServerOptions"],
        "server.servable_manager": ["ServableManager"],
    },
)

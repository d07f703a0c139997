"""`ServingSession`: run an export the way TensorFlow Serving runs it (the local server's loader)."""

from keras_attention.serving.server.serving_session import ServingSession

__all__ = ["ServingSession"]

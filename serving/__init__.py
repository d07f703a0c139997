"""Clients and a local server for TensorFlow Serving's gRPC and REST APIs (no keras_attention import)."""

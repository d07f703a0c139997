"""keras-attention: Bahdanau and Luong attention for Keras 3, from layer to TF Serving."""

__version__ = "0.1.0"

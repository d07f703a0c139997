"""Export trained keras-attention models as SavedModels for TensorFlow Serving."""

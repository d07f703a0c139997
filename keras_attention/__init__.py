"""keras-attention: Bahdanau and Luong attention for Keras 3, from layer to TF Serving.

Public names are imported lazily (PEP 562, through `lazy_loader`), so
`import keras_attention` and the command line's `--help` do not load TensorFlow.
"""

import lazy_loader

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "layers.bahdanau_attention": ["BahdanauAttention"],
        "layers.base_attention": ["BaseAttention"],
        "layers.luong_attention": ["LuongAttention"],
        "models.seq2seq": ["Seq2Seq"],
        "translator": ["Translator"],
        "decoding.greedy_search": ["GreedySearch"],
        "decoding.beam_search": ["BeamSearch"],
        "decoding.random_sampling": ["RandomSampling"],
        "text.text_vectorizer": ["TextVectorizer"],
    },
)

"""keras-attention: Bahdanau and Luong attention for Keras 3, from layer to TF Serving.

Public names are imported lazily (PEP 562, through `lazy_loader`), so
`import keras_attention` and the command line's `--help` do not load TensorFlow.

Importing warns (`installation.ForeignDistributionWarning`) when the unrelated
`keras-attention` distribution, which also installs a `keras_attention`
package, is installed too: see `keras_attention.installation`.
"""

import lazy_loader

from keras_attention import installation

__version__ = "0.2.0"

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "layers.bahdanau_attention": ["BahdanauAttention"],
        "layers.base_attention": ["BaseAttention"],
        "layers.luong_attention": ["LuongAttention"],
        "models.seq2seq": ["Seq2Seq"],
        "inference.translator": ["Translator"],
        "decoding.greedy_search": ["GreedySearch"],
        "decoding.beam_search": ["BeamSearch"],
        "decoding.random_sampling": ["RandomSampling"],
        "text.text_vectorizer": ["TextVectorizer"],
    },
)

installation.warn_if_shared()

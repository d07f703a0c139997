"""In-graph text processing: tokenization, vocabularies, `TextVectorizer`."""

from keras_attention.text.text_vectorizer import TextVectorizer
from keras_attention.text.tokenization import detokenize, normalize, tokenize
from keras_attention.text.vocabulary import (
    END_ID,
    END_TOKEN,
    PAD_ID,
    PAD_TOKEN,
    RESERVED_TOKENS,
    START_ID,
    START_TOKEN,
    UNK_ID,
    UNK_TOKEN,
    build_vocabulary,
    count_tokens,
    load_vocabulary,
    save_vocabulary,
    validate_vocabulary,
)

__all__ = [
    "END_ID",
    "END_TOKEN",
    "PAD_ID",
    "PAD_TOKEN",
    "RESERVED_TOKENS",
    "START_ID",
    "START_TOKEN",
    "TextVectorizer",
    "UNK_ID",
    "UNK_TOKEN",
    "build_vocabulary",
    "count_tokens",
    "detokenize",
    "load_vocabulary",
    "normalize",
    "save_vocabulary",
    "tokenize",
    "validate_vocabulary",
]

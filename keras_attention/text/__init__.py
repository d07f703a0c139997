"""In-graph text processing: tokenization, vocabularies, `TextVectorizer`, `SubwordVectorizer`."""

from keras_attention.text.base_vectorizer import BaseVectorizer
from keras_attention.text.spacing_rules import SPACED_MARKS, SpacingRules
from keras_attention.text.subword_model import (
    check_subword_model,
    load_subword_model,
    minimum_vocabulary_size,
    save_subword_model,
    train_subword_model,
)
from keras_attention.text.subword_vectorizer import SubwordVectorizer
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
    extend_vocabulary,
    load_vocabulary,
    save_vocabulary,
    validate_vocabulary,
)

__all__ = [
    "BaseVectorizer",
    "END_ID",
    "END_TOKEN",
    "PAD_ID",
    "PAD_TOKEN",
    "RESERVED_TOKENS",
    "SPACED_MARKS",
    "START_ID",
    "START_TOKEN",
    "SpacingRules",
    "SubwordVectorizer",
    "TextVectorizer",
    "UNK_ID",
    "UNK_TOKEN",
    "build_vocabulary",
    "check_subword_model",
    "count_tokens",
    "detokenize",
    "extend_vocabulary",
    "load_subword_model",
    "load_vocabulary",
    "minimum_vocabulary_size",
    "normalize",
    "save_subword_model",
    "save_vocabulary",
    "tokenize",
    "train_subword_model",
    "validate_vocabulary",
]

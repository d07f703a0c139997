"""The vocabulary shortlist: the target ids a translation may use, chosen from its source ids.

One module per job: `vocabulary_shortlist` (the `VocabularyShortlist` and its
graph ops), `cooccurrence` (the table, counted from a corpus's sentence
pairs), `run_pairs` (a trained run's training pairs) and `defaults` (the sizes
the command line and an export start from, without TensorFlow). Names are
imported lazily (through `lazy_loader`), so the command line's flags do not
load TensorFlow.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "cooccurrence": ["check_shortlist_size"],
        "defaults": ["auto_shortlist_size"],
        "vocabulary_shortlist": ["VocabularyShortlist"],
    },
)

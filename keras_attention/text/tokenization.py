"""In-graph normalization, tokenization and detokenization of sentences.

Everything here is a TensorFlow op that TensorFlow Serving links: core
`tf.strings` ops (`UnicodeTranscode`, `RegexReplace`, `StringSplitV2`,
`ReduceJoin`) plus tensorflow-text's `NormalizeUTF8`. No `py_function`, no
other custom op, so the same code runs eagerly, in `tf.function`, in
`tf.data` and inside an exported SavedModel run by a C++ `Session`.

The tokenizer is rule-based and language-agnostic, tuned for English and
French (the Tatoeba corpus shipped with the package):

* Case is kept: the vocabulary is cased and translations come out properly
  cased.
* Punctuation and symbols become tokens of their own (`"Salut !"` ->
  `["Salut", "!"]`); runs of `. ! ?` stay one token (`"..."`, `"?!"`).
* French elision splits after the apostrophe: `"l'homme"` -> `["l'", "homme"]`,
  `"qu'il"` -> `["qu'", "il"]`, `"jusqu'à"` -> `["jusqu'", "à"]`. Only the
  elided words (`c d j l m n s t qu jusqu lorsqu puisqu quoiqu`) at the start
  of a word are split, so `"aujourd'hui"`, `"quelqu'un"`, `"presqu'île"`,
  `"O'Brien"`, `"o'clock"` stay whole.
* English clitics split before the apostrophe, as in the Penn Treebank:
  `"don't"` -> `["do", "n't"]`, `"Tom's"` -> `["Tom", "'s"]`, `"I'm"` ->
  `["I", "'m"]` (also `'re 've 'll 'd`). They begin with a consonant, so they
  never clash with French elision (which only happens before a vowel or h).
  The plural possessive keeps its apostrophe: `"boys'"` is one token.
* A hyphen inside a word starts a new token that keeps the hyphen:
  `"a-t-il"` -> `["a", "-t", "-il"]`, `"peut-être"` -> `["peut", "-être"]`,
  `"Est-ce"` -> `["Est", "-ce"]`. French inversions (`-il -elle -vous -ce`)
  then share a handful of tokens instead of one token per verb form, and the
  detokenizer knows to glue them back. A spaced dash (`" - "`) stays a token
  of its own.
* Numbers keep their inner separators (`"3.5"`, `"1,000"`, `"10:30"`,
  `"9/11"`) and dotted abbreviations stay whole (`"I.D."`, `"p.m."`).

The detokenizer joins tokens with spaces and then removes the spaces the
tokenizer introduced (before `. , ) ] }`, after `( [ { ¿ ¡`, after an elided
word, around glued hyphen pieces and clitics, inside pairs of straight
quotes, between a currency sign and its number). The conventions that differ
between languages (a space before `! ? : ; %`, spaces inside `« »`) follow a
`SpacingRules`, measured on the target language's text: French typography
(`Va !`) for French, none of those spaces for English, Spanish or German.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from keras_attention.text.spacing_rules import SPACED_MARKS, SpacingRules

# A letter, combining mark or digit: the characters words are made of.
_ALNUM = r"\p{L}\p{M}\p{N}"
# Words whose final vowel French elides before a vowel or a mute h.
_ELISION = r"(?i:qu|jusqu|lorsqu|puisqu|quoiqu|[cdjlmnst])'"
# Characters removed outright: zero-width space, word joiner, BOM, soft hyphen.
_INVISIBLE = r"[\x{200B}\x{2060}\x{FEFF}\x{00AD}]"
# Apostrophe look-alikes mapped to the ASCII apostrophe.
_APOSTROPHES = r"[\x{2019}\x{02BC}]"

# One token, tried left to right; the first alternative that matches at a
# position wins (RE2 leftmost-first), so a word-initial elided word is tried
# before the word alternative and a split happens only at the start of a word.
_TOKEN = "|".join(
    [
        r"(?i:n't)",  # English negation clitic (separated by _CLITIC_NEGATION)
        r"'(?i:s|re|ve|ll|d|m)\b",  # English clitics (separated by _CLITIC)
        _ELISION,  # French elided word: l' qu' jusqu'
        r"(?:\p{L}\.){2,}",  # dotted abbreviation: I.D. p.m. U.S.
        rf"[{_ALNUM}]*[sS]'",  # English plural possessive: boys' parents'
        r"\p{N}+(?:[.,:/]\p{N}+)+",  # number with separators: 3.5 1,000 10:30
        rf"[{_ALNUM}]+(?:'[{_ALNUM}]+)*",  # word, inner apostrophes kept
        rf"-[{_ALNUM}]+(?:'[{_ALNUM}]+)*",  # hyphen piece of a compound: -il -être
        r"[.!?]+",  # sentence punctuation run: . ... ?!
        r"\S",  # any other character: one token each
    ]
)
# Separate English clitics from their host word before the token pass.
_CLITIC_NEGATION = (rf"(\p{{L}})((?i:n't))([^{_ALNUM}]|$)", r"\1 \2\3")
_CLITIC = (rf"(\p{{L}})('(?i:s|re|ve|ll|d|m))([^{_ALNUM}]|$)", r"\1 \2\3")

# `normalize`'s rules after NFKC, and `tokenize`'s after `normalize` (before the split on spaces).
_NORMALIZE_RULES = [
    (_APOSTROPHES, "'"),
    (_INVISIBLE, ""),
    (r"[\p{Z}\p{Cc}]+", " "),
    (r"^ | $", ""),
]
_TOKENIZE_RULES = [_CLITIC_NEGATION, _CLITIC, (_TOKEN, r" \0 ")]


def normalize(texts):
    """Normalizes sentences inside the graph, before tokenization.

    The computation:

    1. Invalid UTF-8 bytes are replaced with U+FFFD (`tf.strings.unicode_transcode`
       with `errors="replace"`), so no later op sees broken UTF-8.
    2. NFKC normalization (`tensorflow_text.normalize_utf8`): compatibility
       characters fold to their plain form; U+00A0, U+202F and U+2009 (the
       no-break and thin spaces of French typography) become U+0020 and
       `"…"` becomes `"..."`.
    3. `’` (U+2019) and `ʼ` (U+02BC) become the ASCII apostrophe `'`.
    4. Zero-width space, word joiner, BOM and soft hyphen are removed.
    5. Every Unicode space or control character becomes a space; runs of
       spaces collapse to one; leading and trailing spaces are stripped.

    `keras_attention.data.normalize_text` does the same in Python, so a corpus
    loaded with `load_corpus` is already in this form.

    Args:
        texts: string tensor of any shape.

    Returns:
        A string tensor of the same shape.

    Example:

    >>> normalize(tf.constant(["Va\u202f!", "L\u2019homme  "])).numpy()
    array([b'Va !', b"L'homme"], dtype=object)
    """
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    texts = tf.strings.unicode_transcode(
        texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    texts = tf_text.normalize_utf8(texts, "NFKC")
    for pattern, rewrite in _NORMALIZE_RULES:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return texts


def tokenize(texts):
    """Splits sentences into cased word and punctuation tokens.

    The computation:

    1. `normalize(texts)` (UTF-8 repair, NFKC, spaces, apostrophes).
    2. English clitics are separated from their host (`don't` -> `do n't`).
    3. Every token (see the module docstring for the rules) is surrounded by
       spaces with one `RegexReplace`.
    4. The result is split on spaces.

    Empty and whitespace-only strings give zero tokens. The tokens never
    contain whitespace and are never empty.

    Args:
        texts: string tensor `(batch_size,)` (or a scalar).

    Returns:
        A `tf.RaggedTensor` of strings `(batch_size, None)` (a 1-D tensor
        `(None,)` for a scalar input).

    Example:

    >>> tokenize(tf.constant(["Qu'est-ce que c'est ?", "I don't know."])).to_list()
    [[b"Qu'", b'est', b'-ce', b'que', b"c'", b'est', b'?'],
     [b'I', b'do', b"n't", b'know', b'.']]
    """
    texts = normalize(texts)
    for pattern, rewrite in _TOKENIZE_RULES:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.split(texts)


# Detokenization rules, applied in order to the tokens joined by single spaces.
_DETOKENIZE_COMMON = [
    # Glue an elided word to the next word: "l' homme" -> "l'homme".
    (rf"(^| )({_ELISION}) ", r"\1\2"),
    # Close pairs of straight quotes: '" hello "' -> '"hello"'.
    (r'(^| )" (.*?) "', r'\1"\2"'),
    (r"(^| )' (.*?) '", r"\1'\2'"),
    # Glue hyphen pieces and English clitics to the previous token.
    (rf" (-[{_ALNUM}])", r"\1"),
    (r" ('(?i:s|re|ve|ll|d|m)\b|(?i:n't))", r"\1"),
    # No space before closing punctuation, none after opening brackets.
    (r" ([.,)\]}])", r"\1"),
    (r"([(\[{¿¡]) ", r"\1"),
    # A currency sign sticks to the number it precedes: "$ 5" -> "$5".
    (r"([$£€¥]) (\p{N})", r"\1\2"),
]


def _spacing_rules(spacing: SpacingRules) -> list[tuple[str, str]]:
    """The `RegexReplace` rules that write `spacing`'s conventions."""
    rules = []
    tight = [mark for mark in SPACED_MARKS if mark not in spacing.space_before]
    if tight:
        rules.append((rf" ([{''.join(tight)}])", r"\1"))
    if not spacing.space_inside_guillemets:
        # Pairs, either way round: «sí» (Spanish, Swiss) and »ja« (German).
        rules += [(r"(^| )« (.*?) »", r"\1«\2»"), (r"(^| )» (.*?) «", r"\1»\2«")]
    return rules


def detokenize_rules(spacing: SpacingRules) -> list[tuple[str, str]]:
    """The `(pattern, rewrite)` rules `detokenize` applies, in order, to the tokens
    joined by single spaces (RE2 syntax, as `tf.strings.regex_replace` reads them)."""
    return [(" {2,}", " "), (r"^ | $", ""), *_DETOKENIZE_COMMON, *_spacing_rules(spacing)]


def text_rules(spacing: SpacingRules | None = None) -> dict:
    """Every regular expression of this module's normalization, tokenization and
    (with `spacing`) detokenization, as `(pattern, rewrite)` pairs in the order the
    graph applies them (RE2 syntax; `\\0` in a rewrite is the whole match).

    A LiteRT export writes them beside the model so that a program without
    TensorFlow tokenizes exactly as the SavedModel's graph does
    (`keras_attention_client.litert_text.TextRules`):

    1. `normalize`: invalid UTF-8 replaced by U+FFFD, NFKC, then the
       `"normalize"` rules.
    2. `tokenize`: the `"tokenize"` rules, then a split on spaces.
    3. `detokenize`: the tokens joined by single spaces, then the
       `"detokenize"` rules.
    """
    rules = {
        "normalization_form": "NFKC",
        "normalize": [list(rule) for rule in _NORMALIZE_RULES],
        "tokenize": [list(rule) for rule in _TOKENIZE_RULES],
    }
    if spacing is not None:
        rules["detokenize"] = [list(rule) for rule in detokenize_rules(spacing)]
    return rules


def detokenize(tokens, french_spacing=False, spacing=None):
    """Joins tokens back into sentences; the inverse of `tokenize`.

    The computation:

    1. The tokens of each sentence are joined with single spaces; empty
       tokens (padding) are dropped.
    2. The spaces that `tokenize` introduced are removed by a few
       `RegexReplace` rules (see the module docstring).
    3. The spacing conventions that differ between languages follow
       `spacing` (a `SpacingRules`, usually measured on the target side of
       the training data): a space before the marks of
       `spacing.space_before` (of `! ? : ; %`) or not, spaces inside
       `« »` or not. Without `spacing`, `french_spacing=True` is
       `SpacingRules.french()` (`Va !`, `« oui »`, the form of the French
       side of the bundled corpus) and `False` is `SpacingRules.plain()`
       (`Go!`, `50%`).

    `detokenize(tokenize(s))` gives back `normalize(s)` for the large majority
    of sentences of the bundled corpus (measurements:
    docs/research/model-notes.md). It does not for hand-made spacing that the
    rules cannot know about (`"vous 'êtes"`, `"ravi(e)"`) or for French
    sentences typed without the space before `!` or `?`.

    Args:
        tokens: string `tf.RaggedTensor` `(batch_size, None)` or dense string
            tensor `(batch_size, T)` padded with `""`. A single sequence
            `(T,)` gives a scalar.
        french_spacing: bool, the spacing when `spacing` is `None`: French
            (`True`) or plain (`False`).
        spacing: a `SpacingRules` (or its config dict), or `None`.

    Returns:
        A string tensor `(batch_size,)`.

    Example:

    >>> detokenize(tf.ragged.constant([["L'", "homme", "est", "là", "!"]])).numpy()
    array([b"L'homme est l\xc3\xa0!"], dtype=object)
    >>> detokenize(tf.constant([["Va", "!", ""]]), french_spacing=True).numpy()
    array([b'Va !'], dtype=object)
    """
    if not isinstance(tokens, tf.RaggedTensor):
        tokens = tf.convert_to_tensor(tokens, dtype=tf.string)
    texts = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    if spacing is None:
        spacing = SpacingRules.french() if french_spacing else SpacingRules.plain()
    elif isinstance(spacing, dict):
        spacing = SpacingRules.from_config(spacing)
    for pattern, rewrite in detokenize_rules(spacing):
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return texts

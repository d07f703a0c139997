"""`SpacingRules`: measured on a language's text, written by `detokenize`."""

import pytest
import tensorflow as tf

from keras_attention.data import load_corpus
from keras_attention.text import (
    SpacingRules,
    TextVectorizer,
    build_vocabulary,
    detokenize,
    tokenize,
)

FRENCH = ["Va !", "Où est le train ?", "Il a dit : « non ».", "Attends ; viens !", "Qui ?"]
SPANISH = ["¿Dónde está el tren?", "¡Qué día!", "Dijo: «no».", "¿Quién?", "Ven; espera."]
ENGLISH = ["Where is the train?", "Go!", "He said: no.", "Who?", "It's 10:30, 50% off!"]
GERMAN = ["Wo ist der Zug?", "Geh!", "Er sagte: »nein«.", "Wer?", "Warte; komm!"]


@pytest.mark.parametrize(
    "texts, expected",
    [
        # "%" is not used: it follows the other marks.
        (FRENCH, SpacingRules("!?:;%", space_inside_guillemets=True)),
        (SPANISH, SpacingRules.plain()),
        (ENGLISH, SpacingRules.plain()),
        (GERMAN, SpacingRules.plain()),
    ],
    ids=["french", "spanish", "english", "german"],
)
def test_measure(texts, expected):
    assert SpacingRules.measure(texts) == expected


def test_measure_on_the_bundled_corpus():
    pairs = load_corpus().pairs
    assert SpacingRules.measure(t for _, t in pairs) == SpacingRules.french()
    assert SpacingRules.measure(s for s, _ in pairs) == SpacingRules.plain()


def test_the_majority_wins_and_rare_marks_follow_the_others():
    # One sentence typed without the French space does not change the rule.
    assert SpacingRules.measure(["Va !", "Viens !", "Non!", "Quoi ?"]).space_before == "!?:;%"
    # ";" is used once, tightly: it follows the other marks (spaced).
    assert "!" in SpacingRules.measure(["Va !", "Viens !", "Oui !", "a;"]).space_before
    assert SpacingRules.measure(["Va !", "Viens !", "Oui !", "a;"]).space_before == "!?:;%"
    # Too few marks overall: plain.
    assert SpacingRules.measure(["Va !"]) == SpacingRules.plain()
    # Numbers and ellipses are not punctuation uses.
    assert SpacingRules.measure(["10:30", "3:15", "1:2", "Quoi...?"]) == SpacingRules.plain()


@pytest.mark.parametrize("texts", [FRENCH, SPANISH, ENGLISH, GERMAN])
def test_detokenize_with_measured_rules_gives_each_language_back(texts):
    spacing = SpacingRules.measure(texts * 2)
    back = detokenize(tokenize(tf.constant(texts)), spacing=spacing).numpy()
    assert [t.decode("utf-8") for t in back] == texts


def test_target_vectorizer_writes_the_measured_spacing():
    for texts in (FRENCH, SPANISH):
        vectorizer = TextVectorizer(
            build_vocabulary(texts, 100), spacing=SpacingRules.measure(texts).get_config()
        )
        decoded = vectorizer.decode(vectorizer.encode(tf.constant(texts), add_end=True)).numpy()
        assert [t.decode("utf-8") for t in decoded] == texts
        restored = TextVectorizer.from_config(vectorizer.get_config())
        assert restored.spacing == vectorizer.spacing


def test_french_spacing_switch_still_works():
    tokens = tokenize(tf.constant(["Va !", "Go!"]))
    assert detokenize(tokens, french_spacing=True).numpy().tolist() == [b"Va !", b"Go !"]
    assert detokenize(tokens).numpy().tolist() == [b"Va!", b"Go!"]
    assert TextVectorizer(["", "[UNK]", "[START]", "[END]"], french_spacing=True).spacing == (
        SpacingRules.french()
    )


def test_config_round_trip_and_bad_values():
    rules = SpacingRules("?!", True)
    assert rules.space_before == "!?"
    assert SpacingRules.from_config(rules.get_config()) == rules
    with pytest.raises(ValueError, match="space_before"):
        SpacingRules("!.")
    with pytest.raises(ValueError, match="Unknown spacing rule keys"):
        SpacingRules.from_config({"space_after": "«"})
    with pytest.raises(TypeError, match="spacing"):
        TextVectorizer(["", "[UNK]", "[START]", "[END]"], spacing="french")

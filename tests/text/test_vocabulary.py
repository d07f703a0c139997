import pytest
import tensorflow as tf

from keras_attention.text import (
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    build_vocabulary,
    count_tokens,
    extend_vocabulary,
    load_vocabulary,
    save_vocabulary,
)

RESERVED = ["", "[UNK]", "[START]", "[END]"]
TEXTS = ["Le chat dort.", "Le chien dort.", "Un chat ?", "L'homme dort."]
# Counts by hand: dort 3, . 3, Le 2, chat 2, ? 1, L' 1, Un 1, chien 1, homme 1.
# Ties are broken by code point order: "." < "?" < "L'" < "Le" < "Un" < "chat" ...
EXPECTED = RESERVED + [".", "dort", "Le", "chat", "?", "L'", "Un", "chien", "homme"]


def test_reserved_tokens_and_ids():
    assert list(RESERVED_TOKENS) == RESERVED
    assert (PAD_ID, UNK_ID, START_ID, END_ID) == (0, 1, 2, 3)


def test_count_tokens_by_hand():
    counts = count_tokens(TEXTS)
    assert counts == {
        "Le": 2, "chat": 2, "dort": 3, ".": 3, "chien": 1, "Un": 1, "?": 1, "L'": 1, "homme": 1
    }  # fmt: skip


def test_build_vocabulary_orders_by_count_then_token():
    assert build_vocabulary(TEXTS, max_size=100) == EXPECTED


def test_build_vocabulary_max_size_counts_reserved_tokens():
    assert build_vocabulary(TEXTS, max_size=6) == EXPECTED[:6]


def test_extend_vocabulary_keeps_every_id_and_appends_frequent_new_tokens():
    old = RESERVED + ["chat", "Un", "zèbre"]
    # TEXTS' tokens seen at least twice, by hand: dort 3, . 3, Le 2, chat 2 (known).
    assert extend_vocabulary(old, TEXTS, max_size=100) == old + [".", "dort", "Le"]
    assert extend_vocabulary(old, TEXTS, max_size=8) == old + ["."]
    assert extend_vocabulary(old, TEXTS, max_size=7) == old
    # Seen once is enough with min_count=1: ? L' chien homme, by code point.
    assert extend_vocabulary(old, TEXTS, max_size=100, min_count=1) == old + [
        ".", "dort", "Le", "?", "L'", "chien", "homme"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("vocabulary", "max_size", "min_count", "message"),
    [
        (RESERVED + ["a"], 4, 2, "max_size"),
        (RESERVED + ["a"], 10, 0, "min_count"),
        (["a"] + RESERVED, 10, 2, "reserved tokens"),
    ],
)
def test_extend_vocabulary_refuses_bad_arguments(vocabulary, max_size, min_count, message):
    with pytest.raises(ValueError, match=message):
        extend_vocabulary(vocabulary, TEXTS, max_size=max_size, min_count=min_count)
    assert build_vocabulary(TEXTS, max_size=4) == RESERVED


def test_build_vocabulary_min_count():
    assert build_vocabulary(TEXTS, max_size=100, min_count=2) == RESERVED + [
        ".",
        "dort",
        "Le",
        "chat",
    ]


def test_build_vocabulary_is_deterministic_under_input_order():
    assert build_vocabulary(list(reversed(TEXTS)), max_size=100) == EXPECTED


@pytest.mark.parametrize("batched", [False, True])
def test_build_vocabulary_from_dataset(batched):
    dataset = tf.data.Dataset.from_tensor_slices(TEXTS)
    if batched:
        dataset = dataset.batch(3)
    assert build_vocabulary(dataset, max_size=100) == EXPECTED


def test_build_vocabulary_from_generator_larger_than_a_batch():
    texts = (f"mot{i % 3000}" for i in range(5000))
    vocabulary = build_vocabulary(texts, max_size=10)
    # mot0..mot1999 appear twice; sorted by token string among them.
    assert vocabulary == RESERVED + sorted(f"mot{i}" for i in range(2000))[:6]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_size": 3}, "max_size"),
        ({"max_size": 10, "min_count": 0}, "min_count"),
    ],
)
def test_build_vocabulary_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_vocabulary(TEXTS, **kwargs)


def test_build_vocabulary_rejects_a_single_string():
    with pytest.raises(TypeError, match="single string"):
        build_vocabulary("Le chat dort.", max_size=10)


def test_save_and_load_round_trip(tmp_path):
    vocabulary = RESERVED + ["l'", "être", "«", "?!", "日本"]
    path = tmp_path / "vocab.txt"
    save_vocabulary(vocabulary, path)
    # Line i (from 1) holds the token of id i; the padding token is implied.
    assert path.read_text(encoding="utf-8").split("\n") == vocabulary[1:] + [""]
    assert load_vocabulary(path) == vocabulary
    assert load_vocabulary(str(path)) == vocabulary


def test_load_accepts_crlf_and_missing_final_newline(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\r\n[START]\r\n[END]\r\nmot")
    assert load_vocabulary(path) == RESERVED + ["mot"]


@pytest.mark.parametrize(
    "content, match",
    [
        ("[UNK]\n[START]\n[END]\n\nmot\n", "line 4 is empty"),
        ("mot\n[UNK]\n[START]\n[END]\n", "reserved tokens"),
        ("[UNK]\n[START]\n[END]\nmot\nmot\n", "twice"),
        ("[UNK]\n[START]\n[END]\ndeux mots\n", "whitespace"),
    ],
)
def test_load_rejects_bad_files(tmp_path, content, match):
    path = tmp_path / "vocab.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=match) as error:
        load_vocabulary(path)
    assert str(path) in str(error.value)


def test_save_rejects_invalid_vocabulary(tmp_path):
    with pytest.raises(ValueError, match="reserved tokens"):
        save_vocabulary(["mot"], tmp_path / "vocab.txt")

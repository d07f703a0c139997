import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers NormalizeUTF8 for the Session path)

from keras_attention.text import TextVectorizer, save_vocabulary, tokenize

VOCABULARY = ["", "[UNK]", "[START]", "[END]", "Le", "chat", "dort", ".", "L'", "homme", "!", "?"]
ID = {token: index for index, token in enumerate(VOCABULARY)}


def ids(*tokens):
    return [ID[token] for token in tokens]


def test_call_pads_with_zero_and_maps_unknown_tokens():
    vectorizer = TextVectorizer(VOCABULARY)
    out = vectorizer(tf.constant(["Le chat dort.", "Le chien dort !", "", "   "]))
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(
        out.numpy(),
        [
            ids("Le", "chat", "dort", "."),
            ids("Le") + [1] + ids("dort", "!"),
            [0] * 4,
            [0] * 4,
        ],
    )


def test_reserved_ids_and_sizes():
    vectorizer = TextVectorizer(VOCABULARY)
    assert (vectorizer.pad_id, vectorizer.unk_id, vectorizer.start_id, vectorizer.end_id) == (
        0,
        1,
        2,
        3,
    )
    assert vectorizer.vocabulary_size == len(VOCABULARY)
    assert vectorizer.get_vocabulary() == VOCABULARY


def test_reserved_token_strings_in_text_are_not_reserved_ids():
    vectorizer = TextVectorizer(VOCABULARY)
    out = vectorizer(tf.constant(["[START] [END]"]))
    assert 2 not in out.numpy() and 3 not in out.numpy()


def test_encode_adds_start_and_end():
    vectorizer = TextVectorizer(VOCABULARY)
    out = vectorizer.encode(
        tf.constant(["Le chat.", "L'homme dort !"]), add_start=True, add_end=True
    )
    np.testing.assert_array_equal(
        out.numpy(),
        [
            [2] + ids("Le", "chat", ".") + [3, 0],
            [2] + ids("L'", "homme", "dort", "!") + [3],
        ],
    )
    only_end = vectorizer.encode(tf.constant(["Le chat.", ""]), add_end=True)
    np.testing.assert_array_equal(only_end.numpy(), [ids("Le", "chat", ".") + [3], [3, 0, 0, 0]])


def test_truncation_keeps_room_for_start_and_end():
    vectorizer = TextVectorizer(VOCABULARY, max_length=3)
    sentence = tf.constant(["Le chat dort.", "Le"])
    np.testing.assert_array_equal(
        vectorizer(sentence).numpy(), [ids("Le", "chat", "dort"), ids("Le") + [0, 0]]
    )
    np.testing.assert_array_equal(
        vectorizer.encode(sentence, add_start=True, add_end=True).numpy(),
        [[2, ID["Le"], 3], [2, ID["Le"], 3]],
    )
    np.testing.assert_array_equal(
        vectorizer.encode(sentence, add_start=True).numpy(),
        [[2, ID["Le"], ID["chat"]], [2, ID["Le"], 0]],
    )


def test_pad_to_max_length_gives_a_static_width():
    vectorizer = TextVectorizer(VOCABULARY, max_length=6, pad_to_max_length=True)
    out = vectorizer(tf.constant(["Le chat.", ""]))
    np.testing.assert_array_equal(out.numpy(), [ids("Le", "chat", ".") + [0, 0, 0], [0] * 6])
    assert vectorizer.compute_output_shape((None,)) == (None, 6)


def test_ragged_encode_and_lookup():
    vectorizer = TextVectorizer(VOCABULARY, max_length=4)
    ragged = vectorizer.encode(tf.constant(["Le chat dort.", "Le"]), add_end=True, ragged=True)
    assert ragged.to_list() == [ids("Le", "chat", "dort") + [3], ids("Le") + [3]]
    # lookup does not truncate; "" (dense padding) maps to 0.
    looked_up = vectorizer.lookup(tf.constant([["Le", "chat", "dort", ".", "chien", ""]]))
    np.testing.assert_array_equal(looked_up.numpy(), [ids("Le", "chat", "dort", ".") + [1, 0]])


def test_decode_stops_at_end_and_drops_padding_and_start():
    vectorizer = TextVectorizer(VOCABULARY)
    batch = tf.constant(
        [
            [2] + ids("Le", "chat", "dort", ".") + [3] + ids("chat", "chat"),
            ids("L'", "homme", "dort", "!") + [0, 0, 0, 0],
            [3] + ids("Le", "chat") + [0, 0, 0, 0, 0],
            ids("Le") + [1, 99, -5] + ids("?") + [0, 0, 0],  # unknown / out-of-range ids
        ]
    )
    out = [text.decode() for text in vectorizer.decode(batch).numpy()]
    assert out == ["Le chat dort.", "L'homme dort!", "", "Le [UNK] [UNK] [UNK]?"]
    french = TextVectorizer(VOCABULARY, french_spacing=True)
    assert french.decode(batch[1:2]).numpy()[0].decode() == "L'homme dort !"


def test_ids_to_tokens():
    vectorizer = TextVectorizer(VOCABULARY)
    tokens = vectorizer.ids_to_tokens(tf.constant([[4, 5, 0], [2, 3, 100]]))
    assert tokens.numpy().tolist() == [[b"Le", b"chat", b""], [b"[START]", b"[END]", b"[UNK]"]]


@pytest.mark.parametrize("french_spacing", [False, True])
def test_decode_of_encode_gives_the_sentence_back(french_spacing):
    sentences = ["Le chat dort.", "L'homme dort !", "Le chat ?", ""]
    expected = sentences if french_spacing else ["Le chat dort.", "L'homme dort!", "Le chat?", ""]
    vectorizer = TextVectorizer(VOCABULARY, french_spacing=french_spacing)
    encoded = vectorizer.encode(tf.constant(sentences), add_start=True, add_end=True)
    assert [t.decode() for t in vectorizer.decode(encoded).numpy()] == expected


def test_non_utf8_and_column_inputs():
    vectorizer = TextVectorizer(VOCABULARY)
    np.testing.assert_array_equal(
        vectorizer(tf.constant([b"Le \xff chat"])).numpy(), [[ID["Le"], 1, ID["chat"]]]
    )
    column = vectorizer(tf.constant([["Le chat"], ["dort"]]))
    np.testing.assert_array_equal(column.numpy(), [ids("Le", "chat"), ids("dort") + [0]])
    with pytest.raises(ValueError, match="shape"):
        vectorizer(tf.constant([["Le", "chat"]]))


def test_eager_tf_function_and_tf_data_agree():
    vectorizer = TextVectorizer(VOCABULARY, max_length=5)
    sentences = ["Le chat dort.", "L'homme dort !", "", "chien chien chien chien chien chien"]
    eager = vectorizer.encode(tf.constant(sentences), add_start=True, add_end=True).numpy()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def graph(texts):
        return vectorizer.encode(texts, add_start=True, add_end=True)

    np.testing.assert_array_equal(graph(tf.constant(sentences)).numpy(), eager)
    dataset = tf.data.Dataset.from_tensor_slices(sentences).batch(4).map(vectorizer)
    np.testing.assert_array_equal(
        next(iter(dataset)).numpy(), vectorizer(tf.constant(sentences)).numpy()
    )


def test_vocabulary_file_and_invalid_arguments(tmp_path):
    path = tmp_path / "vocab.txt"
    save_vocabulary(VOCABULARY, path)
    assert TextVectorizer(str(path)).get_vocabulary() == VOCABULARY
    with pytest.raises(ValueError, match="max_length"):
        TextVectorizer(VOCABULARY, max_length=0)
    with pytest.raises(ValueError, match="pad_to_max_length"):
        TextVectorizer(VOCABULARY, pad_to_max_length=True)
    with pytest.raises(ValueError, match="reserved tokens"):
        TextVectorizer(["Le", "chat"])
    with pytest.raises(ValueError, match="twice"):
        TextVectorizer(VOCABULARY + ["Le"])
    with pytest.raises(ValueError, match="no room"):
        TextVectorizer(VOCABULARY, max_length=1).encode(
            tf.constant(["Le"]), add_start=True, add_end=True
        )


def test_get_config_round_trip():
    vectorizer = TextVectorizer(
        VOCABULARY, max_length=7, pad_to_max_length=True, french_spacing=True, name="target"
    )
    config = vectorizer.get_config()
    assert config["vocabulary"] == VOCABULARY
    assert (config["max_length"], config["pad_to_max_length"], config["spacing"]) == (
        7,
        True,
        {"space_before": "!?:;", "space_inside_guillemets": True},
    )
    clone = TextVectorizer.from_config(config)
    assert clone.get_config() == config
    sentences = tf.constant(["L'homme dort !"])
    np.testing.assert_array_equal(clone(sentences).numpy(), vectorizer(sentences).numpy())
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(vectorizer)
    )
    assert isinstance(restored, TextVectorizer)
    assert restored.get_config() == config


def test_keras_file_round_trip(tmp_path):
    inputs = keras.Input(shape=(), dtype="string")
    ids_ = TextVectorizer(VOCABULARY, max_length=6, name="vectorizer")(inputs)
    outputs = keras.layers.Embedding(len(VOCABULARY), 3, mask_zero=True)(ids_)
    model = keras.Model(inputs, outputs)
    sentences = tf.constant(["Le chat dort.", "L'homme !"])
    expected = model(sentences).numpy()
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.get_layer("vectorizer").get_vocabulary() == VOCABULARY
    np.testing.assert_allclose(loaded(sentences).numpy(), expected)


def test_export_runs_on_the_tf_serving_session_path(tmp_path):
    """The ops must run in a TF1 Session from the SavedModel, as TF Serving runs them."""
    vectorizer = TextVectorizer(VOCABULARY, max_length=6, french_spacing=True)

    def serve(text):
        encoded = vectorizer.encode(text, add_start=True, add_end=True)
        return {
            "ids": encoded,
            "decoded": vectorizer.decode(encoded),
            "tokens": tokenize(text).to_tensor(default_value=""),
        }

    archive = keras.export.ExportArchive()
    archive.track(vectorizer)
    archive.add_endpoint(
        "serve", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")]
    )
    path = str(tmp_path / "export" / "1")
    archive.write_out(path, verbose=False)

    sentences = ["Le chat dort.", "L\u2019homme\u202f!", "", b"\xff chat".decode("latin-1")]
    expected = serve(tf.constant(sentences))
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
        signature = meta_graph.signature_def["serve"]
        fetches = {name: info.name for name, info in signature.outputs.items()}
        out = session.run(fetches, {signature.inputs["text"].name: sentences})
    np.testing.assert_array_equal(out["ids"], expected["ids"].numpy())
    np.testing.assert_array_equal(out["decoded"], expected["decoded"].numpy())
    np.testing.assert_array_equal(out["tokens"], expected["tokens"].numpy())
    assert [t.decode() for t in out["decoded"]] == ["Le chat dort.", "L'homme !", "", "[UNK] chat"]

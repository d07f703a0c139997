import gzip
import logging

import pytest

from keras_attention.data import BUNDLED_CORPUS, Corpus, CorpusError, load_corpus, normalize_text


def write(path, text, compress=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", ["pairs.tsv", "pairs.tsv.gz", "pairs.txt"])
def test_two_and_three_columns_plain_or_gzip(tmp_path, compress, name):
    text = "Hi.\tSalut !\nRun!\tCours !\tCC-BY 2.0 (France) Attribution: tatoeba.org #1\n"
    corpus = load_corpus(write(tmp_path / name, text, compress))
    assert isinstance(corpus, Corpus)
    assert corpus.pairs == [("Hi.", "Salut !"), ("Run!", "Cours !")]
    assert corpus.path == str(tmp_path / name)
    assert (corpus.skipped, corpus.skipped_lines) == (0, [])
    assert len(corpus) == 2


def test_blank_lines_ignored_and_malformed_lines_counted(tmp_path, caplog):
    lines = [
        "a\tA",  # 1
        "",  # 2 blank: ignored
        "no tab here",  # 3 malformed
        "b\tB",  # 4
        "   \t  ",  # 5 blank (whitespace only): ignored
        "c\t",  # 6 empty target
        "\tD",  # 7 empty source
        "e\tE\tattribution\textra",  # 8 four columns
        "f\tF",  # 9
        "g\tG\r",  # 10 CRLF line end
        "h\tH",  # 11
    ]
    path = write(tmp_path / "c.tsv", "\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING):
        corpus = load_corpus(path)
    assert corpus.pairs == [(x, x.upper()) for x in "abfgh"]
    assert corpus.skipped == 4
    assert corpus.skipped_lines == [3, 6, 7, 8]
    assert "skipped 4 malformed lines" in caplog.text and "[3, 6, 7, 8]" in caplog.text


def test_only_the_first_ten_skipped_lines_are_listed(tmp_path):
    lines = ["ok\tOK"] * 30 + ["bad"] * 12
    corpus = load_corpus(write(tmp_path / "c.tsv", "\n".join(lines)))
    assert corpus.skipped == 12
    assert corpus.skipped_lines == list(range(31, 41))


def test_unicode_normalization(tmp_path):
    text = (
        "\ufeffWhat?\u00a0\tQuoi\u202f?\n"  # BOM, NBSP, narrow NBSP
        "  I  won. \tJ\u2019ai\u2009gagn\u00e9.\n"  # spaces, U+2019, thin space
        "ﬁne\tc'est\u200b bien…\n"  # ligature, zero-width space, ellipsis
    )
    corpus = load_corpus(write(tmp_path / "c.tsv", text))
    assert corpus.pairs == [
        ("What?", "Quoi ?"),
        ("I won.", "J'ai gagné."),
        ("fine", "c'est bien..."),
    ]


def test_normalize_text_maps_narrow_no_break_space():
    assert normalize_text("Va\u202f!") == "Va !"
    assert normalize_text("\u00a0a\u3000\u2028b\x00c ") == "a b c"


def test_max_pairs_keeps_file_order(tmp_path):
    path = write(tmp_path / "c.tsv", "".join(f"s{i}\tt{i}\n" for i in range(10)))
    assert load_corpus(path, max_pairs=3).pairs == [("s0", "t0"), ("s1", "t1"), ("s2", "t2")]
    with pytest.raises(ValueError, match="max_pairs"):
        load_corpus(path, max_pairs=0)


def test_bad_encoding_refused_with_line_number(tmp_path):
    data = b"a\tA\nb\tB\n" + "caf\u00e9\tcaf\u00e9\n".encode("latin-1")
    for compress in (False, True):
        path = write(tmp_path / f"latin1-{compress}.tsv", data, compress)
        with pytest.raises(CorpusError, match="not UTF-8: line 3") as error:
            load_corpus(path)
        assert str(path) in str(error.value)


@pytest.mark.parametrize(
    "content, match",
    [
        ("", "is empty"),
        ("\n\n   \n", "is empty"),
        ("just some text\nwith no tabs\n", "no line holds a tab"),
        ("a\tA\nbad\nbad\n\tX\n", "3 of 4 lines are malformed"),
        (b"\x1f\x8bnot really gzip", "cannot be read"),
    ],
)
def test_unusable_files_refused(tmp_path, content, match):
    path = write(tmp_path / "c.tsv", content)
    with pytest.raises(CorpusError, match=match) as error:
        load_corpus(path)
    assert str(path) in str(error.value)
    assert isinstance(error.value, ValueError)


def test_missing_file_and_directory_refused(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "missing.tsv")
    with pytest.raises(CorpusError, match="not a file"):
        load_corpus(tmp_path)


def test_bundled_corpus():
    assert BUNDLED_CORPUS.name == "fra-eng.tsv.gz" and BUNDLED_CORPUS.is_file()
    assert (BUNDLED_CORPUS.parent / "fra-eng.ABOUT.txt").is_file()
    corpus = load_corpus()
    assert len(corpus.pairs) == 167_130
    assert corpus.skipped == 0
    assert corpus.pairs[:3] == [("Go.", "Va !"), ("Hi.", "Salut !"), ("Run!", "Cours !")]
    assert not any("\u202f" in t or "\u00a0" in t for _, t in corpus.pairs)

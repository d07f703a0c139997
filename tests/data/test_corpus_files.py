"""Corpus specs (`--data`), data files and the checks of a corpus's files, before any training."""

import gzip

import pytest

from keras_attention.data.corpus import BUNDLED_CORPUS, CorpusError
from keras_attention.data.corpus_files import corpus_list, parse_corpus_spec, read_data_file
from keras_attention.data.corpus_scan import scan_corpus, scan_file


def write(path, text, compress=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def test_default_is_the_bundled_corpus():
    (corpus,) = corpus_list(None)
    assert corpus.tsv == (str(BUNDLED_CORPUS),) and corpus.weight == 1.0
    assert scan_corpus(corpus).lines == 167130


def test_a_glob_names_its_shards_sorted(tmp_path):
    for index in (2, 0, 1):
        write(tmp_path / f"part-{index}.tsv", f"s{index}\tt{index}\n")
    (corpus,) = parse_corpus_spec(str(tmp_path / "part-*.tsv"))
    assert [p.rsplit("/", 1)[1] for p in corpus.tsv] == ["part-0.tsv", "part-1.tsv", "part-2.tsv"]


def test_aligned_spec_pairs_shard_i_with_shard_i(tmp_path):
    for index in (0, 1):
        write(tmp_path / f"train.{index}.en", "a\n")
        write(tmp_path / f"train.{index}.fr", "b\n")
    (corpus,) = parse_corpus_spec(
        f"src={tmp_path}/train.*.en,tgt={tmp_path}/train.*.fr,weight=0.25,name=opus"
    )
    assert corpus.aligned and corpus.name == "opus" and corpus.weight == 0.25
    assert [(s[-4:], t[-4:]) for s, t in corpus.shards] == [("0.en", "0.fr"), ("1.en", "1.fr")]


def test_data_file_holds_several_weighted_corpora_relative_to_itself(tmp_path):
    write(tmp_path / "general.tsv", "a\tb\n")
    write(tmp_path / "x.en", "a\n")
    write(tmp_path / "x.fr", "b\n")
    write(
        tmp_path / "data.toml",
        '[corpus.general]\npath = "general.tsv"\nweight = 7\n\n'
        '[corpus.tickets]\nsrc = "x.en"\ntgt = "x.fr"\nweight = 3\n',
    )
    general, tickets = read_data_file(tmp_path / "data.toml")
    assert (general.name, general.weight, general.tsv) == (
        "general",
        7.0,
        (str(tmp_path / "general.tsv"),),
    )
    assert (tickets.name, tickets.weight) == ("tickets", 3.0) and tickets.aligned


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{d}/missing.tsv", "does not exist"),
        ("{d}/none-*.tsv", "matches no file"),
        ("path={d}/a.tsv,weight=0", "weight must be a positive number"),
        ("path={d}/a.tsv,weight=-1", "weight must be a positive number"),
        ("path={d}/a.tsv,weight=heavy", "weight must be a positive number"),
        ("path={d}/a.tsv,weight=nan", "weight must be a positive number"),
        ("src={d}/a.tsv", "needs both `src` and `tgt`"),
        ("path={d}/a.tsv,colour=red", "unknown key 'colour'"),
        ("path={d}/a.tsv,src={d}/a.tsv,tgt={d}/a.tsv", "not both"),
        ("path={d}/a.tsv,extra", "is not key=value"),
        ("src={d}/a.tsv,tgt={d}/*.tsv", "matches 1 files but `tgt` 2"),
    ],
)
def test_bad_specs_are_refused_with_a_clear_error(tmp_path, spec, message):
    write(tmp_path / "a.tsv", "a\tb\n")
    write(tmp_path / "b.tsv", "a\tb\n")
    with pytest.raises(CorpusError, match=message):
        parse_corpus_spec(spec.format(d=tmp_path))


def test_two_corpora_with_one_name_are_refused(tmp_path):
    write(tmp_path / "a.tsv", "a\tb\n")
    with pytest.raises(CorpusError, match="Two corpora are named 'x'"):
        corpus_list([f"path={tmp_path}/a.tsv,name=x", f"path={tmp_path}/a.tsv,name=x"])


def test_bad_data_files(tmp_path):
    with pytest.raises(CorpusError, match="cannot be read"):
        read_data_file(tmp_path / "missing.toml")
    with pytest.raises(CorpusError, match="is not TOML"):
        read_data_file(write(tmp_path / "bad.toml", "[corpus\n"))
    with pytest.raises(CorpusError, match=r"holds no \[corpus.NAME\] table"):
        read_data_file(write(tmp_path / "empty.toml", "title = 'x'\n"))


def test_scan_counts_lines_of_plain_and_gzip_files(tmp_path):
    text = "a\tb\n" * 1000 + "last\tline"  # no newline at the end
    plain = scan_file(str(write(tmp_path / "a.tsv", text)))
    packed = scan_file(str(write(tmp_path / "a.tsv.gz", text, compress=True)))
    assert (plain.lines, plain.gzip) == (1001, False)
    assert (packed.lines, packed.gzip) == (1001, True)


def test_scan_names_the_line_and_byte_of_bad_utf8(tmp_path):
    path = write(tmp_path / "bad.tsv", b"ok\tfine\nalso\tfine\nbad \xff here\tx\n")
    with pytest.raises(CorpusError, match=r"bad.tsv' is not UTF-8: line 3, byte 4"):
        scan_file(str(path))


def test_scan_finds_bad_utf8_across_block_boundaries(tmp_path, monkeypatch):
    from keras_attention.data import corpus_scan

    monkeypatch.setattr(corpus_scan, "_BLOCK", 7)
    path = write(tmp_path / "bad.tsv", "é\tà\n".encode() * 5 + b"x\xc3\n")
    with pytest.raises(CorpusError, match="line 6, byte 1"):
        scan_file(str(path))
    assert scan_file(str(write(tmp_path / "ok.tsv", "é\tà\n" * 9))).lines == 9


def test_scan_refuses_a_truncated_gzip(tmp_path):
    data = gzip.compress(b"a\tb\n" * 10000)
    path = write(tmp_path / "cut.tsv.gz", data[: len(data) // 2])
    with pytest.raises(CorpusError, match="cannot be read"):
        scan_file(str(path))


def test_aligned_files_of_different_lengths_name_both_and_the_line(tmp_path):
    write(tmp_path / "x.en", "a\nb\nc\n")
    write(tmp_path / "x.fr", "a\nb\n")
    (corpus,) = parse_corpus_spec(f"src={tmp_path}/x.en,tgt={tmp_path}/x.fr")
    with pytest.raises(CorpusError, match=r"x.en' \(3 lines\) and .*x.fr' \(2 lines\).*line 3"):
        scan_corpus(corpus)


def test_an_empty_corpus_is_refused(tmp_path):
    write(tmp_path / "empty.tsv", "")
    (corpus,) = parse_corpus_spec(str(tmp_path / "empty.tsv"))
    with pytest.raises(CorpusError, match="is empty"):
        scan_corpus(corpus)

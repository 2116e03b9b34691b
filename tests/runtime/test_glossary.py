"""Glossary files and mappings (enzh.runtime.glossary): parsing, errors naming the line, and term matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from enzh.runtime.errors import EnzhError
from enzh.runtime.glossary import Entry, Glossary, GlossaryError, Term, as_glossary


def test_file_with_flags_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "terms.tsv"
    path.write_text(
        "\ufeff# product names\nTom\t汤马斯\n\nIT\t信息技术\tcase-sensitive\nbio\t生物\tinside-words, case-sensitive\n",
        encoding="utf-8",
    )
    glossary = Glossary.read(path)
    assert glossary.entries == (
        Entry(source="Tom", target="汤马斯", origin=f"{path}:2"),
        Entry(source="IT", target="信息技术", case_sensitive=True, origin=f"{path}:4"),
        Entry(source="bio", target="生物", case_sensitive=True, inside_words=True, origin=f"{path}:5"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Tom\t汤马斯\nBeijing 北京市\n",
            "terms.tsv:2: expected 'source<TAB>target[<TAB>flags]', got 'Beijing 北京市' (no tab)",
        ),
        ("Tom\t汤马斯\n\n\tx\n", "terms.tsv:3: the source term is empty; write 'source<TAB>target'"),
        ("Tom\t\n", "terms.tsv:1: the target term is empty; write 'source<TAB>target'"),
        ("a\tb\tc\td\n", "terms.tsv:1: expected at most 3 tab-separated columns (source, target, flags), got 4"),
        ("a\tb\twhole\n", "terms.tsv:1: unknown flag 'whole'; accepted: case-sensitive, inside-words"),
        (
            "# x\nTom\t汤马斯\ntom\t汤米\n",
            "terms.tsv:3: source term 'tom' is already in the glossary at {path}:2; keep one entry per source term",
        ),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "terms.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GlossaryError) as caught:
        Glossary.read(path)
    assert str(caught.value).startswith(f"{tmp_path}/{message.format(path=path)}")
    assert isinstance(caught.value, EnzhError)


def test_same_source_with_other_case_is_allowed_when_case_sensitive() -> None:
    glossary = Glossary.parse("US\t美国\tcase-sensitive\nus\t我们\tcase-sensitive\n")
    assert [t.target for t in glossary.match("US and us")] == ["美国", "我们"]


def test_not_utf8_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "latin1.tsv"
    path.write_bytes("Tom\t汤马斯\n".encode() + "caf\xe9\tx\n".encode("latin-1"))
    with pytest.raises(GlossaryError, match=r"latin1.tsv:2: not UTF-8 text; save the glossary as UTF-8"):
        Glossary.read(path)
    with pytest.raises(GlossaryError, match=r"cannot read glossary .*missing.tsv"):
        Glossary.read(tmp_path / "missing.tsv")


def test_bad_mappings() -> None:
    with pytest.raises(GlossaryError, match="glossary entry 'Tom': the target term is empty"):
        Glossary.from_mapping({"Tom": " "})
    with pytest.raises(GlossaryError, match="the target term must be a string, got int"):
        Glossary.from_mapping({"Tom": 3})  # type: ignore[dict-item]
    with pytest.raises(GlossaryError, match="must be a mapping of source term to target term, got list"):
        Glossary.from_mapping(["Tom"])  # type: ignore[arg-type]
    with pytest.raises(GlossaryError, match="glossary must be a Glossary, a mapping .* got int"):
        as_glossary(3)


def test_matching_counts_whole_words_ignoring_case() -> None:
    glossary = Glossary.from_mapping({"Tom": "汤马斯", "Beijing": "北京市"})
    assert glossary.match("Tom met tom in BEIJING; Tomas and Atom did not.") == (
        Term("汤马斯", 2, "glossary entry 'Tom'"),
        Term("北京市", 1, "glossary entry 'Beijing'"),
    )
    assert glossary.match("Nobody here.") == ()


def test_case_sensitive_and_inside_words() -> None:
    glossary = Glossary.parse("IT\t信息技术\tcase-sensitive\nbio\t生物\tinside-words\n")
    assert [(t.target, t.count) for t in glossary.match("IT is it; Biology and bio")] == [("信息技术", 1), ("生物", 2)]


def test_overlapping_terms_longest_wins() -> None:
    glossary = Glossary.from_mapping({"York": "约克", "New York": "纽约市", "New": "新"})
    matches = [(start, end, entry.source) for start, end, entry in glossary.matches("New York and York, New  York")]
    assert matches == [(0, 8, "New York"), (13, 17, "York"), (19, 28, "New York")]
    assert [(t.target, t.count) for t in glossary.match("New York and York")] == [("纽约市", 1), ("约克", 1)]


def test_chinese_source_terms_match_without_word_boundaries() -> None:
    glossary = Glossary.from_mapping({"北京": "Peking", "北京大学": "PKU"})
    assert [(t.target, t.count) for t in glossary.match("我在北京大学学习，住在北京。")] == [("PKU", 1), ("Peking", 1)]


def test_entries_with_the_same_target_add_up() -> None:
    glossary = Glossary.from_mapping({"NYC": "纽约市", "New York": "纽约市"})
    assert glossary.match("NYC is New York.") == (Term("纽约市", 2, "glossary entry 'NYC'"),)


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from enzh.runtime import glossary

    path = tmp_path / "big.tsv"
    path.write_text("Tom\t汤马斯\n" * 10, encoding="utf-8")
    monkeypatch.setattr(glossary, "MAX_FILE_BYTES", 64)
    with pytest.raises(GlossaryError, match=r"big.tsv has 140 bytes; at most 64 are read"):
        Glossary.read(path)


def test_combining_a_server_glossary_with_a_request_one() -> None:
    from enzh.runtime.glossary import combine

    server = Glossary.parse("Tom\t汤马斯\nBeijing\t北京市\n", name="server.tsv")
    request = Glossary.from_mapping({"tom": "汤米"})
    combined = combine(server, request)
    assert combined is not None
    assert [(e.source, e.target) for e in combined.entries] == [("Beijing", "北京市"), ("tom", "汤米")]
    assert combine(server, None) is server and combine(None, request) is request and combine(None, None) is None

from __future__ import annotations

import json

import pytest

from retrieval.evaluation.datasets import DatasetError, EvalQuery, Target, load_dataset


def test_semble_json_list(tmp_path):
    path = tmp_path / "repo.json"
    path.write_text(json.dumps([
        {"query": "how sessions work", "relevant": ["pkg/client.py"],
         "secondary": [{"path": "./pkg/conn.py", "start_line": 10, "end_line": 20}], "category": "architecture"},
        {"query": "Session", "relevant": [{"path": "pkg/client.py", "start_line": 1, "end_line": 5}],
         "secondary": [], "category": "symbol"},
    ]))
    queries = load_dataset(str(path))
    assert queries[0] == EvalQuery("how sessions work", (Target("pkg/client.py"), Target("pkg/conn.py", 10, 20)),
                                   "architecture")
    assert queries[1].targets == (Target("pkg/client.py", 1, 5),)
    assert queries[1].category == "symbol"


def test_jsonl_with_comments_ids_and_qrels(tmp_path):
    path = tmp_path / "prose.jsonl"
    path.write_text(
        "# converted from TREC qrels\n"
        '{"id": "1", "query": "time sharing", "relevant": ["CACM-0042", "docs/CACM-0007.txt"], "category": "cacm"}\n'
        "\n"
        '{"qid": 2, "query": "parsing", "qrels": {"CACM-0001": 1, "CACM-0002": 0}, "lang": "en"}\n'
    )
    first, second = load_dataset(str(path))
    assert first.id == "1" and first.category == "cacm"
    assert first.targets == (Target("CACM-0042"), Target("docs/CACM-0007.txt"))
    assert second.id == "2" and second.category == ""
    assert second.targets == (Target("CACM-0001"),)  # grade 0 is not relevant
    assert second.extra == {"lang": "en"}


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"relevant": ["a.py"]}', "missing or empty 'query'"),
        ('{"query": "q"}', "missing 'relevant'"),
        ('{"query": "q", "relevant": [{"path": "a.py", "start_line": 9, "end_line": 3}]}', "bad span"),
        ('{"query": "q", "relevant": [{"path": "a.py", "start_line": 9}]}', "only one of"),
        ('{"query": "q", "relevant": [7]}', "a target must be"),
        ("{not json", "not valid JSON"),
    ],
)
def test_errors_name_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": "fine", "relevant": ["a.py"]}\n' + line + "\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(str(path))
    assert str(info.value).startswith("bad.jsonl:2: ")
    assert message in str(info.value)


def test_empty_and_missing_datasets(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match="no queries"):
        load_dataset(str(empty))
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(str(tmp_path / "nope.json"))


def test_a_target_named_twice_is_one_target(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"query": "q", "relevant": ["a.py", "./a.py"], "secondary": ["a.py", "b.py"]}\n')
    (query,) = load_dataset(str(path))
    assert query.targets == (Target("a.py"), Target("b.py"))


def test_jsonl_lines_end_at_newlines_only_not_at_unicode_separators(tmp_path):
    path = tmp_path / "sep.jsonl"
    path.write_text(json.dumps({"query": "bootstrap\u2028interval\x85x", "relevant": ["a.py"]}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    (query,) = load_dataset(str(path))
    assert query.query == "bootstrap\u2028interval\x85x"


def test_one_pretty_printed_query_object_is_a_dataset_of_one(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"query": "q", "relevant": ["a.py"]}, indent=2))
    assert [q.query for q in load_dataset(str(path))] == ["q"]


def test_qrels_grades_written_as_strings_count_and_a_lone_surrogate_is_replaced(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_text('{"query": "x \\ud800 y", "id": "\\udfff", "qrels": {"a.py": "1", "b.py": "0"}}\n')
    (query,) = load_dataset(str(path))
    assert query.targets == (Target("a.py"),)
    assert query.query == "x \ufffd y" and query.id == "\ufffd"
    query.query.encode("utf-8")  # printable


@pytest.mark.parametrize("grade", ['"relevant"', '"n/a"', "null", "true"])
def test_a_qrels_grade_that_is_not_a_number_is_an_error_not_a_dropped_target(tmp_path, grade):
    """`{"hooks.py": "relevant"}` was read as grade 0: the target vanished and the query was
    reported as having no target in the tree."""
    path = tmp_path / "words.jsonl"
    path.write_text('{"query": "q", "qrels": {"hooks.py": %s}}\n' % grade)
    with pytest.raises(DatasetError, match=r"a qrels grade must be a number"):
        load_dataset(str(path))


def test_a_span_given_as_strings_says_line_numbers_are_integers(tmp_path):
    path = tmp_path / "str.jsonl"
    path.write_text('{"query": "q", "relevant": [{"path": "a.py", "start_line": "3", "end_line": "5"}]}\n')
    with pytest.raises(DatasetError, match=r"bad span '3'-'5' \(line numbers are integers"):
        load_dataset(str(path))


def test_standard_input_is_read_as_utf8_bytes_up_to_the_size_cap(monkeypatch):
    import io
    import sys

    from retrieval.evaluation import datasets

    row = json.dumps({"query": "naïve", "relevant": ["a.py"]}, ensure_ascii=False).encode("utf-8")
    # A latin-1 terminal locale must not garble a UTF-8 dataset.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" + row + b"\n"), encoding="latin-1"))
    assert [q.query for q in load_dataset("-")] == ["naïve"]
    monkeypatch.setattr(datasets, "MAX_DATASET_CHARS", 100)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"y\n" * 1000)))
    with pytest.raises(DatasetError, match="<stdin>: over 100 bytes"):
        load_dataset("-")


def test_a_hits_docid_is_a_target_span_as_query_json_names_it(tmp_path):
    """Fed back as a qrels key, `src/router.py:1-23` was read as a path no file has, and eval said
    no query had a target in the tree."""
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"query": "routes", "qrels": {"src/router.py:1-23": 1, "a:b.py": 1, "c.py:9-2": 1}}))
    (query,) = load_dataset(str(path))
    assert set(query.targets) == {Target("src/router.py", 1, 23), Target("a:b.py"), Target("c.py:9-2")}

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

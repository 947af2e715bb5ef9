"""The `prose` profile: Lucene's English analyzer, Lucene's BM25, one document per file."""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from retrieval import service
from retrieval.cli import main
from retrieval.prose import STOPWORDS, analyze, tokens
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever, lucene_length
from retrieval.stem import porter, porter_any


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Time-Sharing Systems", ["Time", "Sharing", "Systems"]),
        ("don't O'Reilly", ["don't", "O'Reilly"]),  # an apostrophe between letters joins them
        ("e.g. U.S.A. x:y", ["e.g", "U.S.A", "x:y"]),  # so do `.` and `:`
        ("3.14 1,000 12:30", ["3.14", "1,000", "12", "30"]),  # digits join across `.` and `,`, not `:`
        ("a,b a;b", ["a", "b", "a", "b"]),
        ("foo_bar getHTTPResponse2 x86", ["foo_bar", "getHTTPResponse2", "x86"]),  # no identifier splitting
        ("a < b and c>d", ["a", "b", "and", "c", "d"]),
        ("__ _x", ["_x"]),  # a run of underscores alone is not a word
        ("naïve café", ["naïve", "café"]),
        ("日本語", ["日", "本", "語"]),  # every ideograph is a token
    ],
)
def test_tokens_follow_the_standard_tokenizer_word_rules(text, expected):
    assert tokens(text) == expected


def test_overlong_tokens_are_cut_at_255_characters_like_lucene():
    assert [len(t) for t in tokens("x" * 600)] == [255, 255, 90]


def test_analysis_removes_possessives_lowercases_drops_stopwords_and_stems():
    assert analyze("IBM's Operating Systems") == ["ibm", "oper", "system"]
    assert analyze("The computer’s memory") == ["comput", "memori"]  # a typographic apostrophe too
    assert analyze("it is not in the set") == ["set"]
    assert analyze("1970s") == ["1970"]  # Lucene stems tokens with digits as well


def test_the_stop_list_is_lucenes_33_english_words():
    assert len(STOPWORDS) == 33
    assert {"no", "not", "will", "such"} <= STOPWORDS
    assert not {"what", "how", "i", "you"} & STOPWORDS  # those are the code tokenizer's additions


def test_porter_any_agrees_with_porter_on_words_and_stems_other_tokens():
    for word in ("relational", "hopping", "generalization", "routes", "is"):
        assert porter_any(word) == porter(word)
    assert porter("x86s") == "x86s"
    assert porter_any("x86s") == "x86"
    assert porter_any("ab") == "ab"


@pytest.mark.parametrize("n, stored", [(0, 0), (23, 23), (39, 39), (41, 40), (100, 96), (1000, 984)])
def test_document_lengths_are_rounded_as_lucene_stores_them(n, stored):
    assert lucene_length(n) == stored


def test_lucene_lengths_never_grow_and_keep_four_significant_bits():
    previous = 0
    for n in range(5000):
        stored = lucene_length(n)
        assert previous <= stored <= n
        assert n - stored <= (n - 24) / 8 or n < 24
        previous = stored


def lucene_bm25(tf, df, n_docs, dl, avgdl, k1=0.9, b=0.4):
    # Lucene's BM25 times (k1 + 1), the constant Lucene 8 dropped (rankings are the same).
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return idf * (k1 + 1) * tf / (tf + k1 * (1 - b + b * lucene_length(dl) / avgdl))


def test_prose_scores_are_lucene_bm25_with_stored_lengths():
    long_doc = "paging " * 3 + "filler " * 97  # 100 terms, stored as 96
    docs = [Document("a", long_doc, source_path="a.txt"), Document("b", "paging systems", source_path="b.txt"),
            Document("c", "unrelated words here", source_path="c.txt")]
    retriever = LexicalRetriever(profile="prose")
    retriever.index(docs)
    avgdl = (100 + 2 + 3) / 3
    hits = {h.docid: h.score for h in retriever.search_detailed("paging", top_k=10)}
    assert hits == pytest.approx({"a": lucene_bm25(3, 2, 3, 100, avgdl), "b": lucene_bm25(1, 2, 3, 2, avgdl)})


def test_the_prose_profile_has_no_code_signals():
    docs = [Document("s", "the queue is drained here", source_path="src/scheduler.txt"),
            Document("t", "def scheduler(): pass", source_path="tests/test_x.txt")]
    retriever = LexicalRetriever(profile="prose")
    retriever.index(docs)
    assert retriever.search("scheduler") == ["t"]  # no path terms, no test-file penalty
    assert retriever.search("sched") == []  # no identifier parts
    assert retriever.search("the is") == []  # stop words only: nothing matches


def test_an_unknown_profile_is_a_value_error():
    with pytest.raises(ValueError, match="unknown profile 'poetry'"):
        LexicalRetriever(profile="poetry")
    with pytest.raises(ValueError, match="unknown profile"):
        service.IndexOptions(profile="poetry")


# -- through the service and the CLI ---------------------------------------------------------------

LONG = "".join(f"Paragraph {i} about storage allocation.\n\n" for i in range(200))
COLLECTION = {
    "CACM-0001.txt": "Time sharing systems\n\nfor IBM's computers.\n",
    "CACM-0002.txt": LONG,
    "CACM-0003.txt": "Parsing of programming languages.\n",
}


def test_index_profile_prose_is_remembered_and_makes_each_file_one_document(make_tree):
    root = make_tree(COLLECTION)
    runner = CliRunner()
    result = runner.invoke(main, ["index", "--root", str(root), "--retriever", "lexical", "--profile", "prose"])
    assert result.exit_code == 0, result.output
    assert "indexed 3 chunks from 3 files in " in result.stdout  # one chunk per file
    status = json.loads(runner.invoke(main, ["status", "--root", str(root), "--json"]).stdout)["retrievers"]
    assert [r["profile"] for r in status if r["retriever"] == "lexical"] == ["prose"]
    payload = json.loads(runner.invoke(main, ["query", "--root", str(root), "--json", "storage allocation"]).stdout)
    (hit,) = payload["results"]
    assert (hit["path"], hit["start_line"], hit["end_line"]) == ("CACM-0002.txt", 1, LONG.count("\n") - 1)
    again = runner.invoke(main, ["index", "--root", str(root), "--retriever", "lexical"])
    assert again.stdout.startswith("lexical: up to date")
    back = runner.invoke(main, ["index", "--root", str(root), "--retriever", "lexical", "--profile", "code"])
    assert back.stdout.startswith("lexical: indexed")
    assert service.remembered_options(str(root)).profile == "code"


def test_eval_with_the_prose_profile_reports_map_and_index_statistics(make_tree, tmp_path):
    root = make_tree(COLLECTION)
    dataset = tmp_path / "ds.jsonl"
    dataset.write_text(json.dumps({"id": "1", "query": "time-sharing computer systems",
                                   "relevant": ["CACM-0001"], "category": "cacm"}) + "\n")
    result = CliRunner().invoke(main, ["eval", str(dataset), "--root", str(root), "--profile", "prose", "--json",
                                       "--retriever", "lexical"])
    assert result.exit_code == 0, result.output
    run = next(r for r in json.loads(result.stdout)["runs"] if r["retriever"] == "lexical")
    assert run["summary"]["map"] == 1.0
    # time share system ibm comput | 200 x (paragraph <i> about storag alloc) | pars program languag
    assert run["index"] == {"documents": 3, "unique_terms": 5 + 4 + 200 + 3, "total_terms": 5 + 1000 + 3}
    assert service.remembered_options(str(root)).profile == "prose"
    text = CliRunner().invoke(main, ["eval", str(dataset), "--root", str(root), "--retriever", "lexical"])
    assert "lexical index: 3 documents, 212 unique terms, 1008 term occurrences" in text.stdout

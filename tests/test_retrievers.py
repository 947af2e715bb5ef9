"""The retriever protocol and registry, exercised through the lexical retriever."""
from __future__ import annotations

import re

import pytest

from retrieval import REGISTRY, Retriever, build_retriever, load_chunk_documents
from retrieval.records import Document, SearchHit


def test_build_retriever_returns_a_lexical_retriever_that_satisfies_the_protocol():
    retriever = build_retriever("lexical")
    assert retriever.name == "lexical"
    assert isinstance(retriever, Retriever)


def test_an_unknown_retriever_name_raises_value_error_listing_the_choices():
    with pytest.raises(ValueError) as info:
        build_retriever("no-such-retriever")
    message = str(info.value)
    assert "no-such-retriever" in message
    for name in REGISTRY:
        assert name in message
    assert "lexical" in message


@pytest.mark.parametrize("method", ["search", "search_detailed"])
def test_searching_before_indexing_raises_runtime_error(method):
    retriever = build_retriever("lexical")
    with pytest.raises(RuntimeError, match=r"^call index\(\) before search\(\)$"):
        getattr(retriever, method)("anything")


def test_search_returns_the_docids_of_search_detailed_in_rank_order(sample_repo):
    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(str(sample_repo)))
    detailed = retriever.search_detailed("parse config file", top_k=5)
    assert detailed, "the sample repository mentions config parsing"
    assert all(isinstance(h, SearchHit) for h in detailed)
    assert retriever.search("parse config file", top_k=5) == [h.docid for h in detailed]
    assert [h.rank for h in detailed] == list(range(1, len(detailed) + 1))
    assert detailed[0].source_path == "src/app/config.py"


def test_top_k_limits_the_number_of_hits(sample_repo):
    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(str(sample_repo)))
    assert len(retriever.search("config retries app", top_k=2)) == 2
    assert len(retriever.search("config retries app", top_k=100)) > 2


def test_hit_spans_come_from_document_fields_never_from_parsing_the_docid():
    retriever = build_retriever("lexical")
    retriever.index([
        Document(docid="opaque-7", text="def frobnicate(): pass", source_path="src/x.py",
                 start_line=3, end_line=9, context="class Widget"),
        Document(docid="y.py:1-2", text="unrelated words", source_path="y.py", start_line=40, end_line=41),
    ])
    (hit,) = retriever.search_detailed("frobnicate")
    assert (hit.docid, hit.source_path, hit.start_line, hit.end_line, hit.rank) == ("opaque-7", "src/x.py", 3, 9, 1)
    assert hit.context == "class Widget"
    (other,) = retriever.search_detailed("unrelated")
    assert (other.docid, other.start_line, other.end_line) == ("y.py:1-2", 40, 41)


def test_a_document_without_a_span_gives_a_hit_without_lines():
    retriever = build_retriever("lexical")
    retriever.index([Document(docid="README", text="installation notes")])
    (hit,) = retriever.search_detailed("installation")
    assert (hit.docid, hit.source_path, hit.start_line, hit.end_line) == ("README", "README", None, None)


def test_the_context_is_searchable_too():
    retriever = build_retriever("lexical")
    retriever.index([Document(docid="d", text="return 1", source_path="d", context="class Zorblax")])
    assert retriever.search("zorblax") == ["d"]


def test_indexing_again_replaces_the_previous_corpus():
    retriever = build_retriever("lexical")
    retriever.index([Document(docid="old", text="ancient words")])
    retriever.index([Document(docid="new", text="modern words")])
    assert retriever.search("ancient") == []
    assert retriever.search("modern") == ["new"]


def test_an_empty_corpus_and_queries_without_terms_give_no_hits():
    retriever = build_retriever("lexical")
    retriever.index([])
    assert retriever.search("anything") == []
    retriever.index([Document(docid="d", text="some text")])
    assert retriever.search("the of and") == []
    assert retriever.search("!!!") == []


@pytest.mark.parametrize("query, top_k, error", [
    (None, 3, TypeError), (b"config", 3, TypeError), ("config", "3", TypeError), ("config", 2.5, TypeError),
    ("config", True, TypeError), ("config", -1, ValueError)])
def test_a_wrong_argument_is_the_callers_error_said_as_such(sample_repo, query, top_k, error):
    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(str(sample_repo)))
    with pytest.raises(error, match="^(query|top_k) must be"):
        retriever.search_detailed(query, top_k)


def test_the_same_documents_in_any_order_rank_the_same_way(make_tree):
    import random

    methods = "".join(f"    def handle_{i}(self, request):\n        return self.session.send(request, {i})\n\n"
                      for i in range(60))
    root = make_tree({"service.py": f"class Service:\n    \"\"\"Sends requests.\"\"\"\n\n{methods}",
                      "client.py": "def send(request):\n    return Service().handle_1(request)\n"})
    documents = load_chunk_documents(str(root))
    assert len(documents) > 4  # a file of several chunks, which the shuffle separates
    shuffled = list(documents)
    random.Random(7).shuffle(shuffled)
    ranked = []
    for order in (documents, shuffled, documents[::-1]):
        retriever = build_retriever("lexical")
        retriever.index(order)
        ranked.append([(h.docid, h.score) for h in retriever.search_detailed("Service handle send request", 10)])
    assert ranked[0] == ranked[1] == ranked[2]


@pytest.mark.parametrize("kwargs, message", [
    ({"exclude_globs": "*.md"}, "exclude_globs takes a collection of strings, not one string"),
    ({"exclude_dirs": "docs"}, "exclude_dirs takes a collection of strings, not one string"),
    ({"extensions": ".py"}, "extensions takes a collection of strings, not one string"),
    ({"extensions": [3]}, "extensions takes strings, not int"),
    ({"max_bytes": "1000"}, "max_bytes must be an int"),
    ({"policy": "lines"}, "policy must be a ChunkingPolicy")])
def test_a_loader_argument_of_the_wrong_type_is_a_type_error_not_a_silently_wrong_file_set(sample_repo, kwargs,
                                                                                            message):
    with pytest.raises(TypeError, match=message):
        load_chunk_documents(str(sample_repo), **kwargs)


def test_extensions_are_taken_with_or_without_their_dot(sample_repo):
    from retrieval import discover_files

    with_dot = [f.path for f in discover_files(str(sample_repo), extensions=[".py"])]
    assert with_dot and with_dot == [f.path for f in discover_files(str(sample_repo), extensions=["py"])]


@pytest.mark.parametrize("k1, b, error, message", [
    (-1, 0.75, ValueError, "k1 must be a number from 0 to 100, not -1"),
    (float("nan"), 0.75, ValueError, "k1 must be a number from 0 to 100, not nan"),
    (float("inf"), 0.75, ValueError, "k1 must be a number from 0 to 100, not inf"),
    (1.2, 1.5, ValueError, "b must be a number from 0 to 1, not 1.5"),
    (1.2, -0.1, ValueError, "b must be a number from 0 to 1, not -0.1"),
    ("1.2", 0.75, TypeError, "k1 must be a number, not str"),
    (True, 0.75, TypeError, "k1 must be a number, not bool"),
    (1.2, [0.75], TypeError, "b must be a number, not list")])
def test_bm25_parameters_outside_their_range_are_refused_when_the_retriever_is_built(k1, b, error, message):
    # Taken, they gave a ZeroDivisionError mid-search (k1=-1), silently no hits (NaN, infinity) or
    # negative scores ranked upside down; `index --bm25` has refused them all along.
    with pytest.raises(error, match=f"^{message}$"):
        build_retriever("lexical", k1=k1, b=b)


@pytest.mark.parametrize("name", sorted(n for n, spec in REGISTRY.items() if spec.bm25))
def test_every_bm25_retriever_refuses_a_negative_k1(name):
    if REGISTRY[name].unavailable_reason():
        pytest.skip(REGISTRY[name].unavailable_reason())
    with pytest.raises(ValueError, match="^k1 must be a number from 0 to 100"):
        build_retriever(name, k1=-1, b=0.75)
    build_retriever(name, k1=0, b=1)  # the ends of the ranges are BM25's own


@pytest.mark.parametrize("documents, message", [
    (None, "documents must be an iterable of Document, not NoneType"),
    ("def main(): pass", "documents must be an iterable of Document, not str"),
    (Document(docid="d", text="text"), "documents must be an iterable of Document, not Document"),
    (["def main(): pass"], "documents must be Document records, not str"),
    ([Document(docid="d", text="text"), {"docid": "e", "text": "more"}],
     "documents must be Document records, not dict")])
def test_indexing_something_other_than_documents_is_a_type_error_and_keeps_the_previous_index(
        sample_repo, documents, message):
    # It was an AttributeError from deep inside ("'str' object has no attribute 'source_path'").
    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(str(sample_repo)))
    before = retriever.search("parse config", 3)
    with pytest.raises(TypeError, match=f"^{message}$"):
        retriever.index(documents)
    assert retriever.search("parse config", 3) == before


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_docid_given_twice_is_refused_before_anything_is_indexed(name):
    """Indexed twice, a search returned the one docid twice (lexical, treesitter, lexical+ctx)."""
    if REGISTRY[name].unavailable_reason():
        pytest.skip(REGISTRY[name].unavailable_reason())
    retriever = build_retriever(name)
    with pytest.raises(ValueError, match="^Document 'a' is given twice: a docid names one document$"):
        retriever.index([Document("a", "alpha"), Document("b", "beta"), Document("a", "alpha two")])


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("document, message", [
    (Document(docid="d", text=None), "Document 'd': text must be a str, not NoneType"),
    (Document(docid=7, text="def main(): pass"), "Document 7: docid must be a str, not int"),
    (Document(docid="d", text="x", source_path="a.py", start_line="1", end_line=1),
     "Document 'd': start_line must be an int or None, not str")])
def test_a_document_with_a_field_of_the_wrong_type_is_refused_naming_it(name, document, message):
    # Deep inside indexing it was "'int' object has no attribute 'rsplit'", or for pi-serini "the
    # Lucene index's docs.json is damaged".
    if REGISTRY[name].unavailable_reason():
        pytest.skip(REGISTRY[name].unavailable_reason())
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        build_retriever(name).index([Document(docid="ok", text="def ok(): pass"), document])


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("fields, error, message", [
    ({"start_line": 5, "end_line": 2}, ValueError, "start_line and end_line must both be None or lines"),
    ({"start_line": 1}, ValueError, "start_line and end_line must both be None or lines"),
    ({"start_line": 0, "end_line": 0}, ValueError, "start_line and end_line must both be None or lines"),
    ({"scope": "1-2"}, ValueError, "scope must be None or (first line, last line), not '1-2'"),
    ({"definitions": "foo"}, TypeError, "definitions must be None or a tuple of names, not 'foo'"),
    ({"members": (("bar",),)}, TypeError, "members must be (name, scope path, kind[, first line, last line]) tuples"),
    ({"members": "bar"}, TypeError, "members must be (name, scope path, kind[, first line, last line]) tuples")])
def test_a_document_of_the_wrong_shape_is_refused_naming_it_not_indexed_to_fail_every_search(name, fields, error,
                                                                                            message):
    """A member without its kind, or lines 5-2, were indexed, and every later search failed (an
    unpacking error; 'MemorySegment' has no attribute 'directory'); a scope given as text came back
    as ('1', '-'), definitions given as a str were read letter by letter."""
    if REGISTRY[name].unavailable_reason():
        pytest.skip(REGISTRY[name].unavailable_reason())
    document = Document(**{"docid": "d", "text": "def foo():\n    bar()\n", "source_path": "m.py", **fields})
    with pytest.raises(error, match=f"^Document 'd': {re.escape(message)}"):
        build_retriever(name).index([Document(docid="ok", text="def ok(): pass"), document])


def test_bm25_parameters_given_with_the_prose_profile_are_kept():
    """`profile="prose"` replaced k1 and b given with it by Lucene's defaults, in silence."""
    assert (build_retriever("lexical", profile="prose", k1=2.0, b=1.0).params.k1,
            build_retriever("lexical", profile="prose", k1=2.0, b=1.0).params.b) == (2.0, 1.0)
    assert (build_retriever("lexical", profile="prose").params.k1, build_retriever("lexical", profile="prose").params.b) == (0.9, 0.4)
    assert (build_retriever("lexical", k1=0.5).params.k1, build_retriever("lexical", k1=0.5).params.b) == (0.5, 0.75)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_argument_a_retriever_does_not_take_is_said_of_that_retriever(name):
    """`build_retriever("hybrid", k1=1.0)` said `DenseRetriever.__init__() got an unexpected keyword
    argument 'k1'`: a class the caller never named."""
    if REGISTRY[name].unavailable_reason():
        pytest.skip(REGISTRY[name].unavailable_reason())
    with pytest.raises(TypeError, match=f"^the {re.escape(name)} retriever takes no 'bogus' argument$"):
        build_retriever(name, bogus=1)


@pytest.mark.parametrize("fields, error, message", [
    ({"max_lines": "3"}, TypeError, "ChunkingPolicy.max_lines must be an int, not str"),
    ({"code": 0}, ValueError, "ChunkingPolicy.code must be at least 1, not 0"),
    ({"prose": True}, TypeError, "ChunkingPolicy.prose must be an int, not bool")])
def test_a_chunking_policy_of_wrong_values_is_refused_when_made(fields, error, message):
    """`ChunkingPolicy(max_lines="3")` failed at the first file chunked, comparing a str with an int."""
    from retrieval.chunking import ChunkingPolicy

    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        ChunkingPolicy(**fields)

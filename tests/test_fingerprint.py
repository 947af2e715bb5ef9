"""The index fingerprint follows what shapes the postings: a stored index built another way is
rebuilt, never silently reused."""
from __future__ import annotations

from retrieval import service, stem, text
from retrieval.lexical import features
from retrieval.retrievers.lexical import LexicalRetriever


def test_the_fingerprint_changes_with_stemming_and_with_each_term_module(monkeypatch):
    base = LexicalRetriever().fingerprint()
    for module in (features, text, stem):
        monkeypatch.setattr(module, "VERSION", module.VERSION + 1)
        assert LexicalRetriever().fingerprint() != base, module.__name__
        monkeypatch.undo()
    try:
        text.set_stemming(False)
        assert LexicalRetriever().fingerprint() != base
    finally:
        text.set_stemming(True)
    assert LexicalRetriever().fingerprint() == base


def test_an_index_built_with_stemming_is_rebuilt_without_it(make_tree):
    root = make_tree({"src/routing.py": "def handlers():\n    return registered_handlers\n",
                      "src/other.py": "def unrelated():\n    pass\n"})
    service.refresh(str(root))
    try:
        text.set_stemming(False)
        report = service.refresh(str(root))
        assert report.status == "indexed" and sorted(report.reprocessed) == ["src/other.py", "src/routing.py"]
    finally:
        text.set_stemming(True)
    assert service.refresh(str(root)).status == "indexed"  # and back


def test_new_line_cuts_rebuild_every_index_of_line_chunks(monkeypatch):
    """An index refreshed file by file across a change of the cuts would hold old chunks beside new
    ones: one tree, two answers (and a dense store of them would keep the old spans' vectors)."""
    from retrieval.chunking import lines
    from retrieval.retrievers.pyserini import PyseriniRetriever

    before = (LexicalRetriever().fingerprint(), PyseriniRetriever().fingerprint())
    monkeypatch.setattr(lines, "VERSION", lines.VERSION + 1)
    after = (LexicalRetriever().fingerprint(), PyseriniRetriever().fingerprint())
    assert before[0] != after[0] and before[1] != after[1]


def test_a_lucene_index_of_our_terms_is_rebuilt_when_they_change_and_a_prose_one_is_not(monkeypatch):
    """pi-serini's code documents are our terms and its English ones carry our path words: an index
    kept across a change of them answered with the old terms (the query is planned with the new)."""
    from retrieval.retrievers.pyserini import PyseriniRetriever

    kinds = {"code": lambda: PyseriniRetriever(), "english": lambda: PyseriniRetriever(analyzer="english"),
             "prose": lambda: PyseriniRetriever(profile="prose")}
    base = {kind: make().fingerprint() for kind, make in kinds.items()}
    for module in (features, text, stem):
        monkeypatch.setattr(module, "VERSION", module.VERSION + 1)
        now = {kind: make().fingerprint() for kind, make in kinds.items()}
        assert now["code"] != base["code"] and now["english"] != base["english"], module.__name__
        assert now["prose"] == base["prose"]
        monkeypatch.undo()
    try:
        text.set_stemming(False)
        assert PyseriniRetriever().fingerprint() != base["code"]
    finally:
        text.set_stemming(True)

"""Confidence: every hit says how far to trust it (high / medium / low), and queries can filter on it."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from retrieval import build_retriever, load_chunk_documents, service
from retrieval.cli import main
from retrieval.confidence import HIGH, LEVELS, LOW, MEDIUM, at_least, level
from retrieval.records import Document


def signals(**changes):
    base = dict(first=True, coverage=1.0, relative=1.0, runner_up=0.5, defines=False)
    base.update(changes)
    return base


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({}, HIGH),  # the first hit, covering the query, well ahead of the next
        ({"runner_up": 0.9}, MEDIUM),  # ... but nearly tied
        ({"runner_up": 0.9, "defines": True}, HIGH),  # nearly tied, yet it defines the symbol asked for
        ({"coverage": 0.3}, MEDIUM),  # ahead, but lacking much of the query
        ({"coverage": 0.1}, LOW),  # lacking most of the query: low whatever else
        ({"coverage": 0.1, "defines": True}, LOW),
        ({"first": False, "relative": 0.9}, MEDIUM),  # close to the first hit
        ({"first": False, "relative": 0.5}, LOW),
        ({"first": False, "relative": 1.0, "defines": True}, MEDIUM),  # only the first hit can be high
    ],
)
def test_levels_follow_the_documented_rules(changes, expected):
    assert level(**signals(**changes)) == expected


def test_levels_are_ordered():
    assert LEVELS == (LOW, MEDIUM, HIGH)
    assert at_least(HIGH, MEDIUM) and at_least(MEDIUM, MEDIUM) and at_least(LOW, LOW)
    assert not at_least(LOW, MEDIUM) and not at_least(MEDIUM, HIGH)
    assert not at_least("", LOW)


def indexed(sample_repo):
    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(str(sample_repo)))
    return retriever


def test_every_hit_carries_a_level(sample_repo):
    hits = indexed(sample_repo).search_detailed("config retries app", top_k=20)
    assert len(hits) > 3
    assert {h.confidence for h in hits} <= set(LEVELS)


def test_a_clear_answer_is_high_and_the_also_rans_are_low(sample_repo):
    first, *rest = indexed(sample_repo).search_detailed("parse config file", top_k=5)
    assert (first.source_path, first.confidence) == ("src/app/config.py", HIGH)
    assert rest and all(h.confidence == LOW for h in rest)


def test_a_symbol_query_is_high_on_the_chunk_that_defines_it(sample_repo):
    (hit,) = indexed(sample_repo).search_detailed("LRUCache", top_k=5)
    assert (hit.source_path, hit.confidence) == ("src/app/cache.py", HIGH)


def test_words_the_index_lacks_count_against_coverage(sample_repo):
    retriever = indexed(sample_repo)
    assert retriever.search_detailed("parse config file", top_k=1)[0].confidence == HIGH
    # The same best chunk, but half of what is asked for occurs nowhere in the repository ...
    hits = retriever.search_detailed("parse config file kubernetes helm terraform", top_k=5)
    assert (hits[0].source_path, hits[0].confidence) == ("src/app/config.py", MEDIUM)
    # ... or most of it.
    hits = retriever.search_detailed("parse config kubernetes helm terraform ansible vagrant", top_k=5)
    assert hits[0].source_path == "src/app/config.py"
    assert all(h.confidence == LOW for h in hits)


def test_a_word_found_by_its_stem_or_inside_an_identifier_counts_as_found():
    docs = [Document("a", "def frobnicate_widgets(x):\n    return x\n", source_path="a.py", start_line=1, end_line=2),
            Document("b", "def other(y):\n    return y\n", source_path="b.py", start_line=1, end_line=2)]
    retriever = build_retriever("lexical")
    retriever.index(docs)
    # Neither `frobnicate` nor `widgets` occurs as a word, but both are in the identifier.
    (hit,) = retriever.search_detailed("frobnicate widgets", top_k=5)
    assert (hit.docid, hit.confidence) == ("a", HIGH)
    # A compound identifier the index lacks is not found through its parts: half of its name, the
    # half that is there (the absent part weighs the most an idf can), is little of what was asked.
    (hit,) = retriever.search_detailed("WidgetsFactory", top_k=5)
    assert (hit.docid, hit.confidence) == ("a", LOW)


def test_near_ties_at_the_top_are_medium():
    docs = [Document(f"d{i}", f"widget gadget number {i}", source_path=f"m{i}.py", start_line=1, end_line=1)
            for i in range(3)]
    retriever = build_retriever("lexical")
    retriever.index(docs)
    assert [h.confidence for h in retriever.search_detailed("widget gadget", top_k=3)] == [MEDIUM] * 3


def test_levels_do_not_depend_on_how_many_hits_are_asked_for(sample_repo):
    retriever = indexed(sample_repo)
    for query in ("parse config file", "config", "retries", "evict oldest"):
        many = retriever.search_detailed(query, top_k=10)
        assert [h.confidence for h in retriever.search_detailed(query, top_k=1)] == [many[0].confidence]
        assert [h.confidence for h in retriever.search_detailed(query, top_k=10)] == [h.confidence for h in many]


def test_the_prose_profile_reports_levels_too():
    retriever = build_retriever("lexical", profile="prose")
    retriever.index([Document("a", "time sharing systems", source_path="a.txt"),
                     Document("b", "parsing of languages", source_path="b.txt")])
    (hit,) = retriever.search_detailed("time sharing", top_k=5)
    assert hit.confidence == HIGH


# -- the CLI: the JSON field, --min-confidence, zero hits ------------------------------------------


def query_json(root, *args):
    result = CliRunner().invoke(main, ["query", "--root", str(root), "--json", *map(str, args)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["results"]


def test_json_hits_carry_their_confidence(sample_repo):
    rows = query_json(sample_repo, "parse config file")
    hits = service.search(str(sample_repo), "parse config file").hits
    assert [r["confidence"] for r in rows] == [h.confidence for h in hits]
    assert rows[0]["confidence"] == "high"


@pytest.mark.parametrize("minimum", ["low", "medium", "high"])
def test_min_confidence_keeps_the_hits_at_that_level_or_above_in_order(sample_repo, minimum):
    query = "config retries app cache"
    everything = query_json(sample_repo, query, "-k", "50")
    kept = query_json(sample_repo, query, "-k", "50", "--min-confidence", minimum)
    expected = [r for r in everything if at_least(r["confidence"], minimum)]
    assert [(r["path"], r["start_line"]) for r in kept] == [(r["path"], r["start_line"]) for r in expected]
    assert [r["rank"] for r in kept] == list(range(1, len(kept) + 1))


def test_min_confidence_fills_top_k_from_deeper_in_the_ranking(make_tree):
    # x*.py repeat a common word (a query word absent from the index leaves them little coverage):
    # they rank among the m*.py files but are `low`, so the medium top 5 reaches deeper.
    files = {f"src/m{i}.py": "gadget gadget\n" + "pad\n" * i for i in range(8)}
    files |= {f"src/x{i}.py": "widget " * 5 + "\n" for i in range(2)}
    files |= {f"src/w{i}.py": "widget filler\n" for i in range(10)}
    files |= {f"src/o{i}.py": "other filler\n" for i in range(20)}
    root = make_tree(files)
    unfiltered = query_json(root, "widget gadget zzyzx", "-k", "5")
    assert "low" in {r["confidence"] for r in unfiltered}
    rows = query_json(root, "widget gadget zzyzx", "-k", "5", "--min-confidence", "medium")
    assert [r["path"] for r in rows] == [f"src/m{i}.py" for i in range(5)]
    assert {r["confidence"] for r in rows} == {"medium"}


def test_min_confidence_high_can_answer_nothing(sample_repo):
    assert query_json(sample_repo, "retry", "--min-confidence", "high") == []  # two files, neither ahead
    result = CliRunner().invoke(main, ["query", "--root", str(sample_repo), "retry", "--min-confidence", "high"])
    assert (result.exit_code, result.stdout) == (0, "")


def test_a_query_whose_words_occur_nowhere_has_no_hits(sample_repo):
    assert query_json(sample_repo, "kubernetes helm terraform ansible") == []


def test_eval_prints_a_calibration_table(make_tree, tmp_path):
    root = make_tree({"pkg/alpha.py": "def frobnicate_widgets(x):\n    return x * 2\n",
                      "pkg/beta.py": "class QuuxRegistry:\n    pass\n",
                      "pkg/gamma.py": "def widgets_registry():\n    return 'other'\n"})
    dataset = tmp_path / "ds.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in [
        {"query": "frobnicate widgets", "relevant": ["pkg/alpha.py"]},
        {"query": "QuuxRegistry", "relevant": ["pkg/beta.py"]},
    ]))
    result = CliRunner().invoke(main, ["eval", str(dataset), "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    calibration = json.loads(result.stdout)["runs"][0]["calibration"]
    assert sum(c["hits"] for c in calibration.values()) == 4  # alpha and gamma, then beta and gamma
    assert calibration["high"] == {"hits": 2, "matched": 2, "precision": 1.0}
    assert calibration["low"]["matched"] == 0
    text = CliRunner().invoke(main, ["eval", str(dataset), "--root", str(root)]).stdout
    assert "confidence  hits@10  matching  precision" in text


def test_an_identifier_that_occurs_nowhere_is_never_high_however_rare_its_parts():
    """`only_on_feature_branch_xyz` after a branch switch, `load_config_file` that never existed:
    one rare part (`feature`, `frobnicate`) covered half the query and the guess was graded high."""
    docs = [Document("a", "def frobnicate_gadget_tokens(x):\n    return x\n", source_path="a.py", start_line=1,
                     end_line=2)] + [
        Document(f"o{i}", f"def other_{i}(y):\n    return y + {i}\n", source_path=f"o{i}.py", start_line=1,
                 end_line=2) for i in range(30)]
    retriever = build_retriever("lexical")
    retriever.index(docs)
    (hit,) = retriever.search_detailed("frobnicate_gadget_tokens", top_k=1)
    assert (hit.docid, hit.confidence) == ("a", HIGH)  # it exists: found and defined
    (hit,) = retriever.search_detailed("frobnicate_widget_tokens", top_k=1)  # renamed away
    assert (hit.docid, hit.confidence) == ("a", MEDIUM)
    # One part of three found is no half-answer: `brand_new_symbol_xyz` was medium on `brands`.
    (hit,) = retriever.search_detailed("zebra_quantum_tokens", top_k=1)
    assert (hit.docid, hit.confidence) == ("a", LOW)


def test_another_identifier_sharing_the_parts_of_one_the_index_holds_is_not_high():
    """`targetNeedleFn`, defined in a file whose every chunk scores little: the chunk defining
    `otherNeedleFn` came first, holding two parts of three, and was graded high."""
    docs = [Document("other", "function otherNeedleFn() {\n  return 2\n}\n", source_path="other.js", start_line=1,
                     end_line=3),
            Document("bundle", "var a = 1;" * 500 + "function targetNeedleFn() { return 1 }\n", source_path="bundle.js",
                     start_line=1, end_line=1)] + [
        Document(f"o{i}", f"def other_{i}(y):\n    return y + {i}\n", source_path=f"o{i}.py", start_line=1,
                 end_line=2) for i in range(30)]
    retriever = build_retriever("lexical")
    retriever.index(docs)
    hits = retriever.search_detailed("targetNeedleFn", top_k=2)
    assert [(h.docid, h.confidence) for h in hits if h.docid == "other"] == [("other", MEDIUM if hits[0].docid ==
                                                                                "other" else LOW)]
    assert retriever.search_detailed("otherNeedleFn", top_k=1)[0].confidence == HIGH  # its own name


def test_a_pasted_frames_directories_do_not_count_as_words_the_index_lacks(sample_repo):
    """`/usr/lib/python3.11/site-packages/app/config.py` says where the reporter's copy lived: its
    directories are words no index of the repository holds, and a right first hit was graded low."""
    retriever = indexed(sample_repo)
    frame = 'File "{}config.py", line 12, in parse_config\n    raise ValueError(msg)'
    short = retriever.search_detailed(frame.format(""), top_k=1)[0]
    pasted = retriever.search_detailed(frame.format("/usr/lib/python3.11/site-packages/app/"), top_k=1)[0]
    assert short.source_path == pasted.source_path == "src/app/config.py"
    assert pasted.confidence == short.confidence != LOW


@pytest.mark.parametrize("name", ["lexical", pytest.param("hybrid", marks=pytest.mark.extra("local", "turbovec"))])
def test_the_chunk_a_pasted_stack_frame_points_at_is_at_least_medium(name):
    """A Go panic's words are mostly addresses and paths no chunk holds: the chunk holding its
    frame's line was `low`, and `--min-confidence medium` (what the agent skill advises) dropped it."""
    from retrieval.ranking import RankingConfig

    body = "".join(f"\t\tstep{i}(n)\n" for i in range(48))
    docs = [Document("tree.go:200-249", "func (n *node) addRoute(path string) {\n" + body + "}\n",
                     source_path="tree.go", start_line=200, end_line=249, language="go"),
            Document("router.go:1-3", "func route(path string) {\n\tn.addRoute(path)\n}\n", source_path="router.go",
                     start_line=1, end_line=3, language="go")]
    docs += [Document(f"f{i}.go:1-1", f"func other{i}() {{}}\n", source_path=f"f{i}.go", start_line=1, end_line=1,
                      language="go") for i in range(20)]
    trace = ("panic: wildcard route conflicts with existing children in path\n\ngoroutine 1 [running]:\n"
             "github.com/gin-gonic/gin.(*node).addRoute(0xc000104a80, {0xc00001a0f0, 0xb}, {0xc000110c50, 0x1})\n"
             "\t/home/me/go/pkg/mod/github.com/gin-gonic/gin@v1.9.1/tree.go:213 +0x9b5\n")
    levels = {}
    for boost in (1.0, 0.0):
        retriever = build_retriever(name, ranking=RankingConfig().replace(frame_boost=boost))
        retriever.index(docs)
        levels[boost] = {h.source_path: h.confidence for h in retriever.search_detailed(trace, top_k=2)}
    assert levels[1.0]["tree.go"] == MEDIUM
    assert levels[0.0]["tree.go"] == LOW  # (the same hit, read without its frames)
    assert levels[1.0]["router.go"] == LOW
    # A frame of another program's file of the same name (its function defined nowhere here)
    # lifts the chunk holding its line, but vouches for nothing.
    retriever = build_retriever(name)
    retriever.index(docs)
    foreign = trace.replace("(*node).addRoute", "getNetrcAuth")
    assert {h.source_path: h.confidence for h in retriever.search_detailed(foreign, top_k=2)}["tree.go"] == LOW

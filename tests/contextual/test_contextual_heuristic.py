"""The offline contextualizer: scopes, the file's leading doc, the imported names a chunk uses."""
from __future__ import annotations

from retrieval.chunking import chunk_lines
from retrieval.contextual.heuristic import HeuristicContextualizer, headings, imports, leading_doc, scopes, uses
from retrieval.records import Chunk

PYTHON = '''\
# Copyright (c) 2024 Example Corp. Licensed under the MIT licence.

"""Token bucket rate limiting for the HTTP client. Second sentence here."""
import time
from collections import deque as Queue
from .errors import (
    RateLimited,
    Misconfigured as BadConfig,
)


class TokenBucket:
    def __init__(self, rate):
        self.rate = rate

    def take(
        self,
        tokens: int,
    ) -> bool:
        now = time.monotonic()
        if now > 0:
            waiting = Queue()
            raise RateLimited(tokens)
        return True
'''


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_scopes_name_the_enclosing_class_and_the_whole_multiline_signature():
    lines = PYTHON.splitlines()
    found = scopes(lines, _line(PYTHON, "waiting = Queue()"), "python")
    assert found == ["class TokenBucket", "def take(self, tokens: int, ) -> bool"]


def test_a_chunk_starting_at_the_top_level_has_no_scope():
    assert scopes(PYTHON.splitlines(), _line(PYTHON, "class TokenBucket"), "python") == []


def test_a_block_closed_before_the_chunk_does_not_enclose_it():
    go = "func First() {\n\treturn\n}\n\nfunc (s *Server) Serve(ctx context.Context) error {\n\tfor {\n\t\tx := 1\n"
    assert scopes(go.splitlines(), 7, "go") == ["func (s *Server) Serve(ctx context.Context) error"]
    assert scopes(go.splitlines(), 2, "go") == ["func First()"]


def test_markdown_chunks_are_placed_under_their_headings():
    md = "# Guide\n\n## Install\n\ntext\n\n```sh\n# not a heading\n```\n\n### From source\n\nmore\n\n## Usage\n\nlast\n"
    assert headings(md.splitlines(), _line(md, "more")) == "Guide > Install > From source"
    assert headings(md.splitlines(), _line(md, "last")) == "Guide > Usage"
    # A chunk that starts with a heading is in that heading's section.
    assert headings(md.splitlines(), _line(md, "## Usage")) == "Guide > Usage"


def test_a_fence_closes_only_with_its_own_marker():
    md = "# Guide\n\n````md\n```sh\n# inside an example\n```\n````\n\n## Usage\n\nlast\n"
    assert headings(md.splitlines(), _line(md, "last")) == "Guide > Usage"
    assert headings(md.splitlines(), _line(md, "# inside")) == "Guide"


def test_headings_are_read_as_the_chunker_reads_them():
    """Its own `#` pattern missed setext and reST titles and kept link targets and badges in the
    path: contexts named another section than the chunk's own heading path."""
    md = ("# Tool [![CI](https://ci.example/badge.svg)](https://ci.example)\n\nIntro.\n\n"
          "Install\n-------\n\nsteps\n\n## For C#\n\nlast\n")
    assert headings(md.splitlines(), _line(md, "steps")) == "Tool > Install"
    assert headings(md.splitlines(), _line(md, "last")) == "Tool > For C#"
    rst = "Guide\n=====\n\nIntro.\n\nRetries\n-------\n\nbackoff\n"
    assert headings(rst.splitlines(), _line(rst, "backoff"), "rst") == "Guide > Retries"


def test_the_leading_doc_skips_licence_headers_and_keeps_the_first_sentence():
    assert leading_doc(PYTHON.splitlines()) == "Token bucket rate limiting for the HTTP client."
    js = "/**\n * Parses query strings.\n * More.\n */\nexport function parse() {}\n"
    assert leading_doc(js.splitlines()) == "Parses query strings."
    go = "// Copyright 2020 The Authors.\n\n// Package cache keeps recent results.\npackage cache\n"
    assert leading_doc(go.splitlines()) == "Package cache keeps recent results."
    assert leading_doc("import os\n# late comment\n".splitlines()) == ""


def test_the_leading_doc_of_a_page_is_its_first_heading_as_rendered():
    """The offline `about:` kept MkDocs' anchors (`Dependencies with yield { #dependencies-with-yield }`)."""
    page = "# Dependencies with `yield` { #dependencies-with-yield }\n\nText.\n"
    assert leading_doc(page.splitlines(), markdown=True) == "Dependencies with `yield`"
    badge = "[![CI](https://ci.example/badge.svg)](https://ci.example) text\n\nAcme Client\n===========\n"
    assert leading_doc(badge.splitlines(), markdown=True) == "Acme Client"  # a setext title
    assert leading_doc("Guide\n=====\n\nText.\n".splitlines(), markdown=True, language="rst") == "Guide"
    (context,) = HeuristicContextualizer().contexts(page, "docs/deps.md", [Chunk("docs/deps.md", 3, 3, "Text.\n")],
                                                   "markdown")
    assert "about: Dependencies with `yield`" in context.splitlines()


def test_imports_map_local_names_to_where_they_come_from():
    found = imports(PYTHON, "python")
    assert found["time"] == "time"
    assert found["Queue"] == "collections.deque"
    assert found["RateLimited"] == "errors.RateLimited"
    assert found["BadConfig"] == "errors.Misconfigured"
    js = "import React, { useState as useS } from 'react';\nconst { join } = require('path');\n"
    assert imports(js, "javascript") == {"React": "react", "useS": "react:useState", "join": "path:join"}
    rust = "use std::collections::{HashMap, BTreeMap as Tree};\nuse tokio::sync::Mutex;\n"
    assert imports(rust, "rust") == {"HashMap": "std::collections::HashMap", "Tree": "std::collections::BTreeMap",
                                     "Mutex": "tokio::sync::Mutex"}


def test_uses_lists_only_imported_names_the_chunk_uses_outside_import_lines():
    imported = imports(PYTHON, "python")
    chunk = "import time\nnow = time.monotonic()\nraise RateLimited(1)\nq = Queue()\n"
    assert uses(chunk, imported) == ["time", "errors.RateLimited", "Queue (collections.deque)"]


def test_contexts_combine_the_parts_and_prefer_a_chunkers_breadcrumb():
    chunks = chunk_lines(PYTHON, "net/bucket.py", language="python", kind="code")
    assert len(HeuristicContextualizer().contexts(PYTHON, "net/bucket.py", chunks, "python")) == len(chunks)
    lines = PYTHON.splitlines(keepends=True)
    start = _line(PYTHON, "now = time.monotonic()")
    body = Chunk("net/bucket.py", start, len(lines), "".join(lines[start - 1:]))
    [last] = HeuristicContextualizer().contexts(PYTHON, "net/bucket.py", [body], "python")
    assert "in class TokenBucket > def take(" in last
    assert "about: Token bucket rate limiting for the HTTP client." in last
    assert "uses time" in last
    assert "net/bucket.py" not in last  # the lexical index adds path words already
    crumb = Chunk("net/bucket.py", 20, 22, "now = 1\n", context="TokenBucket.take")
    assert HeuristicContextualizer(("scopes",)).contexts(PYTHON, "net/bucket.py", [crumb], "python") == [
        "in TokenBucket.take"]
    assert HeuristicContextualizer(("path",)).contexts(PYTHON, "net/bucket.py", [crumb]) == ["net/bucket.py"]


def test_a_form_feed_or_lone_carriage_return_does_not_shift_the_scope_of_later_chunks():
    # Line numbers are the chunker's (newlines only): a page break (\f) or a stray \r is inside a line.
    for odd in ("\f", "\r"):
        py = f"x = 1  # {odd} page break\nclass Pool:\n    def acquire(self):\n        conn = 1\n        return conn\n"
        body = Chunk("pool.py", 4, 5, "        conn = 1\n        return conn\n")
        [context] = HeuristicContextualizer(("scopes",)).contexts(py, "pool.py", [body], "python")
        assert context == "in class Pool > def acquire(self)"


def test_doc_is_the_enclosing_definitions_docstring_or_doc_comment():
    py = 'class Pool:\n    def acquire(self):\n        """Take a connection, waiting if none is free.\n\n        More.\n        """\n' \
         '        conn = self.free.pop()\n        return conn\n'
    body = Chunk("pool.py", 7, 8, "        conn = self.free.pop()\n        return conn\n")
    [context] = HeuristicContextualizer(("doc",)).contexts(py, "pool.py", [body], "python")
    assert context == "doc: Take a connection, waiting if none is free."
    go = "// Serve accepts connections.\n// It blocks.\n//go:noinline\nfunc Serve(l Listener) error {\n\tfor {\n" \
         "\t\tc := l.Accept()\n\t}\n}\n"
    body = Chunk("srv.go", 6, 7, "\t\tc := l.Accept()\n\t}\n")
    assert HeuristicContextualizer(("doc",)).contexts(go, "srv.go", [body], "go") == ["doc: Serve accepts connections."]
    top = Chunk("srv.go", 1, 8, go)
    assert HeuristicContextualizer(("doc",)).contexts(go, "srv.go", [top], "go") == [""]  # nothing encloses it


def test_a_contexts_file_replaced_by_a_directory_is_rebuilt(sample_repo):
    """The damage was found ("the contexts file is missing") but the rebuild wrote the very same
    content-addressed name, failed on the directory, and every query and `index` failed for good."""
    import json
    import os

    from retrieval import service
    from retrieval.store import layout

    service.refresh(str(sample_repo), "lexical+ctx")
    store = layout.store_dir(str(sample_repo))
    name = json.loads(open(layout.manifest_path(store, "lexical+ctx")).read())["state"]["contexts"]
    path = os.path.join(layout.retriever_dir(store, "lexical+ctx"), name)
    os.unlink(path)
    os.mkdir(path)
    hits = service.search(str(sample_repo), "parse config", retriever="lexical+ctx").hits
    assert hits and os.path.isfile(path)


def test_a_contexts_file_changed_on_disk_no_longer_matches_its_name_and_is_rebuilt(sample_repo):
    """Named by its content's digest but read without checking it: an edited context was reported
    on hits as if the index had written it."""
    import json
    import os

    from retrieval import service
    from retrieval.store import layout

    service.refresh(str(sample_repo), "lexical+ctx")
    expected = [(h.docid, h.context) for h in service.search(str(sample_repo), "parse config guide",
                                                             retriever="lexical+ctx").hits]
    store = layout.store_dir(str(sample_repo))
    name = json.loads(open(layout.manifest_path(store, "lexical+ctx")).read())["state"]["contexts"]
    path = os.path.join(layout.retriever_dir(store, "lexical+ctx"), name)
    data = open(path, "rb").read()
    assert b"about: Guide" in data
    with open(path, "wb") as fh:
        fh.write(data.replace(b"about: Guide", b"about: GUIDE"))  # the same size
    service._OPEN.clear()  # a new process
    got = [(h.docid, h.context) for h in service.search(str(sample_repo), "parse config guide",
                                                        retriever="lexical+ctx").hits]
    assert got == expected and any("about: Guide" in context for _docid, context in got)

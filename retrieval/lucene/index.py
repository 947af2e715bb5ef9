"""A Lucene index in the store, written by Anserini and replaced atomically as a whole directory.

Each version of the index is a directory `lucene-NNNNNN` that the committed state names. An update
builds the next version in a temp directory: hard links to the current version's files (Lucene
never rewrites a file it has written), the changed files' old documents deleted through an
IndexWriter, their new documents added as Pyserini JSON (`{"id", "contents"}`) through Anserini's
SimpleIndexer, then the table that maps ids to spans; the directory is renamed into place and only
then does the caller commit the state. Readers keep the version they opened; garbage collection
removes versions the state no longer names. Lucene merges its own segments as it goes, so only
the documents that changed are analysed again.

Lucene's `id` of a document is its docid (`path:start-end` in the store); its span and file come
from the table (`docs.json`), never parsed out of the id.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib

from ..store.atomic import TMP_PREFIX, publish_dir, remove_tree, write_new
from . import jvm

TABLE = "docs.json"
PREFIX = "lucene-"
BATCH = 2000  # documents handed to Java per call: one JNI round trip each


def empty_state(analyzer: str, directory: str | None = None) -> dict:
    """A state with no documents. Version numbers continue past any directory already there, so
    a rebuild never replaces the version that the committed manifest may still name."""
    used = 0
    try:
        names = os.listdir(directory) if directory else []
    except OSError:
        names = []
    for name in names:
        digits = name[len(PREFIX):]
        if name.startswith(PREFIX) and digits.isdigit():
            used = max(used, int(digits))
    return {"index": None, "next": used + 1, "n_docs": 0, "analyzer": analyzer}


def indexer_args(directory: str, analyzer: str, append: bool) -> list[str]:
    """SimpleIndexer's command line: Anserini's English analyzer, or pre-tokenized terms split on
    whitespace only (so Lucene indexes exactly the terms we computed)."""
    args = ["-index", directory, "-input", "", "-collection", "JsonCollection", "-threads", "1"]
    if analyzer == "whitespace":
        args.append("-pretokenized")
    if append:
        args.append("-append")
    return args


class Table:
    """{docid: (path, language, kind, start, end)} and which files are generated, kept per file
    while an update edits it and stored in columns (a query process parses it faster: hundreds of
    thousands of documents)."""

    def __init__(self, files: dict | None = None):
        # path -> [language, kind, [[docid, start, end], ...], generated]
        self.files: dict[str, list] = files or {}

    @classmethod
    def read(cls, directory: str) -> "Table":
        columns = _read_columns(directory)
        files: dict[str, list] = {p: [lang, kind, [], False] for p, lang, kind in
                                  zip(columns["paths"], columns["languages"], columns["kinds"])}
        paths = columns["paths"]
        for f, docid, start, end in zip(columns["file"], columns["id"], columns["start"], columns["end"]):
            files[paths[f]][2].append([docid, start, end])
        for f in columns.get("generated", ()):
            files[paths[f]][3] = True
        return cls(files)

    def write(self, directory: str) -> None:
        paths = list(self.files)
        columns = {"paths": paths, "languages": [self.files[p][0] for p in paths],
                   "kinds": [self.files[p][1] for p in paths], "file": [], "id": [], "start": [], "end": [],
                   # the files a header or .gitattributes marks (see retrieval.generated), by position
                   "generated": [f for f, p in enumerate(paths) if self.files[p][3]]}
        for f, path in enumerate(paths):
            for docid, start, end in self.files[path][2]:
                columns["file"].append(f)
                columns["id"].append(docid)
                columns["start"].append(start)
                columns["end"].append(end)
        data = json.dumps(columns, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        write_new(os.path.join(directory, TABLE), _CHECKED % zlib.crc32(data) + data + b"}")

    def n_docs(self) -> int:
        return sum(len(entry[2]) for entry in self.files.values())


# The table names every hit's file and lines, and no Lucene checksum covers it: it is written as
# {"crc32": <of the columns' bytes>, "columns": {...}} (a table written before is read unchecked).
_CHECKED = b'{"crc32":%d,"columns":'
_COLUMNS_AT = b',"columns":'


def _read_columns(directory: str) -> dict:
    with open(os.path.join(directory, TABLE), "rb") as fh:
        data = fh.read()
    if data.startswith(_CHECKED[:9]):
        at = data.find(_COLUMNS_AT)
        body = data[at + len(_COLUMNS_AT):-1]
        if at < 0 or not data[9:at].isdigit() or int(data[9:at]) != zlib.crc32(body) or data[-1:] != b"}":
            raise ValueError(f"the Lucene index's {TABLE} is damaged")
        data = body
    columns = json.loads(data.decode("utf-8", "surrogatepass"))
    if not _columns_ok(columns):  # a table of an unknown shape (or with a checksum's key renamed)
        raise ValueError(f"the Lucene index's {TABLE} is damaged")
    return columns


def _columns_ok(c) -> bool:
    if not isinstance(c, dict) or not all(isinstance(c.get(k), list) for k in
                                          ("paths", "languages", "kinds", "file", "id", "start", "end")):
        return False
    n_files, n_docs = len(c["paths"]), len(c["id"])
    return (len(c["languages"]) == len(c["kinds"]) == n_files
            and len(c["file"]) == len(c["start"]) == len(c["end"]) == n_docs
            and all(isinstance(x, str) for k in ("paths", "languages", "kinds", "id") for x in c[k])
            and all(type(f) is int and 0 <= f < n_files for f in c["file"])
            and isinstance(c.get("generated", []), list)
            and all(type(f) is int and 0 <= f < n_files for f in c.get("generated", ()))
            # (0: a document given without that line, in memory)
            and all(type(a) is int and type(b) is int and 0 <= a and 0 <= b and (a <= b or not b)
                    for a, b in zip(c["start"], c["end"])))


def records(directory: str) -> tuple[dict[str, tuple], frozenset[str]]:
    """{docid: (path, language, kind, start, end)} of an index version, straight from the columns,
    and the paths of its generated files."""
    c = _read_columns(directory)
    files = list(zip(c["paths"], c["languages"], c["kinds"]))
    found = {docid: (*files[f], start, end) for f, docid, start, end in zip(c["file"], c["id"], c["start"], c["end"])}
    return found, frozenset(c["paths"][f] for f in c.get("generated", ()))


def _link_tree(src: str, dest: str) -> None:
    for name in os.listdir(src):
        if name == TABLE or name == "write.lock":
            continue
        try:
            os.link(os.path.join(src, name), os.path.join(dest, name))
        except OSError:  # a file system without hard links
            shutil.copy2(os.path.join(src, name), os.path.join(dest, name))


def update(directory: str, state: dict | None, analyzer: str, removed_paths, added) -> dict:
    """The next state after removing `removed_paths` and replacing each (path, language, kind,
    [(docid, start, end, contents)], generated) of `added` (consumed lazily). Writes a new index
    version.

    The new documents are first spooled as Pyserini JSON lines (so memory holds one file's chunks
    at a time, and every old document to delete is known before Lucene is opened), then the old
    ones are deleted and the new ones added."""
    with jvm.java_errors("Lucene could not update the index"):
        return _update(directory, state, analyzer, removed_paths, added)


def _update(directory, state, analyzer, removed_paths, added) -> dict:
    state = dict(state) if state else empty_state(analyzer, directory)
    old = state["index"]
    table = Table.read(os.path.join(directory, old)) if old else Table()
    tmp = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=directory)
    spool = tmp + ".jsonl"
    try:
        gone: list[str] = []

        def drop(path: str) -> None:
            entry = table.files.pop(path, None)
            if entry:
                gone.extend(docid for docid, _, _ in entry[2])

        for path in removed_paths:
            drop(path)
        with open(spool, "w", encoding="utf-8") as out:
            for path, language, kind, docs, generated in added:
                drop(path)
                if docs:
                    table.files[path] = [language, kind, [[docid, start, end] for docid, start, end, _ in docs],
                                         bool(generated)]
                    for docid, _, _, contents in docs:
                        # A chunk without a term (stop words, punctuation) is one Anserini refuses,
                        # failing the whole build; it could match no query anyway.
                        if contents.strip():
                            out.write(json.dumps({"id": docid, "contents": contents}) + "\n")
        # The JVM starts after the spooling, whose worker processes are then forked without it.
        j = jvm.start()
        with jvm.java_stderr_held():
            if old:
                _link_tree(os.path.join(directory, old), tmp)
                _delete(j, tmp, gone)
            indexer = j.autoclass("io.anserini.index.SimpleIndexer")(indexer_args(tmp, analyzer, bool(old)))
            try:
                with open(spool, encoding="utf-8") as lines:
                    batch = []
                    for line in lines:
                        batch.append(line)
                        if len(batch) >= BATCH:
                            _add(indexer, batch)
                            batch = []
                    if batch:
                        _add(indexer, batch)
            finally:
                indexer.close()  # commits; no forced merge
        table.write(tmp)
        name = f"{PREFIX}{state['next']:06d}"
        # A version published by a writer that died before committing it: nothing names it.
        remove_tree(os.path.join(directory, name), ignore_errors=True)
        publish_dir(tmp, os.path.join(directory, name))
    except BaseException:
        remove_tree(tmp, ignore_errors=True)
        raise
    finally:
        try:
            os.unlink(spool)
        except OSError:
            pass
    state.update(index=name, next=state["next"] + 1, n_docs=table.n_docs(), analyzer=analyzer)
    return state


def _add(indexer, batch: list[str]) -> None:
    added = indexer.addRawDocuments(batch)
    if added != len(batch):  # Anserini logs and skips a document it cannot index
        raise RuntimeError(f"Lucene indexed {added} of {len(batch)} documents")


def _delete(j, directory: str, docids: list[str]) -> None:
    """Delete documents by id in the new version (before anything is added to it), and rewrite the
    segments that held them. Lucene's BM25 statistics (document count, average length) count a
    deleted document until its segment is rewritten: without this an updated index scored otherwise
    than a clean build of the same tree (click, two files removed: a hit scored 10.01 against the
    clean build's 9.37), and the removed text stayed on disk. A one-file refresh of fastapi (14,724
    chunks) takes about 3 s with it or without (2.6-3.9 s against 2.8-3.1 s; the JVM's start dominates)."""
    if not docids:
        return
    config = j.autoclass("org.apache.lucene.index.IndexWriterConfig")(
        j.autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")()
    )
    config.setOpenMode(j.autoclass("org.apache.lucene.index.IndexWriterConfig$OpenMode").APPEND)
    # By default Lucene leaves segments that are less than 10% deleted alone.
    policy = j.autoclass("org.apache.lucene.index.TieredMergePolicy")()
    policy.setForceMergeDeletesPctAllowed(0.0)
    config.setMergePolicy(policy)
    path = j.autoclass("java.nio.file.Paths").get(directory)
    writer = j.autoclass("org.apache.lucene.index.IndexWriter")(
        j.autoclass("org.apache.lucene.store.FSDirectory").open(path), config
    )
    try:
        for start in range(0, len(docids), BATCH):
            writer.deleteDocuments(id_query(j, docids[start : start + BATCH]))
        writer.forceMergeDeletes()
        writer.commit()
    finally:
        writer.close()


def id_query(j, docids: list[str]):
    """A query matching exactly the documents with these ids."""
    refs = j.autoclass("java.util.ArrayList")()
    bytes_ref = j.autoclass("org.apache.lucene.util.BytesRef")
    for d in docids:
        refs.add(bytes_ref(d.encode("utf-8", "surrogatepass")))
    return j.autoclass("org.apache.lucene.search.TermInSetQuery")("id", refs)


def check(directory: str, state: dict) -> None:
    """Raise when the version the state names is missing or lacks its table or commit point."""
    name = state.get("index")
    if not name:
        if state.get("n_docs") != 0:  # a state edited into naming no version: every answer was empty
            raise ValueError("the Lucene index's state names no version but counts documents")
        return
    path = os.path.join(directory, name)
    names = os.listdir(path)
    if TABLE not in names or not any(n.startswith("segments_") for n in names):
        raise ValueError(f"the Lucene index {name} is incomplete")


def collect_garbage(directory: str, state: dict) -> None:
    """Remove index versions the committed state does not name, and dead writers' temp dirs."""
    live = state.get("index") if state else None
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if (name.startswith(PREFIX) and name != live) or name.startswith(TMP_PREFIX):
            remove_tree(os.path.join(directory, name), ignore_errors=True)

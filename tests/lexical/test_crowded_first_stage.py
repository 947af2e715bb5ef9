"""One file cannot take the whole first-stage pool: a file's chunks after its first rank after
every file's first, so the pool keeps a file's best few and fills the rest with other files."""
from __future__ import annotations

import json

from retrieval import service
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever

MIGRATION = ("-- Migration: create the users table\nCREATE TABLE users (\n  id SERIAL PRIMARY KEY,\n"
             "  email VARCHAR(255) NOT NULL UNIQUE\n);\n")


def export_documents(n: int) -> list[Document]:
    """A data export: n chunks, each naming its table (`users`), more often than the migration does."""
    return [Document(f"db/users_export.json:{i * 3 + 1}-{i * 3 + 3}",
                     json.dumps({"table": "users", "users_table_row": i, "users": f"u{i}@example.com"}),
                     source_path="db/users_export.json", start_line=i * 3 + 1, end_line=i * 3 + 3,
                     language="json", kind="config")
            for i in range(n)]


def test_a_file_with_more_matching_chunks_than_the_pool_holds_leaves_room_for_the_others():
    """A 10,000-record export filled all 300 candidates: every hit was the export's, down to a
    score of 0.00007, and the migration creating the table (a score of 1.3) was never ranked."""
    retriever = LexicalRetriever()
    migration = Document("db/001_create_users.sql:1-5", MIGRATION, source_path="db/001_create_users.sql",
                         start_line=1, end_line=5, language="sql", kind="code")
    retriever.index(export_documents(1000) + [migration])
    hits = retriever.search_detailed("users table", top_k=10)
    assert {hit.source_path for hit in hits[:2]} == {"db/users_export.json", "db/001_create_users.sql"}
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    # Asked deep, the export's chunks are all there, each once, after the migration.
    deep = retriever.search_detailed("users table", top_k=2000)
    assert len(deep) == 1001 and len({hit.docid for hit in deep}) == 1001


def test_the_store_ranks_a_crowded_query_as_the_in_memory_retriever_does(make_tree):
    records = [{"table": "users", "users_table_row": i, "users": f"u{i}@example.com"} for i in range(6000)]
    root = make_tree({"db/001_create_users.sql": MIGRATION,
                      "db/users_export.json": json.dumps(records, indent=1)})
    hits = service.search(str(root), "users table", top_k=5).hits
    assert "db/001_create_users.sql" in [hit.source_path for hit in hits]


def test_several_crowding_files_together_still_leave_room_for_the_others():
    """Three exports each keeping 100 candidates filled the 300 again: the migration was lost."""
    retriever = LexicalRetriever()
    exports = [Document(f"db/export{n}.json:{i * 3 + 1}-{i * 3 + 3}",
                        json.dumps({"table": "users", "users_table_row": i, "export": n}),
                        source_path=f"db/export{n}.json", start_line=i * 3 + 1, end_line=i * 3 + 3,
                        language="json", kind="config")
               for n in range(4) for i in range(400)]
    migration = Document("db/001_create_users.sql:1-5", MIGRATION, source_path="db/001_create_users.sql",
                         start_line=1, end_line=5, language="sql", kind="code")
    retriever.index(exports + [migration])
    for top_k in (10, 300):
        hits = retriever.search_detailed("users table", top_k=top_k)
        assert "db/001_create_users.sql" in [hit.source_path for hit in hits[:5]], top_k

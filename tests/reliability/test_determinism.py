"""Same input, same ranking, same bytes: across processes whose string hashing differs
(PYTHONHASHSEED: set and dict-of-set order) and across build parallelism (worker processes start
from 64 files), an index is the same bytes and every answer is the same bytes; wherever the
repository lives, every answer is the same bytes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RETRIEVERS = [
    "lexical",
    pytest.param("treesitter", marks=pytest.mark.extra("treesitter")),
    pytest.param("hybrid", marks=pytest.mark.extra("local", "turbovec")),
]

# Fields of a manifest that say when, not what.
WHEN = ("created", "updated", "checked_ns")

QUERIES = (
    ["retry the upload", "--json"],
    ["how are uploads retried after a timeout", "--json", "--top-k", "30"],
    ["UploadQueue", "--json"],
    ["upload queue worker", "--jsonl", "--files"],
    ["timeout", "--json", "--max-tokens", "600"],
    ["upload examples in the docs and the tests", "--json"],
)


def corpus() -> dict:
    """80 files (enough for the build's worker processes) full of ties: identical files under
    other names, the same words in another order, one vocabulary everywhere."""
    files = {}
    words = ["upload", "retry", "timeout", "queue", "worker", "backoff", "token", "refresh"]
    for i in range(72):
        a, b = words[i % 8], words[(i * 3 + 1) % 8]
        files[f"pkg{i % 6}/mod_{a}_{i}.py"] = (
            f"class {a.title()}{b.title()}{i % 4}:\n"
            f"    '''Handles the {a} and the {b}.'''\n\n"
            f"    def {b}_{a}(self, attempt):\n"
            f"        # {a} after {b}: retry the upload on timeout\n"
            f"        return self.{a}(attempt) or self.{b}(attempt)\n"
        )
    for i in range(4):  # the same text under four paths
        files[f"copies/c{i}/upload_queue.py"] = "class UploadQueue:\n    def retry(self):\n        return 'timeout'\n"
    files["docs/uploads.md"] = "# Uploads\n\nAn upload is retried after a timeout.\n\n## Queue\n\nThe worker drains the queue.\n"
    files["docs/retries.md"] = "# Retries\n\nAfter a timeout the upload is retried.\n"
    files["config/settings.json"] = json.dumps({"upload": {"retry": 3, "timeout": 30}}, indent=2) + "\n"
    files["README.md"] = "# Demo\n\nUpload, retry, timeout, queue.\n"
    return files


def build_and_ask(root: Path, index_dir: Path, retriever: str, seed: str, jobs: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_")}
    env.update(PYTHONHASHSEED=seed, RETRIEVAL_INDEX_DIR=str(index_dir), RETRIEVAL_JOBS=jobs,
               RETRIEVAL_EMBED_CACHE="off")
    cli = [sys.executable, "-m", "retrieval"]
    built = subprocess.run([*cli, "index", "--root", str(root), "--retriever", retriever],
                           capture_output=True, text=True, env=env, timeout=600)
    assert built.returncode == 0, built.stderr
    answers = []
    for query in QUERIES:
        proc = subprocess.run([*cli, "query", query[0], *query[1:], "--root", str(root), "--retriever", retriever,
                               "--stale-ok"], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        answers.append(proc.stdout)
    return answers


def store_bytes(index_dir: Path) -> dict:
    out = {}
    for path in sorted(p for p in index_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            for key in WHEN:
                manifest.pop(key, None)
            data = json.dumps(manifest, sort_keys=True).encode()
        out[str(path.relative_to(index_dir))] = data
    return out


@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_another_hash_seed_and_another_number_of_workers_give_the_same_index_and_answers(make_tree, tmp_path,
                                                                                      retriever):
    root = make_tree(corpus())
    first = build_and_ask(root, tmp_path / "one", retriever, seed="1", jobs="1")
    second = build_and_ask(root, tmp_path / "two", retriever, seed="2", jobs="2")
    for answer in first:  # each asks something the corpus answers
        top = json.loads(answer.splitlines()[0])
        assert top.get("results", [top])
    assert first == second
    one, two = store_bytes(tmp_path / "one"), store_bytes(tmp_path / "two")
    assert sorted(one) == sorted(two)
    assert [name for name in one if one[name] != two[name]] == []


@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_a_repository_answers_the_same_wherever_it_lives(make_tree, tmp_path, retriever):
    # Under directories whose names the ranking reads in a repository's own paths (tests, vendor,
    # examples, docs): only the path inside the repository may count.
    files = corpus()
    here = make_tree(files, name="repo")
    there = make_tree(files, name="tests/vendor/examples/docs/repo")
    assert build_and_ask(here, tmp_path / "one", retriever, seed="1", jobs="2") == \
        build_and_ask(there, tmp_path / "two", retriever, seed="1", jobs="2")

"""`retrieval mcp` through the SDK's own stdio client, the server a real subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.extra("mcp")


def _call(root, calls, env=None):
    """Start `retrieval mcp --root ROOT`, make each (tool, arguments) call; the results."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "retrieval.entry", "mcp", "--root", str(root)],
                                   env=env)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                results = []
                for call in calls:
                    if callable(call):  # something to do between two calls (an edit)
                        call()
                    else:
                        results.append(await session.call_tool(*call))
                return tools, results

    return anyio.run(main)


def _is_error(result) -> bool:
    return result.is_error if hasattr(result, "is_error") else result.isError


def _payload(result):
    assert not _is_error(result), result
    return json.loads(result.content[0].text)


def test_search_over_stdio_returns_what_query_json_prints(sample_repo):
    cli = subprocess.run([sys.executable, "-m", "retrieval.entry", "query", "--root", str(sample_repo), "--json",
                          "parse config"], capture_output=True, env={**os.environ, "RETRIEVAL_NO_SERVER": "1"}, timeout=120)
    tools, results = _call(sample_repo, [
        ("search", {"query": "parse config"}),
        ("search", {"query": "retries", "kind": "docs", "expand": 1, "top_k": 2}),
        ("status", {}),
        ("search", {"query": "parse config", "retriever": "no-such-retriever"}),
        lambda: (sample_repo / "src/app/late.py").write_text("def zqlatearrival():\n    pass\n"),
        ("search", {"query": "zqlatearrival"}),
        ("search", {"query": "xylophonequux"}),
    ])
    assert {"search", "status"} <= {t.name for t in tools.tools}
    assert _payload(results[0]) == json.loads(cli.stdout)
    assert _payload(results[0])["results"][0]["path"] == "src/app/config.py"
    docs = _payload(results[1])["results"]
    assert docs and all(r["path"].endswith(".md") for r in docs) and len(docs) <= 2
    assert all("snippet" in r for r in docs)
    rows = {r["retriever"]: r for r in _payload(results[2])["retrievers"]}
    assert rows["lexical"]["state"] == "ready"
    failed = results[3]
    assert _is_error(failed)
    assert "no-such-retriever" in failed.content[0].text
    # The server stays up between calls, and a file written between two calls is in the second.
    assert [r["path"] for r in _payload(results[4])["results"]] == ["src/app/late.py"]
    # What the command says on stderr reaches the agent inside the result (and only when said).
    assert _payload(results[5]) == {"query": "xylophonequux", "retriever": "lexical", "results": [],
                                    "notes": ["no hits: no indexed text contains a word of the query"]}


def test_search_without_a_retriever_uses_the_servers_retrieval_retriever(sample_repo):
    # An MCP client's config sets the server's environment; its default retriever comes from there.
    _tools, results = _call(sample_repo, [("search", {"query": "parse config"}),
                                          ("search", {"query": "parse config", "retriever": "lexical"})],
                            env={**os.environ, "RETRIEVAL_RETRIEVER": "all"})
    assert _payload(results[0])["retriever"] == "all"
    assert _payload(results[1])["retriever"] == "lexical"

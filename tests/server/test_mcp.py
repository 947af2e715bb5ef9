"""`retrieval mcp` through the SDK's own stdio client, the server a real subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import retrieval

pytestmark = pytest.mark.extra("mcp")


def _call(root, calls, env=None, cwd=None, timeout=None):
    """Start `retrieval mcp --root ROOT`, make each (tool, arguments) call; the results (TimeoutError
    after `timeout` seconds)."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "retrieval.entry", "mcp", "--root", str(root)],
                                   env=env, cwd=cwd)

    async def main():
        if timeout is not None:
            with anyio.fail_after(timeout):
                return await calls_made()
        return await calls_made()

    async def calls_made():
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
    assert results[0].content[0].text + "\n" == cli.stdout.decode("utf-8")  # the very bytes --max-tokens counts
    # The same object as structured content, not {"result": "<the JSON as a string>"}.
    structured = [r.structured_content if hasattr(r, "structured_content") else r.structuredContent
                  for r in results[:3]]
    assert structured == [_payload(r) for r in results[:3]]
    schemas = {t.name: (t.output_schema if hasattr(t, "output_schema") else t.outputSchema) for t in tools.tools}
    assert "result" not in (schemas["search"] or {}).get("properties", {})
    assert _payload(results[0])["results"][0]["path"] == "src/app/config.py"
    docs = _payload(results[1])["results"]
    assert docs and all(r["path"].endswith(".md") for r in docs) and len(docs) <= 2
    assert all("snippet" in r for r in docs)
    rows = {r["retriever"]: r for r in _payload(results[2])["retrievers"]}
    assert rows["lexical"]["state"] == "ready"
    failed = results[3]
    assert _is_error(failed)
    assert "no-such-retriever" in failed.content[0].text
    assert "--retriever" not in failed.content[0].text  # the tool's argument, as the agent wrote it
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


def test_a_path_filter_may_be_one_glob_as_a_string_or_a_list(make_tree):
    """Agents often write `"path": "src/**"`: it was a validation error asking for a list."""
    root = make_tree({"src/a.py": "def zqfilter():\n    pass\n", "b.py": "def zqfilter_too():\n    pass\n"})
    _tools, results = _call(root, [("search", {"query": "zqfilter", "path": "src/**"}),
                                   ("search", {"query": "zqfilter", "path": ["src/**", "b.py"]})])
    assert [r["path"] for r in _payload(results[0])["results"]] == ["src/a.py"]
    assert {r["path"] for r in _payload(results[1])["results"]} == {"src/a.py", "b.py"}


def test_a_pattern_keeps_the_hits_with_a_matching_line_and_a_bad_one_is_said_in_the_tools_words(make_tree):
    root = make_tree({"a.py": "def zqload(path):\n    return open(path)\n",
                      "b.py": "def zqload_all(paths):\n    return [zqload(p) for p in paths]\n"})
    _tools, results = _call(root, [("search", {"query": "zqload", "pattern": r"open\("}),
                                   ("search", {"query": "zqload", "pattern": ["for p in", "nothing"]}),
                                   ("search", {"query": "zqload", "pattern": "open(", "fixed_strings": True}),
                                   ("search", {"query": "zqload", "pattern": "open("}),
                                   ("search", {"query": "zqload", "pattern": "OPEN\\(", "ignore_case": True}),
                                   ("search", {"query": "zqload", "pattern": "(?i)OPEN\\("})])
    assert [r["path"] for r in _payload(results[0])["results"]] == ["a.py"]
    assert [r["path"] for r in _payload(results[1])["results"]] == ["b.py"]
    assert [r["path"] for r in _payload(results[2])["results"]] == ["a.py"]
    assert _is_error(results[3])
    said = results[3].content[0].text
    assert "pattern 'open(' is not a regular expression" in said and "fixed_strings matches it" in said
    assert [r["path"] for r in _payload(results[4])["results"]] == ["a.py"]
    assert [r["path"] for r in _payload(results[5])["results"]] == ["a.py"]  # (an inline flag was a traceback)


def test_lang_and_kind_may_be_lists_as_the_command_line_repeats_them_and_notes_name_arguments(make_tree):
    root = make_tree({"a.py": "def zqrepeat():\n    pass\n", "b.go": "func zqrepeat() {}\n",
                      "c.md": "# zqrepeat\n\nzqrepeat here.\n", "d.toml": "zqrepeat = 1\n"})
    _tools, results = _call(root, [("search", {"query": "zqrepeat", "lang": ["python", "go"]}),
                                   ("search", {"query": "zqrepeat", "kind": ["docs", "config"]}),
                                   ("search", {"query": "the", "min_confidence": "high"})])
    assert {r["path"] for r in _payload(results[0])["results"]} == {"a.py", "b.go"}
    assert {r["path"] for r in _payload(results[1])["results"]} == {"c.md", "d.toml"}
    assert all("--" not in note for note in _payload(results[2]).get("notes", []))


def test_any_text_is_a_query_a_lone_dash_included(make_tree):
    root = make_tree({"cli.py": "def read_stdin():\n    return '-'  # a lone - means stdin\n"})
    _tools, results = _call(root, [("search", {"query": "-"}), ("search", {"query": "--json stdin"})])
    assert _payload(results[0])["query"] == "-"  # not 'the query is empty' (it was read as `query -`)
    assert _payload(results[1])["results"][0]["path"] == "cli.py"


def test_a_root_removed_and_made_again_is_searched_afresh(make_tree):
    import shutil

    root = make_tree({"a.py": "def zqfirstclone():\n    pass\n"})

    def reclone():
        shutil.rmtree(root)
        root.mkdir()
        (root / "b.py").write_text("def zqsecondclone():\n    pass\n")

    def edit():
        (root / "c.py").write_text("def zqafterreclone():\n    pass\n")

    # Started in the root, as an agent's config does (`--root .`): the process's own directory goes.
    _tools, results = _call(root, [("search", {"query": "zqfirstclone"}), reclone,
                                   ("search", {"query": "zqsecondclone"}), edit,
                                   ("search", {"query": "zqafterreclone"})], cwd=str(root))
    assert [r["path"] for r in _payload(results[0])["results"]] == ["a.py"]
    assert [r["path"] for r in _payload(results[1])["results"]] == ["b.py"]
    # The new tree is watched: a file written there later is found (the old watches saw nothing).
    assert [r["path"] for r in _payload(results[2])["results"]] == ["c.py"]


def test_a_refresh_big_enough_for_worker_processes_answers(make_tree):
    """Workers forked while the SDK's thread sat in a read of stdin inherited that stream's lock,
    held for ever: their start, which closes stdin, hung, and with it the call and the index's lock.
    A refresh of 64 files or more takes workers; the suite's trees had been too small to."""
    root = make_tree({f"pkg/m{i}.py": f"def zqmodule_{i}():\n    return {i}\n" for i in range(90)})

    def edit_many():
        for i in range(80):
            (root / f"pkg/m{i}.py").write_text(f"def zqmodule_{i}():\n    return 'zqedited{i}'\n")

    env = {**os.environ, "RETRIEVAL_JOBS": "2"}
    _tools, results = _call(root, [("search", {"query": "zqmodule_7"}), edit_many,
                                   ("search", {"query": "zqedited42"})], env=env, timeout=90)
    assert _payload(results[0])["results"][0]["path"] == "pkg/m7.py"
    assert _payload(results[1])["results"][0]["path"] == "pkg/m42.py"


def test_a_root_that_is_gone_fails_each_call_with_the_reason(make_tree):
    import shutil

    root = make_tree({"a.py": "def zqgone():\n    pass\n"})
    _tools, results = _call(root, [("search", {"query": "zqgone"}), lambda: shutil.rmtree(root),
                                   ("search", {"query": "zqgone"})])
    assert _payload(results[0])["results"]
    assert _is_error(results[1]) and "root does not exist" in results[1].content[0].text


def test_mcp_on_a_missing_root_answers_each_call_with_the_reason_until_it_exists(tmp_path):
    """It exited at start: a host showed "Connection closed" and the agent never learned why (a
    mistyped path, an unexpanded `${workspaceFolder}` in a config)."""
    root = tmp_path / "nope"

    def create():
        root.mkdir()
        (root / "a.py").write_text("def zqlater():\n    pass\n")

    _tools, results = _call(root, [("search", {"query": "zqlater"}), create, ("search", {"query": "zqlater"})],
                            timeout=90)
    assert _is_error(results[0]) and results[0].content[0].text.endswith(f"root does not exist: {root}")
    assert [r["path"] for r in _payload(results[1])["results"]] == ["a.py"]
    proc = subprocess.run([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(root.parent / "gone")],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.stderr.strip() == f"error: root does not exist: {root.parent / 'gone'} (every call answers this until it exists)"


def test_search_expands_a_hit_to_its_scope_as_query_expand_scope_does(sample_repo):
    _tools, results = _call(sample_repo, [
        ("search", {"query": "parse config", "expand": "scope", "top_k": 1}),
        ("search", {"query": "parse config", "expand": "everything"}),
        ("search", {"query": "parse config", "expand": -1}),
    ])
    (hit,) = _payload(results[0])["results"]
    assert "snippet" in hit
    assert _is_error(results[1]) and _is_error(results[2])


def test_sigterm_ends_the_server_at_once_while_its_stdin_stays_open(sample_repo):
    """Agent hosts stop their MCP servers with SIGTERM and wait; it was ignored until stdin closed."""
    import signal
    import time

    proc, reply = _start_initialized(sample_repo, with_reply=True)
    try:
        # up and answering, under its version (it said "")
        assert reply["result"]["serverInfo"] == {"name": "retrieval", "version": retrieval.__version__}
        refused = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "search", "arguments": {"query": "parse", "top_k": 500}}}
        proc.stdin.write((json.dumps(refused) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["result"]["isError"]
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) in (-signal.SIGTERM, 143)
        assert b"INFO" not in proc.stderr.read()  # a refused call was logged at INFO, in a drawn table
    finally:
        proc.kill()
        proc.stdin.close()


def _start_initialized(root, with_reply=False):
    """`retrieval mcp --root ROOT` started and through its handshake, for raw JSON-RPC lines (and
    the reply to its `initialize`)."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}}
    proc = subprocess.Popen([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write((json.dumps(init) + "\n" + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                      + "\n").encode())
    proc.stdin.flush()
    reply = _reply(proc)
    assert reply["result"]
    return (proc, reply) if with_reply else proc


def _reply(proc, seconds=60):
    """The next JSON-RPC message the server writes, failing (not hanging) when none comes."""
    import select

    assert select.select([proc.stdout], [], [], seconds)[0], "no reply"
    return json.loads(proc.stdout.readline())


def _piped(root, messages, timeout=120):
    """`retrieval mcp --root ROOT` given these JSON-RPC messages on a stdin that then ends, as
    `printf ... | retrieval mcp` gives them: (exit status, {id: the reply}, stderr)."""
    lines = "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages).encode()
    proc = subprocess.run([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(root)],
                          input=lines, capture_output=True, timeout=timeout)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc.returncode, {reply.get("id"): reply for reply in replies}, proc.stderr


_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_every_request_read_before_stdin_ends_is_answered_before_the_server_ends(sample_repo):
    """The SDK ended at the end of stdin and cancelled the calls still running: piped in, a search
    (its index built first) and a status call got no answer at all, only the handshake did."""
    search = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "parse", "top_k": 2}}}
    status = {"jsonrpc": "2.0", "id": "3", "method": "tools/call", "params": {"name": "status", "arguments": {}}}
    code, replies, stderr = _piped(sample_repo, [_INIT, _INITIALIZED, search, status])
    assert code == 0, stderr
    assert sorted(replies, key=str) == [1, 2, "3"]
    assert _payload_of(replies[2])["results"]
    assert _payload_of(replies["3"])["root"] == str(sample_repo)


def _payload_of(reply):
    result = reply["result"]
    assert not result["isError"], result
    return json.loads(result["content"][0]["text"])


def test_a_line_that_is_no_json_rpc_message_is_answered_with_its_error_and_the_server_goes_on(sample_repo):
    """The SDK dropped such a line without a reply, and an agent waited for ever on its request."""
    status = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "status", "arguments": {}}}
    lines = [_INIT, _INITIALIZED,
             '{"id": 5, "method": "ping"}',  # no "jsonrpc"
             '{"jsonrpc": "1.0", "id": "six", "method": "ping"}',
             '{"jsonrpc": "2.0", "id": 7, "method": "ping"',  # cut short
             "[]", "", status]
    code, replies, stderr = _piped(sample_repo, lines, timeout=60)
    assert code == 0, stderr
    assert sorted(replies, key=str) == [1, 4, 5, None, "six"]
    assert replies[5]["error"]["code"] == replies["six"]["error"]["code"] == -32600  # invalid request, by its id
    assert replies[5]["error"]["message"].startswith('Invalid Request: a JSON-RPC 2.0 message has "jsonrpc": "2.0"')
    assert _payload_of(replies[4])["root"] == str(sample_repo)


def test_each_line_that_is_no_json_rpc_message_gets_its_own_error_in_order(sample_repo):
    proc = subprocess.run([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(sample_repo)],
                          input=b'{"jsonrpc": "2.0", "id": 7, "method": "ping"\nhello\n[]\n', capture_output=True,
                          timeout=60)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0
    assert [(r["id"], r["error"]["code"]) for r in replies] == [(None, -32700), (None, -32700), (None, -32600)]
    # Where the line stops being JSON (the id of a line cut short cannot be told).
    assert replies[0]["error"]["message"] == ("Parse error: the line is not JSON (Expecting ',' delimiter: "
                                              "line 1 column 45 (char 44))")


def test_ctrl_c_ends_an_idle_server_at_once_while_its_stdin_stays_open(sample_repo):
    """Started in a terminal to try it, `retrieval mcp` ignored Ctrl-C until stdin was closed too."""
    import signal

    proc = _start_initialized(sample_repo)
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) in (-signal.SIGINT, 130)
        assert b"Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()


def test_a_query_with_a_lone_surrogate_is_answered_as_one_with_a_byte_that_is_not_utf8(make_tree):
    """JSON may escape half of a UTF-16 pair (an emoji cut in two); the SDK's parser refused the
    line, dropped it, and the agent waited for ever. It is read as an invalid byte is, as U+FFFD."""
    root = make_tree({"a.py": "def zqsurrogate():\n    pass\n"})
    proc = _start_initialized(root)
    try:
        cases = [(r"zqsurrogate \ud83d", "zqsurrogate \ufffd"), (r"\udc00zqsurrogate", "\ufffdzqsurrogate"),
                 (r"zqsurrogate \ud83d\ude00", "zqsurrogate \U0001f600")]  # a whole pair is one character
        for i, (escaped, read) in enumerate(cases):
            proc.stdin.write(('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "search", '
                              '"arguments": {"query": "%s"}}}\n' % (10 + i, escaped)).encode())
            proc.stdin.flush()
            reply = _reply(proc)
            assert reply["id"] == 10 + i
            payload = json.loads(reply["result"]["content"][0]["text"])
            assert payload["query"] == read
            assert [hit["path"] for hit in payload["results"]] == ["a.py"]
    finally:
        proc.kill()
        proc.stdin.close()


def test_a_command_a_note_tells_an_agent_to_run_keeps_its_options(make_tree):
    """The tool's argument names stand for the command's options in what an agent reads, but a
    note's command to run was rewritten too: `retrieval index retriever hybrid` is no command."""
    root = make_tree({"a.py": "def zqnote():\n    pass\n"})
    _tools, (result,) = _call(root, [("search", {"query": "zqnote", "retriever": "all"})])
    notes = _payload(result)["notes"]
    assert any("`retrieval index --retriever " in note for note in notes), notes
    assert not any("`retrieval index retriever" in note for note in notes), notes

def test_the_schema_refuses_a_negative_expand_and_diagnostics_reach_the_agent_as_notes(sample_repo):
    """`expand: -3` passed the schema (and failed later with a command-line message); a rebuilt
    damaged index was said on stderr only, which an agent never sees."""
    subprocess.run([sys.executable, "-m", "retrieval.entry", "index", "--root", str(sample_repo), "--retriever",
                    "lexical"], check=True, capture_output=True, env={**os.environ, "RETRIEVAL_NO_SERVER": "1"})
    (sample_repo / ".retrieval" / "lexical" / "manifest.json").write_text("{garbage")
    tools, results = _call(sample_repo, [("search", {"query": "parse config", "top_k": 1})])
    tool = next(t for t in tools.tools if t.name == "search")
    schema = (tool.input_schema if hasattr(tool, "input_schema") else tool.inputSchema)["properties"]["expand"]
    assert {"type": "integer", "minimum": 0, "maximum": 200} in schema["anyOf"]
    notes = _payload(results[0]).get("notes", [])
    assert any("rebuilding" in note for note in notes), notes


def test_an_agent_cannot_ask_for_an_unbounded_answer(sample_repo):
    """`top_k: 100000` or `expand: 100000` answered whatever it asked (17 MB on a real repository)
    into an agent's context; the schema bounds both and says so, and a call past them is refused."""
    tools, results = _call(sample_repo, [("search", {"query": "parse config", "top_k": 101}),
                                         ("search", {"query": "parse config", "expand": 201}),
                                         ("search", {"query": "parse config", "top_k": 100, "expand": 200})])
    properties = next(t for t in tools.tools if t.name == "search")
    properties = (properties.input_schema if hasattr(properties, "input_schema")
                  else properties.inputSchema)["properties"]
    assert {"type": "integer", "minimum": 0, "maximum": 200} in properties["expand"]["anyOf"]
    assert "at most 100" in properties["top_k"]["description"]
    assert _is_error(results[0]) and _is_error(results[1])
    assert _payload(results[2])["results"]


def test_an_answer_keeps_to_max_tokens_with_its_notes(make_tree):
    """The command fits its JSON's notes to the budget, and says the rest on stderr; the tool added
    every stderr line back into the answer ("29 more hits did not fit ..."), over the budget."""
    from retrieval.mcp import Searcher
    from retrieval.output import printed_tokens

    root = make_tree({f"h{n}.py": f"def token_handler_{n}(x):\n    return x + {n}  # token\n" for n in range(30)})
    searcher = Searcher(str(root))
    for budget in (92, 106, 200, 300):  # (the first hit, about 84 tokens, fits each)
        payload = searcher.search("token", top_k=30, max_tokens=budget)
        assert payload["results"]
        assert printed_tokens(json.dumps(payload, ensure_ascii=False)) <= budget, (budget, payload.get("notes"))
    # With room, the note says what did not fit.
    roomy = searcher.search("token", top_k=30, max_tokens=600)
    assert any("did not fit in max_tokens 600" in note for note in roomy["notes"]), roomy


def test_expand_without_a_budget_gets_one_and_says_what_did_not_fit(make_tree):
    """Ten hits with 200 lines around each were 95,629 characters of one answer (a hundred,
    990,027): `expand` alone now fits the default budget, as many hits as asked at most, and the
    notes say how many more there were."""
    from retrieval.mcp import EXPAND_TOKENS, Searcher

    body = "".join(f"    step_{n} = configure_pipeline_stage({n})\n" for n in range(400))
    root = make_tree({f"stage{i}.py": f"def configure_pipeline_{i}():\n{body}" for i in range(12)})
    searcher = Searcher(str(root))
    payload = searcher.search("configure pipeline stage", expand=200)
    assert 1 <= len(payload["results"]) < 10
    assert len(json.dumps(payload["results"])) / 4 <= EXPAND_TOKENS
    assert any(note.endswith("did not fit in max_tokens 8000 (a larger budget, or fewer lines around each hit, "
                             "shows them)") for note in payload["notes"]), payload["notes"]
    # Without expand, ten hits as before, no budget and no snippets.
    plain = searcher.search("configure pipeline stage")
    assert len(plain["results"]) == 10 and "snippet" not in plain["results"][0]


def test_a_first_build_behind_a_call_reports_progress_to_a_client_that_asks(make_tree):
    """A first hybrid build ran for minutes with no word to the client, and hosts that wait on
    progress gave up at 60 s: a client passing a progress callback hears the build's counts."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    body = "".join(f"def handler_{n}(request):\n    return route_request(request, {n})\n\n" for n in range(60))
    root = make_tree({f"pkg/mod_{i}.py": body for i in range(400)})
    params = StdioServerParameters(command=sys.executable, args=["-m", "retrieval.entry", "mcp", "--root", str(root)])
    heard = []

    async def progress(done, total, message):
        heard.append((done, total, message))

    async def main(arguments):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("search", arguments, progress_callback=progress)

    result = anyio.run(main, {"query": "route request"})
    assert _payload(result)["results"]
    assert heard, "no progress was reported"
    assert all(0 < done <= total == 400 for done, total, _ in heard)
    assert heard[-1][2].startswith("lexical: indexed ")
    assert heard[-1][:2] == (400, 400)  # to the end (the last heard was the one said past 0.1 s: 64 of 70)
    # So does a call with a regular expression, matched in a process of its own (which heard nothing).
    heard.clear()
    result = anyio.run(main, {"query": "route request", "pattern": r"route_\w+\(", "retriever": "treesitter"})
    assert _payload(result)["results"] and heard and heard[-1][2].startswith("treesitter: indexed ")
    # Counted as its workers chunk the files (they were counted as read, long before), to the end.
    assert heard[-1][:2] == (400, 400)


def test_progress_values_rise_with_every_notification_as_counts_of_two_kinds_take_turns():
    """MCP requires each notification's value to rise: a hybrid build's files read and chunks
    embedded take turns, each counting from the start; each goes on from the last value sent. A
    count saying again what was sent is not sent; the chunks embedded have no total (the queue so
    far, all embedded, read as a build finished)."""
    from retrieval.mcp import RisingCounts
    from retrieval.progress import Tick

    values = RisingCounts()
    files = [Tick(f"hybrid: indexed {n}/95 files", n, 95) for n in (10, 40)]
    assert [values(tick) for tick in files] == [(10, 95), (40, 95)]  # one kind alone: the count as it is
    embedded = [Tick(f"hybrid: embedded {n} chunks, {256 - n} queued", n, 0) for n in (32, 256, 256)]
    assert [values(tick) for tick in embedded] == [(72, None), (296, None), None]
    assert values(Tick("hybrid: indexed 41/95 files", 41, 95)) == (337, 391)
    assert values(Tick("hybrid: indexed 41/95 files", 41, 95)) is None
    assert values(Tick("hybrid: embedded 0 chunks, 40 queued", 0, 0)) == (338, None)
    assert values(Tick("hybrid: embedded 1 chunks, 39 queued", 1, 0)) == (339, None)
    assert values(Tick("lexical: indexed 95/95 files", 95, 95)) == (434, 434)
    assert values(Tick("lexical: indexed 3/95 files", 3, 95)) == (437, 529)  # (counted again from the start)


def test_an_empty_path_glob_is_refused_in_an_agents_words(make_tree):
    """`"path": ""` was refused with "(an unset variable?)", a shell's wording an agent cannot use."""
    from retrieval.mcp import Searcher, ToolFailure

    root = make_tree({"a.py": "x = 1\n"})
    for empty in ("", ["src/**", " "]):
        with pytest.raises(ToolFailure, match=r"^path: an empty glob: give one \(src/\*\*, \*\.py\), or leave path out$"):
            Searcher(str(root)).search("x", path=empty)


def test_status_lists_the_files_left_out_for_an_agent_that_asks(make_tree):
    from retrieval.mcp import Searcher

    root = make_tree({"a.py": "x = 1\n", "secrets.yaml": "k: v\n", "blob.py": b"\x00"})
    searcher = Searcher(str(root))
    searcher.search("x")  # builds the index
    assert searcher.status(skipped=True)["skipped"] == [{"path": "blob.py", "reason": "binary"},
                                                        {"path": "secrets.yaml", "reason": "secret-name"}]
    assert "retrievers" in searcher.status()


def test_status_says_how_the_server_found_its_root(make_tree):
    """Started without --root in a repository, status said `given`: the server passes its root on."""
    from retrieval.mcp import Searcher

    root = make_tree({"a.py": "x = 1\n"})
    assert Searcher(str(root), root_reason="repository").status()["root_reason"] == "repository"
    assert Searcher(str(root)).status()["root_reason"] == "given"


def test_the_skills_options_are_the_tools_arguments_too(make_tree):
    """The skill teaches `--min-confidence` (nothing convincing matched) and `--snippet-lines`;
    the tool took neither."""
    from retrieval.mcp import Searcher

    root = make_tree({"a.py": "def parse_config(path):\n    return load(path)\n", "b.py": "config = 1\n"})
    searcher = Searcher(str(root))
    assert [h["path"] for h in searcher.search("parse_config", min_confidence="high")["results"]] == ["a.py"]
    assert searcher.search("zqnothing weather", min_confidence="high")["results"] == []
    hit = searcher.search("parse_config", snippet_lines=1)["results"][0]
    assert hit["snippet"] == "def parse_config(path):\n"


def test_a_root_too_broad_to_index_unasked_is_every_calls_answer_not_a_closed_connection(tmp_path):
    """Started in the home directory (a per-user config), the server exited at once: the host said
    "Connection closed" and the agent never learned why."""
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "todo.md").write_text("# zqtodo\n")
    # (this checkout's package, started outside it)
    package = os.path.dirname(os.path.dirname(retrieval.__file__))
    env = {**os.environ, "HOME": str(home), "RETRIEVAL_NO_SERVER": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))}
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main(args):
        params = StdioServerParameters(command=sys.executable, args=["-m", "retrieval.entry", "mcp", *args], env=env,
                                       cwd=str(home))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("search", {"query": "zqtodo"})

    # `--root .`, as configs had it before, is where the host starts the server: no choice either.
    assert _is_error(anyio.run(main, ["--root", "."]))
    result = anyio.run(main, [])
    assert _is_error(result)
    assert "is your home directory, not a project" in result.content[0].text
    assert '"args": ["mcp", "--root", "/path/to/project"]' in result.content[0].text  # what an agent's user can do
    assert not (home / ".retrieval").exists()


def test_a_call_that_cannot_start_behind_a_slow_one_is_answered_by_a_process_of_its_own(make_tree, monkeypatch):
    """Every call waited behind the slowest: a lexical search sent while another call built the
    hybrid index came back after 146 s, and `status` with it."""
    from retrieval.mcp import Searcher

    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    searcher = Searcher(str(root))
    monkeypatch.setattr(Searcher, "BUSY_WAIT", 0.2)
    monkeypatch.setattr(Searcher, "_run_here", lambda *args: pytest.fail("run here while another call runs"))
    searcher._lock.acquire()  # a call still running, as a first embedding build is
    try:
        payload = searcher.search("parse config")
        status = searcher.status()
    finally:
        searcher._lock.release()
    assert [hit["path"] for hit in payload["results"]] == ["a.py"]
    assert status["root"] == str(root)


def test_a_query_over_the_size_limit_is_refused_without_naming_stdin_the_agent_never_used(make_tree):
    from retrieval.mcp import Searcher, ToolFailure
    from retrieval.streams import MAX_QUERY_BYTES

    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    with pytest.raises(ToolFailure) as refused:
        Searcher(str(root)).search("x" * (MAX_QUERY_BYTES + 1))
    assert str(refused.value).startswith(f"the query is over {MAX_QUERY_BYTES:,} bytes: give the part that says")


def test_a_request_before_initialize_is_refused_naming_the_handshake(sample_repo):
    """The SDK answered `-32602 Invalid request parameters` and nothing more."""
    early = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}  # allowed before, as the protocol says
    later = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
    code, replies, stderr = _piped(sample_repo, [early, ping, _INIT, _INITIALIZED, later], timeout=60)
    assert code == 0, stderr
    assert replies[2]["error"] == {"code": -32002, "message": "Server not initialized: 'tools/list' came before "
                                   "`initialize`; send `initialize`, then `notifications/initialized`, then requests"}
    assert replies[3]["result"] == {} and replies[1]["result"]
    assert [tool["name"] for tool in replies[4]["result"]["tools"]] == ["search", "status"]


@pytest.mark.parametrize("request_id", [2.0, True, None, {"a": 1}])
def test_a_request_whose_id_is_no_string_or_integer_is_refused_not_left_unanswered(sample_repo, request_id):
    """The SDK reads such a request as a notification, which nothing answers."""
    ping = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    proc = subprocess.run([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(sample_repo)],
                          input=(json.dumps(ping) + "\n").encode(), capture_output=True, timeout=60)
    (reply,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert reply["error"]["code"] == -32600 and proc.returncode == 0
    assert reply["id"] == (request_id if request_id == 2.0 and request_id is not True else None)


def test_a_call_run_apart_runs_this_package_not_the_searched_projects_own(make_tree, monkeypatch):
    """`python -m retrieval.entry` in the root imported the repository's own `retrieval` (its code
    ran, with the server's rights) when the root holds one, as retrieval's own checkout does."""
    from retrieval.mcp import Searcher

    root = make_tree({"retrieval/__init__.py": "", "a.py": "def parse_config():\n    return 1\n",
                      "retrieval/entry.py": "print('{\"shadowed\": true}')\ndef main():\n    pass\n"})
    monkeypatch.setattr(Searcher, "BUSY_WAIT", 0.1)
    searcher = Searcher(str(root))
    searcher._lock.acquire()
    try:
        payload = searcher.search("parse config")
    finally:
        searcher._lock.release()
    assert "shadowed" not in payload and [hit["path"] for hit in payload["results"]] == ["a.py"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux ends a child with its parent (prctl)")
def test_a_call_run_apart_ends_when_the_server_is_killed(make_tree, tmp_path):
    """A host's SIGTERM (SIG_DFL: no cleanup runs) ended the server, and its call run apart went on
    alone, an embedding build for minutes."""
    import signal
    import time

    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    pid_file = tmp_path / "child.pid"
    # A server whose child, once it has taken its lifeline, writes its pid and waits as a long build would.
    wait = f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); import time; time.sleep(120)"
    server = ("import retrieval.mcp as m\n"
              f"m._APART = m._APART.replace('from retrieval.entry import main; main()', {wait!r})\n"
              f"m._run_apart(['status', '--json'], {str(root)!r}, b'', {{}})\n")
    proc = subprocess.Popen([sys.executable, "-c", server])
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
            with open(f"/proc/{child}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":  # ended, not yet reaped by init
                    break
            time.sleep(0.05)
        else:
            assert not os.path.exists(f"/proc/{child}")
    finally:
        proc.kill()


def test_a_cancelled_call_run_apart_kills_its_child(make_tree, tmp_path, monkeypatch):
    """A client's cancel of a call with a pattern (run in a child) left the child backtracking for up
    to 20 s: the worker thread waited for it. It now looks every CANCEL_POLL seconds and kills it."""
    import time

    import anyio

    import retrieval.mcp as m

    root = make_tree({"a.py": "def parse_config():\n    return 1\n"})
    pid_file = tmp_path / "child.pid"
    wait = f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); import time; time.sleep(60)"
    monkeypatch.setattr(m, "_APART", m._APART.replace("from retrieval.entry import main; main()", wait))

    async def call_cancelled_once_started():
        with anyio.CancelScope() as scope:
            async def cancel_when_started():
                while not (pid_file.exists() and pid_file.read_text()):
                    await anyio.sleep(0.05)
                scope.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_when_started)
                await anyio.to_thread.run_sync(lambda: m._run_apart(["status", "--json"], str(root), b"", {}))

    began = time.monotonic()
    anyio.run(call_cancelled_once_started)
    assert time.monotonic() - began < 30  # not the child's minute
    assert not os.path.exists(f"/proc/{int(pid_file.read_text())}")  # killed and reaped


def test_what_the_server_prints_outside_the_protocol_never_reaches_the_host(sample_repo, tmp_path):
    """sys.stdout was the wire itself: a stray print (a library's, a thread's) would have broken it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(  # prints once the server has taken the wire from fd 1
        "import os, sys, threading, time\n"
        "if 'mcp' in sys.argv:\n"
        "    def chatter():\n"
        "        wire = os.fstat(1)\n"
        "        while os.path.samestat(os.fstat(1), wire):\n"
        "            time.sleep(0.01)\n"
        "        for _ in range(30):\n"
        "            print('stray output', flush=True)\n"
        "            time.sleep(0.05)\n"
        "    threading.Thread(target=chatter, daemon=True).start()\n")
    status = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    lines = "".join(json.dumps(m) + "\n" for m in (_INIT, _INITIALIZED, status)).encode()
    proc = subprocess.run([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(sample_repo)], input=lines,
                          capture_output=True, timeout=60, env=env)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]  # every line is a message
    assert [r["id"] for r in replies] == [1, 2]
    assert b"stray output" in proc.stderr


def test_an_agents_scope_is_bounded_to_the_lines_around_its_hit(monkeypatch):
    """`expand: "scope"` returned a whole file for a hit in a namespace (2 MB on abseil)."""
    from retrieval.mcp import MAX_EXPAND, Searcher

    asked = []
    monkeypatch.setattr(Searcher, "_run", lambda self, argv, stdin=None, on_tick=None, apart=False, budget=None: asked.append(argv) or {})
    Searcher("/tmp").search("cord append", expand="scope")
    Searcher("/tmp").search("cord append", expand=3)
    scoped, numbered = asked
    assert scoped[scoped.index("--snippet-lines") + 1] == str(MAX_EXPAND)
    assert "--snippet-lines" not in numbered


@pytest.mark.extra("local", "turbovec")
def test_libraries_log_records_never_reach_an_agents_notes(make_tree):
    """The SDK logs at INFO through the root logger: loading the embedding model for a build
    (more texts than the numpy encoder takes) put rich-formatted log lines among the notes."""
    root = make_tree({f"pkg/mod{i}.py": f"def refresh_token_{i}(token):\n    return renew(token, {i})\n"
                      for i in range(40)})
    _, (result,) = _call(root, [("search", {"query": "where are tokens refreshed", "retriever": "hybrid"})],
                         env={**os.environ, "RETRIEVAL_EMBED_CACHE": "off", "RETRIEVAL_NO_SERVER": "1"})
    payload = _payload(result)
    assert payload["results"]
    assert not any("INFO" in note or "SentenceTransformer" in note for note in payload.get("notes", [])), payload


@pytest.mark.parametrize("stream", ["stdin", "stdout"])
def test_mcp_started_with_a_closed_stream_exits_with_one_line(sample_repo, stream):
    """Started `>&-`, the SDK failed with a traceback (stream.buffer of None)."""
    fd = {"stdin": 0, "stdout": 1}[stream]
    proc = subprocess.run(["sh", "-c", f'exec "$@" {fd}>&-', "sh", sys.executable, "-m", "retrieval.entry", "mcp",
                           "--root", str(sample_repo)], capture_output=stream == "stdin",
                          stdout=subprocess.DEVNULL if stream == "stdout" else None,
                          stderr=subprocess.PIPE if stream == "stdout" else None, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [f"error: `retrieval mcp` talks over stdin and stdout: {stream} closed"]


def test_a_host_that_closes_the_servers_stdout_ends_it_quietly(sample_repo):
    """Its answer written to a closed pipe, the server ended with an exception group's traceback."""
    import time

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}}
    proc = subprocess.Popen([sys.executable, "-m", "retrieval.entry", "mcp", "--root", str(sample_repo)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["result"]
        proc.stdout.close()  # the host went away without closing our stdin
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
                          + json.dumps(call) + "\n").encode())
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:  # what a host sends next: the server, its writer gone, ends on it
                proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}) + "\n").encode())
                proc.stdin.flush()
            except BrokenPipeError:
                break
            time.sleep(0.1)
        assert proc.wait(timeout=60) == 0  # as `retrieval query | head -1` ends
        assert proc.stderr.read() == b""
    finally:
        proc.kill()
        try:  # (a ping the loop wrote but could not flush is flushed again by close: the pipe is gone)
            proc.stdin.close()
        except BrokenPipeError:
            pass


def test_the_search_description_an_agent_reads_is_one_clean_line_naming_every_field(tmp_path):
    """The docstring was the description, published with its source indentation ("start_line,\\n
    end_line": Python before 3.13 keeps it), and named snippet but not the lines it covers."""
    import anyio

    from retrieval.mcp import build

    tools = {t.name: t.description for t in anyio.run(build(str(tmp_path)).list_tools)}
    assert "\n" not in tools["search"] and "  " not in tools["search"]
    assert all(field in tools["search"] for field in ("snippet_start", "snippet_end", "truncated", "notes"))
    # and those a hit of `retriever: all` carries besides (it named none of them)
    assert all(field in tools["search"] for field in ("provenance", "agreement", "ranks"))
    assert "with pattern also match_lines" in tools["search"]


def test_an_argument_the_schema_refuses_is_said_in_one_line_naming_it(sample_repo):
    """The SDK answered with pydantic's report: several lines, error types and a documentation link."""
    _tools, results = _call(sample_repo, [("search", {"query": "parse config", "top_k": 0}),
                                          ("search", {"query": "parse config", "expand": "everything"}),
                                          ("search", {"top_k": 3})])
    texts = [r.content[0].text for r in results]
    assert all(_is_error(r) for r in results), texts
    assert not any("\n" in text or "pydantic" in text for text in texts), texts
    assert "top_k: input should be greater than or equal to 1" in texts[0]
    assert "expand:" in texts[1] and "'scope'" in texts[1]
    assert "query: field required" in texts[2]


def test_an_argument_the_tool_does_not_take_is_refused_not_ignored(sample_repo):
    """`"language": "python"` (the tool's is `lang`) was dropped: every language answered, as if filtered."""
    tools, results = _call(sample_repo, [("search", {"query": "parse config", "language": "python"}),
                                         ("status", {"root": "."})])
    searched, status = results
    assert _is_error(searched) and _is_error(status)
    assert "unknown argument 'language' (did you mean 'lang'?)" in searched.content[0].text
    assert "\n" not in searched.content[0].text
    assert "unknown argument 'root'" in status.content[0].text
    # The schemas say so, for hosts that check the arguments before calling.
    assert all((t.input_schema if hasattr(t, "input_schema") else t.inputSchema)["additionalProperties"] is False
               for t in tools.tools)


def test_every_optional_argument_may_be_null_as_if_left_out(sample_repo):
    """Agents write null for an argument they leave out: `"top_k": null` was taken, `"lang": null`
    refused ("input should be a valid string")."""
    nulls = {name: None for name in ("top_k", "retriever", "path", "lang", "kind", "max_tokens", "expand", "files")}
    _tools, (given, left_out) = _call(sample_repo, [("search", {"query": "parse config", **nulls}),
                                                    ("search", {"query": "parse config"})])
    assert _payload(given) == _payload(left_out)


def test_the_retriever_argument_lists_its_choices_and_refuses_others_in_one_line(sample_repo):
    """It was a free string: an agent guessed names (`bm25`) and learned them from an error."""
    tools, results = _call(sample_repo, [("search", {"query": "parse config", "retriever": "bm25"}),
                                         ("search", {"query": "parse config", "retriever": "lexical"})])
    tool = next(t for t in tools.tools if t.name == "search")
    schema = (tool.input_schema if hasattr(tool, "input_schema") else tool.inputSchema)["properties"]["retriever"]
    choices = {value for option in schema["anyOf"] for value in option.get("enum", ())}
    assert {"all", "lexical", "treesitter", "hybrid"} <= choices
    refused, answered = results
    assert _is_error(refused) and "\n" not in refused.content[0].text
    assert "retriever:" in refused.content[0].text and "'lexical'" in refused.content[0].text
    assert refused.content[0].text.endswith('(got "bm25")')  # as the agent wrote it, in JSON
    assert _payload(answered)["results"]


def test_a_value_of_another_type_than_the_schema_says_is_refused_not_converted(sample_repo):
    """`"top_k": true` answered one hit and `"files": "yes"` one hit a file: the schema says an
    integer and a boolean, and pydantic's lax mode took what merely converts to one."""
    calls = [{"top_k": True}, {"top_k": "5"}, {"files": "yes"}, {"expand": "5"}, {"max_tokens": 2.5}, {"query": None}]
    _tools, results = _call(sample_repo, [("search", {"query": "parse config", **args}) for args in calls]
                            + [("search", {"query": "parse config", "top_k": 2, "files": True, "expand": 1})])
    refused = [result.content[0].text for result in results[:-1]]
    assert all(_is_error(result) for result in results[:-1]), refused
    assert [text.rsplit("(got ", 1)[-1] for text in refused] == ['true)', '"5")', '"yes")', '"5")', '2.5)', 'null)']
    assert len(_payload(results[-1])["results"]) == 2


def test_a_pasted_report_is_not_echoed_whole_into_the_agents_context(sample_repo):
    """The answer echoed the query: a 30 KB log the agent pasted came back in full."""
    from retrieval.mcp import MAX_ECHO_TOKENS
    from retrieval.output import printed_tokens

    report = "Traceback: config parse failed in load_settings\n" + "DEBUG retry tick\n" * 1800
    _tools, (long, short) = _call(sample_repo, [("search", {"query": report}), ("search", {"query": "parse config"})])
    echoed = _payload(long)
    assert echoed["query_truncated"] is True and echoed["results"]
    assert echoed["query"].endswith("\u2026") and report.startswith(echoed["query"][:-1])
    assert printed_tokens(json.dumps(echoed["query"])) <= MAX_ECHO_TOKENS
    assert _payload(short)["query"] == "parse config" and "query_truncated" not in _payload(short)


def test_a_pattern_too_slow_for_a_line_is_one_error_and_the_server_answers_the_next_call(make_tree):
    """Matched in the server's worker thread, `(a+)+$` on a long line held the interpreter's lock for
    good: that call and every later one went unanswered (a timer interrupts only a main thread)."""
    root = make_tree({"slow.py": f"zqslow = '{'a' * 40}!'\n", "fine.py": "def zqslow_fine():\n    pass\n"})
    _tools, results = _call(root, [("search", {"query": "zqslow", "pattern": "(a+)+$"}),
                                   ("search", {"query": "zqslow", "pattern": "def "}),
                                   ("search", {"query": "zqslow", "ignore_case": True})], timeout=120)
    assert _is_error(results[0])
    assert "pattern '(a+)+$' took over 5 s to match the lines of slow.py" in results[0].content[0].text
    assert [r["path"] for r in _payload(results[1])["results"]] == ["fine.py"]
    assert _is_error(results[2])
    assert results[2].content[0].text.endswith("ignore_case applies to pattern, and none is given (the query's "
                                               "words match in any case already)")


def test_an_agents_pattern_is_echoed_as_written_in_errors_and_notes(make_tree):
    """A line break in a pattern garbled its error (only the part after it reached the agent), and a
    pattern holding ` -e ` came back in a note as ` pattern `."""
    root = make_tree({"a.py": "def zqecho():\n    pass\n"})
    _tools, results = _call(root, [("search", {"query": "zqecho", "pattern": "a$\nb"}),
                                   ("search", {"query": "zqecho", "pattern": "zq -e zq"}),
                                   ("search", {"query": "zqecho", "pattern": "it's ("})], timeout=90)
    assert _is_error(results[0])
    assert results[0].content[0].text.endswith("pattern $'a$\\nb' holds a line break (\\n): a pattern is matched "
                                               "within a line, as grep matches")
    assert any("matches pattern 'zq -e zq'" in note for note in _payload(results[1])["notes"])
    assert _is_error(results[2]) and "pattern \"it's (\" is not a regular expression" in results[2].content[0].text

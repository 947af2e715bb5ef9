"""The Anthropic contextualizer against the real SDK, its HTTP answered by httpx2.MockTransport."""
from __future__ import annotations

import json

import pytest

from retrieval import service
from retrieval.contextual import command
from retrieval.contextual.command import ContextOptions
from retrieval.contextual.generate import GenerationStopped

pytestmark = pytest.mark.extra("remote")

FILES = {
    "src/billing/invoice.py": '"""Invoices."""\n\n\ndef total(lines):\n    return sum(lines)\n',
    "src/billing/tax.py": "def vat(amount):\n    return amount * 0.2\n",
    "README.md": "# Shop\n\nA small shop.\n",
}


def message(text: str) -> dict:
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 30, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0},
    }


class Endpoint:
    """Records every request; answers from a script of (status, body) then with contexts."""

    def __init__(self, script=()):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.script = list(script)

    def __call__(self, request):
        import httpx2

        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.script:
            status, payload = self.script.pop(0)
            return httpx2.Response(status, json=payload, headers={"retry-after-ms": "1"})
        path = body["messages"][0]["content"][0]["text"].split('"')[1]
        return httpx2.Response(200, json=message(f"Quokkaword context for {path}.\nTerms: billing"))


def contextualizer(endpoint, **kwargs):
    import httpx2

    from retrieval.contextual.anthropic import AnthropicContextualizer

    return AnthropicContextualizer(http_client=httpx2.Client(transport=httpx2.MockTransport(endpoint)), **kwargs)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("RETRIEVAL_CONTEXT_MODEL", raising=False)


def index(root, model, **context):
    context.setdefault("yes", True)
    return command.refresh(str(root), context=ContextOptions(**context), requester=model)


def test_each_chunk_is_one_request_with_the_whole_file_as_a_cached_prefix(make_tree):
    root = make_tree(FILES)
    endpoint = Endpoint()
    index(root, contextualizer(endpoint))
    assert len(endpoint.requests) == 3
    body = next(b for b in endpoint.requests if "tax.py" in b["messages"][0]["content"][0]["text"])
    assert body["model"] == "claude-haiku-5-5"
    assert body["max_tokens"] == 200
    assert "code search" in body["system"]
    file_part, chunk_part = body["messages"][0]["content"]
    assert file_part["cache_control"] == {"type": "ephemeral"}
    assert file_part["text"] == '<file path="src/billing/tax.py">\n' + FILES["src/billing/tax.py"] + "\n</file>"
    assert "cache_control" not in chunk_part
    assert "lines 1-2 of src/billing/tax.py" in chunk_part["text"] and "Terms:" in chunk_part["text"]
    assert endpoint.headers[0]["authorization"] == "Bearer sk-test-key"  # SDK 2.x sends the key as a bearer token
    hits = service.search(str(root), "quokkaword vat", retriever="lexical+ctx").hits
    assert hits[0].source_path == "src/billing/tax.py"
    assert hits[0].context.startswith("Quokkaword context for src/billing/tax.py. Terms: billing")


def test_the_model_is_configurable(make_tree, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_CONTEXT_MODEL", "claude-sonnet-5-5")
    root = make_tree({"a.py": "def f():\n    return 1\n"})
    endpoint = Endpoint()
    index(root, contextualizer(endpoint))
    assert [b["model"] for b in endpoint.requests] == ["claude-sonnet-5-5"]


@pytest.mark.parametrize("status,kind", [(429, "rate_limit_error"), (529, "overloaded_error")])
def test_rate_limits_and_overload_are_retried_by_the_sdk(make_tree, status, kind):
    root = make_tree({"a.py": "def f():\n    return 1\n"})
    error = {"type": "error", "error": {"type": kind, "message": "slow down"}}
    endpoint = Endpoint([(status, error), (status, error)])
    index(root, contextualizer(endpoint))
    assert len(endpoint.requests) == 3
    assert "Quokkaword" in service.search(str(root), "quokkaword", retriever="lexical+ctx").hits[0].context


def test_retries_exhausted_stop_the_run_with_one_line_and_keep_progress(make_tree):
    root = make_tree(FILES)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    endpoint = Endpoint([(200, message("first context"))] + [(529, error)] * 3)
    with pytest.raises(GenerationStopped) as caught:
        index(root, contextualizer(endpoint, max_retries=2), workers=1)
    assert str(caught.value) == ("the API is still overloaded (529) after retrying; 1 of 3 contexts generated "
                                 "and kept, run again to resume")
    resumed = Endpoint()
    index(root, contextualizer(resumed))
    assert len(resumed.requests) == 2


def test_an_authentication_failure_is_one_clear_line_and_progress_is_kept(make_tree):
    root = make_tree(FILES)
    denied = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    endpoint = Endpoint([(200, message("kept context")), (401, denied)])
    with pytest.raises(GenerationStopped, match=r"^authentication failed \(401\): check ANTHROPIC_API_KEY; "
                                                r"1 of 3 contexts generated and kept, run again to resume$"):
        index(root, contextualizer(endpoint), workers=1)
    assert len(endpoint.requests) == 2  # 401 is not retried, and nothing after it is sent
    second = Endpoint()
    index(root, contextualizer(second))
    assert len(second.requests) == 2
    third = Endpoint()
    index(root, contextualizer(third))
    assert third.requests == []  # everything cached: a second full run sends nothing


def test_the_cost_guard_stops_the_sdk_before_any_request(make_tree):
    from retrieval.contextual.generate import CostRefused

    root = make_tree(FILES)
    endpoint = Endpoint()
    with pytest.raises(CostRefused):
        index(root, contextualizer(endpoint), yes=False, max_dollars=0.0)
    assert endpoint.requests == []


def test_deny_listed_and_oversized_files_never_reach_the_api(make_tree):
    from retrieval.contextual.cache import ContextCache
    from retrieval.contextual.generate import plan, run
    from retrieval.records import SourceFile
    from retrieval.retrievers.contextual import ContextualRetriever

    files = {"app.py": "def f():\n    return 1\n", ".env": "API_TOKEN=hunter2\n", "id_rsa": "PRIVATE\n",
             "prod.tfstate": "{}\n", "big.py": "y = 2\n" * 4000}
    root = make_tree(files)
    listed = [SourceFile(p, str(root / p), (root / p).stat().st_size, 0, "python", "code") for p in files]
    work = plan(str(root), ContextualRetriever(), service.IndexOptions(), ContextCache(str(root / "c")),
                max_file_bytes=5_000, files=listed)
    endpoint = Endpoint()
    run(work, contextualizer(endpoint), ContextCache(str(root / "c")))
    sent = " ".join(b["messages"][0]["content"][0]["text"] for b in endpoint.requests)
    assert len(endpoint.requests) == 1 and "app.py" in sent
    assert "hunter2" not in sent and "PRIVATE" not in sent and "big.py" not in sent


TOO_LONG = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}


def test_requests_all_refused_stop_the_run_with_the_api_s_own_message_not_a_python_dict(make_tree):
    root = make_tree(FILES)
    with pytest.raises(GenerationStopped, match=r"^the API refused a request \(400\): prompt is too long; 0 of 3"):
        index(root, contextualizer(Endpoint([(400, TOO_LONG)] * 3)), workers=1)


@pytest.mark.parametrize("status", [400, 413])
def test_a_file_the_api_refuses_is_counted_and_the_others_get_their_contexts(make_tree, status):
    """One file the API would not take (its prompt too long, content it refuses) stopped every run
    a few files in, so the index was never built."""
    root = make_tree(FILES)
    said: list[str] = []
    endpoint = Endpoint([(status, TOO_LONG)])
    report = command.refresh(str(root), context=ContextOptions(yes=True, workers=1), requester=contextualizer(endpoint),
                             progress=said.append)
    assert report.status == "indexed" and len(endpoint.requests) == 3
    assert [m for m in said if m.startswith("lexical+ctx: the API refused 1 chunk of 1 file")], said
    contexts = [h.context for h in service.search(str(root), "Quokkaword", retriever="lexical+ctx", top_k=10).hits]
    assert len([c for c in contexts if c.startswith("Quokkaword")]) == 2
    again = Endpoint()
    index(root, contextualizer(again), workers=1)
    assert len(again.requests) == 1  # the refused one is asked again; nothing else is


@pytest.mark.parametrize("payload", [{"foo": "bar"}, "<html>gateway</html>"])
def test_an_answer_that_is_not_a_message_stops_the_run_with_one_line(make_tree, payload):
    root = make_tree(FILES)
    with pytest.raises(GenerationStopped, match=r"^the API's answer is not a Messages API reply \(.+\); 0 of 3"):
        index(root, contextualizer(Endpoint([(200, payload)])), workers=1)


def test_an_empty_or_overlong_answer_is_not_stored_as_it_came(make_tree):
    from retrieval.contextual.anthropic import MAX_CONTEXT_CHARS

    root = make_tree(FILES)
    refusal = dict(message(""), content=[], stop_reason="refusal")
    endpoint = Endpoint([(200, refusal), (200, message("word " * 5000))])
    index(root, contextualizer(endpoint), workers=1)
    contexts = {h.source_path: h.context for h in
                service.search(str(root), "word", retriever="lexical+ctx", top_k=10).hits}
    # The model's part comes first, the offline contextualizer's after a newline.
    assert all(len(c.split("\n")[0]) <= MAX_CONTEXT_CHARS for c in contexts.values())
    assert any(c.startswith("word word") for c in contexts.values())
    again = Endpoint()
    index(root, contextualizer(again), workers=1)
    assert len(again.requests) == 1  # the refusal is asked again; nothing else is


def test_an_unusable_base_url_is_one_line_naming_it_not_a_traceback(make_tree, monkeypatch):
    from click.testing import CliRunner

    from retrieval.cli import main
    from retrieval.contextual.anthropic import AnthropicContextualizer

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:port")
    with pytest.raises(RuntimeError, match=r"ANTHROPIC_BASE_URL='http://localhost:port': Invalid port"):
        AnthropicContextualizer()
    # No scheme: said at once (the SDK retried it for 23 s, as it retries an endpoint that is down).
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "api.example.com")
    with pytest.raises(RuntimeError, match=r"ANTHROPIC_BASE_URL='api.example.com': it is no http:// or https:// URL"):
        AnthropicContextualizer()
    # Its credentials are not printed with it.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "ftp://user:zqPASSWORD@127.0.0.1")
    with pytest.raises(RuntimeError, match=r"ANTHROPIC_BASE_URL='ftp://\*\*\*@127.0.0.1': it is no http"):
        AnthropicContextualizer()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:port")
    root = make_tree(FILES)
    result = CliRunner().invoke(main, ["index", "--root", str(root), "--retriever", "lexical+ctx",
                                       "--contextualizer", "anthropic", "--yes"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "cannot set up the Anthropic client" in result.output


def test_a_refusal_is_not_kept_as_a_context_even_with_text_and_is_asked_again(make_tree):
    """A reply with stop_reason "refusal" carries the model's apology as text: it was indexed and
    cached as that chunk's context, so it was never asked again."""
    root = make_tree(FILES)
    refusal = dict(message("I can't help with that request."), stop_reason="refusal")
    index(root, contextualizer(Endpoint([(200, refusal)])), workers=1)
    contexts = [h.context for h in service.search(str(root), "help request", retriever="lexical+ctx", top_k=10).hits]
    assert not [c for c in contexts if "help with that" in c]
    again = Endpoint()
    index(root, contextualizer(again), workers=1)
    assert len(again.requests) == 1


def test_only_text_blocks_make_the_context(make_tree):
    """Blocks of another type (thinking, tool use, a type this SDK does not know) are not context."""
    root = make_tree({"a.py": "def f():\n    return 1\n"})
    blocks = [{"type": "thinking", "thinking": "hmm", "signature": "s"},
              {"type": "future_block", "text": "Leakedword from another kind of block."},
              {"type": "text", "text": "Quokkaword context."}]
    index(root, contextualizer(Endpoint([(200, dict(message(""), content=blocks))])))
    hit = service.search(str(root), "quokkaword", retriever="lexical+ctx").hits[0]
    assert hit.context.startswith("Quokkaword context.") and "Leakedword" not in hit.context


ROUTES = "".join(f"def handler_{n}(request, response):\n    return render(request, 'page_{n}.html', status={n})\n\n\n"
                 for n in range(12))


def test_an_answer_that_repeats_the_chunk_back_is_not_kept_as_its_context(make_tree):
    """An endpoint echoing the prompt (or a model quoting the whole chunk) had its reply indexed as
    the context: the chunk's words counted twice and every hit showed its code again inline."""
    root = make_tree({"routes.py": ROUTES})

    def echo(request):
        import httpx2

        body = json.loads(request.content)
        return httpx2.Response(200, json=message("Sure. " + body["messages"][0]["content"][1]["text"]))

    said: list[str] = []
    command.refresh(str(root), context=ContextOptions(yes=True), requester=contextualizer(echo), progress=said.append)
    hit = service.search(str(root), "handler_3", retriever="lexical+ctx").hits[0]
    assert "Sure." not in hit.context and "return render" not in hit.context
    assert [m for m in said if "empty answers were not kept" in m], said


def test_a_run_whose_answers_are_all_unusable_stops_before_paying_for_every_chunk(make_tree):
    """A model or endpoint answering without text (a refusal, blocks of another kind) had every
    chunk of the tree paid for and nothing kept, and the run ended "0 contexts generated", exit 0."""
    root = make_tree({f"pkg/mod_{n}.py": f"def f_{n}():\n    return {n}\n" for n in range(30)})
    thinking_only = dict(message(""), content=[{"type": "thinking", "thinking": "t", "signature": "s"}])
    endpoint = Endpoint([(200, thinking_only)] * 30)
    with pytest.raises(GenerationStopped, match=r"^the model's answers about the first 3 files held no context "
                                                r".*; 0 of 30 contexts"):
        index(root, contextualizer(endpoint), workers=1)
    assert len(endpoint.requests) == 3


def test_a_rate_limit_asking_to_wait_for_an_hour_stops_the_run_at_once_saying_so(make_tree, monkeypatch):
    """anthropic 2.x honours any retry-after (up to 49 days): a 429 asking for an hour held the run,
    and its writer lock, for an hour per retry, saying only that no answer came."""
    import time
    import types

    import anthropic._base_client
    import httpx2

    slept: list[float] = []  # the SDK's waits between retries, recorded instead of waited
    clock = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("_")})
    clock.sleep = slept.append
    monkeypatch.setattr(anthropic._base_client, "time", clock)
    root = make_tree(FILES)
    calls = []

    def limited(request):
        calls.append(request)
        return httpx2.Response(429, json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
                               headers={"retry-after": "3600"})

    with pytest.raises(GenerationStopped, match=r"^rate limited \(429\): the API asks to wait 3600 s before the "
                                                r"next request; 0 of 3"):
        index(root, contextualizer(limited), workers=1)
    assert slept == [] and len(calls) == 1


def test_a_short_retry_after_is_still_waited_for_and_retried(make_tree):
    import httpx2

    root = make_tree({"a.py": "def f():\n    return 1\n"})
    answers = iter([httpx2.Response(429, json={"type": "error", "error": {"type": "rate_limit_error", "message": "x"}},
                                    headers={"retry-after": "0.2"})])

    def once_limited(request):
        return next(answers, None) or httpx2.Response(200, json=message("Quokkaword context."))

    index(root, contextualizer(once_limited))
    assert service.search(str(root), "quokkaword", retriever="lexical+ctx").hits[0].context.startswith("Quokkaword")


def test_a_server_error_after_retrying_is_not_called_a_refusal(make_tree):
    root = make_tree(FILES)
    error = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    with pytest.raises(GenerationStopped,
                       match=r"^the API failed \(500\) after retrying: Internal server error; 0 of 3"):
        index(root, contextualizer(Endpoint([(500, error)] * 3), max_retries=2), workers=1)


def test_a_connection_lost_mid_run_says_why_and_the_next_run_resumes(make_tree):
    """The line said only `cannot reach the API (APIConnectionError)`: not whether the host was
    unknown, refused the connection or reset it."""
    import httpx2

    root = make_tree(FILES)
    answered = []

    def resets(request):
        if answered:
            raise httpx2.ReadError("[Errno 104] Connection reset by peer", request=request)
        answered.append(request)
        return httpx2.Response(200, json=message("Quokkaword context."))

    with pytest.raises(GenerationStopped, match=r"^cannot reach the API \(\[Errno 104\] Connection reset by peer\); "
                                                r"1 of 3 contexts generated and kept"):
        index(root, contextualizer(resets, max_retries=1), workers=1)
    resumed = Endpoint()
    index(root, contextualizer(resumed))
    assert len(resumed.requests) == 2


@pytest.mark.parametrize("payload,said", [
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
     "an object of type 'error': Overloaded"),
    (dict(message("x"), content=None), "a message without content blocks"),
])
def test_an_answer_that_is_not_a_message_is_named_for_what_it_is(make_tree, payload, said):
    """A proxy's 200 carrying an error object was reported as "the API answered with Message, not
    a message"."""
    root = make_tree(FILES)
    with pytest.raises(GenerationStopped) as caught:
        index(root, contextualizer(Endpoint([(200, payload)])), workers=1)
    assert str(caught.value).startswith(f"the API's answer is not a Messages API reply ({said}); 0 of 3")


def test_credit_running_out_mid_run_stops_it_instead_of_calling_every_later_file_refused(make_tree):
    """The API answers 400 once the credit balance is spent: after the first contexts, every later
    file was counted as refused, and the run ended with a note and exit 0."""
    root = make_tree({f"pkg/mod_{n}.py": f"def f_{n}():\n    return {n}\n" for n in range(8)})
    broke = {"type": "error", "error": {"type": "invalid_request_error",
                                        "message": "Your credit balance is too low to access the Anthropic API."}}
    endpoint = Endpoint([(200, message("Quokkaword one.")), (200, message("Quokkaword two."))] + [(400, broke)] * 6)
    with pytest.raises(GenerationStopped, match=r"^the API refused a request \(400\): Your credit balance is too low "
                                                r"to access the Anthropic API\.; 2 of 8 contexts generated and kept"):
        index(root, contextualizer(endpoint), workers=1)
    assert len(endpoint.requests) == 5  # three files refused in a row, none answered between them: a stop

"""Model contexts through `index --retriever lexical+ctx`, with a stand-in model (no SDK needed):
the estimate and cost guard, the cache, resuming, files never sent, and the offline fallbacks."""
from __future__ import annotations

import re

import pytest

from retrieval import service
from retrieval.contextual import command
from retrieval.contextual.command import ContextOptions
from retrieval.contextual.generate import CostRefused, GenerationStopped, plan, sendable
from retrieval.contextual.cache import ContextCache
from retrieval.records import SourceFile
from retrieval.retrievers.contextual import ContextualRetriever

FILES = {
    "src/billing/invoice.py": '"""Invoices."""\n\n\ndef total(lines):\n    return sum(lines)\n\n\n'
                              'def render(invoice):\n    return str(invoice)\n',
    "src/billing/tax.py": "def vat(amount):\n    return amount * 0.2\n",
    "README.md": "# Shop\n\nA small shop.\n",
}


class StandIn:
    """A model that answers every chunk with a recognisable context; can fail after n answers."""

    def __init__(self, fail_after: int | None = None):
        self.calls: list[tuple[str, int]] = []
        self.fail_after = fail_after

    def request(self, path, file_text, chunk):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise PermissionError("401 invalid x-api-key")
        self.calls.append((path, chunk.start_line))
        return f"zebracontext for {path} line {chunk.start_line}"

    @staticmethod
    def fatal(exc):
        return f"authentication failed: {exc}"


def index(root, model, messages=None, **context):
    notes = messages if messages is not None else []
    return command.refresh(str(root), context=ContextOptions(yes=True, **context) if "yes" not in context
                           else ContextOptions(**context), progress=notes.append, requester=model)


def contexts_of(root, query="zebracontext"):
    return {h.source_path: h.context for h in service.search(str(root), query, retriever="lexical+ctx", top_k=20).hits}


def test_generated_contexts_are_indexed_searchable_and_reported_with_hits(make_tree):
    root = make_tree(FILES)
    model = StandIn()
    report = index(root, model)
    assert report.status == "indexed"
    assert len(model.calls) == report.chunks == 3
    found = contexts_of(root)
    assert set(found) == {"src/billing/invoice.py", "src/billing/tax.py", "README.md"}
    assert found["src/billing/tax.py"].startswith("zebracontext for src/billing/tax.py line 1")


def test_a_second_run_sends_nothing_and_editing_one_file_asks_only_for_its_chunks(make_tree, rewrite):
    root = make_tree(FILES)
    index(root, StandIn())
    again = StandIn()
    assert index(root, again).status == "up to date"
    assert again.calls == []
    rewrite(root / "src/billing/tax.py", "def vat(amount, rate=0.2):\n    return amount * rate\n")
    after_edit = StandIn()
    index(root, after_edit)
    assert after_edit.calls == [("src/billing/tax.py", 1)]


def test_an_interrupted_run_keeps_what_was_paid_for_and_the_next_run_resumes(make_tree):
    root = make_tree(FILES)
    with pytest.raises(GenerationStopped, match=r"authentication failed.*2 of 3 contexts generated and kept"):
        index(root, StandIn(fail_after=2), workers=1)
    resumed = StandIn()
    index(root, resumed, workers=1)
    assert len(resumed.calls) == 1  # only the one never answered
    assert all(c.startswith("zebracontext") for c in contexts_of(root).values())
    assert len(contexts_of(root)) == 3


def test_contexts_generated_before_a_crash_reach_the_index_even_when_nothing_is_sent_after(make_tree):
    root = make_tree(FILES)
    service.refresh(str(root), "lexical+ctx")  # an offline index first
    with pytest.raises(GenerationStopped):
        index(root, StandIn(fail_after=2), workers=1)
    nothing = StandIn()
    index(root, nothing, max_chunks=0)
    assert nothing.calls == []
    assert len(contexts_of(root)) == 2  # the contexts already paid for were taken in by a rebuild


def test_the_cost_guard_refuses_before_any_request_unless_accepted_or_capped(make_tree):
    root = make_tree(FILES)
    refused = StandIn()
    messages: list[str] = []
    with pytest.raises(CostRefused, match="--yes"):
        index(root, refused, messages, yes=False, max_dollars=0.0)
    assert refused.calls == []
    assert any("3 chunks to contextualize" in m and "estimated $" in m for m in messages)
    # A cap is judged by what is left of the plan: within the threshold it runs, above it is refused.
    one = plan(str(root), ContextualRetriever(), service.IndexOptions(), ContextCache(str(root / "cache")))
    everything = one.estimate.dollars
    one.limit(1)
    threshold = (one.estimate.dollars + everything) / 2
    capped = StandIn()
    index(root, capped, yes=False, max_dollars=threshold, max_chunks=1)
    assert len(capped.calls) == 1
    too_high = StandIn()
    with pytest.raises(CostRefused, match="for the 2 chunks of --max-chunks 100000"):
        index(root, too_high, yes=False, max_dollars=0.0, max_chunks=100000)
    assert too_high.calls == []
    accepted = StandIn()
    index(root, accepted, yes=True, max_dollars=0.0)
    assert len(accepted.calls) == 2


def test_a_dry_run_prints_the_estimate_and_sends_and_builds_nothing(make_tree):
    root = make_tree(FILES)
    model, messages = StandIn(), []
    assert index(root, model, messages, dry_run=True) is None
    assert model.calls == []
    assert any("input tokens" in m and "output tokens" in m and "dry run: " in m for m in messages)
    assert not any("sending" in m for m in messages)
    assert service.status(str(root))[[r["retriever"] for r in service.status(str(root))].index("lexical+ctx")][
        "state"] == "missing"
    assert not (root / ".retrieval").exists()  # an estimate writes nothing (a read-only tree gets one too)


def test_a_run_that_asks_the_model_says_first_where_the_code_goes(make_tree, monkeypatch):
    """The one command that sends code off the machine says so, and to which host, before the first
    request (an endpoint's credentials left out of what it prints)."""
    root = make_tree(FILES)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://user:s3cret@proxy.example:8443/anthropic")
    messages: list[str] = []

    class Watching(StandIn):
        def request(self, path, file_text, chunk):
            messages.append("request")
            return super().request(path, file_text, chunk)

    index(root, Watching(), messages)
    said = [m for m in messages if "sending" in m]
    assert said == ["lexical+ctx: sending the text of 3 files to proxy.example:8443 (--contextualizer offline sends nothing)"]
    assert messages.index(said[0]) < messages.index("request")
    assert not any("s3cret" in m for m in messages)


def test_an_endpoint_shown_in_an_error_has_no_credentials():
    from retrieval.contextual.endpoint import shown_url

    assert shown_url("ftp://user:zqPASSWORD@127.0.0.1/v1") == "ftp://***@127.0.0.1/v1"
    assert shown_url("http://user:pw@[::1") == "http://***@[::1"
    assert shown_url("https://api.example.com/v1") == "https://api.example.com/v1"
    assert shown_url("https://proxy.example.com/v1?api_key=SECRET") == "https://proxy.example.com/v1?***"


def test_the_estimate_counts_one_file_and_one_chunk_in_the_singular():
    from retrieval.contextual.prompt import Estimate

    assert Estimate(files=1, chunks=1).describe("claude-haiku-4-5").startswith("1 file, 1 chunk to contextualize")
    assert Estimate(files=2, chunks=3).describe("claude-haiku-4-5").startswith("2 files, 3 chunks to contextualize")


def test_generated_vendored_and_translated_files_are_not_sent_and_keep_their_offline_context(make_tree):
    """What the dense index leaves to the lexical one: a lock file or a mock is many chunks of
    dollars for files the ranking puts last."""
    files = {**FILES, "package-lock.json": '{"lockfileVersion": 3}\n',
             "mocks/store_mock.go": "// Code generated by MockGen. DO NOT EDIT.\npackage mocks\n",
             "static/jquery-3.6.0.js": "function jQuery() {}\n", "docs/de/index.md": "# Willkommen\n"}
    root = make_tree(files)
    model = StandIn()
    work = plan(str(root), ContextualRetriever(), service.IndexOptions(), ContextCache(str(root / "cache")))
    assert {job.path for job in work.jobs} == set(FILES)
    assert work.withheld == {"generated": 2, "vendored": 1, "translation": 1}
    index(root, model)
    assert {p for p, _ in model.calls} <= set(FILES)
    assert "mocks/store_mock.go" in {h.source_path for h in
                                     service.search(str(root), "mocks", retriever="lexical+ctx").hits}


def test_secret_and_oversized_files_are_never_planned_so_never_sent(make_tree):
    files = {**FILES, "deploy/prod.pem": "-----BEGIN KEY-----\n", "config/secrets.json": '{"k": 1}\n',
             "data/big.py": "x = 1\n" * 5000}
    root = make_tree(files)
    listed = [SourceFile(p, str(root / p), (root / p).stat().st_size, 0, "python", "code") for p in files]
    retriever = ContextualRetriever()
    work = plan(str(root), retriever, service.IndexOptions(), ContextCache(str(root / "cache")),
                max_file_bytes=10_000, files=listed)
    planned = {job.path for job in work.jobs}
    assert planned == set(FILES)
    assert work.withheld == {"secret-name": 2, "too-large-to-send": 1}
    assert sendable("a/.env.production/x.py", 1, 10) == "secret-name"
    model = StandIn()
    index(root, model, max_file_bytes=10_000)
    assert "data/big.py" not in {p for p, _ in model.calls}
    assert "data/big.py" in {h.source_path for h in service.search(str(root), "x", retriever="lexical+ctx").hits}


def test_a_query_refreshing_a_stale_index_never_asks_the_model_and_drops_stale_contexts(make_tree, rewrite):
    root = make_tree(FILES)
    index(root, StandIn())
    rewrite(root / "src/billing/tax.py", "def vat(amount):\n    return amount * 0.25\n")
    found = contexts_of(root, "vat amount invoice")
    assert "zebracontext" not in found["src/billing/tax.py"]  # its content changed: the offline context
    assert found["src/billing/invoice.py"].startswith("zebracontext")  # unchanged: still the model's


def installed(monkeypatch):
    """As if the remote extra were installed (its absence is tested on its own)."""
    import retrieval.extras as extras

    monkeypatch.setattr(extras, "missing_modules", lambda extra: [])


def test_without_a_key_the_offline_contextualizer_is_used_and_said_once(make_tree, monkeypatch):
    installed(monkeypatch)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    root = make_tree(FILES)
    messages: list[str] = []
    report = command.refresh(str(root), progress=messages.append)
    assert report.status == "indexed"
    assert [m for m in messages if "offline contextualizer" in m] == [
        "lexical+ctx: using the offline contextualizer (the Anthropic contextualizer needs an API key: "
        "set ANTHROPIC_API_KEY)"]
    with pytest.raises(RuntimeError, match="set ANTHROPIC_API_KEY"):
        command.refresh(str(root), context=ContextOptions(mode="anthropic"))


@pytest.mark.parametrize("mode", ["auto", "anthropic"])
def test_a_dry_run_without_a_key_still_gives_the_estimate(make_tree, monkeypatch, mode):
    """The price is what one wants to know before getting a key."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    root = make_tree(FILES)
    messages: list[str] = []
    assert command.refresh(str(root), context=ContextOptions(mode=mode, dry_run=True), progress=messages.append) is None
    # The key is missing (or, without the extra, the SDK too): said, and the estimate given anyway.
    # In auto mode a real run goes on offline, and says so (it said the run "would need the model").
    said = {"auto": "a real run now would use the offline contextualizer (",
            "anthropic": "a real run would need the model ("}
    assert [m for m in messages if "a real run" in m] == [m for m in messages if said[mode] in m] != []
    assert any("3 chunks to contextualize" in m and "estimated $" in m for m in messages)


def test_without_the_package_asking_for_the_model_names_the_install_command(make_tree, monkeypatch):
    import retrieval.extras as extras

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setattr(extras, "missing_modules", lambda extra: ["anthropic"] if extra == "remote" else [])
    root = make_tree(FILES)
    from retrieval.extras import install_hint

    with pytest.raises(RuntimeError, match=re.escape(install_hint("remote"))):
        command.refresh(str(root), context=ContextOptions(mode="anthropic"))
    messages: list[str] = []
    assert command.refresh(str(root), progress=messages.append).status == "indexed"
    assert any("offline contextualizer" in m and install_hint("remote") in m for m in messages)


def test_cli_all_mode_never_asks_the_model_and_explicit_model_without_key_is_one_error_line(
        make_tree, monkeypatch, run):
    root = make_tree(FILES)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")

    def no_spending(*args, **kwargs):
        raise AssertionError("all-mode index asked the model")

    monkeypatch.setattr(command, "_generate", no_spending)
    result = run("index", "--root", root)
    assert result.exit_code == 0, result.output
    assert "lexical: indexed" in result.output and "lexical+ctx: indexed" not in result.output
    assert "lexical+ctx: not part of all" in result.output  # named, with the command that builds it
    result = run("query", "--root", root, "--retriever", "lexical+ctx", "--json", "vat")
    assert result.exit_code == 0, result.output  # a query builds it on first use, offline
    assert '"path": "src/billing/tax.py"' in result.output
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    installed(monkeypatch)
    result = run("index", "--root", root, "--retriever", "lexical+ctx", "--contextualizer", "anthropic")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "error: lexical+ctx: the Anthropic contextualizer needs an API key: set ANTHROPIC_API_KEY")


class Stuck(StandIn):
    """Answers the first chunks at once, then hangs as an SDK retrying a rate limit does."""

    def __init__(self, answered: int):
        super().__init__()
        self.answered = answered
        self.release = __import__("threading").Event()
        self.stuck = __import__("threading").Event()  # set once a request hangs

    def request(self, path, file_text, chunk):
        if len(self.calls) >= self.answered:
            self.stuck.set()
            self.release.wait(60)
        return super().request(path, file_text, chunk)


def test_ctrl_c_stops_a_run_stuck_in_a_request_within_seconds_keeping_what_was_answered(make_tree, monkeypatch):
    import _thread
    import signal
    import threading
    import time

    from retrieval.contextual import generate

    monkeypatch.setattr(generate, "INTERRUPT_GRACE", 0.5, raising=False)
    # interrupt_main does nothing where SIGINT is ignored, as a runner started in the background
    # (`cmd &` in a script) leaves it: Ctrl-C's own handler, as a terminal's foreground job has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    root = make_tree(FILES)
    model = Stuck(answered=1)
    interrupted = []

    def ctrl_c_once_stuck():  # not after a fixed second: a loaded machine may not have got that far
        if model.stuck.wait(60):
            interrupted.append(time.monotonic())
            _thread.interrupt_main()

    threading.Thread(target=ctrl_c_once_stuck, daemon=True).start()
    messages: list[str] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            index(root, model, messages, workers=1)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupted and time.monotonic() - interrupted[0] < 10  # not the 60 s the request hangs for
    assert messages[-1] == "lexical+ctx: interrupted; 1 of 3 contexts generated and kept, run again to resume"
    model.release.set()
    resumed = StandIn()
    index(root, resumed, workers=1)
    assert len(resumed.calls) == 2  # the one answered before Ctrl-C was kept


class Blank(StandIn):
    def request(self, path, file_text, chunk):
        super().request(path, file_text, chunk)
        return "" if path.endswith("tax.py") else f"zebracontext for {path}"


def test_an_empty_answer_is_not_kept_as_a_context_and_is_asked_again(make_tree):
    root = make_tree(FILES)
    messages: list[str] = []
    index(root, Blank(), messages, workers=1)
    assert any("1 empty answers were not kept" in m for m in messages)
    again = StandIn()
    index(root, again, workers=1)
    assert again.calls == [("src/billing/tax.py", 1)]


def test_a_run_that_gets_no_context_leaves_no_rebuild_behind(make_tree):
    from retrieval.contextual.generate import is_pending

    root = make_tree(FILES)
    index(root, StandIn())
    (root / "src/billing/tax.py").write_text("def vat(amount, rate):\n    return amount * rate\n")
    with pytest.raises(GenerationStopped):
        index(root, StandIn(fail_after=0), workers=1)
    assert not is_pending(ContextCache(str(root / ".retrieval" / "lexical+ctx")))
    report = service.refresh(str(root), "lexical+ctx")
    assert report.reprocessed == ["src/billing/tax.py"]  # a refresh of the one file, not a rebuild


def test_paid_contexts_outlive_clean_and_serve_another_checkout_through_the_shared_cache(
        make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_CONTEXT_CACHE", str(tmp_path / "shared"))
    root = make_tree(FILES)
    index(root, StandIn())
    assert service.clean(str(root)) is True
    after_clean = StandIn()
    index(root, after_clean)
    assert after_clean.calls == []  # nothing paid for is asked again
    assert all(c.startswith("zebracontext") for c in contexts_of(root).values())
    clone = tmp_path / "clone"
    for rel, text in FILES.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(text)
    in_clone = StandIn()
    index(clone, in_clone)
    assert in_clone.calls == [] and len(contexts_of(clone)) == 3


def test_contexts_another_checkout_paid_for_reach_an_index_built_before_them(make_tree, tmp_path, monkeypatch):
    """A clone indexed offline, then another checkout's paid run: the clone's model run said its
    chunks were cached and its index up to date, and its queries never saw the contexts (only
    --force brought them in)."""
    monkeypatch.setenv("RETRIEVAL_CONTEXT_CACHE", str(tmp_path / "shared"))
    clone = make_tree(FILES, name="clone")
    command.refresh(str(clone), context=ContextOptions(mode="offline"))
    assert contexts_of(clone) == {}
    index(make_tree(FILES, name="paid"), StandIn())
    again = StandIn()
    report = index(clone, again)
    assert again.calls == [] and report.status == "indexed"
    assert len(contexts_of(clone)) == 3
    settled = []
    assert index(clone, StandIn(), settled).status == "up to date"  # taken in: no rebuild the next time


def test_an_unwritable_shared_cache_costs_only_the_reuse(make_tree, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("RETRIEVAL_CONTEXT_CACHE", str(blocker))
    root = make_tree(FILES)
    model = StandIn()
    index(root, model)
    assert len(model.calls) == 3 and len(contexts_of(root)) == 3


def test_the_index_remembers_whose_contexts_it_took_so_a_shell_without_the_variable_keeps_them(
        make_tree, monkeypatch, rewrite):
    """Built with RETRIEVAL_CONTEXT_MODEL set, a refresh from a shell without it rebuilt the index
    offline: every paid context silently gone from the hits."""
    monkeypatch.setenv("RETRIEVAL_CONTEXT_MODEL", "claude-mystery-9")
    root = make_tree(FILES)
    index(root, StandIn())
    monkeypatch.delenv("RETRIEVAL_CONTEXT_MODEL")
    rewrite(root / "src/billing/tax.py", "def vat(amount, rate=0.2):\n    return amount * rate\n")
    found = contexts_of(root)  # a query refreshes the edited file
    assert set(found) == {"src/billing/invoice.py", "README.md"}  # the edited file's context is owed
    assert all(c.startswith("zebracontext") for c in found.values())
    assert service.remembered_options(str(root), "lexical+ctx").context_model == "claude-mystery-9"
    owed = StandIn()
    index(root, owed)  # and the next model run asks the same model for it
    assert owed.calls == [("src/billing/tax.py", 1)]
    # Asking for another model is a new index of that model's contexts (none yet).
    monkeypatch.setenv("RETRIEVAL_CONTEXT_MODEL", "claude-haiku-5-5")
    assert contexts_of(root) == {}
    assert service.remembered_options(str(root), "lexical+ctx").context_model is None


def test_a_cache_that_cannot_be_written_stops_the_run_with_its_error_not_silently(make_tree, run):
    root = make_tree(FILES)
    service.refresh(str(root), "lexical")  # the store exists
    blocker = root / ".retrieval" / "lexical+ctx" / "contexts" / "claude-haiku-5-5"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a directory")
    with pytest.raises(NotADirectoryError):
        index(root, StandIn(), workers=2)


def test_two_processes_adding_to_one_shared_cache_file_keep_both_their_contexts(tmp_path):
    import subprocess
    import sys

    code = ("import sys\n"
            "from retrieval.contextual.cache import ContextCache\n"
            "c = ContextCache(sys.argv[1] + '/store' + sys.argv[2], shared=sys.argv[1] + '/shared')\n"
            "for n in range(60):\n"
            "    c.put('m', 1, 'ab' * 16, f'{sys.argv[2]}-{n}', 'x')\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(w)]) for w in (1, 2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    shared = ContextCache(str(tmp_path / "none"), shared=str(tmp_path / "shared"))
    assert len(shared.get("m", 1, "ab" * 16)) == 120


def test_reset_options_plan_and_index_with_one_model(make_tree, monkeypatch):
    """--reset-filters drops the remembered context model: the contexts asked for are then the
    default model's, and the index takes those (it planned with one model and indexed another)."""
    monkeypatch.setenv("RETRIEVAL_CONTEXT_MODEL", "claude-mystery-9")
    root = make_tree(FILES)
    index(root, StandIn())
    monkeypatch.delenv("RETRIEVAL_CONTEXT_MODEL")
    model = StandIn()
    command.refresh(str(root), options=service.IndexOptions(include=("*.py", "*.md")),
                    context=ContextOptions(yes=True), requester=model)
    assert len(model.calls) == 3  # the default model had written nothing yet
    assert len(contexts_of(root)) == 3


def test_a_model_that_does_not_answer_for_a_while_is_said_to_be_waited_for(make_tree, monkeypatch):
    """An endpoint that accepts connections and never answers held the run silent for 7.5 minutes
    (timeouts retried) before its one error line: a user or an agent took it for a hang."""
    import time

    from retrieval.contextual import generate

    monkeypatch.setattr(generate, "QUIET_NOTE_SECONDS", 0.3)

    class Slow(StandIn):
        def request(self, path, file_text, chunk):
            time.sleep(1.0)
            return super().request(path, file_text, chunk)

    root = make_tree(FILES)
    messages = []
    index(root, Slow(), messages, workers=1)
    waits = [m for m in messages if "no answer from the model for" in m]
    assert waits and "Ctrl-C stops and keeps the" in waits[0]
    # Instant answers: never a note. (Not within 0.3 s: a loaded machine's disk can take that long
    # to write the first answers to the cache.)
    monkeypatch.setattr(generate, "QUIET_NOTE_SECONDS", 5.0)
    quick = []
    index(make_tree(FILES), StandIn(), quick)
    assert not [m for m in quick if "no answer" in m]


def test_a_model_run_waiting_for_another_writer_says_so(make_tree):
    """Behind another build's model run (minutes or hours of requests) the writer lock was waited
    for in silence: the second `index --retriever lexical+ctx` looked hung."""
    import threading

    from retrieval.store.lock import WriterLock

    root = make_tree(FILES)
    service.refresh(str(root), "lexical")  # the store exists
    held = WriterLock(str(root / ".retrieval" / "lock"))
    held.acquire()
    said = threading.Event()

    class Messages(list):
        def append(self, message):
            super().append(message)
            if str(message).startswith("waiting for"):
                said.set()

    # Released once the wait is said (at the latest after 60 s, failing the test rather than hanging
    # it): after a fixed 1.5 s, a loaded machine could reach the lock too late to wait long enough.
    threading.Thread(target=lambda: (said.wait(60), held.release()), daemon=True).start()
    messages = Messages()
    index(root, StandIn(), messages)
    assert [m for m in messages if m.startswith("waiting for another thread of this process")]
    assert len(contexts_of(root)) == 3  # and then it ran


def test_contexts_taken_from_the_shared_cache_are_kept_in_the_store_too(make_tree, tmp_path, monkeypatch):
    """A checkout indexed from the shared cache alone held no copy of the contexts it took: once
    that cache was emptied or turned off, its next rebuild replaced every paid context with the
    offline one (and the next model run paid for them again)."""
    monkeypatch.setenv("RETRIEVAL_CONTEXT_CACHE", str(tmp_path / "shared"))
    index(make_tree(FILES), StandIn())
    clone = make_tree(FILES)
    in_clone = StandIn()
    index(clone, in_clone)
    assert in_clone.calls == []
    monkeypatch.setenv("RETRIEVAL_CONTEXT_CACHE", "off")
    service.refresh(str(clone), "lexical+ctx", force=True)
    found = contexts_of(clone)
    assert len(found) == 3 and all(c.startswith("zebracontext") for c in found.values())
    again = StandIn()
    index(clone, again)
    assert again.calls == []  # nothing paid for is asked again


def test_generation_counts_are_progress_shown_on_a_terminal_only(make_tree):
    """The "N/M contexts generated" counts were printed as lines whatever stderr was: 3,000 lines
    in a log or an agent's context for a large tree, and never rewritten in place on a terminal."""
    import io

    from retrieval.progress import Reporter

    root = make_tree({f"pkg/mod_{n}.py": f"def f_{n}():\n    return {n}\n" for n in range(60)})
    piped = io.StringIO()
    command.refresh(str(root), context=ContextOptions(yes=True), requester=StandIn(), progress=Reporter(stream=piped))
    lines = piped.getvalue().splitlines()
    assert not [line for line in lines if re.search(r"\d+/\d+ contexts generated", line)], lines
    assert "lexical+ctx: 60 contexts generated" in lines


def test_contexts_paid_for_before_a_run_stopped_are_in_the_index_at_once(make_tree):
    """A run stopped by the API (a revoked key, retries exhausted) left its contexts out of the index
    until a later model run succeeded: with the key still refused, never."""
    root = make_tree(FILES)
    service.refresh(str(root), "lexical+ctx")  # an offline index first
    with pytest.raises(GenerationStopped, match="2 of 3 contexts generated and kept"):
        index(root, StandIn(fail_after=2), workers=1)
    found = contexts_of(root)
    assert len(found) == 2 and all(c.startswith("zebracontext") for c in found.values())
    resumed = StandIn()
    index(root, resumed, workers=1)
    assert len(resumed.calls) == 1 and len(contexts_of(root)) == 3


def test_the_prompt_does_not_change_without_a_new_prompt_version():
    """Contexts are cached under PROMPT_VERSION, not under the prompt's wording: reworded without a
    bump, every context written for the old wording would be served for the new one, never asked
    again. Changed on purpose: bump PROMPT_VERSION and add its digest here."""
    import hashlib
    import json

    from retrieval.contextual import prompt

    wording = [prompt.SYSTEM, prompt.FILE_BLOCK, prompt.CHUNK_BLOCK, prompt.MAX_OUTPUT_TOKENS]
    digest = hashlib.sha256(json.dumps(wording).encode()).hexdigest()[:16]
    assert {1: "ff16070697b09752"}.get(prompt.PROMPT_VERSION) == digest


def test_identical_files_are_asked_about_once_and_both_get_the_contexts(make_tree):
    """Contexts are cached by file content: two copies of one file (vendored, generated, fixtures)
    were each paid for, the second answer replacing the first (9% of trpc's chunks)."""
    copy = FILES["src/billing/tax.py"]
    root = make_tree({**FILES, "vendor_copy/tax.py": copy})
    model, messages = StandIn(), []
    index(root, model, messages)
    assert sorted(p for p, _ in model.calls) == ["README.md", "src/billing/invoice.py", "src/billing/tax.py"]
    assert any("3 chunks to contextualize" in m for m in messages)  # the estimate counts what is sent
    found = contexts_of(root)
    assert found["vendor_copy/tax.py"].startswith("zebracontext") and len(found) == 4

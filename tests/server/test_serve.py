"""`retrieval serve`: the warm server and the client `retrieval query`/`status` try first."""
from __future__ import annotations

import datetime
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from retrieval.server import client
from retrieval.store import layout

# Reports, after the command, whether the client path imported click, the ranking or the store.
PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: sys.stderr.write('HEAVY=%s\\n' % sorted(m for m in ('click', "
         "'retrieval.cli', 'retrieval.ranking', 'retrieval.service', 'retrieval.store.layout') if m in sys.modules)))\n"
         "sys.argv[0] = 'retrieval'\n"
         "from retrieval.entry import main\n"
         "main()\n")


def cli(*argv, server=True, input=None, cwd=None, timeout=120, env_extra=None):
    """The console command in a fresh process; RETRIEVAL_NO_SERVER=1 forces the in-process path."""
    env = dict(os.environ)
    env.pop("RETRIEVAL_NO_SERVER", None)
    env.update(env_extra or {})
    if not server:
        env["RETRIEVAL_NO_SERVER"] = "1"
    return subprocess.run([sys.executable, "-c", PROBE, *map(str, argv)], input=input, capture_output=True,
                          env=env, cwd=cwd, timeout=timeout)


def answered_by_server(proc) -> bool:
    return b"HEAVY=[]" in proc.stderr


def strip_probe(stderr: bytes) -> bytes:
    return b"".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(b"HEAVY="))


@pytest.fixture
def serve():
    """serve(root, idle=60) starts a detached server and returns its pid; all are stopped at the end."""
    started = []

    def start(root, idle=60, extra=()):
        proc = cli("serve", "--detach", "--root", root, "--idle-timeout", idle, *extra, server=False)
        assert proc.returncode == 0, proc.stderr
        info = client.probe(client.store_dir(str(root)))
        started.append(info["pid"])
        return info["pid"]

    yield start
    for pid in started:
        signal_if_alive(pid, signal.SIGTERM)


def signal_if_alive(pid: int, signum) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def wait_gone(pid, seconds=15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A detached server is our grandchild's child: reaped by init, or a zombie briefly.
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_client_and_server_print_the_same_bytes(sample_repo, serve):
    serve(sample_repo)
    cases = [
        ["query", "--root", sample_repo, "parse config", "--json"],
        ["query", "--root", sample_repo, "retries", "--jsonl", "--expand", "1"],
        ["query", "--root", sample_repo, "http client", "--files", "--max-tokens", "200"],
        ["query", "--root", sample_repo, "config", "--path", "docs/**", "--lang", "markdown"],
        ["query", "--root", sample_repo, "zzznothingmatches", "--json"],
        ["query", "--root", sample_repo, "config", "--kind", "nonsense"],  # a usage error, exit 2
        ["status", "--root", sample_repo, "--json"],
    ]
    for argv in cases:
        warm, cold = cli(*argv), cli(*argv, server=False)
        assert answered_by_server(warm), (argv, warm.stderr)
        if argv[0] == "status":  # the in-process one is asked with RETRIEVAL_NO_SERVER, which uses no server
            assert json.loads(cold.stdout)["server"]["used"] is False
            cold.stdout = cold.stdout.replace(b'"used": false', b'"used": true')
        assert (warm.returncode, warm.stdout, strip_probe(warm.stderr)) == \
               (cold.returncode, cold.stdout, strip_probe(cold.stderr)), argv
    # A query read from stdin, too.
    warm = cli("query", "--root", sample_repo, "-", "--json", input=b"where is the LRU cache evicted")
    cold = cli("query", "--root", sample_repo, "-", "--json", input=b"where is the LRU cache evicted", server=False)
    assert answered_by_server(warm) and warm.stdout == cold.stdout
    assert json.loads(warm.stdout)["results"][0]["path"] == "src/app/cache.py"


def test_a_served_command_writes_its_two_streams_in_the_order_the_command_itself_does(sample_repo, serve):
    """`2>&1` showed a served query's results before its notes: the client wrote all of stdout,
    then all of stderr; the command itself says its notes first."""
    serve(sample_repo)
    argv = [sys.executable, "-c", PROBE, "query", "--root", str(sample_repo), "zzznothingmatches", "--json"]

    def merged(**env):
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                              env={k: v for k, v in dict(os.environ, **env).items() if v is not None})
        return proc.stdout

    warm, cold = merged(RETRIEVAL_NO_SERVER=None), merged(RETRIEVAL_NO_SERVER="1")
    assert b"HEAVY=[]" in warm  # answered by the server (answered_by_server, on the merged streams)
    assert strip_probe(warm) == strip_probe(cold)
    assert strip_probe(cold).startswith(b"note: ") and b'"results": []' in cold


def test_the_order_of_a_served_commands_writes_is_replayed_only_when_it_adds_up():
    assert client.writes([[2, 5], [1, 3], [2, 1]], 3, 6) == [(2, 0, 5), (1, 0, 3), (2, 5, 6)]
    # Missing (an older server), short, or nonsense: stdout, then stderr.
    for order in (None, [[2, 5]], [[3, 5], [1, 3]], [[1, "x"]], "12"):
        assert client.writes(order, 3, 6) == [(1, 0, 3), (2, 0, 6)]


def test_the_server_answers_with_the_callers_default_retriever_for_that_call_only(sample_repo, serve):
    serve(sample_repo)  # started without RETRIEVAL_RETRIEVER
    argv = ["query", "--root", sample_repo, "parse config", "--json"]
    for value in ("all", "nope", None):  # a default of the caller's, a bad one, none again
        extra = {"RETRIEVAL_RETRIEVER": value} if value else {}
        warm, cold = cli(*argv, env_extra=extra), cli(*argv, env_extra=extra, server=False)
        assert answered_by_server(warm), (value, warm.stderr)
        assert (warm.returncode, warm.stdout, strip_probe(warm.stderr)) == \
               (cold.returncode, cold.stdout, strip_probe(cold.stderr)), value
        if value != "nope":
            assert json.loads(warm.stdout)["retriever"] == (value or "lexical")
    # Other settings still have to match the server's: such a caller runs the command itself.
    other = cli(*argv, env_extra={"RETRIEVAL_TURBOVEC_BITS": "2"})
    assert not answered_by_server(other) and other.returncode == 0


def test_a_caller_with_another_home_runs_the_command_itself(make_tree, serve, tmp_path):
    """git's per-user ignore file is found through HOME and XDG_CONFIG_HOME: a server started with
    other values would answer from other files than the caller's own command would."""
    root = make_tree({"keep.py": "def zqkeep():\n    pass\n", "notes.py": "def zqkeep_notes():\n    pass\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("notes.py\n")
    serve(root)
    argv = ["query", "--root", root, "zqkeep", "--json", "--files"]
    same = cli(*argv)
    assert answered_by_server(same)
    assert sorted(h["path"] for h in json.loads(same.stdout)["results"]) == ["keep.py", "notes.py"]
    other = cli(*argv, env_extra={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")})
    assert not answered_by_server(other), other.stderr
    assert [h["path"] for h in json.loads(other.stdout)["results"]] == ["keep.py"]


def test_a_caller_with_another_git_configuration_runs_the_command_itself(make_tree, serve, tmp_path):
    """GIT_CONFIG_GLOBAL names the file whose core.excludesFile the walk reads: a server started
    without it answered from files the caller's own command leaves out."""
    from retrieval import discover
    from retrieval.server import client

    assert set(discover._CONFIG_VARIABLES) <= set(client.ENV_SHARED)  # every one the walk reads
    root = make_tree({"keep.py": "def zqkeep():\n    pass\n", "notes.py": "def zqkeep_notes():\n    pass\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (tmp_path / "excludes").write_text("notes.py\n")
    (tmp_path / "gitconfig").write_text(f"[core]\n\texcludesFile = {tmp_path / 'excludes'}\n")
    serve(root)
    argv = ["query", "--root", root, "zqkeep", "--json", "--files"]
    assert answered_by_server(cli(*argv))
    other = cli(*argv, env_extra={"GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")})
    assert not answered_by_server(other), other.stderr
    assert [h["path"] for h in json.loads(other.stdout)["results"]] == ["keep.py"]


@pytest.mark.parametrize("variable", ["HF_HOME", "XDG_CACHE_HOME", "JAVA_HOME"])
def test_a_caller_finding_models_caches_or_java_elsewhere_runs_the_command_itself(make_tree, serve, tmp_path,
                                                                                   variable):
    """`HF_HOME=... query --embed-model probe/tiny` through a server started without it: the server
    looked in its own Hugging Face cache and said the model was in none (a cold run found it)."""
    root = make_tree({"keep.py": "def zqkeep():\n    pass\n"})
    serve(root)
    argv = ["query", "--root", root, "zqkeep", "--json"]
    assert answered_by_server(cli(*argv))
    other = cli(*argv, env_extra={variable: str(tmp_path / "elsewhere")})
    assert not answered_by_server(other), other.stderr
    assert [h["path"] for h in json.loads(other.stdout)["results"]] == ["keep.py"]


def test_while_another_writer_holds_the_store_a_served_answer_is_stale_with_the_note_and_current_after(
        sample_repo, serve, monkeypatch):
    """The server vouched for the previous snapshot it fell back to: its answer had no note and no
    `"stale"`, and it kept answering from that snapshot after the writer was done."""
    import fcntl

    monkeypatch.setenv("RETRIEVAL_WRITER_WAIT", "0.5")
    serve(sample_repo)
    argv = ["query", "--root", sample_repo, "zqlockheld", "--json"]
    assert answered_by_server(cli(*argv))
    fd = os.open(os.path.join(layout.store_dir(str(sample_repo)), "lock"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer (a long `index`)
        with open(sample_repo / "src" / "app" / "cache.py", "a") as fh:
            fh.write("\n\ndef zqlockheld():\n    pass\n")
        held = cli(*argv)
        assert answered_by_server(held)
        assert json.loads(held.stdout).get("stale") is True and b"previous snapshot" in held.stderr
    finally:
        os.close(fd)
    after = cli(*argv)
    assert answered_by_server(after)
    assert [h["path"] for h in json.loads(after.stdout)["results"]] == ["src/app/cache.py"]


def test_a_served_query_waiting_for_another_writer_says_so_while_it_waits_as_the_command_itself_does(
        sample_repo, serve, monkeypatch):
    """The server's notes come with its answer: a query it held behind another process's build (a
    first build is waited out, however long) printed nothing until that build was done."""
    import fcntl

    monkeypatch.setenv("RETRIEVAL_WRITER_WAIT", "60")
    serve(sample_repo)
    argv = ["query", "--root", sample_repo, "zqwaitedfor", "--json"]
    assert answered_by_server(cli(*argv))
    lock = layout.lock_path(layout.store_dir(str(sample_repo)))
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another writer (a long `index`)
    with open(sample_repo / "src" / "app" / "cache.py", "a") as fh:
        fh.write("\n\ndef zqwaitedfor():\n    pass\n")
    command = [sys.executable, "-c", PROBE, *map(str, argv)]
    waiting = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        import select

        # Said while the writer still holds the lock (it would hold it for a whole build).
        assert select.select([waiting.stderr], [], [], 60)[0], "nothing said while waiting"
        said = waiting.stderr.readline()
    finally:
        os.close(fd)
    out, err = waiting.communicate(timeout=60)
    assert said == f"waiting for process {os.getpid()}, which is writing the index ({lock})\n".encode()
    assert answered_by_server(subprocess.CompletedProcess(command, 0, out, err)) and waiting.returncode == 0
    assert [h["path"] for h in json.loads(out)["results"]] == ["src/app/cache.py"]  # waited, then refreshed
    assert b"waiting" not in err


def test_a_relative_index_directory_never_makes_a_second_store_for_a_detached_server(sample_repo, tmp_path):
    """The server runs in the root: `RETRIEVAL_INDEX_DIR=idx serve --detach` made a second store
    inside the project and waited forever for a server where the command looked for one. A relative
    value is refused (it named another directory from each place a command ran in), by the server's
    commands as by the others, before anything is written."""
    relative = {"RETRIEVAL_INDEX_DIR": "idx"}
    refused = b"error: RETRIEVAL_INDEX_DIR=idx is a relative path: it must be absolute (or unset it)\n"
    try:
        started = cli("serve", "--detach", "--root", sample_repo, "--idle-timeout", 60, server=False, cwd=tmp_path,
                      env_extra=relative, timeout=60)
        assert (started.returncode, strip_probe(started.stderr)) == (1, refused)
        assert not (sample_repo / "idx").exists() and not (tmp_path / "idx").exists()
        served = cli("query", "--root", sample_repo, "parse config", "--json", cwd=tmp_path, env_extra=relative)
        assert (served.returncode, served.stdout, strip_probe(served.stderr)) == (1, b"", refused)
    finally:
        cli("serve", "--stop", "--root", sample_repo, server=False, cwd=tmp_path, env_extra=relative)


def test_a_served_stale_ok_query_does_not_refresh_first(sample_repo, tmp_path, monkeypatch):
    """`--stale-ok` is for an answer now, from the index as it is: the server refreshed first anyway
    (a wait the option exists to avoid)."""
    from retrieval.server import serve as serve_module

    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    server = serve_module.Server(str(sample_repo), idle_timeout=0)
    server.start()
    try:
        freshened = []
        monkeypatch.setattr(server.warm, "freshen", lambda names=None: freshened.append(True))
        for argv, expected in ((["query", "config", "--stale-ok"], []), (["query", "--", "--stale-ok"], [True]),
                               (["query", "config"], [True])):
            freshened.clear()
            header = {"op": "run", "argv": argv, "cwd": str(sample_repo), "version": client.code_version(),
                      "env": client.environment(), "encodings": {}, "stdin_len": 0}
            server.answer(header, b"")
            assert freshened == expected, argv
    finally:
        server.close()


def test_the_server_runs_no_request_for_another_root_or_from_another_environment(sample_repo, tmp_path, monkeypatch):
    """Whatever client sends it: a command for another root would open (and build) that root's
    indexes unwatched in this process; one from a caller with other settings would answer with ours."""
    from retrieval.server import serve as serve_module

    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    other = tmp_path / "other"
    other.mkdir()
    server = serve_module.Server(str(sample_repo), idle_timeout=0)
    server.start()
    ran = []
    monkeypatch.setattr(serve_module, "run_cli", lambda argv, *args, **kwargs: ran.append(argv) or (0, b"", b""))
    try:
        ours = {"op": "run", "argv": ["query", "config"], "cwd": str(sample_repo), "version": client.code_version(),
                "env": client.environment(), "encodings": {}, "stdin_len": 0}
        for change in ({"argv": ["query", "--root", str(sample_repo), "config", "--root", str(other)]},
                       {"env": dict(client.environment(), RETRIEVAL_ANOTHER_SETTING="1")}):
            server.answer(dict(ours, **change), b"")
        assert ran == []
        server.answer(ours, b"")
        assert ran == [["query", "config"]]
    finally:
        server.close()


def test_without_a_server_the_command_runs_in_process(sample_repo):
    proc = cli("query", "--root", sample_repo, "parse config", "--json")
    assert proc.returncode == 0
    assert b"'click'" in proc.stderr  # the in-process path
    assert json.loads(proc.stdout)["results"][0]["path"] == "src/app/config.py"
    status = json.loads(cli("status", "--root", sample_repo, "--json").stdout)
    assert status["server"] is None


def test_search_the_alias_of_query_is_served_as_query_is(sample_repo, serve):
    serve(sample_repo)
    served = cli("search", "--root", sample_repo, "parse config", "--json")
    assert served.returncode == 0 and answered_by_server(served)
    assert served.stdout == cli("query", "--root", sample_repo, "parse config", "--json").stdout


def test_retrieval_no_server_set_to_a_false_value_still_uses_the_server(sample_repo, serve):
    serve(sample_repo)
    for value, served in (("0", True), ("false", True), ("1", False)):
        proc = cli("query", "--root", sample_repo, "parse config", env_extra={"RETRIEVAL_NO_SERVER": value})
        assert proc.returncode == 0 and answered_by_server(proc) is served, value


def test_the_root_a_command_names_is_its_last_root_option_and_none_among_the_query_words():
    assert client.root_argument(["query", "--root", "a", "words", "--root", "b"]) == "b"  # as click takes it
    assert client.root_argument(["query", "--root", "a", "words", "--root=b"]) == "b"
    assert client.root_argument(["query", "--root", "a", "--", "how", "--root", "b", "works"]) == "a"
    assert client.root_argument(["query", "--", "--root", "b"]) is None


def test_the_client_takes_a_socket_another_user_owns_for_no_server(tmp_path):
    """A repository can hold `.retrieval/serve/sock`: one of another user's would be sent every query."""
    if os.geteuid() != 0:
        pytest.skip("making a socket another user's takes root")
    path = str(tmp_path / "sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        assert client.our_socket(path)
        os.chown(path, os.getuid() + 1, -1)
        assert not client.our_socket(path)
    finally:
        sock.close()


def test_the_client_reads_stdin_only_for_a_query_whose_one_word_is_a_dash():
    from retrieval.cli import main

    flags = {opt for param in main.commands["query"].params if getattr(param, "is_flag", False) for opt in param.opts}
    assert client.QUERY_FLAGS == flags | {"--help", "-h"}
    reads = client.query_from_stdin
    assert reads(["query", "-"]) and reads(["query", "--json", "-", "-k", "3"]) and reads(["query", "--", "-"])
    assert reads(["query", "--path", "src/*", "-", "--stale-ok"]) and reads(["query", "--top-k=3", "-"])
    assert not reads(["query", "parse", "-", "args"])  # a dash among words is a word
    assert not reads(["query", "parse", "--path", "-"])  # an option's value
    assert not reads(["query", "parse", "-k", "-"]) and not reads(["query", "--", "-", "x"])
    # Short options written together, as click reads them: `-ie X` is -i and -e X; `-ei` is -e i.
    assert reads(["query", "-ie", "RAISE VALUEERROR", "-"]) and reads(["query", "-Fie", "x", "-"])
    assert reads(["query", "-k5", "-"]) and reads(["query", "-ei", "-"]) and reads(["query", "-Fi", "-e", "x", "-"])
    assert not reads(["query", "-ie", "-"])  # (a pattern `-`, and no word)


def test_with_a_server_a_dash_among_the_words_does_not_wait_for_stdin(sample_repo, serve):
    serve(sample_repo)
    # stdin left open: reading it to its end would wait forever.
    proc = subprocess.Popen([sys.executable, "-c", PROBE, "query", "--root", str(sample_repo), "parse", "-",
                             "config", "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = _wait_open_stdin(proc)
    finally:
        proc.kill()
    assert proc.returncode == 0 and answered_by_server(subprocess.CompletedProcess([], 0, out, err)), err
    assert json.loads(out)["query"] == "parse - config"


def _wait_open_stdin(proc, seconds=60):
    """The process's output once it exits, its stdin never closed (communicate() would close it)."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is not None, "the command waited for stdin"
    return proc.stdout.read(), proc.stderr.read()


@pytest.mark.parametrize("server", [True, False])
def test_a_query_from_a_closed_stdin_is_an_empty_query(sample_repo, serve, server):
    if server:
        serve(sample_repo)
    proc = subprocess.run(["bash", "-c", 'exec "$@" <&-', "_", sys.executable, "-c", PROBE, "query", "--root",
                           str(sample_repo), "-"], capture_output=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "RETRIEVAL_NO_SERVER"})
    assert proc.returncode == 2 and b"the query is empty" in proc.stderr and b"Traceback" not in proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
def test_a_served_answer_whose_notes_cannot_be_written_still_prints_its_results(sample_repo, serve):
    serve(sample_repo)
    env = {k: v for k, v in os.environ.items() if k != "RETRIEVAL_NO_SERVER"}
    argv = [sys.executable, "-c", PROBE, "query", "--root", str(sample_repo), "zzzqqqnothing", "--json"]
    told = subprocess.run(argv, capture_output=True, timeout=60, env=env)
    assert answered_by_server(told) and b"note: no hits" in told.stderr
    with open("/dev/full", "w") as full:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=full, timeout=60, env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"] == []


def test_a_served_answer_that_cannot_be_written_is_one_error_line(sample_repo, serve):
    serve(sample_repo)
    env = {k: v for k, v in os.environ.items() if k != "RETRIEVAL_NO_SERVER"}
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-c", PROBE, "query", "--root", str(sample_repo), "config"],
                                  stdout=full, stderr=subprocess.PIPE, timeout=60, env=env)
        assert proc.returncode == 1 and answered_by_server(proc)
        assert strip_probe(proc.stderr) == f"error: cannot write the output: {os.strerror(28)}\n".encode()
    closed = subprocess.run(["bash", "-c", 'exec "$@" >&-', "_", sys.executable, "-c", PROBE, "query", "--root",
                             str(sample_repo), "config"], stderr=subprocess.PIPE, timeout=60, env=env)
    # Closed before the start: said before any server is asked (tests/test_cli_everyday.py).
    assert closed.returncode == 1
    assert strip_probe(closed.stderr) == b"error: `retrieval query` prints its results on stdout, which is closed\n"


def _on_a_terminal(argv, env):
    """(stdout as a terminal shows it, the completed process) of a command whose stdout is a pty."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.run(argv, stdout=slave, stderr=subprocess.PIPE, timeout=60, env=env)
    finally:
        os.close(slave)
    shown = b""
    try:
        while chunk := os.read(master, 65536):
            shown += chunk
    except OSError:  # EIO: the other end is closed and drained
        pass
    os.close(master)
    return shown, proc


def test_a_served_answer_is_coloured_for_a_terminal_as_a_cold_one_is(sample_repo, serve):
    serve(sample_repo)
    env = {k: v for k, v in os.environ.items() if k not in ("RETRIEVAL_NO_SERVER", "NO_COLOR")}
    argv = [sys.executable, "-c", PROBE, "query", "--root", str(sample_repo), "config", "-k", "2"]
    served, proc = _on_a_terminal(argv, env)
    assert answered_by_server(proc) and b"\x1b[35;1m" in served
    cold, proc = _on_a_terminal(argv, {**env, "RETRIEVAL_NO_SERVER": "1"})
    assert not answered_by_server(proc) and served == cold
    plain, proc = _on_a_terminal(argv, {**env, "NO_COLOR": "1"})  # the caller's, for that call
    assert answered_by_server(proc) and b"\x1b[" not in plain and plain


def test_a_served_repository_holding_packages_named_like_ours_still_gets_this_server(make_tree, serve, tmp_path):
    marker = tmp_path / "imported-the-repository-copy"
    impostor = f"open({str(marker)!r}, 'w').close()\nraise SystemExit('the repository copy ran')\n"
    root = make_tree({"retrieval/__init__.py": impostor, "retrieval/server/__init__.py": impostor,
                      "retrieval/server/serve.py": impostor, "click/__init__.py": impostor,
                      "app/config.py": "def parse_config():\n    return {}\n"},
                     name="named-like-us")
    assert cli("index", "--root", root, server=False).returncode == 0
    serve(root)
    proc = cli("query", "--root", root, "parse config", "--json")
    assert answered_by_server(proc), proc.stderr
    assert not marker.exists()


def test_status_shows_the_running_server(sample_repo, serve):
    pid = serve(sample_repo)
    text = cli("status", "--root", sample_repo)
    assert text.stdout.decode().splitlines()[-1] == f"server: running (pid {pid})"
    server = json.loads(cli("status", "--root", sample_repo, "--json", server=False).stdout)["server"]
    assert server["pid"] == pid
    # A time as the index's `created` is written: ISO 8601 in UTC, to the second.
    started = datetime.datetime.fromisoformat(server["started"])
    assert started.utcoffset() == datetime.timedelta(0) and started.microsecond == 0
    assert abs(started.timestamp() - time.time()) < 600


def test_an_edit_saved_before_a_query_is_in_its_answer(sample_repo, serve, rewrite):
    serve(sample_repo)
    target = sample_repo / "src/app/cache.py"
    for n in range(8):
        rewrite(target, f"def evict_{word(n)}():\n    pass\n")
        proc = cli("query", "--root", sample_repo, word(n), "--json")
        assert answered_by_server(proc)
        assert [r["path"] for r in json.loads(proc.stdout)["results"]] == ["src/app/cache.py"], n
    # A new directory, then a file in it, then a removal: each seen by the next query.
    (sample_repo / "src/fresh/deeper").mkdir(parents=True)
    (sample_repo / "src/fresh/deeper/mod.py").write_text("ZQDEEPMARKER = 1\n")
    assert json.loads(cli("query", "--root", sample_repo, "zqdeepmarker", "--json").stdout)["results"]
    (sample_repo / "src/fresh/deeper/mod.py").unlink()
    assert json.loads(cli("query", "--root", sample_repo, "zqdeepmarker", "--json").stdout)["results"] == []


def word(n: int) -> str:
    """One token per number (digits would split it): zqrace + n in letters."""
    letters = ""
    while True:
        n, r = divmod(n, 26)
        letters += chr(ord("a") + r)
        if not n:
            return f"zqrace{letters}q"


def test_queries_racing_a_writer_see_every_file_written_before_them(sample_repo, serve):
    serve(sample_repo)
    done = [-1]
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set():
            folder = sample_repo / "gen" / f"d{n % 3}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{n}.py").write_text(f"VALUE = '{word(n)}'\n")
            done[0] = n
            n += 1
            time.sleep(0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        checked = 0
        deadline = time.monotonic() + 120  # ten fresh processes each: a loaded machine takes seconds a query
        while checked < 10 and time.monotonic() < deadline:
            n = done[0]
            if n < 0:
                continue
            proc = cli("query", "--root", sample_repo, word(n), "--json")
            assert proc.returncode == 0, proc.stderr
            assert answered_by_server(proc)
            paths = [r["path"] for r in json.loads(proc.stdout)["results"]]
            assert paths == [f"gen/d{n % 3}/f{n}.py"], (n, paths)
            checked += 1
        assert checked == 10
    finally:
        stop.set()
        thread.join()


def test_a_killed_server_leaves_a_usable_store(sample_repo, serve, rewrite):
    pid = serve(sample_repo)
    rewrite(sample_repo / "src/app/config.py", "def zqafterkill():\n    pass\n" * 200)
    os.kill(pid, signal.SIGKILL)  # maybe mid-refresh: the server refreshes ahead of queries
    assert wait_gone(pid)
    assert os.path.exists(client.socket_path(client.store_dir(str(sample_repo))))  # left behind
    proc = cli("query", "--root", sample_repo, "zqafterkill", "--json")
    assert proc.returncode == 0 and not answered_by_server(proc), proc.stderr
    assert json.loads(proc.stdout)["results"][0]["path"] == "src/app/config.py"
    # A new server takes the root over (the stale socket is replaced).
    serve(sample_repo)
    assert answered_by_server(cli("query", "--root", sample_repo, "zqafterkill"))


def test_a_second_server_on_the_same_root_exits_with_a_message(sample_repo, serve):
    pid = serve(sample_repo)
    second = cli("serve", "--root", sample_repo, server=False, timeout=60)
    assert second.returncode == 1
    assert f"a server is already running for {sample_repo} (pid {pid})".encode() in second.stderr
    assert client.probe(client.store_dir(str(sample_repo)))["pid"] == pid


def test_serve_detach_when_a_server_already_answers_says_so_and_succeeds(sample_repo, serve):
    pid = serve(sample_repo)
    again = cli("serve", "--detach", "--root", sample_repo, server=False)
    assert again.returncode == 0
    assert strip_probe(again.stderr) == f"already serving {sample_repo} (pid {pid})\n".encode()
    assert client.probe(client.store_dir(str(sample_repo)))["pid"] == pid


def test_serve_detach_after_an_upgrade_in_place_starts_the_new_code_s_server(sample_repo, tmp_path):
    """After an upgrade, `serve --detach` said "already serving" of the old code's server, which
    then exited at its next look at its code: none ran, and every query ran cold. Another install's
    server goes on running: said as before (it does not serve this shell)."""
    import shutil

    from retrieval.server import serve as serve_module

    store = client.store_dir(str(sample_repo))
    code = tmp_path / "code"
    shutil.copytree(os.path.dirname(serve_module.__file__).rsplit(os.sep, 1)[0], code / "retrieval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(code))

    def start_installed() -> int:
        proc = subprocess.run([sys.executable, "-m", "retrieval.entry", "serve", "--detach", "--root", str(sample_repo),
                               "--idle-timeout", "60"], env=env, cwd=tmp_path, capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return client.probe(store)["pid"]

    other = start_installed()
    try:
        info = serve_module.start_detached(str(sample_repo), idle_timeout=60)  # (this code: another install)
        assert info.get("already") and info["pid"] == other
        with open(code / "retrieval" / "notes.py", "a") as fh:  # the other install upgraded in place
            fh.write("# upgraded\n")
        info = serve_module.start_detached(str(sample_repo), idle_timeout=60)
        try:
            assert not info.get("already") and info["pid"] != other and wait_gone(other)
            assert client.probe(store)["pid"] == info["pid"]
        finally:
            signal_if_alive(info["pid"], signal.SIGTERM)
    finally:
        signal_if_alive(other, signal.SIGTERM)


def test_serve_detach_while_a_server_on_its_way_out_holds_the_lock_starts_one_when_it_is_free(sample_repo):
    """The socket removed, the server exits at its next look (within seconds): a `serve --detach`
    meanwhile failed on the lock it still held, and said that server's last words as its error."""
    from retrieval.server import serve as serve_module

    store = client.store_dir(str(sample_repo))
    directory = serve_module.prepare_serve_dir(store)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({os.path.join(directory, 'lock')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(4)\nos.close(fd)\n"
        f"open({os.path.join(directory, 'log')!r}, 'a').write('serve: exiting: its root, store or socket went away\\n')\n")],
        stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"held\n"
    info = serve_module.start_detached(str(sample_repo), idle_timeout=60)
    try:
        holder.wait(timeout=30)
        assert client.probe(store)["pid"] == info["pid"]
    finally:
        signal_if_alive(info["pid"], signal.SIGTERM)


def test_serve_detach_asking_another_idle_timeout_of_a_running_server_says_it_keeps_its_own(sample_repo, serve):
    """`serve --detach --idle-timeout 5` beside a server that never idles out said "already serving"
    and nothing else: the timeout asked for was dropped without a word."""
    pid = serve(sample_repo)
    running = client.probe(client.store_dir(str(sample_repo)))["idle_timeout"]
    other = 7 if running != 7 else 11
    again = cli("serve", "--detach", "--root", sample_repo, "--idle-timeout", str(other), server=False)
    assert again.returncode == 0
    assert strip_probe(again.stderr).decode().splitlines() == [
        f"already serving {sample_repo} (pid {pid})",
        f"note: that server's --idle-timeout is {'0 (never)' if not running else f'{running:g} s'}, not "
        f"{other} s; `retrieval serve --stop` first to change it"]
    same = cli("serve", "--detach", "--root", sample_repo, "--idle-timeout", f"{running:g}", server=False)
    assert strip_probe(same.stderr).decode().splitlines() == [f"already serving {sample_repo} (pid {pid})"]


def test_serve_detach_and_status_say_when_the_running_server_would_not_serve_this_shell(sample_repo, serve):
    """Started with other RETRIEVAL_* settings, the server looked ready ("already serving", "server:
    running") while every query from this shell quietly ran without it."""
    pid = serve(sample_repo)
    other = {"RETRIEVAL_TURBOVEC_BITS": "2"}
    again = cli("serve", "--detach", "--root", sample_repo, server=False, env_extra=other)
    assert again.returncode == 0
    assert strip_probe(again.stderr).decode().splitlines() == [
        f"already serving {sample_repo} (pid {pid})",
        f"note: {client.NOT_HERE}; `retrieval serve --stop` first to serve this shell"]
    assert f"server: running (pid {pid}); {client.NOT_HERE}\n" in cli("status", "--root", sample_repo,
                                                                         env_extra=other).stdout.decode()
    assert f"server: running (pid {pid})\n" in cli("status", "--root", sample_repo).stdout.decode()
    assert json.loads(cli("status", "--root", sample_repo, "--json", env_extra=other).stdout)["server"]["used"] is False
    assert json.loads(cli("status", "--root", sample_repo, "--json").stdout)["server"]["used"] is True
    # Nor does it serve a shell that asks for no server: its queries never ask it.
    alone = cli("status", "--root", sample_repo, "--json", server=False)
    assert json.loads(alone.stdout)["server"]["used"] is False
    assert (f"server: running (pid {pid}); RETRIEVAL_NO_SERVER is set here: queries from here run without it\n"
            in cli("status", "--root", sample_repo, server=False).stdout.decode())


def test_an_idle_server_exits_and_removes_its_socket(sample_repo, serve):
    pid = serve(sample_repo, idle=1)
    assert wait_gone(pid, 20)
    assert not os.path.exists(client.socket_path(client.store_dir(str(sample_repo))))


def test_serve_stop(sample_repo, serve):
    pid = serve(sample_repo)
    proc = cli("serve", "--stop", "--root", sample_repo, server=False)
    assert proc.returncode == 0 and f"pid {pid}".encode() in proc.stderr
    assert wait_gone(pid)
    again = cli("serve", "--stop", "--root", sample_repo, server=False)
    assert again.returncode == 0 and b"no server is running" in again.stderr


@pytest.mark.parametrize("extra", [["--detach"], ["--idle-timeout", "60"]])
def test_serve_stop_with_an_option_of_a_starting_server_is_a_usage_error(run, sample_repo, serve, extra):
    """`serve --stop --detach` stopped the server, ignored --detach and left none running."""
    pid = serve(sample_repo)
    result = run("serve", "--stop", *extra, "--root", sample_repo)
    assert result.exit_code == 2 and f"--stop takes no {extra[0]}" in result.stderr.splitlines()[-1]
    assert client.probe(client.store_dir(str(sample_repo)))["pid"] == pid  # still serving


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_an_idle_timeout_that_is_no_number_of_seconds_is_a_usage_error(run, sample_repo, value):
    """`nan` passed the range check: the server never idled out and wrote NaN into its info file."""
    result = run("serve", "--idle-timeout", value, "--root", sample_repo)
    assert result.exit_code == 2 and "--idle-timeout" in result.stderr
    assert not (sample_repo / ".retrieval").exists()  # nothing was started


def test_a_starting_server_records_its_own_pid_before_it_opens_the_indexes(sample_repo, monkeypatch):
    from retrieval.server import serve as serve_module
    from retrieval.server.warm import Warm

    directory = serve_module.prepare_serve_dir(client.store_dir(str(sample_repo)))
    with open(os.path.join(directory, "info.json"), "w") as fh:
        json.dump({"pid": 1}, fh)  # the previous server's
    seen = []
    monkeypatch.setattr(Warm, "open", lambda self: seen.append(serve_module._running_pid(directory)) or
                        (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        serve_module.Server(str(sample_repo)).start()
    assert seen == [str(os.getpid())]


def test_serve_stop_never_signals_a_process_that_is_not_a_server(sample_repo):
    import fcntl

    from retrieval.server import serve as serve_module

    directory = serve_module.prepare_serve_dir(client.store_dir(str(sample_repo)))
    bystander = subprocess.Popen(["sleep", "60"])  # took the pid a dead server recorded
    try:
        with open(os.path.join(directory, "info.json"), "w") as fh:
            json.dump({"pid": bystander.pid}, fh)
        with open(os.path.join(directory, "lock"), "a") as held:  # a server holds the lock, silent
            fcntl.flock(held, fcntl.LOCK_EX)
            with pytest.raises(RuntimeError, match="did not stop"):
                serve_module.stop(str(sample_repo), timeout=1)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_serve_detach_on_a_missing_root_says_so_and_creates_nothing(tmp_path):
    missing = tmp_path / "no-such-repo"
    proc = cli("serve", "--detach", "--root", missing, server=False)
    assert proc.returncode == 1 and f"error: root does not exist: {missing}".encode() in proc.stderr
    assert not missing.exists()


def test_serve_stop_on_a_missing_root_says_so(tmp_path):
    """It said "no server is running" and exited 0 for a root that is not there (a typo)."""
    missing = tmp_path / "no-such-repo"
    proc = cli("serve", "--stop", "--root", missing, server=False)
    assert proc.returncode == 1 and strip_probe(proc.stderr) == f"error: root does not exist: {missing}\n".encode()


def test_a_detached_start_that_takes_a_while_says_what_it_waits_for(sample_repo, tmp_path):
    """A first build before the server answers took 19 s on rails without a word."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(  # the server process alone is slow to start
        "import sys, time\n"
        "if any('retrieval.server.serve import main' in a for a in sys.orig_argv):\n"
        "    time.sleep(3)\n")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    proc = cli("serve", "--detach", "--root", sample_repo, "--idle-timeout", 60, server=False,
               env_extra={"PYTHONPATH": path})
    try:
        assert proc.returncode == 0, proc.stderr
        log = os.path.join(client.serve_dir(client.store_dir(str(sample_repo))), "log")
        assert strip_probe(proc.stderr).decode().splitlines()[0] == (
            f"starting the server of {sample_repo}: it opens the indexes built there first, refreshing them "
            f"(and building lexical's if missing; its log: {log})")
    finally:
        info = client.probe(client.store_dir(str(sample_repo)))
        if info:
            signal_if_alive(info["pid"], signal.SIGTERM)


def test_a_detached_server_that_dies_silently_is_reported_as_such_not_by_an_old_log_line(sample_repo, tmp_path):
    directory = client.serve_dir(client.store_dir(str(sample_repo)))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "log"), "w") as fh:
        fh.write("serve: exiting: stopped\n")  # what the last server said
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(  # the server process alone dies at once, saying nothing
        "import os, sys\n"
        "if any('retrieval.server.serve import main' in a for a in sys.orig_argv):\n"
        "    os._exit(3)\n")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    proc = cli("serve", "--detach", "--root", sample_repo, server=False, env_extra={"PYTHONPATH": path})
    assert proc.returncode == 1
    assert b"error: the server exited with status 3" in proc.stderr, proc.stderr


def test_the_socket_appears_only_when_the_server_listens_and_replaces_a_stale_one(tmp_path, monkeypatch):
    """A client seeing the path connects at once: bound but not yet listening, it was refused and
    ran its command itself (a test that waited for the path saw that under load)."""
    from retrieval.server import serve as serve_module

    path = str(tmp_path / "serve.sock")
    with open(path, "w"):  # a killed server's leftover
        pass
    seen = []
    real_listen = socket.socket.listen

    def listen(sock, *args):
        seen.append(os.path.exists(path) and not os.path.isfile(path))  # a socket already at path?
        return real_listen(sock, *args)

    monkeypatch.setattr(socket.socket, "listen", listen)
    sock = serve_module._bind(path)
    try:
        assert seen == [False]
        assert stat.S_ISSOCK(os.stat(path).st_mode) and stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert os.listdir(tmp_path) == ["serve.sock"]  # no temporary name left
        with socket.socket(socket.AF_UNIX) as peer:
            peer.connect(path)
    finally:
        sock.close()


def test_a_header_whose_counts_exceed_its_bytes_is_refused_before_marshal_makes_room_for_them():
    """80 bytes of a request, a list's count corrupted to 1.7 billion: marshal.loads made its slots
    first, and the server spent 39 s and 13 GB to say the header was malformed."""
    import marshal
    import resource

    corrupt = bytes.fromhex("7bda026f70da0372756eda04747267765b02000000da057175657279da0178a803637764fa042f746d707f07"
                            "76657273696f59da0176da03656e767b30da09737464696e5f6c656ee90000000030")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match="not a header"):
        client.parse_header(corrupt, ("stdin_len",), 1 << 20)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB: no room was made
    header = {"op": "run", "argv": ["query", "zq", "--json"], "cwd": "/tmp/é", "env": client.environment(),
              "stdin_len": 3, "version": client.code_version(), "none": None, "flags": (True, False), "ratio": 1.5,
              "big": 2 ** 70, "nested": {"a": [1, {"b": -5}]}, "empty": [], "set": frozenset({"x"})}
    assert client.parse_header(marshal.dumps(header), ("stdin_len",), 1 << 20) == (header, [3])


def test_a_malformed_request_gets_an_error_and_the_server_goes_on(sample_repo, serve):
    pid = serve(sample_repo)
    path = client.socket_path(client.store_dir(str(sample_repo)))
    for garbage in (b"\x00\x00\x00\x05hello", b"\x00\x00\x00\x01" + b"N", (7).to_bytes(4, "big") + b"\xff" * 7):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(20)
            sock.connect(path)
            sock.sendall(garbage)
            header, _ = client.receive(sock)
            assert header["ok"] is False and "malformed" in header["error"], header
    store = client.store_dir(str(sample_repo))
    for bad in ({"op": "run", "argv": ["clean", "--root", str(sample_repo)], "cwd": "/",
                 "version": client.code_version(), "env": client.environment()},
                {"op": "run", "argv": "query x", "cwd": "/", "version": client.code_version(), "env": client.environment()},
                {"op": "launch"},
                {"op": "run", "argv": ["query", "x"], "cwd": "/", "version": "0.0.0+other", "env": client.environment()}):
        header, _ = client.call(store, bad)
        assert header["ok"] is False, bad
    assert (sample_repo / ".retrieval").is_dir()  # `clean` was refused
    proc = cli("query", "--root", sample_repo, "parse config")
    assert answered_by_server(proc) and proc.stdout.startswith(b"src/app/config.py")
    assert client.probe(store)["pid"] == pid


def test_a_client_that_connects_and_stalls_holds_up_no_other_client(sample_repo, serve):
    pid = serve(sample_repo)
    store = client.store_dir(str(sample_repo))
    path = client.socket_path(store)
    with socket.socket(socket.AF_UNIX) as silent, socket.socket(socket.AF_UNIX) as halfway:
        silent.connect(path)  # connects, sends nothing
        halfway.connect(path)
        halfway.sendall((50).to_bytes(4, "big") + b"\x00" * 3)  # a header that never ends
        header, _ = client.call(store, {"op": "ping"}, reply_timeout=5)  # the server waited 10 s on each
        assert header["ok"] and header["info"]["pid"] == pid
        proc = cli("query", "--root", sample_repo, "parse config")
        assert answered_by_server(proc) and proc.stdout.startswith(b"src/app/config.py")


def test_a_request_that_never_arrives_whole_is_dropped_after_the_request_timeout(sample_repo, tmp_path, monkeypatch):
    from retrieval.server import serve as serve_module

    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.setattr(serve_module, "REQUEST_TIMEOUT", 0.5)
    server = serve_module.Server(str(sample_repo), idle_timeout=0)
    server.start()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with socket.socket(socket.AF_UNIX) as stalled:
            stalled.connect(client.socket_path(client.store_dir(str(sample_repo))))
            stalled.sendall(b"\x00\x00")
            stalled.settimeout(10)
            started = time.monotonic()
            assert stalled.recv(1) == b""  # closed by the server, with no answer
            assert time.monotonic() - started < 5
        header, _ = client.call(client.store_dir(str(sample_repo)), {"op": "ping"}, reply_timeout=5)
        assert header["ok"]
    finally:
        server.stopping = True
        thread.join(10)
        server.close()


def test_a_client_that_stops_reading_its_answer_is_dropped_and_holds_up_no_other(sample_repo, tmp_path, monkeypatch):
    """A `retrieval query` stopped with Ctrl-Z while a large answer arrived: the answer was sent
    with no deadline, and every other client waited (up to 600 s) behind it."""
    from retrieval.server import serve as serve_module

    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    monkeypatch.setattr(serve_module, "REQUEST_TIMEOUT", 0.5)
    server = serve_module.Server(str(sample_repo), idle_timeout=0)
    server.start()
    answer = server.answer
    server.answer = lambda header, payload, **kw: (  # an answer far larger than the socket's buffers
        (lambda conn: conn.sendall(b"x" * 16_000_000)) if header.get("op") == "run" else answer(header, payload, **kw))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    store = client.store_dir(str(sample_repo))
    try:
        with socket.socket(socket.AF_UNIX) as stalled:
            stalled.connect(client.socket_path(store))
            client.send(stalled, {"op": "run", "argv": ["query", "x"], "cwd": "/", "version": client.code_version(),
                                  "env": client.environment(), "encodings": {}, "stdin_len": 0})
            time.sleep(0.2)  # the server is sending; this client reads nothing
            started = time.monotonic()
            header, _ = client.call(store, {"op": "ping"}, reply_timeout=20)
            assert header["ok"] and time.monotonic() - started < 10
    finally:
        server.stopping = True
        thread.join(10)
        server.close()


def test_a_server_of_another_code_version_is_not_used(sample_repo, serve, monkeypatch, capsysbinary):
    serve(sample_repo)
    monkeypatch.setattr(client, "code_version", lambda: "0.0.0+elsewhere")
    assert client.try_run(["query", "--root", str(sample_repo), "parse config"]) is None
    assert capsysbinary.readouterr().out == b""  # nothing written: the caller runs it itself


def test_a_server_whose_root_vanished_exits(tmp_path, make_tree, serve, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    root = make_tree({"a.py": "def zqgone():\n    pass\n"})
    pid = serve(root)
    import shutil

    shutil.rmtree(root)
    assert wait_gone(pid, 20)


def test_a_server_whose_store_was_removed_exits_without_building_it_again(sample_repo, serve):
    import shutil

    pid = serve(sample_repo)
    shutil.rmtree(sample_repo / ".retrieval")
    (sample_repo / "src/app/late.py").write_text("def zqlate():\n    pass\n")  # a change to refresh ahead for
    assert wait_gone(pid, 20)
    assert not (sample_repo / ".retrieval").exists()  # `clean` stays clean


def test_clean_stops_the_roots_server_at_once(sample_repo, serve):
    """It ended only when the server noticed its store gone, seconds later (a newcomer's check)."""
    pid = serve(sample_repo)
    cleaned = cli("clean", "--root", sample_repo, server=False)
    assert cleaned.returncode == 0 and wait_gone(pid, 1.0)
    assert not (sample_repo / ".retrieval").exists()


def test_the_socket_is_this_users_only(sample_repo, serve):
    pid = serve(sample_repo)
    path = client.socket_path(client.store_dir(str(sample_repo)))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    if os.path.isdir(f"/proc/{pid}/fd"):  # and no network socket at all: every one is a Unix socket
        # Sockets open before and after the table is read: a connection closing meanwhile (the
        # fixture's own readiness probe) is in neither the table nor the question.
        before = _socket_fds(pid)
        unix = _socket_inodes("unix")
        inodes = before & _socket_fds(pid)
        assert inodes <= unix and inodes
        assert not inodes & (_socket_inodes("tcp") | _socket_inodes("tcp6") | _socket_inodes("udp"))


def _socket_fds(pid: int) -> set[str]:
    """The inodes of the sockets process `pid` holds open."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed while listed
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def _socket_inodes(table: str) -> set[str]:
    column = 6 if table == "unix" else 9
    try:
        with open(f"/proc/net/{table}") as fh:
            return {line.split()[column] for line in fh.read().splitlines()[1:] if len(line.split()) > column}
    except OSError:
        return set()


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="SO_PEERCRED is Linux's")
def test_a_peer_with_another_uid_is_refused(sample_repo, tmp_path, monkeypatch):
    """The check runs on the kernel's credentials of the connecting process: a server told to
    accept only some other uid refuses us, as it would refuse another user."""
    from retrieval.server.serve import Server, peer_uid

    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    import io

    log = io.StringIO()
    server = Server(str(sample_repo), idle_timeout=0, allowed_uid=os.getuid() + 1, log=log)
    server.start()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        store = client.store_dir(str(sample_repo))
        try:
            header, _ = client.call(store, {"op": "ping"}, reply_timeout=20)
        except OSError:  # the server may close before our request is written
            header = None
        assert header in (None, {"ok": False, "error": "refused: another user"})
        assert f"refused a connection from uid {os.getuid()}" in log.getvalue()
        left, right = socket.socketpair()
        assert peer_uid(left) == os.getuid()
        left.close(), right.close()
    finally:
        server.stopping = True
        thread.join(10)
        server.close()


def test_the_client_finds_the_store_where_the_store_module_puts_it(tmp_path, monkeypatch):
    assert client.store_dir(str(tmp_path)) == layout.store_dir(str(tmp_path))
    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "elsewhere"))
    assert client.store_dir(str(tmp_path / "r")) == layout.store_dir(str(tmp_path / "r"))
    # A name the store cuts short, and a path through a link (the warm path was never found for them).
    (tmp_path / ("é" * 120 + "x" * 14)).mkdir()
    (tmp_path / "link").symlink_to(tmp_path / ("é" * 120 + "x" * 14), target_is_directory=True)
    for root in (tmp_path / ("é" * 120 + "x" * 14), tmp_path / "link"):
        assert client.store_dir(str(root)) == layout.store_dir(str(root))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_during_a_request_ends_the_server_and_leaves_the_client_to_run_it(
        sample_repo, monkeypatch, signum):
    """Taken by the command a request runs, SIGTERM was its exit 0 with no output (SIGINT its 130)
    and the server went on; the client must get no answer (it then runs the command itself)."""
    from retrieval import service
    from retrieval.server import serve as serve_module

    root = str(sample_repo)
    service.refresh(root, "lexical")
    ran = []

    def slow_step(*args, **kwargs):  # a step of the real query command
        ran.append(time.monotonic())
        os.kill(os.getpid(), signum)
        time.sleep(10)  # the signal lands here, in the middle of the command
        return None

    monkeypatch.setattr(service, "remembered_options", slow_step)
    monkeypatch.delenv("RETRIEVAL_NO_SERVER", raising=False)
    answers = []

    def query_through_the_server():
        path = client.socket_path(client.store_dir(root))
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        answers.append(client.try_run(["query", "alpha", "--root", root]))

    caller = threading.Thread(target=query_through_the_server)
    caller.start()
    if signum == signal.SIGINT:
        with pytest.raises(KeyboardInterrupt):
            serve_module.run(root, idle_timeout=30)
    else:
        assert serve_module.run(root, idle_timeout=30) == "stopped by SIGTERM"
    ended = time.monotonic()
    caller.join(30)
    assert ran and answers == [None]  # no answer: the client runs the query itself
    # Ended at the signal, not when the command finished (its 10 s); counted from the signal, not
    # from the server's start, which a loaded machine can take seconds over.
    assert ended - ran[0] < 9
    assert not os.path.exists(client.socket_path(client.store_dir(root)))


def test_a_command_for_another_root_is_not_run_by_this_roots_server(sample_repo, tmp_path, serve):
    """`query --root A x --root B`: the client asked A's server (the first --root) and the server ran
    it (click takes the last), opening and indexing B inside A's process, unwatched."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.py").write_text("def zqotherroot():\n    return 2\n")
    serve(sample_repo)
    mixed = cli("query", "--root", sample_repo, "zqotherroot", "--root", other, "--json")
    assert mixed.returncode == 0, mixed.stderr
    assert not answered_by_server(mixed)  # run by the client itself
    assert [r["path"] for r in json.loads(mixed.stdout)["results"]] == ["b.py"]
    # From the other root's directory, without --root, the command is that root's too.
    (other / ".git").mkdir()
    here = cli("query", "zqotherroot", "--json", cwd=other)
    assert [r["path"] for r in json.loads(here.stdout)["results"]] == ["b.py"]
    # The server's own root is still answered by it.
    own = cli("query", "--root", sample_repo, "parse config", "--json")
    assert answered_by_server(own), own.stderr


def test_a_server_whose_code_changed_on_disk_exits_instead_of_looking_alive(sample_repo, tmp_path):
    """After an edit or upgrade every client runs the command itself (other code), yet the old
    server stayed up: `status` said running, `serve --detach` said already serving, and the
    rejected requests held off its idle exit."""
    import shutil

    import retrieval

    copy = tmp_path / "site"
    shutil.copytree(os.path.dirname(retrieval.__file__), copy / "retrieval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(copy)}
    started = cli("serve", "--detach", "--root", sample_repo, "--idle-timeout", 120, server=False, env_extra=env,
                  cwd=tmp_path)  # not the project directory, whose package would come first
    assert started.returncode == 0, started.stderr
    pid = client.probe(client.store_dir(str(sample_repo)))["pid"]
    try:
        with open(copy / "retrieval" / "records.py", "a", encoding="utf-8") as fh:
            fh.write("\n# upgraded\n")
        deadline = time.monotonic() + 30
        while client.probe(client.store_dir(str(sample_repo))) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert client.probe(client.store_dir(str(sample_repo))) is None
        log = (layout.store_dir(str(sample_repo)) + "/serve/log")
        assert "exiting: its code changed on disk" in open(log, encoding="utf-8").read()
    finally:
        signal_if_alive(pid, signal.SIGTERM)


def test_serve_detach_run_at_once_by_several_callers_makes_one_server_and_every_caller_succeeds(sample_repo):
    """Two agent sessions starting in one repository: the callers whose servers lost the race for the
    lock exited 1 ("a server is already running") though a server runs, which is what they asked."""
    env = dict(os.environ, RETRIEVAL_NO_SERVER="1")
    argv = [sys.executable, "-m", "retrieval.entry", "serve", "--detach", "--root", str(sample_repo),
            "--idle-timeout", "60"]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    try:
        results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in procs]
        info = client.probe(client.store_dir(str(sample_repo)))
        assert info is not None
        assert all(code == 0 for code, _ in results), results
        assert {err.strip().rsplit("(pid ", 1)[1] for _, err in results} == {f"{info['pid']})"}  # one server
    finally:
        cli("serve", "--stop", "--root", sample_repo, server=False)


def test_serving_a_read_only_store_is_one_line_saying_how_to_keep_the_index_elsewhere(sample_repo, monkeypatch):
    import errno

    from click.testing import CliRunner

    from retrieval.server import serve as serve_module
    from retrieval.server.commands import serve_command

    real_mkdir = os.mkdir

    def read_only(path, *args, **kwargs):
        if str(path).endswith(os.sep + "serve"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(serve_module.os, "mkdir", read_only)
    result = CliRunner().invoke(serve_command, ["--detach", "--root", str(sample_repo)])
    assert result.exit_code == 1
    assert result.stderr == (f"error: cannot serve the index at {sample_repo / '.retrieval'}: Read-only file "
                             "system (set RETRIEVAL_INDEX_DIR=/a/writable/directory to keep indexes elsewhere)\n")


@pytest.fixture
def slow_server(sample_repo, tmp_path, monkeypatch):
    """slow_server(run) starts an in-process server of sample_repo whose `run` requests go to
    run(header, started) (None from it: answered as usual), on a thread stopped at the end;
    (store, the fields of a run request)."""
    from retrieval.server import serve as serve_module

    monkeypatch.setenv("RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    servers = []

    def start(run):
        server = serve_module.Server(str(sample_repo), idle_timeout=0)
        server.start()
        answer = server.answer

        def answering(header, payload, started=lambda: None):
            reply = run(header, started) if header.get("op") == "run" else None
            return answer(header, payload, started=started) if reply is None else reply

        server.answer = answering
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        request = {"op": "run", "cwd": str(sample_repo), "version": client.code_version(),
                   "env": client.environment(), "encodings": {}, "stdin_len": 0}
        return client.store_dir(str(sample_repo)), request

    yield start
    for server, thread in servers:
        server.stopping = True
        thread.join(10)
        server.close()


def _answered_empty(conn):
    client.send(conn, {"ok": True, "code": 0, "stdout_len": 0, "stderr_len": 0})


def test_a_request_behind_a_slow_one_is_given_up_at_once_and_never_run(slow_server):
    """Requests run one at a time: a query behind a first embedding build waited up to 600 s for
    its answer. The server now says when it starts a command; a client not told within
    STARTED_TIMEOUT runs the command itself, and the server does not run the abandoned request."""
    ran = []

    def slow(header, started):
        ran.append(header["argv"])
        started()
        time.sleep(4)
        return _answered_empty

    store, request = slow_server(slow)
    first = threading.Thread(target=client.call, args=(store, dict(request, argv=["query", "slow"])),
                             kwargs={"started_timeout": 3.0})
    first.start()
    deadline = time.monotonic() + 60
    while not ran:  # the slow one has started
        assert time.monotonic() < deadline, "the first request never started"
        time.sleep(0.01)
    began = time.monotonic()
    with pytest.raises(OSError):
        client.call(store, dict(request, argv=["query", "behind"]), started_timeout=1.0)
    assert time.monotonic() - began < 3
    first.join(20)
    # Answered after the abandoned request, which the server has read (and dropped) by then.
    header, _ = client.call(store, {"op": "ping"}, reply_timeout=20)
    assert header["ok"]  # and goes on
    assert ran == [["query", "slow"]]


def test_status_beside_a_long_command_says_the_server_runs_and_is_busy(sample_repo, slow_server):
    """A server answers one request at a time: `status` beside a long query waited 8 s for a ping
    and then said no server ran (and `"server": null`)."""
    running, release = threading.Event(), threading.Event()

    def slow(header, started):
        if header["argv"][0] != "query":
            return None  # status: as usual
        started()
        running.set()
        release.wait(60)
        return _answered_empty

    store, request = slow_server(slow)
    first = threading.Thread(target=client.call, args=(store, dict(request, argv=["query", "slow"])),
                             kwargs={"started_timeout": 3.0})
    try:
        first.start()
        assert running.wait(60)
        # Asked of the server first (it does not start it), then answered here; and without asking it.
        text = cli("status", "--root", sample_repo)
        assert text.returncode == 0, text.stderr
        assert text.stdout.decode().splitlines()[-1] == (
            f"server: running (pid {os.getpid()}), busy with another command")
        as_json = cli("status", "--root", sample_repo, "--json", server=False)
        assert json.loads(as_json.stdout)["server"] == {"pid": os.getpid(), "busy": True}
        # `serve --detach` finds it running too (it started another, which the lock refused, 9 s later).
        detach = cli("serve", "--detach", "--root", sample_repo, server=False)
        assert detach.returncode == 0
        assert strip_probe(detach.stderr).decode() == (
            f"already serving {sample_repo} (pid {os.getpid()}, busy with another command)\n")
    finally:
        release.set()
        first.join(20)


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_foreground_server_stopped_by_a_signal_exits_as_a_command_killed_by_it(sample_repo, signum, code):
    """SIGTERM ended `retrieval serve` with exit 0, though every other command exits 143 for it."""
    env = dict(os.environ, RETRIEVAL_NO_SERVER="1")
    proc = subprocess.Popen([sys.executable, "-m", "retrieval.entry", "serve", "--root", str(sample_repo)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while client.probe(client.store_dir(str(sample_repo))) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == code
        said = proc.stderr.read().decode()
        assert "Traceback" not in said
        # How it sees edits, in words (it named its watcher's class: `InotifyWatcher`).
        assert f"serve: serving {sample_repo} (pid {proc.pid}; edits seen as they are saved (inotify))" in said
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_while_the_server_answers_exits_130_without_a_traceback(monkeypatch, capsys):
    """A 2 MB query on stdin, interrupted while the server worked on it, printed KeyboardInterrupt's
    traceback from the client's socket read."""
    from retrieval import entry

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(client, "try_run", interrupted)
    monkeypatch.setattr(sys, "argv", ["retrieval", "query", "alpha"])
    with pytest.raises(SystemExit) as stopped:
        entry.main()
    assert stopped.value.code == 130 and capsys.readouterr().err == ""


def test_a_query_on_stdin_over_the_limit_is_refused_by_the_command_not_sent_to_the_server(sample_repo, serve):
    """`query - < /dev/zero` read until the kernel killed the process."""
    from retrieval.streams import MAX_QUERY_BYTES

    serve(sample_repo)
    proc = cli("query", "--root", sample_repo, "-", input=b"a " * (MAX_QUERY_BYTES // 2 + 1))
    assert proc.returncode == 2 and not answered_by_server(proc)
    assert f"the query on stdin is over {MAX_QUERY_BYTES:,} bytes" in proc.stderr.decode()
    fits = cli("query", "--root", sample_repo, "-", input=b"alpha")
    assert fits.returncode == 0 and answered_by_server(fits)


def test_a_suspended_server_makes_detach_fail_saying_so_and_stop_ends_it(sample_repo, serve):
    """A server stopped with Ctrl-Z holds the lock and answers nothing: `serve --detach` waited for
    ever for it, and `serve --stop` gave up after 10 s saying it "did not stop"."""
    pid = serve(sample_repo)
    os.kill(pid, signal.SIGSTOP)
    try:
        # Every command waited seconds for it (a query 3.2 s, status 8.2 s), saying nothing. Timed
        # against the same two run without a server: a loaded machine takes seconds over them alone.
        begun = time.monotonic()
        cli("query", "--root", sample_repo, "config", server=False)
        cli("status", "--root", sample_repo, server=False)
        alone = time.monotonic() - begun
        begun = time.monotonic()
        answered = cli("query", "--root", sample_repo, "config")
        assert answered.returncode == 0 and answered.stdout and not answered_by_server(answered)
        assert f"note: the server of this root (pid {pid}) is stopped (Ctrl-Z?)" in answered.stderr.decode()
        status = cli("status", "--root", sample_repo)
        assert f"server: stopped (pid {pid}; `kill -CONT {pid}`" in status.stdout.decode()
        assert time.monotonic() - begun < alone + 2.5, alone
        started = cli("serve", "--detach", "--root", sample_repo, server=False, timeout=90)
        assert started.returncode == 1
        assert f"(pid {pid}) is stopped (Ctrl-Z?): `kill -CONT {pid}`" in started.stderr.decode()
        begun = time.monotonic()
        stopped = cli("serve", "--stop", "--root", sample_repo, server=False)
        assert stopped.returncode == 0 and f"(pid {pid})" in stopped.stderr.decode()
        assert time.monotonic() - begun < 8 and wait_gone(pid)
    finally:
        signal_if_alive(pid, signal.SIGCONT)


def test_a_root_whose_name_holds_a_newline_is_said_on_one_line(tmp_path):
    """`serve --detach` and `serve --stop` printed the name raw, one message on two lines."""
    root = tmp_path / "we\nird"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    try:
        started = cli("serve", "--detach", "--root", root, "--idle-timeout", 60, server=False)
        assert started.returncode == 0 and strip_probe(started.stderr).decode().count("\n") == 1
        assert "we\\nird (pid " in started.stderr.decode()
    finally:
        stopped = cli("serve", "--stop", "--root", root, server=False)
    assert stopped.returncode == 0 and strip_probe(stopped.stderr).decode().count("\n") == 1


def test_a_server_that_cannot_write_its_info_on_a_full_disk_says_so_in_one_line_and_leaves_no_temp(
        make_tree, monkeypatch, capsys):
    """It said `error: OSError: [Errno 28] No space left on device` (detached) or `error: [Errno 28]
    ...` (in the foreground), the traceback in its log, and left an empty info.json.<pid>.tmp per try."""
    import errno

    from retrieval.server import serve as serving

    root = make_tree({"a.py": "def zqfull():\n    pass\n"})

    def no_space(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(serving.os, "replace", no_space)
    assert serving.main(["--root", str(root)]) == 1
    store = layout.store_dir(str(root))
    assert capsys.readouterr().err == f"error: cannot serve the index at {store}: {os.strerror(errno.ENOSPC)}\n"
    assert [n for n in os.listdir(os.path.join(store, "serve")) if n.endswith(".tmp")] == []

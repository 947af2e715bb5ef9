"""What must never happen: excluded files in the store, reads or writes outside the root, network
access, secrets in messages."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
import zlib

import pytest

from retrieval.discover import discover_files, is_secret_name
from retrieval.read import read_source

from conftest import network_guard
from reliability_harness import child_env, run_cli


def store_bytes(root) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((root / ".retrieval").rglob("*")) if p.is_file())


def marker(name: str) -> str:
    # One lower-case token: it survives tokenizing unchanged, so the lexicon would hold it verbatim.
    return f"zq{name}marker"


# -- the network ----------------------------------------------------------------------------------


def test_sockets_are_disabled_in_the_test_process():
    with pytest.raises(network_guard.NetworkAccessError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with pytest.raises(network_guard.NetworkAccessError):
        urllib.request.urlopen("http://example.com/", timeout=1)
    with pytest.raises(network_guard.NetworkAccessError):
        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b"x", ("::1", 53))
    assert len(network_guard.ATTEMPTS) == 3
    network_guard.ATTEMPTS.clear()  # expected here; any other test that tries fails
    left, right = socket.socketpair()  # local IPC stays possible
    left.close(), right.close()


def test_sockets_are_disabled_in_every_python_subprocess_the_tests_start(sample_repo):
    proc = subprocess.run([sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', 9))"],
                          capture_output=True, text=True, env=child_env(), timeout=60)
    assert proc.returncode == network_guard.EXIT_STATUS
    assert "network access attempted" in proc.stderr
    # So each CLI run in the suite proves the core stays offline; one for good measure:
    for argv in (["index", "--root", sample_repo], ["query", "--root", sample_repo, "config"],
                 ["status", "--root", sample_repo], ["clean", "--root", sample_repo]):
        proc = run_cli(argv)
        assert proc.returncode == 0, proc.stderr


# -- excluded files never reach the store ------------------------------------------------------


def test_files_the_deny_list_or_ignore_rules_exclude_never_reach_the_store(make_tree, tmp_path, run):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.py").write_text(f"value = '{marker('outside')}'\n")
    excluded = {
        ".env": marker("env"), "id_rsa": marker("rsa"), "deploy/prod.pem": marker("pem"),
        "credentials.json": marker("creds"), "db/app.sqlite": marker("sqlite"),
        "local_settings.py": marker("gitignored"), "generated/out.py": marker("gitignoreddir"),
        "fixtures/big.py": marker("retrievalignore"), "src/.ignore_me.py": marker("dotignore"),
        "node_modules/lib/index.js": marker("nodemodules"), ".git/config": marker("git"),
        "vendor/pkg/mod.go": marker("vendor"), "tmp/scratch.py": marker("excludeglob"),
    }
    files = {path: f"token = '{token}'\n" for path, token in excluded.items()}
    files.update({
        ".gitignore": "local_settings.py\ngenerated/\n",
        ".retrievalignore": "fixtures/\n",
        "src/.ignore": ".ignore_me.py\n",
        "src/app.py": f"def visible():\n    return '{marker('visible')}'\n",
    })
    root = make_tree(files)
    os.symlink(outside / "elsewhere.py", root / "src" / "linked.py")
    os.symlink(outside, root / "linked_dir")

    assert run("index", "--root", root, "--exclude", "tmp/").exit_code == 0
    data = store_bytes(root)
    assert marker("visible").encode() in data, "the check must be able to see indexed content"
    for path, token in [*excluded.items(), ("src/linked.py", marker("outside"))]:
        assert token.encode() not in data, path
        assert json.loads(run("query", "--root", root, "--json", token).stdout)["results"] == []
    manifest = json.loads((root / ".retrieval" / "lexical" / "manifest.json").read_text())
    assert manifest["files"]["path"] == ["src/app.py"]


@pytest.mark.parametrize("how", ["gitignore", "retrievalignore-directory", "exclude-option"])
def test_a_file_excluded_after_it_was_indexed_leaves_no_trace_in_the_store(make_tree, run, how):
    secret = marker("latersecret")
    root = make_tree({
        "private/notes_private.py": f"api = '{secret}'\n",
        **{f"src/m{i}.py": f"def module_{i}():\n    return {i}\n" for i in range(12)},
    })
    assert run("index", "--root", root).exit_code == 0
    assert secret.encode() in store_bytes(root)
    for i in range(3):  # more segments, so the purge has something to merge
        (root / "src" / f"extra_{i}.py").write_text(f"def extra_{i}():\n    return {i}\n")
        assert run("index", "--root", root).exit_code == 0
    if how == "gitignore":
        (root / ".gitignore").write_text("notes_private.py\n")
    elif how == "retrievalignore-directory":
        (root / ".retrievalignore").write_text("private/\n")
    if how == "exclude-option":
        assert run("index", "--root", root, "--exclude", "notes_*").exit_code == 0
    else:
        # Without the purge the file's postings would stay on disk, marked deleted, until a merge.
        assert run("index", "--root", root).exit_code == 0
    assert secret.encode() not in store_bytes(root)
    assert json.loads(run("query", "--root", root, "--json", secret).stdout)["results"] == []
    assert json.loads(run("query", "--root", root, "--json", "module_7").stdout)["results"]


# -- nothing outside the root is read or written ---------------------------------------------------


def test_a_file_swapped_for_a_link_out_of_the_root_is_never_shown(make_tree, tmp_path, run):
    outside = tmp_path / "private.txt"
    outside.write_text(f"def visible_name():\n    return '{marker('private')}'\n")
    root = make_tree({"src/app.py": "def visible_name():\n    return 'public'\n"})
    assert run("index", "--root", root).exit_code == 0
    os.unlink(root / "src" / "app.py")
    os.symlink(outside, root / "src" / "app.py")
    result = run("query", "--root", root, "--json", "--stale-ok", "--snippet-lines", "5", "visible name")
    (hit,) = json.loads(result.stdout)["results"]
    assert hit["path"] == "src/app.py" and hit["snippet"] == ""
    assert marker("private") not in result.output
    # Refreshing drops the link (links are never followed) and never reads its target.
    result = run("query", "--root", root, "--json", "--snippet-lines", "5", "visible name")
    assert json.loads(result.stdout)["results"] == []
    assert marker("private").encode() not in store_bytes(root)


@pytest.mark.parametrize("swap", ["file", "directory"])
def test_a_hit_swapped_for_a_link_to_a_file_inside_the_root_is_never_shown(make_tree, run, swap):
    """The link's target never indexed (`.env`): the snippet read the link's target, since the path
    was resolved before the open that refuses links."""
    root = make_tree({"src/app.py": "def visible_name():\n    return 'public'\n",
                      ".env": f"API_KEY={marker('env')}\n", "keys/app.py": f"KEY = '{marker('env')}'\n",
                      ".gitignore": "keys/\n"})
    assert run("index", "--root", root).exit_code == 0
    if swap == "file":
        os.unlink(root / "src" / "app.py")
        os.symlink("../.env", root / "src" / "app.py")
    else:  # a directory on the hit's path
        os.rename(root / "src", root / "src.old")
        os.symlink("keys", root / "src")
    result = run("query", "--root", root, "--json", "--stale-ok", "--snippet-lines", "5", "visible name")
    (hit,) = json.loads(result.stdout)["results"]
    assert hit["path"] == "src/app.py" and hit["snippet"] == ""
    assert marker("env") not in result.output


def test_a_file_swapped_for_a_link_or_a_fifo_after_discovery_is_not_read(make_tree, tmp_path):
    outside = tmp_path / "private.txt"
    outside.write_text(marker("swapped"))
    root = make_tree({"a.py": "a = 1\n", "b.py": "b = 2\n"})
    found = {f.path: f for f in discover_files(str(root))}
    os.unlink(root / "a.py")
    os.symlink(outside, root / "a.py")
    os.unlink(root / "b.py")
    os.mkfifo(root / "b.py")  # opening a FIFO for reading would block until a writer came
    swapped = read_source(found["a.py"])
    assert (swapped.text, swapped.skip_reason) == (None, "symlink")
    fifo = read_source(found["b.py"])
    assert (fifo.text, fifo.skip_reason) == (None, "unreadable")


def _tamper_segment(root, name, edit) -> None:
    """Rewrite one file of the lexical segment as a tamperer can: its size and CRC-32 recorded anew."""
    (segment,) = [p for p in (root / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    data = json.loads((segment / name).read_text())
    edit(data)
    (segment / name).write_text(json.dumps(data))
    meta = json.loads((segment / "seg.json").read_text())
    meta["sizes"][name] = (segment / name).stat().st_size
    meta["crc32"][name] = zlib.crc32((segment / name).read_bytes())
    (segment / "seg.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("stale_ok", [True, False])
@pytest.mark.parametrize("named", ["../outside.py", "src/../../outside.py", "absolute"])
def test_a_tampered_index_naming_paths_outside_the_root_is_rebuilt(make_tree, tmp_path, run, named, stale_ok):
    """A store committed to a repository can name any path: its hits printed `/etc/passwd` or
    `../outside.py` (with no snippet), after a refresh too, which drops only files its manifest names."""
    (tmp_path / "outside.py").write_text(f"def tampered_target():\n    return '{marker('tampered')}'\n")
    root = make_tree({"src/tampered_target.py": "def tampered_target():\n    return 1\n"})
    assert run("index", "--root", root).exit_code == 0
    named = str(tmp_path / "outside.py") if named == "absolute" else named
    _tamper_segment(root, "files.json", lambda files: files["path"].__setitem__(0, named))
    argv = ["--stale-ok"] if stale_ok else []
    result = run("query", "--root", root, "--json", *argv, "--snippet-lines", "5", "tampered target")
    (hit,) = json.loads(result.stdout)["results"]
    assert hit["path"] == "src/tampered_target.py" and hit["snippet"] == "def tampered_target():\n    return 1\n"
    assert "the lexical index is damaged (a hit names a path outside the root); rebuilding it" in result.stderr
    assert marker("tampered") not in result.output and "outside.py" not in result.output


@pytest.mark.parametrize("count", [10**10, 10**30])
def test_a_tampered_lexicon_asking_for_more_postings_than_the_store_holds_is_rebuilt(make_tree, run, count):
    """Read as given, the count asked for 80 GB (`error: out of memory` on every query) or more
    than an int holds (a traceback)."""
    root = make_tree({"app.py": "def tampered_target():\n    return 1\n"})
    assert run("index", "--root", root).exit_code == 0

    def inflate(shard):
        for entry in shard.values():
            entry[1] = count

    (segment,) = [p for p in (root / ".retrieval" / "lexical").iterdir() if p.name.startswith("seg-")]
    for shard in sorted(segment.glob("lex-*.json")):
        _tamper_segment(root, shard.name, inflate)
    result = run("query", "--root", root, "--json", "tampered target")
    assert result.exit_code == 0, result.output
    assert [h["path"] for h in json.loads(result.stdout)["results"]] == ["app.py"]
    assert "the lexical index is damaged" in result.stderr


@pytest.mark.parametrize("planted", [".retrieval", ".retrieval/lexical"])
def test_a_planted_link_for_the_store_is_refused_and_nothing_is_written_through_it(make_tree, tmp_path, run, planted):
    target = tmp_path / "victim"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    root = make_tree({"app.py": "def app():\n    return 1\n"})
    if planted == ".retrieval/lexical":
        (root / ".retrieval").mkdir()
    os.symlink(target, root / planted)
    for argv in (["index", "--root", root], ["query", "--root", root, "app"]):
        result = run(*argv)
        assert result.exit_code == 1
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: ") and "symbolic link" in line and "RETRIEVAL_INDEX_DIR" in line
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("planted", [".retrieval", ".retrieval/lexical"])
def test_a_planted_link_to_another_index_is_not_read_either(make_tree, tmp_path, run, planted):
    """A cloned repository's `.retrieval` link to a built index was refused for writing, and its
    query answered from the index behind it, marked only stale."""
    other = make_tree({"secret_plan.py": "def secret_plan():\n    return 1\n"}, name="other")
    assert run("index", "--root", other).exit_code == 0
    root = make_tree({"app.py": "def app():\n    return 1\n"}, name="cloned")
    if planted == ".retrieval/lexical":
        (root / ".retrieval").mkdir()
    os.symlink(other / planted, root / planted)
    for argv in (["query", "--root", root, "secret_plan", "--json"],
                 ["query", "--root", root, "secret_plan", "--json", "--stale-ok"]):
        result = run(*argv)
        assert result.exit_code == 1 and result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: ") and "symbolic link" in line


@pytest.mark.parametrize("planted", ["lock", ".gitignore"])
def test_a_planted_link_inside_the_store_never_creates_a_file_outside(make_tree, tmp_path, run, planted):
    root = make_tree({"app.py": "def app():\n    return 1\n"})
    (root / ".retrieval").mkdir()
    target = tmp_path / "created-outside"
    os.symlink(target, root / ".retrieval" / planted)
    result = run("index", "--root", root)
    assert not target.exists()
    if planted == "lock":
        assert result.exit_code == 1
        assert result.stderr.startswith("error: lexical: cannot write the index at ")
    else:
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("planted", ["log", "lock"])
def test_a_planted_link_in_the_serve_directory_never_writes_or_creates_a_file_outside(make_tree, tmp_path, planted):
    """A committed `.retrieval/serve/log` link had a detached server's output appended to its target
    (and the target made 0600); a `lock` link had its target created."""
    root = make_tree({"app.py": "def app():\n    return 1\n"})
    (root / ".retrieval" / "serve").mkdir(parents=True)
    target = tmp_path / "victim"
    if planted == "log":
        target.write_text("mine\n")
        target.chmod(0o644)
    os.symlink(target, root / ".retrieval" / "serve" / planted)
    try:
        result = run_cli(["serve", "--detach", "--root", root, "--idle-timeout", "30"])
    finally:
        run_cli(["serve", "--stop", "--root", root])
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and "symbolic link" in line
    if planted == "log":
        assert target.read_text() == "mine\n" and oct(target.stat().st_mode & 0o777) == oct(0o644)
    else:
        assert not target.exists()


def test_a_planted_link_for_the_servers_socket_is_never_connected_to(make_tree, tmp_path):
    """`.retrieval/serve/sock` committed as a link to someone else's socket: every query's words,
    directory and settings went to whoever listened there, and its reply was printed as the answer."""
    from retrieval.server import client

    root = make_tree({"app.py": "def app():\n    return 1\n"})
    (root / ".retrieval" / "serve").mkdir(parents=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "elsewhere.sock"))
    listener.listen(4)
    listener.settimeout(0.5)
    os.symlink(tmp_path / "elsewhere.sock", root / ".retrieval" / "serve" / "sock")
    try:
        assert client.probe(client.store_dir(str(root))) is None
        assert client.try_run(["query", "--root", str(root), "app"]) is None
        with pytest.raises(socket.timeout):
            listener.accept()[0].close()  # nobody connected
    finally:
        listener.close()


@pytest.mark.parametrize("name", ["..\\..\\evil.py", "-rf.py", "a b.py", "new\nline.py", "..evil.py", "$(id).py"])
def test_crafted_file_names_are_reported_exactly_and_resolve_inside_the_root(make_tree, run, name):
    root = make_tree({"dir/placeholder.py": "x = 1\n"})
    (root / "dir" / name).write_text("def crafted_name_target():\n    return 1\n")
    payload = json.loads(run("query", "--root", root, "--json", "--snippet-lines", "1", "crafted name target").stdout)
    (hit,) = payload["results"]
    assert hit["path"] == f"dir/{name}"
    resolved = os.path.realpath(os.path.join(root, hit["path"]))
    assert os.path.commonpath([str(root), resolved]) == str(root)
    assert hit["snippet"] == "def crafted_name_target():\n"


# -- secrets in messages ---------------------------------------------------------------------------

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def test_secrets_never_appear_in_output_progress_or_errors(make_tree, tmp_path, run, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    root = make_tree({
        ".env": f"STRIPE_KEY={SECRET}\n",
        "config/credentials.json": json.dumps({"key": SECRET}),
        "keys/deploy.pem": f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n",
        "app.py": "def charge(card):\n    return stripe_client.charge(card)\n",
    })
    assert is_secret_name(".env") and is_secret_name("credentials.json") and is_secret_name("deploy.pem")
    seen = []
    for argv in (["index", "--root", root], ["query", "--root", root, "--json", "stripe charge"],
                 ["query", "--root", root, SECRET], ["status", "--root", root, "--json"]):
        result = run(*argv)
        assert result.exit_code == 0
        seen.append(result.output)
    # A damaged store whose bytes hold the secret: the rebuild note names the problem, not the bytes.
    lexical = root / ".retrieval" / "lexical"
    (lexical / "manifest.json").write_text('{"schema": 1, "leak": "' + SECRET + '", ')
    seen.append(run("index", "--root", root).output)
    (segment,) = [p for p in lexical.iterdir() if p.name.startswith("seg-")]
    lex = segment / "lex-0000.json"
    lex.write_bytes((SECRET * (lex.stat().st_size // len(SECRET) + 1)).encode()[: lex.stat().st_size])
    result = run("query", "--root", root, "--json", "stripe charge")
    assert result.exit_code == 0 and json.loads(result.stdout)["results"][0]["path"] == "app.py"
    seen.append(result.output)
    # Errors: a query for a secret against a missing root does not echo it.
    result = run("query", "--root", tmp_path / "missing", SECRET)
    assert result.exit_code == 1
    seen.append(result.output)
    assert any("rebuilding" in out for out in seen), "the damage should have been reported"
    for out in seen:
        assert SECRET not in out
    assert SECRET.encode() not in store_bytes(root)

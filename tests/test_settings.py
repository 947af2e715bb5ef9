"""Settings from RETRIEVAL_* environment variables: a value that cannot be used is named on
stderr, once, with the default that replaces it; it never stops the command or passes silently."""
import os
import subprocess
import sys

import pytest

from retrieval import settings


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(settings, "_warned", set())


def test_a_usable_value_is_taken_as_given(monkeypatch, capsys):
    monkeypatch.setenv("RETRIEVAL_X", " 3 ")
    assert settings.env_int("RETRIEVAL_X", 7, minimum=1) == 3
    monkeypatch.setenv("RETRIEVAL_X", "2.5")
    assert settings.env_float("RETRIEVAL_X", 10.0) == 2.5
    monkeypatch.setenv("RETRIEVAL_X", "2")
    assert settings.env_choice("RETRIEVAL_X", "4", ("2", "4")) == "2"
    monkeypatch.setenv("RETRIEVAL_X", "OFF")
    assert settings.env_flag("RETRIEVAL_X", True) is False
    assert capsys.readouterr().err == ""


def test_unset_or_empty_means_the_default_without_a_word(monkeypatch, capsys):
    monkeypatch.delenv("RETRIEVAL_X", raising=False)
    assert settings.env_int("RETRIEVAL_X", 7) == 7
    monkeypatch.setenv("RETRIEVAL_X", "")
    assert settings.env_float("RETRIEVAL_X", 1.5) == 1.5
    assert settings.env_flag("RETRIEVAL_X", True) is True
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("read, raw, default", [
    (lambda: settings.env_int("RETRIEVAL_X", 2, minimum=1), "four", 2),
    (lambda: settings.env_int("RETRIEVAL_X", 2, minimum=1), "0", 2),
    (lambda: settings.env_int("RETRIEVAL_X", 2, minimum=1), "-3", 2),
    # Over its bound, the bound (RETRIEVAL_JOBS=1000 started 992 worker processes).
    (lambda: settings.env_int("RETRIEVAL_X", 2, minimum=1, maximum=8), "1000", 8),
    (lambda: settings.env_float("RETRIEVAL_X", 10.0), "ten", 10.0),
    (lambda: settings.env_float("RETRIEVAL_X", 10.0), "-1", 10.0),
    (lambda: settings.env_float("RETRIEVAL_X", 10.0), "nan", 10.0),
    (lambda: settings.env_float("RETRIEVAL_X", 10.0), "inf", 10.0),
    (lambda: settings.env_choice("RETRIEVAL_X", "4", ("2", "4")), "8", "4"),
    (lambda: settings.env_flag("RETRIEVAL_X", True), "maybe", True),
])
def test_an_unusable_value_is_named_once_and_the_default_used(monkeypatch, capsys, read, raw, default):
    monkeypatch.setenv("RETRIEVAL_X", raw)
    assert read() == default
    assert read() == default
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"retrieval: ignoring RETRIEVAL_X={raw!r}: not ")
    assert "using" in err


def test_worker_processes_are_at_most_a_few_per_cpu(monkeypatch, capsys):
    from retrieval.parallel import default_jobs

    monkeypatch.setenv("RETRIEVAL_JOBS", "1000")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert default_jobs() == 8
    assert "RETRIEVAL_JOBS='1000': not at most 8; using 8" in capsys.readouterr().err
    monkeypatch.setenv("RETRIEVAL_JOBS", "3")
    assert default_jobs() == 3


@pytest.mark.parametrize("name, raw", [
    ("RETRIEVAL_JOBS", "four"),
    ("RETRIEVAL_WRITER_WAIT", "soon"),
    ("RETRIEVAL_MAX_TOTAL_BYTES", "1GB"),
    ("RETRIEVAL_STEM", "maybe"),
])
def test_a_query_names_a_bad_setting_and_still_answers(tmp_path, name, raw):
    (tmp_path / "app.py").write_text("def refresh_token():\n    return 1\n")
    env = {**os.environ, name: raw, "RETRIEVAL_NO_SERVER": "1", "RETRIEVAL_INDEX_DIR": str(tmp_path / "idx")}
    done = subprocess.run([sys.executable, "-m", "retrieval.entry", "query", "refresh token", "--root", str(tmp_path),
                           "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"path": "app.py"' in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith(f"retrieval: ignoring {name}=")]
    assert len(warnings) == 1, done.stderr


def test_every_setting_the_package_reads_is_documented_in_the_readme():
    """A RETRIEVAL_* variable the code honours but the README never names is a knob nobody can
    find (the embedding batch and checkpoint interval were such)."""
    import re
    from pathlib import Path

    project = Path(__file__).resolve().parent.parent
    names = set()
    for source in (project / "retrieval").rglob("*.py"):
        names.update(re.findall(r"\bRETRIEVAL_[A-Z][A-Z0-9_]*\b", source.read_text(encoding="utf-8")))
    names.discard("RETRIEVAL_TESTS_NO_NETWORK")  # the test suite's own switch, not a user's
    readme = set(re.findall(r"\bRETRIEVAL_[A-Z][A-Z0-9_]*\b", (project / "README.md").read_text(encoding="utf-8")))
    assert names and sorted(names - readme) == []


def test_an_unusable_retrieval_no_server_is_named_and_the_command_still_answers(tmp_path):
    """RETRIEVAL_NO_SERVER=maybe was taken as "skip the server" without a word (the client read it
    by hand): it is named like any other yes/no setting, with its default (use a server)."""
    (tmp_path / "app.py").write_text("def refresh_token():\n    return 1\n")
    env = {**os.environ, "RETRIEVAL_NO_SERVER": "maybe", "RETRIEVAL_INDEX_DIR": str(tmp_path / "idx")}
    done = subprocess.run([sys.executable, "-m", "retrieval.entry", "query", "refresh token", "--root", str(tmp_path),
                           "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"path": "app.py"' in done.stdout
    warnings = [line for line in done.stderr.splitlines()
                if line.startswith("retrieval: ignoring RETRIEVAL_NO_SERVER='maybe'")]
    assert len(warnings) == 1, done.stderr

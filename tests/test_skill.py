"""The agent skill file ships in the package; `retrieval skill` prints or installs it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import retrieval

PACKAGED = Path(retrieval.__file__).parent / "skill" / "SKILL.md"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_skill_prints_the_packaged_file(run):
    result = run("skill")
    assert result.exit_code == 0
    assert result.stdout == PACKAGED.read_text(encoding="utf-8")
    assert result.stdout.startswith("---\nname: retrieval\n")


def test_the_skill_file_is_declared_package_data():
    assert '"retrieval.skill" = ["SKILL.md"]' in PYPROJECT.read_text(encoding="utf-8")


def test_install_writes_it_where_claude_code_looks_by_default(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    result = run("skill", "--install")
    target = tmp_path / ".claude" / "skills" / "retrieval" / "SKILL.md"
    assert result.exit_code == 0, result.stderr
    assert target.read_text(encoding="utf-8") == PACKAGED.read_text(encoding="utf-8")
    assert result.stderr == f"installed {target}\n"
    assert run("skill", "--install").stderr == f"unchanged {target}\n"
    # An older version it installed itself (its digest recorded beside it) is simply replaced ...
    import hashlib

    target.write_text("old\n")
    (target.parent / ".retrieval-skill.sha256").write_text(hashlib.sha256(b"old\n").hexdigest() + "\n")
    assert run("skill", "--install").stderr == f"updated {target}\n"
    assert not (target.parent / "SKILL.md.bak").exists()
    # ... one the user edited since is kept.
    target.write_text("mine: always pass --root\n")
    assert run("skill", "--install").stderr == f"updated {target} (the one there kept as {target}.bak)\n"
    assert (target.parent / "SKILL.md.bak").read_text() == "mine: always pass --root\n"
    assert target.read_text(encoding="utf-8") == PACKAGED.read_text(encoding="utf-8")
    # ... and a second edit is kept beside the first backup, not over it (a hand-written skill was lost).
    target.write_text("mine again\n")
    assert run("skill", "--install").stderr == f"updated {target} (the one there kept as {target}.bak.1)\n"
    assert (target.parent / "SKILL.md.bak").read_text() == "mine: always pass --root\n"
    assert (target.parent / "SKILL.md.bak.1").read_text() == "mine again\n"


def test_install_into_a_chosen_directory(run, tmp_path):
    result = run("skill", "--install", tmp_path / "agent" / "skills")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "agent" / "skills" / "SKILL.md").read_text(encoding="utf-8") == PACKAGED.read_text(encoding="utf-8")


def test_install_into_an_unwritable_place_is_a_one_line_error(run, tmp_path):
    (tmp_path / "file").write_text("x")
    result = run("skill", "--install", tmp_path / "file" / "sub")
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: ")
    assert result.stderr == f"error: cannot install the skill into {tmp_path / 'file' / 'sub'}: Not a directory\n"
    empty = run("skill", "--install=")  # an unset variable: a usage error, as other empty options are
    assert empty.exit_code == 2 and empty.stderr.splitlines()[-1] == (
        "Error: Invalid value for '--install': is empty (an unset variable?): give a directory, or no value "
        "for the default")


@pytest.mark.parametrize("home", ["", "relhome"])
def test_install_refuses_a_home_that_is_empty_or_relative(run, tmp_path, monkeypatch, home):
    """HOME= made the default `/.claude/skills/retrieval` (the top of the file system, as root);
    HOME=relhome a directory under wherever the command ran."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home)
    result = run("skill", "--install")
    assert result.exit_code == 1 and os.listdir(tmp_path) == []
    assert result.stderr == (f"error: cannot install the skill under ~/.claude/skills/retrieval: HOME is {home!r}, "
                             "not a home directory; give the directory (`--install DIR`)\n")
    assert run("skill", "--install", tmp_path / "skills").exit_code == 0  # a directory given needs no HOME

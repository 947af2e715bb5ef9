"""Reading a discovered file: bytes to text, or a counted reason to skip it."""
from __future__ import annotations

import base64
import os

import pytest

from retrieval import load_documents, read, service
from retrieval.discover import discover_files
from retrieval.read import BINARY, UNDECODABLE, VANISHED, content_digest, decode, read_source, split_lines


def source(root, rel):
    (found,) = [f for f in discover_files(str(root)) if f.path == rel]
    return found


def test_utf8_text_is_returned_verbatim_with_its_line_endings(make_tree):
    raw = "def f():\r\n    return 'é'\r\n"
    root = make_tree({"a.py": raw})
    content = read_source(source(root, "a.py"))
    assert content.text == raw
    assert content.skip_reason == ""
    assert content.digest == content_digest(raw.encode("utf-8"))


def test_a_utf8_byte_order_mark_is_dropped(make_tree):
    root = make_tree({"a.py": b"\xef\xbb\xbfx = 1\n"})
    assert read_source(source(root, "a.py")).text == "x = 1\n"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_behind_its_byte_order_mark_is_text(make_tree, encoding):
    """Windows editors save C# and PowerShell as UTF-16; skipped as binary, they were never found."""
    raw = "class Zebra\r\n{\r\n    int Stripes() => 3; // é\r\n}\r\n"
    root = make_tree({"Zebra.cs": "\ufeff".encode(encoding) + raw.encode(encoding)})
    content = read_source(source(root, "Zebra.cs"))
    assert (content.text, content.skip_reason) == (raw, "")
    assert decode("\ufeffa\x00b".encode(encoding)) == (None, BINARY)  # a NUL is still binary


# Classic Mac OS ended each line with a CR alone: 120 definitions, `zebra_marker` on line 237.
MAC_LINES = "".join(f"def f{i}():\r    return {i}\r" for i in range(120)).replace("f118()", "zebra_marker()")


def test_a_file_whose_lines_end_in_a_lone_cr_is_read_as_lines_as_editors_show_it(make_tree):
    """Split at newlines only, such a file was one line: every hit in it spanned line 1, the whole
    file, and its snippet was that line's first thousand characters."""
    root = make_tree({"mac.py": MAC_LINES.encode()})
    text = read_source(source(root, "mac.py")).text
    assert text == MAC_LINES.replace("\r", "\n")
    assert text.split("\n").index("def zebra_marker():") + 1 == 237
    # A stray CR in a file of newlines is no line break, as git, grep and sed count lines.
    assert decode(b"a = 1\rb = 2\n") == ("a = 1\rb = 2\n", "")
    assert decode("\ufeffa\rb\r".encode("utf-16-le")) == ("a\nb\n", "")


def test_a_hit_in_a_file_of_lone_cr_lines_spans_the_lines_an_editor_shows(make_tree):
    root = make_tree({"mac.py": MAC_LINES.encode(), "unix.py": "def other():\n    return 0\n"})
    (hit,) = service.search(str(root), "zebra_marker").hits
    assert hit.source_path == "mac.py"
    assert 1 < hit.start_line <= 237 <= hit.end_line  # its own lines, not the whole file


def test_an_index_an_older_decoder_wrote_reads_a_file_of_lone_cr_lines_again(make_tree, monkeypatch):
    root = make_tree({"mac.py": MAC_LINES.encode(), "unix.py": "def other():\n    return 0\n"})
    with monkeypatch.context() as old:  # decoder 2: a lone CR was no line break
        old.setattr(read, "_as_lines", lambda text: text)
        old.setattr(service, "DECODER_VERSION", 2)
        service.refresh(str(root))
        (before,) = service.search(str(root), "zebra_marker").hits
    assert (before.start_line, before.end_line) == (1, 1)
    report = service.refresh(str(root))
    assert report.reprocessed == ["mac.py"]  # read again, the others all; indexed again, it alone
    (hit,) = service.search(str(root), "zebra_marker").hits
    assert 1 < hit.start_line <= 237 <= hit.end_line  # its own lines, not the whole file


def test_nul_bytes_mark_a_file_as_binary(make_tree):
    root = make_tree({"blob.py": b"x = 1\n\x00\x01\x02"})
    content = read_source(source(root, "blob.py"))
    assert content.text is None
    assert content.skip_reason == BINARY


SHIFT_JIS = "# エラー：在庫が足りません。注文を確認してください\nx = 1\n".encode("shift_jis")


def test_text_in_another_encoding_is_skipped_with_its_own_reason(make_tree):
    root = make_tree({"stock.py": SHIFT_JIS})
    content = read_source(source(root, "stock.py"))
    assert content.text is None
    assert content.skip_reason == UNDECODABLE


def test_a_legacy_8_bit_source_is_read_as_windows_1252_and_a_damaged_byte_as_a_replacement(make_tree):
    """A Latin-1 author's name in a header skipped the whole file, where grep finds its code; so did
    one bad byte in a UTF-8 file. Lines stay where the bytes break them; snippets read the same."""
    latin = "# Autor: José Müller, © 1999\ndef zq_legacy():\n    return 'café'\n".encode("latin-1")
    damaged = "# déjà vu — naïve ".encode() + b"\xff\n" + b"def zq_damaged():\n    pass\n"
    root = make_tree({"legacy.py": latin, "damaged.py": damaged})
    assert read_source(source(root, "legacy.py")).text == latin.decode("cp1252")
    assert read_source(source(root, "damaged.py")).text == damaged.decode("utf-8", "replace")
    assert read.decode_shown(latin) == latin.decode("cp1252")
    # Mostly UTF-8 past ASCII (French, Chinese) with a bad byte: UTF-8, the byte a replacement; a
    # file half UTF-8 and half 8-bit is read line by line (it was read one way, half of it garbled).
    french = "Une phrase en français: é è à ç ô.\n".encode() * 40
    chinese = "# 计算订单总价格\n".encode() * 40
    for good in (french, chinese):
        assert decode(good[:200] + b"\xff" + good[200:])[0] == (good[:200] + b"\xff" + good[200:]).decode("utf-8", "replace")
    assert decode('x = "naïve café"\n'.encode() + b'y = "caf\xe9 cr\xe8me"\n')[0] == 'x = "naïve café"\ny = "café crème"\n'
    # Windows-1252 text forms UTF-8 sequences by chance (`É”` is U+0254): one such beside one
    # stray byte is no evidence of UTF-8.
    for text in ('label = "“SALÉ”"\n', 'x = "“IRMÃ”"\n'):
        assert decode(text.encode("cp1252"))[0] == text
    assert decode("# Autor: José\n".encode("latin-1") + "x = 'déjà'\n".encode() + b"# \xe9\xff\n")[0] == \
        "# Autor: José\nx = 'déjà'\n# éÿ\n"
    # A short text mostly past ASCII is another encoding's, not Latin-1's noise.
    assert decode("计算总价".encode("gbk")) == decode("# 计算总价\nx = 1\n".encode("gbk")) == (None, UNDECODABLE)


def test_a_file_that_vanished_after_discovery_is_reported_as_vanished(make_tree):
    root = make_tree({"gone.py": "x\n"})
    found = source(root, "gone.py")
    os.unlink(found.abspath)
    assert read_source(found).skip_reason == VANISHED


def test_a_file_that_grew_past_the_cap_after_discovery_is_skipped(make_tree):
    root = make_tree({"grow.py": "x" * 10})
    found = source(root, "grow.py")
    (root / "grow.py").write_text("x" * 50)
    content = read_source(found, max_bytes=20)
    assert content.text is None
    assert content.skip_reason == "too-large"


def test_a_file_of_exactly_the_cap_is_read(make_tree):
    """Discovery admits a file of max_bytes bytes; reading it must not then skip it as too large."""
    root = make_tree({"edge.py": "x" * 20})
    content = read_source(source(root, "edge.py"), max_bytes=20)
    assert (content.text, content.skip_reason) == ("x" * 20, "")


def test_a_file_swapped_for_a_symbolic_link_after_discovery_is_skipped_as_a_link(make_tree):
    root = make_tree({"a.py": "x = 1\n", "b.py": "y = 2\n"})
    found = source(root, "a.py")
    os.unlink(found.abspath)
    os.symlink(root / "b.py", found.abspath)
    content = read_source(found)
    assert (content.text, content.skip_reason) == (None, read.SYMLINK)


def test_decode_distinguishes_text_binary_and_undecodable():
    assert decode(b"abc\n") == ("abc\n", "")
    assert decode(b"a\x00b") == (None, BINARY)
    assert decode(b"\xff\xfe\xfa") == (None, UNDECODABLE)


@pytest.mark.parametrize(
    "text, lines",
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\nb", ["a\n", "b"]),
        ("\n", ["\n"]),
        ("a\n\n", ["a\n", "\n"]),
        ("a\r\nb\r\n", ["a\r\n", "b\r\n"]),
        ("a\rb\n", ["a\rb\n"]),
    ],
)
def test_split_lines_keeps_endings_and_splits_on_newline_only(text, lines):
    assert split_lines(text) == lines
    assert "".join(split_lines(text)) == text


def test_line_texts_drop_each_lines_ending_crlf_included():
    """The text output numbers these lines: a CR left on each line of a Windows file showed as `\\r`."""
    assert read.line_texts("a\r\nb\r\nc") == ["a", "b", "c"]
    assert read.line_texts("a\rb\n\n") == ["a\rb", ""]  # a lone CR is no line ending
    assert read.split_ending("a\r\n") == ("a", "\r\n") and read.split_ending("a") == ("a", "")


def test_binary_and_undecodable_files_are_skipped_and_counted_when_indexing(make_tree):
    root = make_tree({
        "blob.py": b"\x00\x01binary",
        "blob2.py": b"abc\x00",
        "stock.py": SHIFT_JIS,
        "ok.py": "def ok():\n    return 1\n",
    })
    report = service.refresh(str(root))
    assert report.skipped.get("binary") == 2
    assert report.skipped.get("invalid-utf8") == 1
    assert report.reprocessed == ["ok.py"]
    assert report.files == 1
    # The in-memory loader skips them too.
    assert [d.docid for d in load_documents(str(root))] == ["ok.py"]
    # The counts survive a refresh that reads nothing.
    again = service.refresh(str(root))
    assert again.status == "up to date"
    assert again.skipped.get("binary") == 2
    assert again.skipped.get("invalid-utf8") == 1


def test_the_text_of_a_dot_h_header_decides_between_c_and_cpp(make_tree):
    root = make_tree({"a.h": "namespace util {\nint f();\n}\n", "b.h": "int f(void);\n", "c.c": "namespace x {}\n"})
    assert [read_source(source(root, p)).file.language for p in ("a.h", "b.h", "c.c")] == ["cpp", "c", "c"]


# -- private keys in files of any name --------------------------------------------------------------

KEY_BODY = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"] * 4)
PEM = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----\n"
ENCRYPTED_PEM = ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,5A8E0C0B1F7C\n\n"
                 f"{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n")
# A cloud service-account key: JSON, named after the project, the key one string with escaped newlines.
# A Kubernetes Secret: the PEM base64-encoded, one line.
K8S_SECRET = "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.key: {key}\n"
SERVICE_ACCOUNT = ('{"type": "service_account", "project_id": "shop-prod-4411",\n'
                   ' "private_key": "' + PEM.replace("\n", "\\n") + '",\n "client_email": "ci@shop.example"}\n')


@pytest.mark.parametrize("name, text", [
    ("shop-prod-4411-9f1c2a.json", SERVICE_ACCOUNT),
    ("deploy/notes.txt", "the server's key, for now:\n" + PEM),
    ("config/tls.yaml", "tls:\n  key: |\n" + "".join(f"    {line}\n" for line in ENCRYPTED_PEM.splitlines())),
    ("scripts/setup.sh", f"cat > /etc/ssl/key.pem <<'KEY'\n{PEM}KEY\n"),
    ("deploy/tls-secret.yaml", K8S_SECRET.format(key=base64.b64encode(ENCRYPTED_PEM.encode()).decode())),
    ("roles/web/templates/tls.yaml.j2", "tls:\n  key: |\n" + "".join(f"    {line}\n" for line in PEM.splitlines())),
])
def test_a_config_text_or_script_file_holding_a_private_key_is_skipped_whatever_its_name(make_tree, name, text):
    root = make_tree({name: text, "app.py": "def serve():\n    return 'tls'\n"})
    content = read_source(source(root, name))
    assert (content.text, content.skip_reason) == (None, read.SECRET_CONTENT)
    report = service.refresh(str(root))
    assert report.skipped.get("secret-content") == 1 and report.reprocessed == ["app.py"]
    assert service.search(str(root), "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj").hits == []


@pytest.mark.parametrize("name, text", [
    ("tests/test_tls.py", f'TEST_KEY = """{PEM}"""\n'),  # a source file's fixture: code, indexed
    ("docs/tls.md", f"# TLS\n\nAn example key:\n\n```\n{PEM}```\n"),  # markup docs: an example
    ("config/tls.yaml", "tls:\n  key: |\n    -----BEGIN PRIVATE KEY-----\n    <paste yours here>\n"
                        "    -----END PRIVATE KEY-----\n"),  # a placeholder, no key material
    ("deploy/ca-secret.yaml", K8S_SECRET.format(key=base64.b64encode(  # a certificate: public
        PEM.replace("PRIVATE KEY", "CERTIFICATE").encode()).decode())),
])
def test_a_private_key_in_source_markup_docs_or_a_placeholder_is_indexed(make_tree, name, text):
    root = make_tree({name: text})
    assert read_source(source(root, name)).text == text


def test_an_index_built_before_keys_were_looked_for_drops_the_file_holding_one(make_tree, monkeypatch):
    root = make_tree({"keys/notes.txt": "server key\n" + PEM, "app.py": "def serve():\n    return 1\n"})
    with monkeypatch.context() as old:  # decoder 3: no look at what a file holds
        old.setattr(read, "holds_private_key", lambda file, text: False)
        old.setattr(service, "DECODER_VERSION", 3)
        service.refresh(str(root))
        assert [h.source_path for h in service.search(str(root), "server key").hits] == ["keys/notes.txt"]
    report = service.refresh(str(root))
    assert report.skipped.get("secret-content") == 1
    assert service.search(str(root), "server key").hits == []

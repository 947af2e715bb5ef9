"""Read a discovered file: bytes -> text, or a counted reason to skip it."""
from __future__ import annotations

import base64
import binascii
import errno
import os
import stat
from dataclasses import dataclass, replace

from .blake import blake2b
from .generated import marked_generated
from .languages import CONFIG, DOCS, TEMPLATES, VALUE_SCRIPTS, from_content
from .lazyre import LazyPattern
from .notebook import JUPYTER, as_script, raw_limit
from .records import SourceFile

BINARY, UNDECODABLE, UNREADABLE, VANISHED = "binary", "invalid-utf8", "unreadable", "vanished"
SYMLINK = "symlink"
SECRET_CONTENT = "secret-content"
# Bump when decode() takes text it refused before (2: UTF-16 behind a byte-order mark), reads
# text otherwise (3: lines ending in a lone CR) or skips what it read (4: SECRET_CONTENT): an index
# re-reads its files under another version, and indexes again those skipped as BINARY or
# UNDECODABLE, those now `relined` and those whose skip reason is now another (5: a legacy 8-bit
# source, Latin-1 or Windows-1252, read as one).
DECODER_VERSION = 5
# A text that is not UTF-8 but mostly UTF-8 or mostly ASCII is read line by line (_line_text): a
# legacy 8-bit line (a Latin-1 author's name in a C header, a cp1252 comment) as Windows-1252, a
# damaged UTF-8 one with U+FFFD, its code still searchable (it was skipped whole, where grep finds
# it). More than this share of bytes past ASCII is another encoding (Shift-JIS, GBK: most of their
# text), which would read as noise: skipped.
LEGACY_SHARE = 0.05
LEGACY_FEW = 16  # bytes past ASCII any short text may have (an author's name in a header), if a quarter at most


@dataclass(frozen=True)
class FileContent:
    file: SourceFile
    text: str | None  # None when skipped
    digest: str  # content hash of the bytes ("" when unreadable)
    skip_reason: str = ""
    relined: bool = False  # its lines end in a lone CR, read as ending in LF (_as_lines)


def content_digest(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def decode(data: bytes) -> tuple[str | None, str]:
    """(text, "") or (None, reason). Text is UTF-8, or UTF-16 behind its byte-order mark (Windows
    editors save C# and PowerShell sources so); otherwise NUL bytes mean binary."""
    if data.startswith(_UTF16_BOMS):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return None, UNDECODABLE
        return (None, BINARY) if "\x00" in text else (_as_lines(text.removeprefix("\ufeff")), "")
    if b"\x00" in data:
        return None, BINARY
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        bad, good = _utf8_damage(data)
        if not (good >= bad and bad <= max(LEGACY_FEW, LEGACY_SHARE * len(data))):
            high = len(data) - len(data.translate(None, _HIGH_BYTES))
            if high > max(LEGACY_FEW, LEGACY_SHARE * len(data)) or high > len(data) / 4:
                return None, UNDECODABLE
        # Line by line: a file may be UTF-8 in some lines and 8-bit in others (a Latin-1 block pasted
        # into it); its lines stay where its bytes break them.
        text = "\n".join(map(_line_text, data.split(b"\n")))
    return _as_lines(text.removeprefix("\ufeff")), ""


_HIGH_BYTES = bytes(range(0x80, 0x100))


def _utf8_damage(data: bytes) -> tuple[int, int]:
    """(bytes that are no UTF-8, characters past ASCII that are) of data read as UTF-8."""
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")  # (a U+FFFD written in the text is no damage)
    return bad, sum(1 for ch in text if ch > "\x7f") - bad


def _line_text(line: bytes) -> str:
    """A line's text: UTF-8; mostly UTF-8 past ASCII, UTF-8 with its bad bytes as U+FFFD (a
    damaged byte); else Windows-1252 (Latin-1's superset; its five unassigned bytes as U+FFFD)."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        bad, good = _utf8_damage(line)
        # (A tie is 8-bit: Windows-1252 text forms valid two- and three-byte sequences by chance,
        # `“SALÉ”`, and a rule telling those from one stray byte in UTF-8 misread either.)
        return line.decode("utf-8", "replace") if good > bad else line.decode("cp1252", "replace")


# A private key's armour with key material after it: base64 lines, or one JSON string with escaped
# newlines (a cloud service-account key file, whatever its name). A placeholder ("...") has none.
_PRIVATE_KEY = LazyPattern(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?!-----)[\s\S]){0,300}?"
                           r"[A-Za-z0-9+/]{40}")
_KEY_HOLDERS = VALUE_SCRIPTS | TEMPLATES | {"text"}  # besides config files (a template renders one)


# The same armour base64-encoded ("-----BEGIN" is "LS0tLS1CRUdJTi"), as a Kubernetes Secret's
# `tls.key` holds it: decoded, and judged as above.
_ENCODED_ARMOUR = "LS0tLS1CRUdJTi"
_ENCODED_KEY = LazyPattern(_ENCODED_ARMOUR + r"[A-Za-z0-9+/]{40,}")
_ENCODED_LOOK = 4096  # characters of one encoded value decoded: the armour and what follows it


def holds_private_key(file: SourceFile, text: str) -> bool:
    """A config, plain-text or script file holding a private key. Source files (test fixtures) and
    markup docs (examples in a TLS how-to) are what they are about: indexed."""
    if file.kind != CONFIG and file.language not in _KEY_HOLDERS:
        return False
    if "PRIVATE KEY" in text and _PRIVATE_KEY.search(text) is not None:
        return True
    return _ENCODED_ARMOUR in text and any(_encoded_key(m.group()) for m in _ENCODED_KEY.finditer(text))


def _encoded_key(token: str) -> bool:
    head = token[:_ENCODED_LOOK]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4]).decode("latin-1")
    except (binascii.Error, ValueError):
        return False
    return "PRIVATE KEY" in decoded and _PRIVATE_KEY.search(decoded) is not None


def decode_shown(data: bytes) -> str:
    """The text of a file as it was indexed (decode), never failing: what changed since shows with
    replacement characters."""
    text, _reason = decode(data)
    if text is not None:
        return text
    if data.startswith(_UTF16_BOMS):
        return _as_lines(data.decode("utf-16", "replace").removeprefix("\ufeff"))
    return _as_lines(data.decode("utf-8", "replace").removeprefix("\ufeff"))


def _as_lines(text: str) -> str:
    """A text whose lines all end in a lone CR (classic Mac OS) with LF endings instead: editors show
    it as lines, and split at LF alone it was one line, every hit in it spanning the whole file. A CR
    among LF endings stays what it is (git, grep and sed count no line there)."""
    if "\r" in text and "\n" not in text:
        return text.replace("\r", "\n")
    return text


# Never follow a symbolic link (a file swapped for one since discovery could point out of the root)
# and never block opening a FIFO swapped in; what is opened must still be a regular file.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def read_source(file: SourceFile, max_bytes: int | None = None) -> FileContent:
    try:
        fd = os.open(file.abspath, _OPEN_FLAGS)
    except FileNotFoundError:
        return FileContent(file, None, "", VANISHED)
    except OSError as exc:
        return FileContent(file, None, "", SYMLINK if exc.errno == errno.ELOOP else UNREADABLE)
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return FileContent(file, None, "", UNREADABLE)
            # Read at most one byte past the cap: a file that grew past it since discovery is skipped.
            limit = raw_limit(file.language, max_bytes) if max_bytes is not None else None
            data = fh.read(limit + 1) if limit is not None else fh.read()
    except OSError:
        return FileContent(file, None, "", UNREADABLE)
    if limit is not None and len(data) > limit:
        return FileContent(file, None, content_digest(data), "too-large")
    text, reason = decode(data)
    if text is not None and holds_private_key(file, text):
        return FileContent(file, None, content_digest(data), SECRET_CONTENT)
    if text is not None and file.language == JUPYTER:
        text, language = as_script(text)
        file = replace(file, language=language)
        if max_bytes is not None and len(text) > max_bytes:  # its script, not its outputs (raw_limit)
            return FileContent(file, None, content_digest(data), "too-large")
    if text is not None:
        language = from_content(file.path, file.language, text)
        # A generated README or page is still the one people read: only code and config rank down,
        # unless the repository's .gitattributes says otherwise.
        generated = file.marked if file.marked is not None else file.kind != DOCS and marked_generated(text, language)
        if language != file.language or generated:
            file = replace(file, language=language, generated=generated)
    relined = text is not None and b"\r" in data and "\r" not in text  # _as_lines took its CRs
    return FileContent(file, text, content_digest(data), reason, relined)


def split_ending(line: str) -> tuple[str, str]:
    """A line of split_lines as (text, ending), the ending `\r\n`, `\n` or empty."""
    cut = 2 if line.endswith("\r\n") else 1 if line.endswith("\n") else 0
    return (line[:-cut], line[-cut:]) if cut else (line, "")


def line_texts(text: str) -> list[str]:
    """The lines of split_lines without their endings: line n is item n - 1, as the chunker numbers
    them (str.splitlines also breaks at a lone `\r`, form feeds and Unicode separators, which
    shifts every line after one)."""
    return [split_ending(line)[0] for line in split_lines(text)]


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, numbered like editors do (split on \\n only)."""
    if not text:
        return []
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out

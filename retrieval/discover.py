"""Walk a tree and decide which files are eligible. Reads ignore files and the first line of an
extension-less file (a script says its language there), never other contents."""
from __future__ import annotations

import errno
import operator
import os
import re
import stat as stat_mod
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from .lazyre import LazyPattern
from .notebook import raw_limit
from . import ignore, languages
from .records import SourceFile

DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_MAX_TOTAL_BYTES = 4 * 1024**3

# Version control, dependency, build and cache directories: never source the user wrote.
DEFAULT_EXCLUDE_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
        "node_modules", "bower_components", "jspm_packages", ".yarn", ".pnpm-store",
        "vendor", "third_party_cache", ".bundle",
        "__pycache__", ".venv", "venv", ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".hypothesis", ".ipynb_checkpoints", "site-packages",
        "build", "dist", "target", "out", ".gradle", ".next", ".nuxt", ".svelte-kit", ".parcel-cache",
        ".turbo", ".cache", ".terraform", ".serverless", "coverage", "htmlcov",
        ".idea", ".vscode", ".DS_Store", "zig-cache", ".zig-cache", "zig-out", ".stack-work",
        "dist-newstyle", "_build", "deps", ".elixir_ls", ".retrieval",
        ".quarto", "_freeze",  # Quarto's render cache and frozen outputs (a copy of each page as JSON)
    }
)

# Pruned silently: no user expects these indexed. The other default directories are counted as
# `excluded-dir`, and an ignore file can take one back with a negation (`!vendor/`).
_UNCOUNTED_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".retrieval"})

GIT_IGNORE = ".gitignore"
# In ripgrep's order, ours last: a later one's rules win (rg's `.rgignore` hides from it what a user
# would hide from a search tool).
IGNORE_FILES = (GIT_IGNORE, ".ignore", ".rgignore", ".retrievalignore")
GIT_ATTRIBUTES = ".gitattributes"  # read for the files a repository marks generated or vendored
_RULE_FILES = frozenset((*IGNORE_FILES, GIT_ATTRIBUTES))  # watched, never indexed

# Names that usually hold credentials. Matched case-insensitively against the base name.
_SECRET_GLOBS = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "*.kdbx", "*.gpg", "*.asc", "*.ovpn", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    "credentials", "credentials.*", "*credentials*.json", "secrets", "secrets.*", "*.secret", "*.secrets",
    ".netrc", ".pgpass", ".htpasswd", ".npmrc", ".pypirc", ".git-credentials", "*.tfstate",
    "*.tfstate.*", "*.tfvars", "*.tfvars.json", "service-account*.json", "*.sqlite", "*.db", ".dockercfg",
    # Directories of credentials (see SECRET_DIRS): never sent to a model whatever is in them.
    ".docker", ".aws", ".ssh", ".gnupg", ".kube",
)
# Directories whose data files hold credentials (`.docker/config.json`, `secrets/db.yaml`): their
# config, plain-text and script files are skipped as secret-named; their code, markup docs and
# build files are what they are (`src/Secrets/` is a C# namespace, `docs/secrets/` a how-to).
SECRET_DIRS = frozenset({".docker", ".aws", ".ssh", ".gnupg", ".kube", "secret", "secrets", ".secrets",
                         "credentials", ".credentials"})  # in any case (macOS and Windows ignore it)
_BUILD_FILES = frozenset({"pyproject.toml", "setup.cfg", "package.json", "Cargo.toml", "go.mod", "pom.xml",
                          "build.gradle", "build.gradle.kts", "composer.json", "Makefile", "CMakeLists.txt",
                          "Dockerfile"})


# Configuration that is a program, not values: Terraform's `.tf` declares resources (a module named
# `secrets`, a `secrets.tf` of `aws_secretsmanager_secret` blocks), its values are in `*.tfvars`.
_PROGRAM_CONFIG_SUFFIXES = (".tf",)
# GitHub's workflows and actions are programs, their secrets referenced by name (`${{ secrets.TOKEN }}`),
# never stored: a workflow named `secrets.yml` is one. Only their YAML: a `credentials.json` or a
# `.tfvars` put there is data like any other.
_PIPELINE_DIRS = (".github/workflows/", ".github/actions/")


def _secret_data(name: str, language: str, kind: str) -> bool:
    """Whether a file in a SECRET_DIRS directory is one of its data files."""
    if kind == languages.CODE:
        return language in languages.VALUE_SCRIPTS
    if name.lower().endswith(_PROGRAM_CONFIG_SUFFIXES):
        return False
    if kind == languages.DOCS and language != "text":
        return False
    return name not in _BUILD_FILES and not name.endswith(("proj", ".sln"))
_SECRET_RE = LazyPattern(  # built on first use: a query on a fresh index never walks
    lambda: "|".join(ignore.compile_rule(g).regex.pattern for g in _SECRET_GLOBS), re.IGNORECASE
)
_UNANCHORED = "^(?:.*/)?"  # what compile_rule puts before a glob without a slash (all of the above)
# The same globs for a name without a slash, where that prefix can only match nothing: without it
# the match no longer tries, for each glob, every place a `/` could end (half a walk's time).
_SECRET_NAME_RE = LazyPattern(
    lambda: "^(?:" + "|".join(ignore.compile_rule(g).regex.pattern.removeprefix(_UNANCHORED)[:-1]
                              for g in _SECRET_GLOBS) + ")$", re.IGNORECASE
)


def is_secret_name(name: str) -> bool:
    """A name that usually holds credentials. Source code is not data: `secrets.py` (Python's own
    module), `Credentials.scala`, `id_rsa_test.go` are programs about secrets, not secrets; but a
    script or SQL file so named (`secrets.sh`: `export KEY=...`) usually holds them, and so does a
    template of such a file (`.env.j2`, `app.key.tmpl`; `secrets.html.erb` is a page)."""
    language, kind = languages.detect(name)
    if language in languages.TEMPLATES:
        rendered = name.rpartition(".")[0]
        return bool(rendered) and is_secret_name(rendered)
    if (_SECRET_NAME_RE if "/" not in name else _SECRET_RE).match(name) is None:
        return False
    if name.lower().endswith(_PROGRAM_CONFIG_SUFFIXES) or languages.env_example(name.rpartition("/")[2]):
        return False
    return kind != languages.CODE or language in languages.VALUE_SCRIPTS


def _check_name_encoding(name: str, path: str) -> None:
    """A UTF-8 name this process cannot decode means its file-name encoding is not UTF-8 (a C or
    Latin-1 locale with PYTHONUTF8=0): skipping such names would drop indexed files from the index.
    Refuse instead, saying how to fix it."""
    try:
        os.fsencode(name).decode("utf-8")
    except UnicodeDecodeError:
        return  # not UTF-8 on disk either: skipped and counted
    raise DiscoveryError(f"this process reads file names as {sys.getfilesystemencoding()}, not UTF-8, and "
                         f"{os.fsencode(path).decode('utf-8')!r} is UTF-8: set PYTHONUTF8=1 or a UTF-8 locale")


def _utf8_name(name: str) -> bool:
    """False for a name that is not valid UTF-8 (os.scandir hands its bytes over as lone
    surrogates): such a path can be neither stored as JSON nor printed for the user to open."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class DiscoveryError(RuntimeError):
    """The tree cannot be indexed as asked (bad root, over the total-size cap)."""


@dataclass
class DiscoveryOptions:
    extensions: frozenset[str] | None = None  # None: languages.DEFAULT_EXTENSIONS
    include_basenames: frozenset[str] | None = None  # None: languages.DEFAULT_BASENAMES
    exclude_dirs: frozenset[str] | None = None  # None: DEFAULT_EXCLUDE_DIRS
    exclude_globs: tuple[str, ...] = ()
    include_globs: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    use_ignore_files: bool = True
    skip_paths: tuple[str, ...] = ()  # absolute directories never entered (the store)


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> count
    total_bytes: int = 0
    # What a cheap staleness check must re-stat besides the accepted files: every walked directory
    # (an added or removed entry changes its mtime) and files whose eligibility can change without
    # that (ignore files, files over the size cap). Values are (size, mtime_ns); size 0 for dirs.
    watch: dict[str, tuple[int, int]] = field(default_factory=dict)
    user: dict = field(default_factory=dict)  # user_places() when walked: they decide git's user rules
    # What else the walk read or judged by its contents that `watch` leaves out, so that a refresh
    # can tell the walk would find the same (service._as_walked): a `.git` (a file names the
    # repository), a worktree's `commondir`, and the files whose first line it read and did not
    # index. Values are stamp()s.
    unwatched: dict[str, tuple] = field(default_factory=dict)
    # The directories (with a trailing slash) and files the walk could not read, in walk order: a
    # query built from it says which of the tree it could not search.
    unreadable: list[str] = field(default_factory=list)
    # The ignore files the walk could not read (mode 000): their rules are not applied, so files
    # they leave out are indexed; said as git says it, not only counted.
    unapplied: list[str] = field(default_factory=list)
    # With walk(record_skips=True): (path, reason) of each file (or directory: `dir/`) counted in
    # `skipped`, in walk order; None otherwise (a refresh needs only the counts).
    skipped_files: list[tuple[str, str]] | None = None
    # With record_skips: how many files of each name extension ("" for none) the walk passed over
    # as of no type it reads, outside ignored paths: `.log` files are never eligible, so never
    # "skipped", and a user asking why one is never found had no answer.
    other_types: Counter | None = None


def stamp(path: str, *, follow: bool = False, dir_fd: int | None = None) -> tuple:
    """(size, mtime_ns, ctime_ns, follow) of a path as read now; (0, 0, 0, follow) when it is absent
    and (-1, -1, -1, follow), which nothing matches, when it cannot be stat'ed."""
    try:
        st = os.stat(path, follow_symlinks=follow, dir_fd=dir_fd)
    except FileNotFoundError:
        return (0, 0, 0, follow)
    except (OSError, ValueError):
        return (-1, -1, -1, follow)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, follow)


# O_BINARY (Windows): read as the bytes are, not in text mode (CRLF folded, a ^Z ending the file).
_NONBLOCKING = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


_READ_LIMIT = 1_000_000  # bytes of an ignore or attribute file read; the lines past it are dropped


def _read_text(path: str, *, follow: bool = False) -> tuple[str | None, str, os.stat_result | None]:
    """(text, skip reason, stat) of a small file discovery reads (an ignore file, a `.git` file, a
    git config): (None, "", None) when there is none. Opened without blocking and read only when
    it is a regular file: a FIFO named `.gitignore` hung every walk. Inside the tree a symbolic
    link is not followed (git refuses those too); the user's own files outside it (a global
    excludes file kept in a dotfiles repository) may be links."""
    try:
        fd = os.open(path, _NONBLOCKING | (0 if follow else _NO_FOLLOW))
    except FileNotFoundError:
        return None, "", None
    except OSError as exc:
        return None, "symlink" if exc.errno == errno.ELOOP else "unreadable", None
    try:
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat_mod.S_ISREG(st.st_mode):
                return None, "special-file", st
            data = fh.read(_READ_LIMIT + 1)
            if len(data) > _READ_LIMIT:  # the line cut in two would be another pattern (`api.py.orig`: `api.py`)
                data = data[:data.rfind(b"\n", 0, _READ_LIMIT) + 1]
            return data.decode("utf-8", "replace"), "", st
    except OSError:
        return None, "unreadable", None


def _push_ignore_files(stack: ignore.IgnoreStack, directory: str, base: str, present,
                       skipped: Counter, result: Discovery | None = None) -> ignore.IgnoreStack:
    """The stack with a directory's ignore files pushed, in IGNORE_FILES order (a later one wins)."""
    for name in IGNORE_FILES:
        if name not in present:
            continue
        text, reason, _ = _read_text(os.path.join(directory, name))
        if reason and reason != "symlink":  # the walk counts a link once, as it skips it
            skipped[reason] += 1
        if reason == "unreadable" and result is not None:
            result.unapplied.append(base + name)
        if text is not None:
            stack = stack.push(base, ignore.parse_ignore_text(text), repository=name == GIT_IGNORE)
    return stack


# -- ignore rules from outside the walked tree --------------------------------------------------


def _git_top(root: str) -> str | None:
    """The top of the git work tree holding root (root itself, or an ancestor), or None."""
    d = root
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _git_dir(top: str) -> str | None:
    """The repository directory of the work tree at `top`: `.git` itself, or where a `.git` file
    points (a worktree, a submodule)."""
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    text, _reason, _ = _read_text(dot_git)  # never blocks on a FIFO named .git
    line = (text or "").split("\n", 1)[0].strip()
    if not line.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(top, line[len("gitdir:"):].strip()))


def _info_dir(git_dir: str | None, unwatched: dict) -> str | None:
    """A repository's (_git_dir) `info` directory, of info/exclude and info/attributes. A worktree
    shares it with its main repository (the `commondir` file names that one, watched here)."""
    if git_dir is None:
        return None
    unwatched[os.path.join(git_dir, "commondir")] = stamp(os.path.join(git_dir, "commondir"), follow=True)
    return os.path.join(_common_dir(git_dir), "info")


def _common_dir(git_dir: str) -> str:
    """The repository directory a worktree's git directory shares (its `commondir`), else itself."""
    common, _reason, _ = _read_text(os.path.join(git_dir, "commondir"), follow=True)
    if common and common.strip():
        return os.path.normpath(os.path.join(git_dir, common.split("\n", 1)[0].strip()))
    return git_dir


def _info_file(info: str | None, name: str) -> str | None:
    return os.path.join(info, name) if info is not None else None


def _config_core(path: str, core: dict, git_dir: str | None = None, depth: int = 0,
                 watch: dict | None = None) -> dict:
    """The `[core]` settings discovery needs ("excludesfile", "ignorecase") with one git config
    file read over `core` (the last setting wins, an included file's in its place: `[include]`,
    and `[includeIf "gitdir:..."]` when the repository matches). Each config file read (or looked
    for) goes into `watch`: setting an option later changes what is ignored."""
    text, _reason, st = _read_text(path, follow=True)
    if watch is not None:
        watch[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns) if st is not None else (0, 0)
    if text is None or depth > 10:  # git's own include depth limit: a loop ends here
        return core
    lines = text.splitlines()
    section = ""
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            close = line.find("]")
            section = line[1:close].strip() if close >= 0 else ""
            name, _, sub = section.partition(" ")
            section = name.lower()
            if section == "includeif":  # only when its condition holds for this repository
                section = "include" if _included_here(sub.strip().strip('"'), path, git_dir) else ""
            line = line[close + 1:].strip() if close >= 0 else ""  # `[core] excludesFile = x`: one line
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        if section == "core" and key == "ignorecase":
            # A bare `ignorecase` is true; a value git refuses (it stops there) changes nothing.
            flag = _config_bool(_config_value(value)) if eq else True
            if flag is not None:
                core["ignorecase"] = flag
        if not eq or section not in ("core", "include"):
            continue
        value = _config_value(value)
        if section == "core" and key == "excludesfile":
            core["excludesfile"] = os.path.expanduser(value) if value else None
        elif section == "include" and key == "path" and value:
            # Relative to the including file, as git reads it.
            included = os.path.join(os.path.dirname(path), os.path.expanduser(value))
            core = _config_core(included, core, git_dir, depth + 1, watch)
    return core


def _config_bool(value: str) -> bool | None:
    """A boolean as git reads one (true/yes/on, false/no/off, an integer, empty for false), or None."""
    value = value.lower()
    if value in ("true", "yes", "on"):
        return True
    if value in ("false", "no", "off", ""):
        return False
    try:
        return int(value) != 0
    except ValueError:
        return None


def _config_value(raw: str) -> str:
    """A config value as git reads it: what is inside `"..."` is kept (a `#`, spaces), a `#` or `;`
    outside quotes begins a comment, a backslash escapes the next character, and spaces outside
    quotes at either end go."""
    out, spaces, quoted, i = [], "", False, 0
    while i < len(raw):
        c = raw[i]
        i += 1
        if c == '"':
            quoted = not quoted
            continue
        if not quoted and c in "#;":
            break
        if not quoted and c in " \t":
            spaces += c if out else ""
            continue
        if c == "\\" and i < len(raw):
            c = {"n": "\n", "t": "\t", "b": "\b"}.get(raw[i], raw[i])
            i += 1
        out.append(spaces + c)
        spaces = ""
    return "".join(out)


def _included_here(condition: str, config: str, git_dir: str | None) -> bool:
    """Whether `[includeIf "gitdir:PATTERN"]` (or `gitdir/i:`) holds for the repository at git_dir,
    as git matches it: `~/` and `./` (the config's directory) expanded, a relative pattern
    anywhere (`**/` before it), a trailing `/` for everything below (`**` after it)."""
    kind, _, pattern = condition.partition(":")
    if kind not in ("gitdir", "gitdir/i") or not pattern or git_dir is None:
        return False  # onbranch:, hasconfig:... say nothing about ignore rules we can check
    if pattern.startswith("~/"):
        pattern = os.path.expanduser(pattern)
    elif pattern.startswith("./"):
        pattern = os.path.join(os.path.dirname(config), pattern[2:])
    elif not pattern.startswith("/"):
        pattern = "**/" + pattern
    if pattern.endswith("/"):
        pattern += "**"
    regex = "".join(".*" if part == "**" else re.escape(part) if part not in ("*", "?") else
                    ("[^/]*" if part == "*" else "[^/]")
                    for part in re.split(r"(\*\*|\*|\?)", pattern))
    regex = regex.replace(".*/", "(?:.*/)?")  # `**/` is zero or more directories
    flags = re.IGNORECASE if kind == "gitdir/i" else 0
    paths = {os.path.abspath(git_dir), os.path.realpath(git_dir)}
    return any(re.fullmatch(regex, p, flags) or re.fullmatch(regex, p + "/", flags) for p in paths)


_CONFIG_VARIABLES = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")


def user_places() -> dict:
    """Where this user's git configuration is looked for: another HOME or XDG_CONFIG_HOME (`sudo`,
    a CI user, a sandbox) finds other ignore rules, at paths an index built here never watched. The
    GIT_CONFIG_* variables only when set, so an index built without them stays the same."""
    places = {"home": os.path.expanduser("~"), "xdg_config_home": os.environ.get("XDG_CONFIG_HOME", "")}
    places.update({name.lower(): os.environ[name] for name in _CONFIG_VARIABLES if name in os.environ})
    return places


def _git_config(git_dir: str | None, watch: dict | None = None) -> tuple[str, bool]:
    """(git's per-user ignore file, core.ignoreCase), from the user's and the repository's config:
    core.excludesFile, else $XDG_CONFIG_HOME/git/ignore. The config files go into `watch` (_config_core)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    core: dict = {}
    # As git: GIT_CONFIG_NOSYSTEM skips the system file, GIT_CONFIG_SYSTEM moves it, and
    # GIT_CONFIG_GLOBAL replaces the user's two (a CI job's or a sandbox's own configuration).
    configs = [] if os.environ.get("GIT_CONFIG_NOSYSTEM", "").lower() in ("1", "true", "yes", "on") else [
        os.environ.get("GIT_CONFIG_SYSTEM", "/etc/gitconfig")]
    if "GIT_CONFIG_GLOBAL" in os.environ:
        configs.append(os.environ["GIT_CONFIG_GLOBAL"])
    else:
        configs += [os.path.join(xdg, "git", "config"), os.path.expanduser("~/.gitconfig")]
    for config in configs:
        if config:
            core = _config_core(config, core, git_dir, watch=watch)
    if git_dir is not None:
        # A linked worktree's settings are its repository's (the common directory's `config`), and
        # its own `config.worktree` over them: its git directory has no `config`.
        common = _common_dir(git_dir)
        core = _config_core(os.path.join(common, "config"), core, git_dir, watch=watch)
        if common != git_dir:
            core = _config_core(os.path.join(git_dir, "config.worktree"), core, git_dir, watch=watch)
    return core.get("excludesfile") or os.path.join(xdg, "git", "ignore"), core.get("ignorecase", False)


def _push_file(stack, path, base, prefix, root, result, *, absolute=False, repository=False) -> ignore.IgnoreStack:
    """Push one ignore file's rules (a missing file is no rules) and watch it, existing or not: a
    later one changes what is eligible, like an edit does. Watched by its path from the root (the
    tree may move with its index), or `absolute` for the user's own file."""
    text = _read_watched(path, root, result, absolute=absolute)
    if text is None:
        return stack
    return stack.push(base, ignore.parse_ignore_text(text), prefix=prefix, repository=repository)


def _push_attributes(marks: tuple, path, base, prefix, root, result, *, override: bool = False) -> tuple:
    """marks with one attributes file outside the walked directories pushed (`override`: above
    every `.gitattributes`), watched as _push_file watches an ignore file."""
    text = _read_watched(path, root, result)
    return marks if text is None else _with_attributes(marks, text, base, prefix, override=override)


def _with_attributes(marks: tuple, text: str, base: str, prefix: str = "", *, override: bool = False) -> tuple:
    """marks (a stack per attribute of MARKS) with the lines of one attributes file pushed."""
    return tuple(m.push(base, ignore.parse_attributes_text(text, attribute), prefix=prefix, repository=True,
                        override=override)
                 for m, attribute in zip(marks, MARKS))


def _read_watched(path, root, result, *, absolute=False) -> str | None:
    """The text of a rules file (None: none, or unreadable), its stat watched (see _push_file)."""
    if path is None:
        return None
    key = path if absolute else os.path.relpath(path, root)
    text, reason, st = _read_text(path, follow=True)
    if reason and not absolute:  # the user's own file is none of the tree's (core.excludesFile=/dev/null)
        result.skipped[reason] += 1
    if reason == "unreadable":  # (the user's own too: git warns of it)
        result.unapplied.append(key)
    if st is None and reason == "unreadable":
        try:  # watched all the same: a chmod that makes it readable brings its rules back
            st = os.stat(path)
        except OSError:
            st = None
    if st is not None:
        # The ctime too: a file rewritten in place with its old size and mtime (`cp -p`, a sync
        # tool) or made unreadable changes only that.
        result.watch[key] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    elif not reason:
        result.watch[key] = (0, 0)  # absent
    return text


def _outer_rules(root: str, result: Discovery, top: str | None, prefix: str, git_dir: str | None,
                 info: str | None) -> ignore.IgnoreStack:
    """The rules that apply to the tree from outside it, lowest priority first, as git applies
    them: the user's global excludes, the repository's info/exclude, and the ignore files of the
    directories between the work tree's top and the root (a root below the top). `top`, `prefix`:
    _watched_top's; `git_dir`, `info`: the top's repository directory and its info directory."""
    stack = ignore.IgnoreStack()
    if top is None:
        return stack
    excludes, ignorecase = _git_config(git_dir, result.watch)
    # git sets core.ignoreCase on a case-insensitive filesystem (macOS, Windows) and then matches its
    # ignore rules so. `.ignore` and `.retrievalignore` follow it too (there `Build/` is `build/`), and
    # a nested repository keeps it (the same filesystem).
    stack = ignore.IgnoreStack(ignorecase=ignorecase)
    # A relative core.excludesFile is git's from the top of the work tree, where git runs.
    stack = _push_file(stack, os.path.join(top, excludes), "", prefix, root, result, absolute=True)
    stack = _push_file(stack, _info_file(info, "exclude"), "", prefix, root, result, repository=True)
    for directory, inner in _dirs_above(top, prefix):
        for name in IGNORE_FILES:
            stack = _push_file(stack, os.path.join(directory, name), "", inner, root, result,
                               repository=name == GIT_IGNORE)
    return stack


def _dirs_above(top: str, prefix: str):
    """(directory, the root's path below it) for each directory from the top of the work tree down
    to the root's parent (none when the root is the top)."""
    parts = prefix.rstrip("/").split("/") if prefix else []
    for depth in range(len(parts)):
        yield os.path.join(top, *parts[:depth]), "/".join(parts[depth:]) + "/"


def _watched_top(root: str, result: Discovery) -> tuple[str | None, str]:
    """The top of root's work tree (_git_top) and root's path below it as rules there see it
    ('' or `sub/dir/`), with the `.git` entries that decide the top watched."""
    top = _git_top(root)
    # Watched absent below the top (or up to `/` outside a repository): a `git init` there puts the
    # root in another repository, whose rules apply instead (as a clean build would see).
    d = root
    while d != top:
        result.watch[os.path.join(d, ".git")] = (0, 0)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if top is None:
        return None, ""
    result.unwatched[os.path.join(top, ".git")] = stamp(os.path.join(top, ".git"))
    below = os.path.relpath(root, top)
    return top, "" if below == "." else below.replace(os.sep, "/") + "/"


MARKS = ("linguist-generated", "linguist-vendored")  # the attributes a file's `marked` is read from


def _outer_marks(root: str, result: Discovery, top: str | None, prefix: str, info: str | None,
                 ignorecase: bool) -> tuple:
    """The attribute rules that apply to the tree from outside it, a stack per attribute of MARKS,
    in git's order of precedence: the repository's info/attributes above every `.gitattributes`,
    and the files of the directories between the work tree's top and the root (a root below the
    top) below the tree's own. Arguments as _outer_rules takes them."""
    marks = tuple(ignore.IgnoreStack(ignorecase=ignorecase) for _ in MARKS)
    if top is None:
        return marks
    marks = _push_attributes(marks, _info_file(info, "attributes"), "", prefix, root, result, override=True)
    for directory, inner in _dirs_above(top, prefix):
        marks = _push_attributes(marks, os.path.join(directory, GIT_ATTRIBUTES), "", inner, root, result)
    return marks


# Bump when walk() admits (or drops) files it did not before, so that an index walks again instead of
# trusting its stats (2: extension-less scripts by their `#!` line; 3: a nested repository by its own
# rules only; 4: ignore lines and git config values read as git reads them; 5: core.ignoreCase;
# 6: `--include '!tests/'` leaves out the files below, and `--include '#x'` is a name; 7: Fortran
# sources, `.mk`, `.tfvars`, `MODULE.bazel` and `Dockerfile.dev`-style files; 8: view templates;
# 9: drops templates of secret files, `.env.j2`; 10: `.gitattributes` marks, watched; 11: marks
# from the `.gitattributes` above the root and from info/attributes; 12: the files of some 40 more
# languages: CUDA, shaders, HDLs, Lisps, assembly, Tcl, batch files, ...; 13: Jupyter notebooks; 14: data files
# under a directory named as credentials, `*.tfvars`; 15: a notebook's size cap is on its cells,
# Quarto's caches pruned, Snakefile, Pipfile, MLproject); 16: `.rgignore`; Terraform `.tf` and CI
# pipelines are never secret-named; Tiltfile, Caddyfile, systemd units, version pins, a config
# template's kind; a linked worktree reads its repository's config; 17: a dotenv file's committed
# example (`.env.example`) is read, as ini; 18: Bats tests (`.bats`), Zig's `.zon` manifests; 19: MSBuild
# project files (`.csproj`, `Directory.Build.props`, ...), as XML; 20: .NET's `App.config`, as XML.
RULES_VERSION = 20
_SCRIPT_HEAD = 256  # bytes read for a `#!` line; the kernel reads no more than that either


def _may_be_script(name: str) -> bool:
    """An extension-less name that is not a dotfile (`bin/deploy`, `pre-commit`): its first line decides."""
    return not name.startswith(".") and "." not in name


def _script_head(path: str) -> str:
    """The first line of a file when it is a `#!` line, else "" (opened without blocking or
    following a link: the caller has seen a regular file, which a swap could undo)."""
    try:
        fd = os.open(path, _NONBLOCKING | _NO_FOLLOW)
    except OSError:
        return ""
    try:
        head = os.read(fd, _SCRIPT_HEAD)
    except OSError:
        return ""
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return ""
    return head.split(b"\n", 1)[0].decode("utf-8", "replace")


def _known_extension(ext: str, extensions: frozenset[str]) -> bool:
    """`.py` or, as languages.detect reads it, `.PY`: a name written in capitals on another system
    was left out with no count while its language was known."""
    return ext in extensions or ext.lower() in extensions


def root_problem(root: str, shown: str | None = None) -> str | None:
    """Why `root` cannot be searched, in one line naming it as `shown` (None: it is a directory).
    A mistyped --root said "is not a directory", as if a file were there."""
    if os.path.isdir(root):
        return None
    what = "does not exist" if not os.path.lexists(root) else "is not a directory"
    return f"root {what}: {root if shown is None else shown}"


def require_root(root: str, shown: str | None = None) -> None:
    """DiscoveryError saying root_problem, unless root is a directory."""
    problem = root_problem(root, shown)
    if problem:
        raise DiscoveryError(problem)


def root_path(root: str | os.PathLike[str]) -> str:
    """root (a str or os.PathLike) as an absolute path. Of another type it is the caller's error,
    said as such: bytes failed deep in a path join ("Can't mix strings and bytes")."""
    if isinstance(root, os.PathLike):
        root = os.fspath(root)
    if not isinstance(root, str):
        raise TypeError(f"root must be a str or os.PathLike, not {type(root).__name__}")
    return os.path.abspath(root)


def _name_classes(basenames, extensions, scripts: bool, selected: bool):
    """(memo, classify): what a file's name alone decides, judged once per name and walk (a tree
    repeats its names: `__init__.py`, `index.ts`, a translated docs page). classify(name) is None
    for a name that is not eligible (with `selected`, --include decides that by path instead), else
    (a possible script taken for its name's lack of an extension, secret name, language, kind,
    whether its first line may name its language)."""
    memo: dict = {}

    def classify(name: str):
        known = (name in basenames or _known_extension(languages.extension(name), extensions)
                 or (scripts and (languages.dockerfile_variant(name) or languages.env_example(name))))
        may_script = scripts and _may_be_script(name)
        if not known and not may_script and not selected:
            found = None
        else:
            # A possible script's language is in its text (read later), unless --include took it.
            language, kind = languages.detect(name) if known or selected else ("", "")
            found = (not known and not selected, is_secret_name(name), language, kind, may_script)
        memo[name] = found
        return found

    return memo, classify


_BY_NAME = operator.attrgetter("name")
_BY_PATH = operator.attrgetter("path")


def walk(root: str, options: DiscoveryOptions | None = None, *, record_skips: bool = False) -> Discovery:
    """Eligible files under root, sorted by relative path; skips are counted by reason, and with
    `record_skips` listed (Discovery.skipped_files)."""
    options = options or DiscoveryOptions()
    root = root_path(root)
    require_root(root)

    extensions = languages.DEFAULT_EXTENSIONS if options.extensions is None else options.extensions
    basenames = languages.DEFAULT_BASENAMES if options.include_basenames is None else options.include_basenames
    scripts = options.extensions is None  # a caller naming the extensions it wants gets only those
    exclude_dirs = DEFAULT_EXCLUDE_DIRS if options.exclude_dirs is None else options.exclude_dirs
    try:
        include_rules = ignore.compile_selection(options.include_globs)
        exclude_rules = ignore.compile_globs(options.exclude_globs)
    except ignore.BraceError as exc:  # remembered from a version that cut them: not a damaged index
        raise DiscoveryError(f"the index's remembered --include/--exclude {exc}: `retrieval index --reset-filters` "
                             "drops them (give the globs again, fewer or split)") from None
    included = ignore.selector(include_rules) if include_rules else None
    excluded = (lambda rel, is_dir=False: ignore.matches_any(exclude_rules, rel, is_dir)) if exclude_rules else None
    # Compared as strings against walked paths (which start from the absolute root): no per-directory
    # realpath() calls on the hot path.
    skip_dirs = {os.path.abspath(p) for p in options.skip_paths} | {os.path.realpath(p) for p in options.skip_paths}
    by_name, classify = _name_classes(basenames, extensions, scripts, included is not None)
    max_bytes, max_total_bytes = options.max_bytes, options.max_total_bytes

    result = Discovery(user=user_places())
    top, prefix = _watched_top(root, result)
    git_dir = _git_dir(top) if top is not None else None
    info = _info_dir(git_dir, result.unwatched)
    base_stack = (_outer_rules(root, result, top, prefix, git_dir, info) if options.use_ignore_files
                  else ignore.IgnoreStack())
    files, watch, counted, unwatched = result.files, result.watch, result.skipped, result.unwatched
    listed = result.skipped_files = [] if record_skips else None
    other_types = result.other_types = Counter() if record_skips else None

    def skip(counter: Counter, reason: str, path: str) -> None:
        counter[reason] += 1
        if listed is not None and counter is counted:
            listed.append((path, reason))
    total_bytes = 0
    uncounted: Counter = Counter()  # a possible script's skips: whether it would be indexed is in its text

    # git matches attribute patterns under core.ignoreCase too
    outer_marks = _outer_marks(root, result, top, prefix, info, base_stack.ignorecase)
    pending: list[tuple[str, str, ignore.IgnoreStack, tuple]] = [(root, "", base_stack, outer_marks)]
    secret_dirs = {"": False}  # directory (no trailing slash) -> it or one above is one of SECRET_DIRS
    while pending:
        abs_dir, rel_dir, stack, marks = pending.pop()
        key = rel_dir or "."
        try:
            # Stat before listing: an entry added after the listing then shows as a changed mtime.
            st = os.stat(abs_dir)
        except OSError:
            skip(counted, "unreadable", rel_dir or "./")
            result.unreadable.append(rel_dir or "./")
            continue
        # The ctime too: a chmod that makes its entries unreachable, or reachable again, changes
        # only that.
        watch[key] = (0, st.st_mtime_ns, st.st_ctime_ns)
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=_BY_NAME)
        except OSError:
            skip(counted, "unreadable", rel_dir or "./")
            result.unreadable.append(rel_dir or "./")
            # A chmod making it readable changes only its ctime: watched, so that a query sees it.
            watch[key] = (0, st.st_mtime_ns, st.st_ctime_ns)
            continue
        names = {e.name for e in entries}
        nested = bool(rel_dir) and ".git" in names  # a nested repository or submodule
        nested_info = _info_dir(_git_dir(abs_dir), result.unwatched) if nested else None
        if options.use_ignore_files:
            if nested:  # its own rules, not the outer repository's
                result.unwatched[rel_dir + ".git"] = stamp(os.path.join(abs_dir, ".git"))
                stack = _push_file(stack.entering_repository(), _info_file(nested_info, "exclude"),
                                   rel_dir, "", root, result, repository=True)
            present = [name for name in IGNORE_FILES if name in names]
            if present:
                stack = _push_ignore_files(stack, abs_dir, rel_dir, present, counted, result)
        if nested:
            marks = _push_attributes(tuple(m.entering_repository() for m in marks),  # a submodule's own only
                                     _info_file(nested_info, "attributes"), rel_dir, "", root, result, override=True)
        if GIT_ATTRIBUTES in names:
            text, reason, _st = _read_text(os.path.join(abs_dir, GIT_ATTRIBUTES))
            if reason and reason != "symlink":  # counted as an ignore file's are; the walk counts a link
                skip(counted, reason, rel_dir + GIT_ATTRIBUTES)
            if text is not None:
                marks = _with_attributes(marks, text, rel_dir)
        # The rules that can decide for a path in this directory, found once for all its entries.
        ignored = stack.judge(rel_dir)
        # Data under a directory of credentials are secret (`secrets/db.yaml`, `.docker/config.json`).
        parent, _, name = rel_dir[:-1].rpartition("/")
        secret_dir = secret_dirs[rel_dir[:-1]] = bool(name) and (secret_dirs[parent] or name.lower() in SECRET_DIRS)
        marked = None if all(m.empty for m in marks) else tuple(m.judge(rel_dir) for m in marks)
        prefix = abs_dir + os.sep if not abs_dir.endswith(os.sep) else abs_dir
        subdirs = []
        for entry in entries:
            name = entry.name
            if not name.isascii() and not _utf8_name(name):
                _check_name_encoding(name, os.path.join(abs_dir, name))
                # Recorded as text: its bytes that are no UTF-8 as `\xff`, so its own backslashes
                # doubled (`a\\n\xe9.py` and `a<newline>\xe9.py` printed alike).
                skip(counted, "undecodable-name",
                     os.fsencode(rel_dir + name).replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace"))
                continue
            rel = rel_dir + name
            try:
                if entry.is_symlink():
                    # Never followed: a link can leave the root or loop.
                    skip(counted, "symlink", rel)
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                skip(counted, "unreadable", rel)
                result.unreadable.append(rel)
                continue
            if is_dir:
                verdict = ignored(rel, True)
                if name in exclude_dirs and (name in _UNCOUNTED_DIRS or verdict is not False or not stack.names(rel)):
                    # `!vendor/` in an ignore file takes one back; `!*/` (a whitelist's) does not
                    if name not in _UNCOUNTED_DIRS:
                        skip(counted, "excluded-dir", rel + "/")
                    continue
                if verdict or (excluded is not None and excluded(rel, True)):
                    if listed is not None:  # (listed, not counted: its files were never eligible one by one)
                        listed.append((rel + "/", "ignored"))
                    continue
                if entry.path in skip_dirs:
                    continue
                subdirs.append((entry.path, rel + "/", stack, marks))
                continue
            if name in _RULE_FILES:
                try:
                    st = entry.stat(follow_symlinks=False)
                    watch[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                except OSError:
                    pass
                continue
            # Eligibility first, so the skip counts below only count files that would be indexed
            # (a possible script is not counted: whether it would be is in the text not yet read).
            found = by_name[name] if name in by_name else classify(name)
            if found is None or (included is not None and not included(rel)):
                if (found is None and other_types is not None and name != ".git" and not is_secret_name(name)
                        and ignored(rel, False) is not True and (excluded is None or not excluded(rel))):
                    other_types[languages.extension(name).lower()] += 1
                continue
            script, secret, language, kind, may_be_script = found
            skipped = uncounted if script else counted
            if (secret or secret_dir and _secret_data(name, language, kind)) \
                    and not (language == "yaml" and rel_dir.startswith(_PIPELINE_DIRS)):
                skip(skipped, "secret-name", rel)
                continue
            if ignored(rel, False) is True or (excluded is not None and excluded(rel)):
                skip(skipped, "ignored", rel)
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                skip(skipped, "unreadable", rel)
                if not script:
                    result.unreadable.append(rel)
                continue
            if not stat_mod.S_ISREG(st.st_mode):
                skip(skipped, "special-file", rel)  # a FIFO, socket or device: never opened
                continue
            size = st.st_size
            if size > raw_limit(language, max_bytes):
                if not script:
                    skip(skipped, "too-large", rel)
                    watch[rel] = (size, st.st_mtime_ns)
                else:  # (its first line is not read, but a smaller one may be)
                    unwatched[rel] = (size, st.st_mtime_ns, st.st_ctime_ns, False)
                continue
            path = prefix + name
            if not language and may_be_script:  # also one an --include pattern took
                language, kind = languages.script_language(_script_head(path))
            if script and not language:
                if other_types is not None:
                    other_types[""] += 1
                # An empty one is watched: a script begun with `touch bin/x` gets its `#!` line by an
                # edit that changes no directory. Not the others: a tree of data files without a name
                # extension (curl's 1,980 test cases) would cost every query a stat each.
                if size == 0:
                    watch[rel] = (0, st.st_mtime_ns)
                else:
                    unwatched[rel] = (size, st.st_mtime_ns, st.st_ctime_ns, False)
                continue
            if marked is None:
                mark = None
            else:
                generated, vendored = (judge(rel, False) for judge in marked)
                mark = True if vendored else generated
            files.append(SourceFile(rel, path, size, st.st_mtime_ns, language or "text", kind or languages.DOCS,
                                    st.st_ctime_ns, marked=mark))
            total_bytes += size
            if total_bytes > max_total_bytes:
                raise DiscoveryError(
                    f"more than {max_total_bytes} bytes of eligible files under {root}; "
                    "narrow the tree with --include/--exclude or raise RETRIEVAL_MAX_TOTAL_BYTES"
                )
        # Reverse so that popping from the end visits subdirectories in sorted order.
        pending.extend(reversed(subdirs))
    result.total_bytes = total_bytes
    files.sort(key=_BY_PATH)
    return result


def walk_record(discovery: Discovery, checked_ns: int) -> dict:
    """What as_walked() needs of a walk, as JSON: its skip counts, how many files it found, its
    `unwatched` stamps, and whether every stamp it took was clearly older than the walk (checked_ns,
    taken before its first stat). A directory changed in the clock tick in which it was stat'ed may
    be changed again in that tick, after its listing, and keep its stat (see freshness): the stats
    of such a walk prove nothing, and the next refresh walks again."""
    from .freshness import margin

    stamps = [t for value in discovery.watch.values() for t in value[1:3]]
    stamps += [t for value in discovery.unwatched.values() for t in value[1:3]]
    return {"files": len(discovery.files), "skipped": dict(sorted(discovery.skipped.items())),
            "unwatched": {path: list(value) for path, value in sorted(discovery.unwatched.items())},
            "settled": all(t < checked_ns - margin(t) for t in stamps if t > 0)}


def as_walked(root: str, options: DiscoveryOptions | None, record: dict, watch: dict, files: tuple) -> Discovery | None:
    """What walk(root, options) would find now, worked out from stats alone, or None when that
    cannot be told so (then walk). An earlier walk (`record`, from walk_record(); `watch`, its
    watch) saw every directory, rule file and file whose contents it judged by. When each still has
    the stat it had, and all were clearly older than that walk (`settled`), every listing and rule
    is as it was, so the eligible files are the same: those of `files` (paths and marks as the
    index recorded them), each stat'ed again. A file that is no longer a regular file or has
    outgrown the size cap, or an extension-less one whose first line no longer names a language,
    sends the caller to a walk. A record holding an unreadable directory or file is not used:
    permissions can change what a stat shows of it."""
    options = options or DiscoveryOptions()
    if os.stat not in os.supports_dir_fd or not isinstance(record, dict) or not isinstance(watch, dict):
        return None  # (Windows: a walk)
    root = root_path(root)
    paths, marks = files
    try:
        skipped, unwatched = record["skipped"], record["unwatched"]
        if (record["settled"] is not True or record["files"] != len(paths) or "unreadable" in skipped
                or not isinstance(unwatched, dict)):
            return None
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            for path, value in watch.items():
                if list(value) == [0, 0]:  # absent when walked (`.git` above the root: a lexists)
                    try:
                        os.stat(path, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    return None
                st = os.stat(path, dir_fd=fd)
                size = 0 if stat_mod.S_ISDIR(st.st_mode) else st.st_size  # a directory's is recorded 0
                if (size, st.st_mtime_ns, st.st_ctime_ns)[:len(value)] != tuple(value):
                    return None
            if unwatched_changed(unwatched, lambda path, follow: os.stat(path, dir_fd=fd, follow_symlinks=follow)):
                return None
            result = _as_walked_files(root, options, paths, marks, fd)
        finally:
            os.close(fd)
    except (OSError, ValueError, TypeError, KeyError, UnicodeError):
        return None
    if result is not None:
        result.skipped.update(skipped)
        result.watch = {path: tuple(value) for path, value in watch.items()}
        result.unwatched = {path: tuple(value) for path, value in unwatched.items()}
    return result


def unwatched_changed(unwatched: dict, stat: Callable) -> bool:
    """Whether any of a walk's `unwatched` stamps ({path: (size, mtime, ctime, follow)}) no longer
    holds; `stat(path, follow)` stats a path relative to the root. (A path absent when walked,
    stamped zeros, may still be.)"""
    for path, (size, mtime, ctime, follow) in unwatched.items():
        try:
            st = stat(path, bool(follow))
        except FileNotFoundError:
            if (size, mtime, ctime) == (0, 0, 0):
                continue
            return True
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns) != (size, mtime, ctime):
            return True
    return False


def _as_walked_files(root: str, options: DiscoveryOptions, paths, marks, fd: int) -> Discovery | None:
    """as_walked()'s files, stat'ed as walk() does. Their names were judged by this walker's rules
    (RULES_VERSION) and their rules are as they were: only a name whose first line may name its
    language is judged again, as the walk does it (its first line is read)."""
    extensions = languages.DEFAULT_EXTENSIONS if options.extensions is None else options.extensions
    basenames = languages.DEFAULT_BASENAMES if options.include_basenames is None else options.include_basenames
    scripts = options.extensions is None
    include_rules = ignore.compile_selection(options.include_globs)
    by_name, classify = _name_classes(basenames, extensions, scripts, bool(include_rules))
    detected: dict = {}
    result = Discovery(user=user_places())
    files, stat, detect = result.files, os.stat, languages.detect
    prefix = root if root.endswith(os.sep) else root + os.sep
    total, max_bytes = 0, options.max_bytes
    for rel, mark in zip(paths, marks):
        name = rel.rpartition("/")[2]
        if scripts and _may_be_script(name):
            found = by_name[name] if name in by_name else classify(name)
            if found is None or found[1]:
                return None  # not eligible by its name, or a secret one: not this walker's index
            script, _secret, language, kind, may_be_script = found
        else:
            script = may_be_script = False
            language, kind = detected[name] if name in detected else detected.setdefault(name, detect(name))
        st = stat(rel, dir_fd=fd, follow_symlinks=False)
        size = st.st_size
        if not stat_mod.S_ISREG(st.st_mode) or size > raw_limit(language, max_bytes):
            return None
        path = prefix + rel if os.sep == "/" else prefix + rel.replace("/", os.sep)
        if not language and may_be_script:
            language, kind = languages.script_language(_script_head(path))
            if script and not language:
                return None
        files.append(SourceFile(rel, path, size, st.st_mtime_ns, language or "text", kind or languages.DOCS,
                                st.st_ctime_ns, marked=mark))
        total += size
    if total > options.max_total_bytes:
        return None  # the walk says so
    result.total_bytes = total
    files.sort(key=_BY_PATH)
    return result


def discover_files(
    root: str | os.PathLike[str],
    *,
    extensions=None,
    exclude_dirs=None,
    exclude_globs=(),
    include_basenames=None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    include_globs=(),
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> list[SourceFile]:
    """The eligible files under root, sorted by relative path. `extensions` as `.py` or `py`."""
    options = DiscoveryOptions(
        extensions=_names("extensions", extensions, dot=True),
        include_basenames=_names("include_basenames", include_basenames),
        exclude_dirs=_names("exclude_dirs", exclude_dirs),
        exclude_globs=tuple(_names("exclude_globs", exclude_globs, keep=tuple)),
        include_globs=tuple(_names("include_globs", include_globs, keep=tuple)),
        max_bytes=_size("max_bytes", max_bytes),
        max_total_bytes=_size("max_total_bytes", max_total_bytes),
    )
    return walk(root, options).files


def string_items(value, what: str, noun: str = "strings", one=lambda value: f"[{value!r}]") -> list[str]:
    """A collection of strings, checked: a lone string would be taken letter by letter (the
    exclude glob `"*.md"` as `*`, `.`, `m`, `d`: every file excluded, silently); `one` writes the
    collection of it the error suggests."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} takes a collection of {noun}, not one string: use {one(value)}")
    items = list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what} takes strings, not {type(item).__name__} ({item!r})")
    return items


def _names(what: str, value, *, dot: bool = False, keep=frozenset):
    """A collection of strings (`string_items`), or None."""
    if value is None:
        return None
    items = string_items(value, what)
    if dot:
        items = [item if item.startswith(".") else "." + item for item in items]
    return keep(items)


def _size(what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int (bytes), not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{what} must be 1 or more, not {value}")
    return value

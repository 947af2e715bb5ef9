"""A query that is text to find word for word: the hits holding it come first (retrieval.verbatim)."""
from __future__ import annotations

from retrieval import service
from retrieval.records import SearchHit
from retrieval.verbatim import format_strings, holding_first, verbatim_text


def test_a_pasted_line_message_or_signature_is_text_to_find_and_a_name_or_question_is_not():
    assert verbatim_text("  Unknown   command line flag ") == "Unknown command line flag"
    assert verbatim_text('"Unknown command line flag"') == "Unknown command line flag"  # quotes dropped
    assert verbatim_text("func retry(_ request: Request, for session:") == "func retry(_ request: Request, for session:"
    assert verbatim_text("APIRouter.add_api_route") == ""  # a name: one word
    assert verbatim_text("fix the bug") == ""  # three words but under 12 characters
    assert verbatim_text("how does dependency injection work") == ""  # a question
    assert verbatim_text("line one of it\nline two of it") == ""  # several lines
    assert verbatim_text("word " * 80) == ""  # a pasted report
    # Names are asked for by the ranking: a comment or test naming one came before its definition.
    for name in ("Ecto.Repo.insert", "std::sync::Arc", "os.path.join(a, b)"):
        assert verbatim_text(name) == "", name
    assert verbatim_text("parse command line options with defaults") == ""  # lower-case words: a question
    assert verbatim_text('"foo" and "bar" here') == '"foo" and "bar" here'  # not quoted whole
    # Quoted whole, lower-case words and a question's first word are text to find as written too
    # (pandoc's `"not found in resource path"`: the one line saying it was fourth).
    assert verbatim_text('"not found in resource path"') == "not found in resource path"
    assert verbatim_text("'how many bytes were read'") == "how many bytes were read"
    assert verbatim_text('"fix the bug"') == ""  # quoted, still too short to be worth the files' reading
    assert verbatim_text("\u201cnot found in resource path\u201d") == "not found in resource path"  # as a chat types it
    assert verbatim_text("'it's not found here'") == "it's not found here"  # an apostrophe inside a word


def hit(path, start, end, rank):
    return SearchHit(f"{path}:{start}-{end}", path, start, end, rank, 1.0 / rank)


def test_the_hits_whose_span_holds_the_text_go_first_in_their_order_across_a_wrapped_line_too():
    files = {"flag.h": "class CommandLineFlag {\n  bool IsSpecifiedOnCommandLine() const;\n};\n",
             "parse.cc": "int x;\n\nerrors.push_back(StrCat(\"Unknown command line flag '\", name));\n",
             "wrapped.cc": "Log(\"Unknown command\n     line flag\");\n"}
    hits = [hit("flag.h", 1, 3, 1), hit("parse.cc", 1, 2, 2), hit("parse.cc", 3, 3, 3), hit("wrapped.cc", 1, 2, 4)]
    asked = []

    def read(path, word):
        asked.append(word)
        return files[path]

    first = holding_first(hits, "Unknown command line flag", read)
    assert [(h.source_path, h.start_line, h.rank) for h in first] == [
        ("parse.cc", 3, 1), ("wrapped.cc", 1, 2), ("flag.h", 1, 3), ("parse.cc", 1, 4)]
    assert asked == ["Unknown"] * 3  # each file read once, told the text's longest word
    assert holding_first(hits, "unknown command line flag", read) is None  # its letter case
    assert holding_first(hits, "Unknown flag of the line", read) is None  # none holds it: as ranked


def test_every_match_of_a_file_is_found_on_its_own_line_in_one_pass():
    body = "".join(f"x{n} = 1\nif err != nil {{\n    return nil, err\n}}\n" for n in range(3000))
    hits = [hit("gen.go", 4 * 2999 + 1, 4 * 2999 + 4, 1), hit("gen.go", 1, 1, 2)]
    first = holding_first(hits, "return nil, err", lambda path, word: body)
    assert [(h.start_line, h.rank) for h in first] == [(4 * 2999 + 1, 1), (1, 2)]  # the last block's line 11999


def test_a_file_s_bytes_are_skipped_unread_only_when_they_plainly_lack_the_word(tmp_path):
    from retrieval.snippets import current_text

    (tmp_path / "a.cs").write_bytes("\ufeffRetryAsync(Request r)\n".encode("utf-16"))
    (tmp_path / "b.py").write_text("def other(): pass\n")
    (tmp_path / "c.txt").write_bytes("Café crème\n".encode("latin-1"))
    assert "RetryAsync(Request" in current_text(str(tmp_path), "a.cs", "RetryAsync(Request")  # UTF-16
    assert current_text(str(tmp_path), "b.py", "RetryAsync") is None
    assert current_text(str(tmp_path), "b.py") == "def other(): pass\n"
    assert "crème" in current_text(str(tmp_path), "c.txt", "crème")  # not ASCII: decoded to tell


def test_a_search_for_a_pasted_line_puts_the_chunk_holding_it_first(make_tree):
    """alamofire's protocol requirement `func retry(_ request: Request, for session: Session, ...`
    was not among the first 30 hits for its own text: chunks repeating its words came first."""
    signature = "func retry(_ request: Request, for session: Session, dueTo error: any Error)"
    busy = ("// retry the request for the session dueTo the error: retry the request for the session again\n"
            "func retry(request: Request, session: Session, error: Error) {\n"
            "    session.retry(request, error: error)  // a retry of the request in the session\n}\n")
    # The requirement is its file's second chunk, which competes at a share of its score.
    protocol = busy + "".join(f"let padding{n} = {n}\n" for n in range(120)) + \
        "protocol RequestRetrier {\n    " + signature + "\n}\n"
    files = {"Sources/Protocol.swift": protocol, **{f"Sources/Retry{n}.swift": busy for n in range(6)}}
    root = str(make_tree(files))
    query = "func retry(_ request: Request, for session: Session, dueTo error:"
    top = service.search(root, query, top_k=3).hits[0]
    assert (top.source_path, top.start_line <= protocol.count("\n") - 1 <= top.end_line) == ("Sources/Protocol.swift", True)
    # (discriminating: the ranking alone puts the chunks repeating its words first)
    from retrieval import load_chunk_documents
    from retrieval.retrievers.base import build_retriever

    retriever = build_retriever("lexical")
    retriever.index(load_chunk_documents(root))
    first = retriever.search_detailed(query, 3)[0]
    assert not (first.source_path == "Sources/Protocol.swift" and first.end_line >= protocol.count("\n") - 1)
    # `--retriever all` as well
    from retrieval.multi import search_all

    top = search_all(root, query, top_k=3).hits[0]
    assert (top.source_path, top.start_line <= protocol.count("\n") - 1 <= top.end_line) == ("Sources/Protocol.swift", True)


def test_a_test_holding_the_text_keeps_its_place_and_scores_still_fall_with_rank():
    """newtonsoft's message `Self referencing loop detected for property` is built from pieces by
    the code raising it; two tests quoting it whole were lifted above that code (score 73.7, rank 4,
    under hits scoring 24), so scores rose with rank too."""
    files = {"src/writer.cs": 'throw Error("Self referencing loop detected" + " for property");\n',
             "tests/WriterTests.cs": 'Assert("Self referencing loop detected for property");\n',
             "src/other.cs": 'Log("Self referencing loop detected for property");\n'}
    hits = [SearchHit(f"{p}:1-1", p, 1, 1, n, score)
            for n, (p, score) in enumerate([("src/writer.cs", 73.7), ("tests/WriterTests.cs", 40.0),
                                           ("src/other.cs", 24.2)], start=1)]
    code_only = lambda h: not h.source_path.startswith("tests/")
    first = holding_first(hits, "Self referencing loop detected for property", lambda p, w: files[p], code_only)
    assert [(h.source_path, h.rank, h.score) for h in first] == [
        ("src/other.cs", 1, 73.7), ("src/writer.cs", 2, 73.7), ("tests/WriterTests.cs", 3, 40.0)]
    assert holding_first(hits[1:2], "Self referencing loop detected for property", lambda p, w: files[p],
                         code_only) is None  # held by a test alone: as ranked


def test_a_pasted_message_finds_the_code_building_it_before_the_tests_quoting_it(make_tree):
    """ecto's `could not perform insert because changeset is invalid`: the code builds it around the
    action (`#{action}`), and a test asserting the printed message came first, lifted for holding
    it word for word and boosted for quoting all of it. A question about tests still asks for them."""
    code = ("def insert(changeset, action):\n    if not changeset.valid:\n"
            "        raise InvalidChangesetError(f'Could not perform {action} because changeset is invalid')\n")
    test = ("def test_insert_of_an_invalid_changeset():\n"
            "    with raises(InvalidChangesetError, match='Could not perform insert because changeset is invalid'):\n"
            "        insert(invalid, 'insert')\n")
    root = str(make_tree({"lib/repo.py": code, "tests/test_repo.py": test}))
    query = "Could not perform insert because changeset is invalid"
    assert [h.source_path for h in service.search(root, query, top_k=2).hits] == ["lib/repo.py", "tests/test_repo.py"]
    assert service.search(root, "test: " + query, top_k=2).hits[0].source_path == "tests/test_repo.py"


def test_the_hit_lifted_for_holding_the_text_is_the_same_however_many_hits_are_asked_for(make_tree):
    """click's `No such command`: the chunk saying it was its file's second hit, 40th after the halving
    of a file's further chunks, and came first only when -k was large enough to fetch it: the first
    hit changed with -k. A file among the first ones has its further chunks looked at too."""
    target = "def add(self):\n    pass\n" + "".join(f"x{i} = {i}\n" for i in range(50)) + \
        "def resolve(self):\n    ctx.fail('No such command here')\n"
    root = str(make_tree({"cli/core.py": target, **{f"cli/f{i}.py": f"y = {i}\n" for i in range(60)}}))
    hits = ([SearchHit("cli/core.py:1-2", "cli/core.py", 1, 2, 1, 100.0)]
            + [SearchHit(f"cli/f{i}.py:1-1", f"cli/f{i}.py", 1, 1, i + 1, 99.0 - i) for i in range(1, 40)]
            + [SearchHit("cli/core.py:53-54", "cli/core.py", 53, 54, 41, 50.0)]
            + [SearchHit(f"cli/f{i}.py:1-1", f"cli/f{i}.py", 1, 1, i + 2, 49.0 - i) for i in range(40, 60)])

    def fetch(asked, allow=None):
        return hits[:asked]

    for depth in (1, 3, 10, 100):
        first = service.first_hits(root, "No such command here", fetch, depth)[0]
        assert (first.source_path, first.start_line, first.rank, first.score) == ("cli/core.py", 53, 1, 100.0), depth
    # A file past the first DEPTH ones is not read for it: what a larger -k would fetch stays out.
    from retrieval.verbatim import DEPTH, window

    assert "cli/f35.py:1-1" not in window(hits) and "cli/core.py:53-54" in window(hits) and DEPTH == 30
    # A log line's time stamp or colour codes before the text change nothing.
    for pasted in ("2024-01-20T03:14:15.926Z No such command here", "\x1b[31mNo such command here\x1b[0m"):
        first = service.first_hits(root, pasted, fetch, 3)[0]
        assert (first.source_path, first.start_line) == ("cli/core.py", 53), pasted


def test_a_message_is_found_by_the_format_string_that_printed_it_in_any_language():
    """A message as printed has its values filled in, so no file holds it word for word: the format
    string's own text, its placeholders taking anything, is what to find."""
    from retrieval.verbatim import template_lines

    body = "\n".join([
        'raise MissingSchema(f"Invalid URL {url!r}: No scheme supplied. "',  # Python
        'String.format("Cannot deserialize value of type %s from String %s: %s", t, v, m);',  # Java
        'return fmt.Errorf("listen tcp %v: address already in use", addr)',  # Go
        'raise NoMethodError, "undefined method #{name} for nil value"',  # Ruby
        'throw new JsonException(string.Format("Could not find member \'{0}\' on type \'{1}\'", m, t));',  # C#
        'throw new Error(`Cannot find module ${name} from ${dir}`)',  # JavaScript
        'error("$port is not a valid port number")',  # Kotlin
        'print("Listening on \\(host) with \\(count) workers")',  # Swift
        'panic!("index {} out of range for slice of length {}", i, n)',  # Rust
    ])
    found = lambda message: sorted(template_lines(body, message))
    assert found("requests.exceptions.MissingSchema: Invalid URL 'x.com': No scheme supplied. Perhaps https://x.com?") == [1]
    assert found('InvalidFormatException: Cannot deserialize value of type `java.time.Instant` from String "x": bad') == [2]
    assert found("listen tcp 0.0.0.0:8080: address already in use") == [3]
    assert found("NoMethodError: undefined method upcase for nil value") == [4]
    assert found("Could not find member 'Name' on type 'Person'.") == [5]
    assert found("Error: Cannot find module ./app from /srv/web") == [6]
    assert found("IllegalStateException: 80800 is not a valid port number") == [7]
    assert found("Listening on localhost with 4 workers") == [8]
    assert found("thread 'main' panicked at 'index 7 out of range for slice of length 3'") == [9]
    # Each piece of its own text, in its order and letter case: a different word is another message.
    assert found('Cannot deserialize value of type `int` from number 7: bad') == []
    assert found("listen udp 0.0.0.0:53: address already in use") == []
    assert found("cannot find module ./app from /srv/web") == []
    # Too little of its own to tell one message from another: `Error: %s` printed every error.
    assert template_lines('log("Error: %s", e)\nlog("%s: %s", a, b)\n', "Error: connection reset by peer") == {}


def test_the_hits_holding_the_format_string_go_first_and_a_buried_one_is_looked_for_in_its_file():
    """jackson's `Cannot deserialize value of type %s from String %s` was 152nd behind its file's
    `from number %s` (a file's further chunks count at half their score), out of reach of a lift."""
    from retrieval.verbatim import template_first

    files = {"src/context.java": "\n".join([
                 'String.format("Cannot read value of type %s from number %s", t, v);',
                 'String.format("Cannot read value of type %s from text %s", t, v);',
                 'String.format("Cannot read value of type %s", t);']),
             "src/other.java": 'fail("Cannot read value of type");\n',
             "tests/ContextTest.java": 'assertThrows("Cannot read value of type Instant from text 2020-13-45");\n'}
    hits = [hit("src/context.java", 1, 1, 1), hit("tests/ContextTest.java", 1, 1, 2), hit("src/other.java", 1, 1, 3),
            hit("src/context.java", 3, 3, 4)]
    asked = []

    def more(paths):
        asked.append(paths)
        return [hit("src/context.java", 1, 1, 1), hit("src/context.java", 2, 2, 2), hit("src/other.java", 1, 1, 3)]

    code = lambda h: not h.source_path.startswith("tests/")
    strings = lambda path: format_strings(files[path])
    first = template_first(hits, "Cannot read value of type Instant from text 2020-13-45", strings, code, more)
    # The one printing most of it first (line 2, looked for in its file), then those printing less
    # (a literal with no placeholder too) in their order, then the others as ranked.
    assert [(h.source_path, h.start_line, h.rank) for h in first] == [
        ("src/context.java", 2, 1), ("src/other.java", 1, 2), ("src/context.java", 3, 3),
        ("src/context.java", 1, 4), ("tests/ContextTest.java", 1, 5)]
    assert asked == [frozenset({"src/context.java"})]  # only the file whose line no hit holds
    assert first[0].score == first[3].score  # raised to the first other's: scores fall with rank
    # A test quoting the message is no format string of its own: without the code's file, as ranked.
    assert template_first(hits[1:2], "Cannot read value of type Instant from text 2020-13-45", strings, code,
                          more) is None


def test_a_pasted_message_finds_the_format_string_buried_behind_its_file_s_first_chunk(make_tree):
    def raiser(n, source):
        return (f"def weird_{source}_{n}(value, target, base):\n"
                f'    """Helper for a {source} value that is not valid for the target type."""\n'
                f'    msg = "Cannot deserialize value of type %s from {source} %s: %s" % (target, value, base)\n'
                "    return InvalidFormat(msg, value, target)\n\n\n")
    context = ("def deserialize_number(value, target):\n"
               '    """Deserialize a number value of the target type, not valid ones raise."""\n'
               "    return value\n\n\n" + raiser(1, "number") + "".join(f"def pad{i}():\n    return {i}\n\n\n"
                                                                for i in range(40)) + raiser(2, "String"))
    root = str(make_tree({"src/context.py": context,
                          "src/invalid_format.py": "class InvalidFormat(ValueError):\n    pass\n"}))
    message = ('InvalidFormat: Cannot deserialize value of type `java.time.Instant` from String "2020-13-45": '
               "not a valid representation")
    line = next(n for n, text in enumerate(context.splitlines(), start=1) if "from String" in text)
    first = service.search(root, message, top_k=3).hits[0]
    assert first.source_path == "src/context.py" and first.start_line <= line <= first.end_line


def test_ruby_elixir_and_positional_placeholders_are_placeholders_too():
    from retrieval.verbatim import template_lines

    body = "\n".join([
        'message(opts, "should be at least %{count} character(s)")',  # Elixir, Ruby's i18n
        'format("%<n>d retries left for %<host>s now", n: 3)',  # Ruby
        'String.format("Cannot bind port %1$d on host %2$s", p, h);',  # Java, PHP
        'fmt.Errorf("cannot decode %[1]s into a %[2]T value", s, v)',  # Go
    ])
    found = lambda message: sorted(template_lines(body, message))
    assert found('{"errors":{"name":["should be at least 3 character(s)"]}}') == [1]
    assert found("3 retries left for db.local now") == [2]
    assert found("Cannot bind port 80 on host web1") == [3]
    assert found("cannot decode abc into a int value") == [4]


def test_a_message_joined_from_pieces_is_one_format_string():
    """axios's `'timeout of ' + config.timeout + 'ms exceeded'` printed only pieces too short to
    count, and ecto's `"cannot load ..." <> "for field ..."` was lifted for a message sharing its tail."""
    from retrieval.verbatim import template_lines

    body = "\n".join([
        "const msg = 'timeout of ' + config.timeout + 'ms exceeded';",
        'raise ArgumentError, "cannot load `#{inspect(v)}` as type #{inspect(t)} " <>',
        '  "for field `#{key}` in schema #{inspect(s)}"',
        'raise MissingSchema(f"Invalid URL {url!r}: No scheme supplied. "',
        '                    f"Perhaps you meant https://{url}?")',
        '$m = "Unable to open " . $path . " for reading";',
    ])
    found = lambda message: sorted(template_lines(body, message))
    assert found("AxiosError: timeout of 5000ms exceeded") == [1]
    # Joined, it prints more than its tail alone, which another message shares (each literal is
    # looked for alone too: one sentence of a long notice is pasted alone).
    load = template_lines(body, "cannot load `1` as type :integer for field `age` in schema User")
    dump = template_lines(body, "cannot dump `1` as type :integer for field `age` in schema User")
    assert sorted(load) == [2, 3] and load[2] > load[3] == dump[3] and sorted(dump) == [3]
    url = template_lines(body, "Invalid URL 'x.com': No scheme supplied. Perhaps you meant https://x.com?")
    assert sorted(url) == [4, 5] and url[4] > url[5]  # the whole message, on its first line
    assert found("Unable to open /tmp/a.txt for reading") == [6]


def test_a_value_a_message_quotes_and_a_comment_are_no_format_string():
    """A Go toolchain message naming a module lifted the files importing it; jackson's javadoc
    quoting a date pattern was lifted for a message quoting it."""
    from retrieval.verbatim import template_lines

    body = '\n'.join(['import (\n\t"github.com/gin-gonic/gin/binding"\n)',
                      ' * format String of "yyyy-MM-dd and HH:mm:ss in zone"', '// panic("listen on the port failed")'])
    assert template_lines(body, "no required module provides package github.com/gin-gonic/gin/binding") == {}
    assert template_lines(body, 'Cannot parse date: not any of ("yyyy-MM-dd and HH:mm:ss in zone")') == {}
    assert template_lines(body, "listen on the port failed") == {}


def test_a_specific_message_comes_before_the_one_wrapping_it_and_a_detail_after_its_message():
    """click's `Invalid value for {param_hint}: {message}` printed more of `Invalid value for
    '--count': 'abc' is not a valid integer.` than `{value!r} is not a valid {number_type}.`, which
    says what went wrong; jackson's `(for POJO property '%s')` is a detail its message appends."""
    from retrieval.verbatim import template_first

    files = {"click/exceptions.py": 'x = "Invalid value for {param_hint}: {message}"\n',
             "click/types.py": 'x = "{value!r} is not a valid {number_type}."\n',
             "jackson/Context.java": 'String.format("Could not resolve type id \'%s\' as a subtype of %s", a, b);\n',
             "jackson/TypeBase.java": 'String.format("%s (for POJO property \'%s\')", d, p);\n'}
    hits = [hit(path, 1, 1, n) for n, path in enumerate(files, start=1)]
    strings = lambda path: format_strings(files[path])
    first = template_first(hits, "Error: Invalid value for '--count': 'abc' is not a valid integer.", strings,
                           lambda h: True, lambda paths: [])
    assert [h.source_path for h in first[:2]] == ["click/types.py", "click/exceptions.py"]
    first = template_first(hits, "Could not resolve type id 'Circle' as a subtype of `Shape`: known ids = [Square] "
                           "(for POJO property 'shape')", strings, lambda h: True, lambda paths: [])
    assert [h.source_path for h in first[:2]] == ["jackson/Context.java", "jackson/TypeBase.java"]
    assert [h.score for h in first] == sorted((h.score for h in first), reverse=True)  # scores fall with rank


def test_lifted_hits_scores_fall_with_rank_whatever_their_own():
    from retrieval.verbatim import lifted

    first = [SearchHit("a:1-1", "a", 1, 1, 5, 10.0), SearchHit("b:1-1", "b", 1, 1, 2, 90.0)]
    others = [SearchHit("c:1-1", "c", 1, 1, 1, 50.0)]
    assert [(h.source_path, h.rank, h.score) for h in lifted(first, others)] == [
        ("a", 1, 50.0), ("b", 2, 50.0), ("c", 3, 50.0)]


def test_a_pasted_output_of_several_lines_is_looked_for_line_by_line_at_its_margin():
    """cobra's `Error: unknown command "sever" for "myapp"` over its usage, a Rust panic's message
    under its header: a text of several lines was looked for nowhere."""
    from retrieval.verbatim import verbatim_lines

    cobra = 'Error: unknown command "sever" for "myapp"\n\nDid you mean this?\n\tserve\n\nRun \'myapp --help\' for usage.\n'
    assert verbatim_lines(cobra) == ['Error: unknown command "sever" for "myapp"', "Did you mean this?",
                                     "Run 'myapp --help' for usage."]
    trace = ('Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
             '    raise ValueError("bad thing here")\nValueError: bad value for the field name\n')
    # (A runtime's header is no message: a library's docs quote it too.)
    assert verbatim_lines(trace) == ["ValueError: bad value for the field name"]
    # A message line a runtime's header would hold stays (a Rust panic before 1.73; cobra's own
    # `at least one of the flags ...`), and a paste indented as a whole is at its margin once dedented.
    rust = "thread 'main' panicked at 'there is no reactor running, must be called from a runtime', src/main.rs:4:5\nnote: run with `RUST_BACKTRACE=1`"
    assert verbatim_lines(rust)[0].startswith("thread 'main' panicked at 'there is no reactor")
    assert verbatim_lines("at least one of the flags in the group [host port] is required\nexit status 1")[0] == \
        "at least one of the flags in the group [host port] is required"
    assert verbatim_lines("    " + cobra.replace("\n", "\n    "))[0] == 'Error: unknown command "sever" for "myapp"'
    assert verbatim_lines("one line of text here") == []
    assert verbatim_lines("Word " * 50 + "\nSecond Line of it") == []  # a report


def test_a_search_for_a_pasted_output_finds_the_format_string_of_its_message_line(make_tree):
    code = ('def find(name):\n    raise CommandError(f"unknown command {name!r} for {root!r}")\n')
    other = ("def suggest(command, root):\n    # an unknown command for the root: did you mean this one? an error for\n"
             "    # a command unknown to myapp, or an error for a command unknown to it: did you mean serve?\n"
             "    return unknown_command_error(command, root)\n")
    root = str(make_tree({"cli/commands.py": code, "cli/usage.py": other}))
    output = "Error: unknown command 'sever' for 'myapp'\n\n  Did you mean this?\n\tserve\n"
    assert service.search(root, output, top_k=1).hits[0].source_path == "cli/commands.py"


def test_pieces_are_found_in_order_leftmost_in_one_pass_and_percent_signs_print_once():
    from retrieval.verbatim import _in_order, template_lines

    assert _in_order(["to ", " done"], "go to it done now") == (3, 13, [(6, 8)])
    assert _in_order(["done", "to "], "to it done") is None  # (each after the one before)
    # Eight placeholders over a long text that does not hold the message: a lazy pattern's
    # backtracking took 50 s to fail on 170 characters; none is found here, at once.
    assert template_lines('x = "xx %s xx %s xx %s xx %s xx %s xx %s xx %s xx %s zz qq"\n', "Error: zz qq " + "xx " * 60) == {}
    body = 'printf("Progress: %d%% of the %s files were copied", n, kind);\n*out = format("could not open the file %s for reading", name);\n'
    assert template_lines(body, "Progress: 50% of the source files were copied") == {1: 30}
    assert sorted(template_lines(body, "could not open the file /etc/x for reading")) == [2]  # (a C pointer, no doc comment)

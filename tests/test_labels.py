"""A packed chunk's label chosen by the query's words (retrieval.labels)."""
from __future__ import annotations

from retrieval.labels import member_in_focus, named_identifiers, relabel
from retrieval.records import SearchHit

# Lines 10-19 of a file: `halt` (10-12) and `pass_` (14-16) beside the label, `forward` (18-19).
LINES = [
    "# Exit the current block.\n", "def halt():\n", "    throw('halt')\n", "\n",
    "# Pass control to the next matching route.\n", "def pass_():\n", "    throw('pass')\n", "\n",
    "def forward(app):\n", "    return app.call(route)\n",
]
HALT = ("halt", "Base.halt", "method", 10, 12)
PASS = ("pass_", "Base.pass_", "method", 14, 16)


def weights(*terms, rare=()):
    return {**{t: 1.0 for t in terms}, **{t: 5.0 for t in rare}}


def test_the_member_whose_lines_hold_more_of_the_words_than_the_label_s_own_is_chosen():
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("pass", "control", "next")) == PASS
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("exit", "block")) == HALT


def test_words_the_label_s_own_lines_hold_as_much_keep_the_label():
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("forward", "app")) is None
    # `route` is in pass_'s comment and in forward's body: a tie, and the label stays
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("route")) is None
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("nowhere")) is None
    assert member_in_focus(LINES, 10, (HALT, PASS), {}) is None


def test_each_word_counts_once_per_definition_by_its_weight():
    # `throw` three times in halt and pass_ counts once; the rare `call` outweighs two common words
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("exit", "throw", rare=("call",))) is None
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("exit", "current", "call")) == HALT


def test_of_members_holding_as_much_the_shortest_is_chosen():
    """A module-level chunk's members are its classes and their methods: the method, not the class."""
    whole = ("Base", "Base", "class", 10, 19)
    assert member_in_focus(LINES, 10, (whole, HALT, PASS), weights("pass", "control")) == PASS


def test_members_outside_the_chunk_s_lines_are_not_chosen():
    later = ("stop", "Base.stop", "method", 30, 40)
    assert member_in_focus(LINES, 10, (later,), weights("pass", "control")) is None


def test_a_hit_keeps_its_span_and_takes_the_member_s_name_scope_path_and_kind():
    hit = SearchHit("base.rb:10-19", "base.rb", 10, 19, 1, 2.5, "Base.forward", "high", language="ruby",
                    kind="method", symbol="forward", scope=(1, 40), members=(HALT, PASS))
    told = relabel(hit, LINES, weights("pass", "control"))
    assert (told.context, told.symbol, told.kind) == ("Base.pass_", "pass_", "method")
    assert (told.start_line, told.end_line, told.score, told.scope) == (10, 19, 2.5, (1, 40))
    # lines that are not the hit's (a file shorter now) choose nothing
    assert relabel(hit, LINES[:-1], weights("pass", "control")) is hit


def test_two_regions_holding_the_same_words_weigh_alike_whatever_the_hash_seed():
    """A sum over a set of terms added its floats in hash order: a section holding exactly the words
    of its label's own lines outweighed them by the last bit under some seeds, and the label of one
    hit changed from run to run (`Setup` or `Setup > Details`)."""
    import os
    import subprocess
    import sys

    program = (
        "from retrieval.labels import member_in_focus\n"
        "lines = ['# Setup\\n', '\\n', 'widget\\n', 'cache\\n', 'timeout\\n', 'retry\\n', 'policy\\n', '\\n',\n"
        "         '## Details\\n', '\\n', 'policy\\n', 'retry\\n', 'timeout\\n', 'cache\\n', 'widget\\n']\n"
        "weights = {'retry': 0.6931471805599453, 'timeout': 1.0296194171811581, 'widget': 0.44183275227903923,\n"
        "           'retri': 0.6931471805599453, 'polici': 1.0296194171811581, 'policy': 1.0296194171811581,\n"
        "           'cach': 0.6931471805599453, 'cache': 0.6931471805599453}\n"
        "print(member_in_focus(lines, 1, (('Details', 'Setup > Details', 'section', 9, 15),), weights))\n"
    )
    said = {subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(12)}
    assert said == {"None\n"}


def test_a_member_the_query_names_as_code_is_chosen_over_one_holding_more_of_its_words():
    """A question naming `preventLazyLoading()` was labelled `shouldBeStrict`, whose docblock says
    "prevent lazy loading" more often than the method's own lines do."""
    named = named_identifiers("After calling Model::pass_() the next route runs: exit and block?")
    assert named == {"pass_"}
    # halt's comment holds "exit" and "block" (more weight), pass_ is named
    assert member_in_focus(LINES, 10, (HALT, PASS), weights("exit", "block"), named) == PASS
    hit = SearchHit("base.rb:10-19", "base.rb", 10, 19, 1, 2.5, "Base.forward", "high", language="ruby",
                    kind="method", symbol="forward", scope=(1, 40), members=(HALT, PASS))
    assert relabel(hit, LINES, weights("exit", "block"), named).symbol == "pass_"
    # The hit's own label named: it stays, whatever the words
    assert relabel(hit, LINES, weights("exit", "block"), frozenset({"forward"})) is hit


def test_identifiers_written_as_code_are_told_from_plain_words():
    assert named_identifiers("where does spawn_blocking call JoinHandle::new or run() with utf8 in Router") == {
        "spawn_blocking", "joinhandle", "run", "utf8"}


def test_a_pasted_message_is_labelled_by_the_member_whose_line_holds_it_even_naming_the_class():
    """cats's `Cannot create NonEmptyList from empty list` names the class, which kept its label
    over `fromListUnsafe`, the member raising it; its format string decides too."""
    lines = ["final case class NonEmptyList[A](head: A) {\n", "  def size: Int = 1\n",
             "  def fromListUnsafe[A](l: List[A]): NonEmptyList[A] =\n",
             '    if (l.isEmpty) throw new IllegalArgumentException("Cannot create NonEmptyList from empty list")\n',
             "    else NonEmptyList(l.head)\n", "  def fromList[A](l: List[A]) = 2\n",
             '  def at(i: Int) = fail(s"Index $i is out of range for a list of ${l.size} items")\n', "}\n"]
    members = (("size", "NonEmptyList.size", "method", 2, 2), ("fromListUnsafe", "NonEmptyList.fromListUnsafe", "method", 3, 5),
               ("fromList", "NonEmptyList.fromList", "method", 6, 6), ("at", "NonEmptyList.at", "method", 7, 7))
    hit = SearchHit("NonEmptyList.scala:1-8", "NonEmptyList.scala", 1, 8, 1, 1.0, context="NonEmptyList",
                    symbol="NonEmptyList", kind="class", members=members)
    message = "Cannot create NonEmptyList from empty list"
    assert relabel(hit, lines, {}, named_identifiers(message)).symbol == "NonEmptyList"  # (named: it kept its label)
    assert relabel(hit, lines, {}, named_identifiers(message), (message,)).context == "NonEmptyList.fromListUnsafe"
    printed = "Index 7 is out of range for a list of 3 items"
    assert relabel(hit, lines, {}, frozenset(), (printed,)).symbol == "at"
    # A pasted output's lines in turn: the first one the hit holds decides.
    assert relabel(hit, lines, {}, frozenset(), ("Did you mean this other one?", printed)).symbol == "at"
    # Held by the label's own lines (no member's): the label stays.
    assert relabel(hit, lines, {}, frozenset(), ("final case class NonEmptyList[A]",)).symbol == "NonEmptyList"

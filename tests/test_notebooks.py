"""Jupyter notebooks are searched as the script their cells hold: hits point at the notebook's own
lines, snippets show the cells' source (never the JSON around it or the outputs), in the kernel's
language; a notebook that does not read as one is still indexed, as the JSON it is."""
from __future__ import annotations

import json

import pytest

from retrieval.notebook import script_view
from retrieval.read import line_texts


def notebook(cells, language="python", indent=1) -> str:
    """A notebook as Jupyter writes it: one source line per JSON line (indent=1)."""
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"language": language, "name": language}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=indent) + "\n"


def code(*lines, outputs=()):
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": list(outputs),
            "source": _items(lines)}


def markdown(*lines):
    return {"cell_type": "markdown", "metadata": {}, "source": _items(lines)}


def _items(lines):
    return [line + "\n" for line in lines[:-1]] + list(lines[-1:])


TRAINING = notebook([
    markdown("# Training the churn model", "", "We fit a gradient boosting classifier."),
    code("import pandas as pd", "def load_customers(path):", "    return pd.read_csv(path)",
         outputs=[{"name": "stdout", "output_type": "stream", "text": ["printed onlyinoutput words\n"]},
                  {"data": {"image/png": "iVBORw0KGgo" + "A" * 400}, "metadata": {}, "output_type": "display_data"}]),
    code("clf = GradientBoostingClassifier().fit(load_customers('c.csv'))"),
])


def line_of(text, needle):
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def test_the_script_view_keeps_every_line_where_the_file_has_it():
    language, view = script_view(TRAINING)
    assert language == "python"
    assert len(line_texts(view)) == len(line_texts(TRAINING))
    lines = line_texts(view)
    assert lines[line_of(TRAINING, "def load_customers") - 1] == "def load_customers(path):"
    assert lines[line_of(TRAINING, "return pd.read_csv") - 1] == "    return pd.read_csv(path)"
    # Prose behind the kernel's line comment (the code around it still parses), its blank line a bare `#`.
    assert lines[line_of(TRAINING, "Training the churn") - 1] == "# # Training the churn model"
    assert lines[line_of(TRAINING, "Training the churn")] == "#"
    # Structure, metadata and outputs are blank.
    assert "onlyinoutput" not in view and "iVBOR" not in view and "cell_type" not in view
    assert {line for n, line in enumerate(lines, 1) if n == line_of(TRAINING, '"outputs"')} == {""}


@pytest.mark.parametrize("language, expected, comment", [("R", "r", "#"), ("scala", "scala", "//"),
                                                          ("brainfudge", "jupyter", "#")])
def test_a_notebook_is_in_its_kernels_language(language, expected, comment):
    text = notebook([markdown("Fit a model"), code("fit <- lm(y ~ x)")], language=language)
    got, view = script_view(text)
    assert got == expected
    assert f"{comment} Fit a model" in view.split("\n")


def test_a_notebook_written_on_one_line_keeps_its_text_on_that_line():
    text = notebook([markdown("Intro"), code("x = 1", "y = 2")], indent=None)
    language, view = script_view(text)
    assert view.count("\n") == text.count("\n") == 1
    assert view.split("\n")[0] == "# Intro x = 1 y = 2"


def test_a_source_key_elsewhere_in_the_json_is_not_taken_for_a_cells_source():
    cells = [code("real_code = 1")]
    cells[0]["metadata"] = {"widget": {"source": ["not_code\n"]}}
    language, view = script_view(notebook(cells))
    assert "real_code = 1" in view and "not_code" not in view


@pytest.mark.parametrize("text", ["{not json", "[]", '{"cells": 3}', json.dumps({"worksheets": []})])
def test_what_does_not_read_as_a_notebook_has_no_script_view(text):
    assert script_view(text) is None


def test_a_notebooks_cells_are_found_at_the_notebooks_own_lines(run, make_tree):
    root = make_tree({"analysis/train.ipynb": TRAINING, "src/util.py": "def helper():\n    return 1\n"})
    result = run("query", "--root", root, "load_customers read_csv", "--json", "--snippet-lines", "40")
    assert result.exit_code == 0, result.stderr
    hit = json.loads(result.stdout)["results"][0]
    assert hit["path"] == "analysis/train.ipynb" and hit["language"] == "python"
    assert hit["start_line"] <= line_of(TRAINING, "def load_customers") <= hit["end_line"]
    snippet = hit["snippet"].split("\n")
    assert snippet[line_of(TRAINING, "def load_customers") - hit["snippet_start"]] == "def load_customers(path):"
    assert '"source"' not in hit["snippet"] and "\\n" not in hit["snippet"]
    assert run("query", "--root", root, "onlyinoutput", "--json").stdout.count('"path"') == 0
    python = json.loads(run("query", "--root", root, "load_customers", "--lang", "py", "--json").stdout)["results"]
    assert [h["path"] for h in python][:1] == ["analysis/train.ipynb"]


def test_a_notebook_that_does_not_parse_is_indexed_as_its_json(run, make_tree):
    broken = TRAINING.replace('"nbformat": 4', '<<<<<<< HEAD\n "nbformat": 4', 1)
    root = make_tree({"train.ipynb": broken})
    hits = json.loads(run("query", "--root", root, "load_customers", "--json").stdout)["results"]
    assert [(h["path"], h["language"]) for h in hits] == [("train.ipynb", "jupyter")]


@pytest.mark.parametrize("retriever", ["lexical", pytest.param("treesitter", marks=pytest.mark.extra("treesitter"))])
def test_a_notebook_nested_past_the_json_readers_depth_is_indexed_as_its_json(run, make_tree, retriever):
    """Outputs nested 1,000 deep raised RecursionError, read as a damaged index: every build and
    query of the tree failed ("the lexical index is damaged (maximum recursion depth exceeded ...)")."""
    deep = ('{"cells": [{"cell_type": "code", "source": ["deep_cell_word = 1"], "outputs": ' + "[" * 3000 + "]" * 3000
            + '}], "nbformat": 4, "metadata": {}}')
    root = make_tree({"deep.ipynb": deep, "ok.py": "def fine_word():\n    pass\n"})
    for query, path in (("fine_word", "ok.py"), ("deep_cell_word", "deep.ipynb")):
        result = run("query", "--root", root, query, "--retriever", retriever, "--json")
        assert result.exit_code == 0 and "damaged" not in result.stderr, result.stderr
        assert json.loads(result.stdout)["results"][0]["path"] == path


def test_an_edited_notebook_is_searched_as_edited(run, make_tree, rewrite):
    root = make_tree({"train.ipynb": TRAINING})
    assert run("index", "--root", root, "--retriever", "lexical").exit_code == 0
    edited = notebook([code("def score_churn_risk(model):", "    return model")])
    rewrite(root / "train.ipynb", edited)
    hits = json.loads(run("query", "--root", root, "score_churn_risk", "--json").stdout)["results"]
    assert [(h["path"], h["start_line"]) for h in hits] == [("train.ipynb", line_of(edited, "score_churn_risk"))]


@pytest.mark.extra("treesitter")
def test_the_treesitter_retriever_parses_a_notebooks_cells_in_its_kernels_language(run, make_tree):
    """Markdown behind comments and blank lines between cells leave the code a script the Python
    grammar parses: the function is found by the syntax tree, named, at the notebook's lines."""
    root = make_tree({"train.ipynb": TRAINING})
    result = run("query", "--root", root, "load_customers", "--retriever", "treesitter", "--json")
    assert result.exit_code == 0, result.stderr
    hit = json.loads(result.stdout)["results"][0]
    assert (hit["language"], hit["symbol"], hit["kind"]) == ("python", "load_customers", "function")
    assert hit["start_line"] <= line_of(TRAINING, "def load_customers") < line_of(TRAINING, "return pd.read_csv") \
        <= hit["end_line"]


def test_a_notebooks_size_cap_is_on_its_cells_not_its_saved_outputs(run, make_tree):
    """A dozen plots are megabytes of base64: a quarter of a textbook's notebooks (code and prose a
    few dozen KB) were skipped as too large, and a notebook vanished from the index once run."""
    plots = [{"data": {"image/png": "iVBORw0KGgo" + "A" * 400_000}, "metadata": {}, "output_type": "display_data"}
             for _ in range(5)]
    plotted = notebook([code("def plot_learning_curve(model):", "    return model", outputs=plots)])
    assert len(plotted) > 2_000_000
    root = make_tree({"chapter.ipynb": plotted})
    assert hits_of(run, root, "plot_learning_curve") == ["chapter.ipynb"]
    # The cap still holds for the cells themselves.
    wordy = notebook([markdown(*(f"line {n} of a very long essay about learning curves" for n in range(200)))])
    root = make_tree({"essay.ipynb": wordy, "main.py": "x = 1\n"})
    result = run("index", "--root", root, "--retriever", "lexical", "--max-file-bytes", "5000")
    assert "1 too-large" in result.stdout, result.stdout + result.stderr


def hits_of(run, root, query, *args):
    result = run("query", "--root", root, query, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return [h["path"] for h in json.loads(result.stdout)["results"]]


def test_lang_jupyter_is_every_notebook_whatever_its_kernels_language(run, make_tree):
    """A Python kernel's notebook is `python`; `--lang jupyter`, which help lists, matched none of 90."""
    root = make_tree({"train.ipynb": TRAINING, "r.ipynb": notebook([code("load_customers <- function() 1")], "R"),
                      "src/load.py": "def load_customers(path):\n    return path\n"})
    for lang in ("jupyter", "notebook", "ipynb"):
        assert sorted(hits_of(run, root, "load_customers", "--lang", lang)) == ["r.ipynb", "train.ipynb"]
    assert sorted(hits_of(run, root, "load_customers", "--lang", "python")) == ["src/load.py", "train.ipynb"]


def test_a_notebooks_snippet_lines_are_lines_of_its_cells(run, make_tree):
    """Its outputs and JSON are blank lines in the script view: `--snippet-lines 15` showed 11 blank
    lines and 4 of code. N lines are N lines of its cells, with the blank ones among them (JSON keeps
    every line, so that line numbers stay the file's); text shows a run of blank lines as one `⋮`."""
    output = [{"name": "stdout", "output_type": "stream", "text": [f"epoch {n}\n" for n in range(8)]}]
    cells = [code(f"def fit_step_{i}(model):", "    model.train()", f"    return model.step({i})", outputs=output)
             for i in range(6)]
    text = notebook(cells)
    root = make_tree({"train.ipynb": text})
    result = run("query", "--root", root, "fit_step_0 fit_step_1 fit_step_2", "--json", "--snippet-lines", "6")
    hit = json.loads(result.stdout)["results"][0]
    view = line_texts(script_view(text)[1])
    in_hit = sum(1 for line in view[hit["start_line"] - 1 : hit["end_line"]] if line.strip())
    assert in_hit > 6
    shown = line_texts(hit["snippet"])
    assert len(shown) == hit["snippet_end"] - hit["snippet_start"] + 1 > 6  # every line between
    assert sum(1 for line in shown if line.strip()) == 6
    assert shown == view[hit["snippet_start"] - 1 : hit["snippet_end"]]
    printed = run("query", "--root", root, "fit_step_0 fit_step_1 fit_step_2", "--snippet-lines", "6", "-k", "1").stdout
    assert "⋮" in printed and sum(1 for line in printed.splitlines() if "model" in line) == 6


@pytest.mark.parametrize("retriever", ["lexical", pytest.param("treesitter", marks=pytest.mark.extra("treesitter"))])
def test_a_notebooks_chunks_hold_its_cells_not_its_outputs_blank_lines(run, make_tree, retriever):
    """A chunk is at most 120 lines: with each cell's printed output blank lines in the script view,
    a chunk held a cell or two, and a question about a few cells found them apart."""
    output = [{"name": "stdout", "output_type": "stream", "text": [f"epoch {n}\n" for n in range(40)]}]
    cells = [code(f"def fit_step_{i}(model):", "    model.train()", f"    return model.step({i})", outputs=output)
             for i in range(6)]
    root = make_tree({"train.ipynb": notebook(cells)})
    result = run("query", "--root", root, "fit_step_0 fit_step_3", "--retriever", retriever, "--json")
    hit = json.loads(result.stdout)["results"][0]
    text = notebook(cells)
    assert hit["start_line"] <= line_of(text, "fit_step_0") and line_of(text, "fit_step_3") <= hit["end_line"]


@pytest.mark.parametrize("retriever", ["lexical", pytest.param("treesitter", marks=pytest.mark.extra("treesitter"))])
def test_a_notebook_hits_context_is_the_markdown_headings_above_it(run, make_tree, retriever):
    """A notebook's chunks had no context (lexical) or `module <path>` (treesitter): its markdown
    headings say what a stretch of it is about, as a page's headings do."""
    text = notebook([markdown("# Churn model"), markdown("## Loading the data"),
                     code("import pandas as pd", "frame = pd.read_csv('zq_customers.csv')"),
                     markdown("## Fitting"), code("zq_model = GradientBoostingClassifier().fit(frame)")])
    root = make_tree({"churn.ipynb": text})
    result = run("query", "--root", root, "zq_customers", "--retriever", retriever, "--json")
    hit = json.loads(result.stdout)["results"][0]  # (the whole notebook is one chunk: its first heading's)
    assert hit["context"] == "Churn model", hit
    from retrieval.notebook import with_headings
    from retrieval.chunking import ChunkingPolicy, chunk_lines

    view = script_view(text)[1]
    small = chunk_lines(view, "churn.ipynb", language="python", kind="code", policy=ChunkingPolicy(code=60))
    contexts = [c.context for c in with_headings(small, view)]
    assert "Churn model > Loading the data" in contexts and "Churn model > Fitting" in contexts

"""A pasted report's template comments and environment listings are not searched for."""
from __future__ import annotations

from retrieval.boilerplate import strip_boilerplate
from retrieval.records import Document
from retrieval.retrievers.lexical import LexicalRetriever

SHOW_VERSIONS = """\
INSTALLED VERSIONS
------------------
commit: None
python: 3.8.2 | packaged by conda-forge | (default, Apr 24 2020, 08:20:52)
[GCC 7.3.0]
python-bits: 64
OS: Linux
LANG: en_US.UTF-8
libhdf5: 1.10.6
libnetcdf: 4.7.4"""

PACKAGES = """\
xarray: 0.16.0
pandas: 1.1.2
numpy: 1.19.1
scipy: 1.5.2
netCDF4: 1.5.4
pydap: None
dask: 2.25.0
matplotlib: 3.3.1
setuptools: 49.6.0.post20200814"""

PIP_LIST = """\
```
Package        Version
-------------- ---------
atomicwrites   1.3.0
attrs          19.1.0
pluggy         0.11.0
pytest         4.5.0
```"""

PIP_FREEZE = "$ pip freeze\nattrs==19.3.0\npackaging==20.3\npluggy==0.13.1\npytest==5.4.2"


def report(*paragraphs: str) -> str:
    return "\n\n".join(paragraphs) + "\n"


def test_template_comments_are_dropped_and_the_reporter_s_words_kept():
    text = ("xr.where drops attributes\n<!-- Please include a self-contained copy-pastable example -->\n"
            "Using `xr.where` on a DataArray loses its attrs.\n<!-- Paste the output here")
    assert strip_boilerplate(text) == "xr.where drops attributes\n \nUsing `xr.where` on a DataArray loses its attrs.\n "


def test_version_listings_are_dropped_whatever_tool_printed_them():
    prose = "Using `xr.where` on a DataArray loses its attrs."
    code = "```python\nda = xr.DataArray(1)\nxr.where(da == 0, -1, da).attrs\n```"
    for listing in (SHOW_VERSIONS, PACKAGES, PIP_LIST, PIP_FREEZE):
        stripped = strip_boilerplate(report(prose, code, listing, "Expected: the attrs are kept."))
        assert stripped.split() == report(prose, code, "Expected: the attrs are kept.").split()


def test_paragraphs_naming_a_version_or_two_or_assigning_numbers_are_kept():
    kept = [
        "name: my-app\nversion: 1.2.0\nport: 8080\nhost: localhost",  # a configuration snippet
        "ratio = 1.5\nscale = 2.25\noffset = 0.75\nlimit = 3.5",  # code assigning numbers
        "I upgraded numpy from 1.19.1 to 1.20.0\nand pandas 1.1.2 stayed\nsince then the attrs are lost\n"
        "on every call to where, and the result's dtype changes\nfrom int8 to int64\nwhich it did not before",
    ]
    for paragraph in kept:
        text = report("Attributes are lost", paragraph, "More below.")
        assert strip_boilerplate(text) == text


def test_a_text_that_is_nothing_but_boilerplate_is_searched_as_written():
    assert strip_boilerplate("<!-- only a comment -->") == "<!-- only a comment -->"
    assert strip_boilerplate(PACKAGES) == PACKAGES


def doc(path: str, text: str) -> Document:
    return Document(docid=path, text=text, source_path=path, start_line=1, end_line=text.count("\n") + 1)


def test_a_report_pasting_its_versions_ranks_the_code_it_is_about_above_the_module_printing_versions():
    printer = "def show_versions():\n    deps = [" + ", ".join(
        f'("{name}", lambda mod: mod.__version__)' for name in
        ("xarray", "pandas", "numpy", "scipy", "netCDF4", "pydap", "dask", "matplotlib", "setuptools",
         "libhdf5", "libnetcdf", "python", "commit", "conda")) + "]\n"
    where = "def where(cond, x, y, keep_attrs=None):\n    # apply_ufunc drops the attrs unless keep_attrs\n" \
            "    return apply_ufunc(duck_array_ops.where, cond, x, y, keep_attrs=keep_attrs)\n"
    docs = [doc("xarray/util/print_versions.py", printer), doc("xarray/core/computation.py", where)]
    docs += [doc(f"xarray/other/f{i}.py", "def unrelated():\n    pass\n") for i in range(6)]
    retriever = LexicalRetriever()
    retriever.index(docs)
    text = report("xr.where not preserving attributes",
                  "Using `xr.where` on a DataArray with attributes results in a new DataArray without "
                  "attributes. Attributes should be preserved or there should be a way to pass keep_attrs.",
                  "INSTALLED VERSIONS\n------------------\ncommit: None\npython: 3.8.2\nconda: None\n"
                  "libhdf5: 1.10.6\nlibnetcdf: 4.7.4", PACKAGES)
    assert retriever.search_detailed(text, 1)[0].source_path == "xarray/core/computation.py"
    assert retriever.search_detailed(strip_boilerplate(text), 2) == retriever.search_detailed(text, 2)


def test_a_log_line_s_time_stamp_and_colour_codes_are_no_words_to_search():
    """A CI log line, `2024-01-20T03:14:15.926Z error: unknown variant ...`: its digits and `T`/`Z`
    matched a numeric tuple impl before the message's own code (serde)."""
    assert strip_boilerplate("2024-01-20T03:14:15.926Z error: unknown variant `Purple`") == \
        " error: unknown variant `Purple`"
    assert strip_boilerplate("\x1b[31m[2024-01-20 03:14:15,926]\x1b[0m ERROR boom\n") == " boom\n"
    assert strip_boilerplate("May  2 10:11:12 host sshd[1]: Failed password") == " host sshd[1]: Failed password"
    assert strip_boilerplate("  02 May 2024 10:11:12.345 # Warning: bind failed") == "   # Warning: bind failed"
    # and the level after it: no file writes a message with it (its lift for the text was lost)
    assert strip_boilerplate("2024-05-01 12:00:01,123 ERROR Cannot serialize it") == " Cannot serialize it"
    # A date inside a sentence or code is text: only a line's leading stamp goes.
    assert strip_boilerplate("released on 2024-01-20 12:00") == "released on 2024-01-20 12:00"
    assert strip_boilerplate("since = '2024-01-20T03:14:15Z'") == "since = '2024-01-20T03:14:15Z'"

"""Searching code written beyond ASCII: a word in any script is one word, found however it was
typed (composed or not, any case, full-width), Chinese, Japanese and Korean by their pieces, and a
definition named in any script ranks as an ASCII one does."""
from __future__ import annotations

import json
import unicodedata

from retrieval.lexical.features import defined_names


def hits(run, root, query, *args):
    result = run("query", "--root", root, query, "--json", "-k", "5", *args)
    assert result.exit_code == 0, result.stderr
    return [h["path"] for h in json.loads(result.stdout)["results"]]


def test_a_word_sharing_only_its_first_ascii_letters_is_no_match(run, make_tree):
    root = make_tree({"kohl.py": "def grünkohl_kochen():\n    return 'Grünkohl'\n",
                      "groesse.py": "def berechne_größe(teile):\n    return len(teile)\n"})
    assert hits(run, root, "größe") == ["groesse.py"]
    assert hits(run, root, "präfix") == []


def test_composed_decomposed_and_full_width_forms_find_each_other(run, make_tree):
    decomposed = unicodedata.normalize("NFD", "café crème")
    root = make_tree({"menu.py": f"# {decomposed}\nMENU = ['{decomposed}']\n",
                      "wide.py": "def ｆｕｌｌ＿ｗｉｄｔｈ():\n    pass\n",
                      "tr.py": "def İzmir_yükle():\n    return 'DİYARBAKIR'\n"})
    assert hits(run, root, "café") == ["menu.py"]
    assert hits(run, root, "full_width") == ["wide.py"]
    assert hits(run, root, "izmir") == hits(run, root, "diyarbakır") == ["tr.py"]


def test_a_few_cjk_characters_find_the_sentence_holding_them(run, make_tree):
    root = make_tree({"cart.go": "package cart\n\n// 计算总价函数根据购物车中的商品计算订单总价格\nfunc Total() int { return 0 }\n",
                      "stock.py": "def check():\n    raise ValueError('エラー：在庫が足りません')\n",
                      "Login.java": "class Login {\n  // 사용자의 비밀번호를 확인합니다\n  void check() {}\n}\n",
                      "other.py": "def unrelated():\n    return '天气很好'\n"})
    assert hits(run, root, "总价") == hits(run, root, "购物车") == ["cart.go"]
    assert hits(run, root, "在庫") == ["stock.py"]
    assert hits(run, root, "비밀번호") == ["Login.java"]


def test_a_definition_named_in_any_script_ranks_above_its_uses(run, make_tree):
    models = "class Заказ:\n    def 总价(self):\n        return 0\n\n\nclass Order:\n    pass\n"
    uses = "from models import Заказ\n\n\ndef use():\n    Заказ()\n    Заказ()\n    return Заказ()\n"
    root = make_tree({"models.py": models, **{f"use{i}.py": uses for i in range(3)}})
    assert {"Заказ", "总价"} <= defined_names(models, "python")
    assert hits(run, root, "Заказ")[0] == "models.py"


def test_a_budget_counts_cjk_characters_as_a_tokenizer_does(run, make_tree):
    """Four characters a token undercounted Chinese three to four times: `--max-tokens 200` printed
    about 600 tokens of it."""
    from retrieval.output import printed_tokens

    assert printed_tokens("函数" * 10) == 20 and printed_tokens("abcd" * 10) == 10
    root = make_tree({f"m{i}.py": "".join(f"# 函数{n}：计算订单总价格并返回结果\n" for n in range(20)) for i in range(4)})
    result = run("query", "--root", root, "函数", "--max-tokens", "200")
    assert result.exit_code == 0, result.stderr
    assert 0 < printed_tokens(result.stdout) <= 200


def test_a_query_on_stdin_in_another_encoding_is_said_to_be_one(run, make_tree):
    root = make_tree({"a.py": "x = 1\n"})
    result = run("query", "--root", root, "-", input="计算总价".encode("gbk"))
    assert "note: the query on stdin is not UTF-8 (nor mostly ASCII)" in result.stderr


def test_words_with_combining_marks_are_whole_words(run, make_tree):
    """`\\w` has no combining marks: Devanagari, Thai and vowelled Arabic words were cut at each
    vowel sign (`नमस्ते` was `नमस`, `दुनिया` no term at all)."""
    from retrieval.text import tokenize

    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]
    assert tokenize("مُحَمَّد") == ["محمد"]  # (one word, its harakat left out)
    root = make_tree({"hindi.py": "def greet(संख्या):\n    return 'नमस्ते दुनिया'\n",
                      "thai.md": "# ราคาสินค้า\n\nคำนวณราคาสินค้าทั้งหมด\n", "other.py": "x = 1\n"})
    assert hits(run, root, "दुनिया") == hits(run, root, "संख्या") == ["hindi.py"]
    assert hits(run, root, "ราคา") == ["thai.md"]  # Thai is written without spaces: found by its pieces


def test_a_long_run_without_spaces_costs_a_bounded_number_of_terms():
    """An 18 MB file of 10,000-character runs took 60 s and 2.6 GB to index once every run was
    also its pieces; a run longer than a word is its pieces only, and at most CJK_PIECES of them."""
    from retrieval.text import CJK_PIECES, CJK_WORD, split_identifier

    run_of = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(10_000))
    terms = split_identifier(run_of)
    assert len(terms) <= CJK_PIECES and all(len(t) == 2 for t in terms)
    assert split_identifier("计算订单总价格")[0] == "计算订单总价格" and len("计算订单总价格") <= CJK_WORD

"""Markdown on the demo model: only the text spans of the source change; structure, URLs and code stay."""

from __future__ import annotations

import pytest

from enzh.documents.api import translate_document
from enzh.runtime.translator import Translator

markdown_it = pytest.importorskip("markdown_it")

SOURCE = """\
---
title: The weather is nice today.
---
# The weather is nice today.

**The meeting has been postponed.** I would like a cup of coffee.
Where is the school?

- [Anna goes to the station every day.](https://ex.com/a_(b) "The station")
- Is my son resting?
  1. Kate wants to find `this key`.

> My bicycle was stolen
> last night.

| Where is the school? | Is my son resting? |
|---------|------|
| *Where is the school?* | `code` |

```python
print("The weather is nice today.")
```

    Where is the school?

<div>The meeting has been postponed.</div>

He owes the students 50 yuan.\\
I would like a glass of wine.

Where is the school? &copy; 2024 &amp; &#8212; \\*

我想要一杯咖啡 &amp; 茶。

Is my son resting? <https://ex.com/a?b=1&c=2> ![Where is the school?](a.png)

[ref]: https://ex.com/ref
"""

EXPECTED = """\
---
title: The weather is nice today.
---
# 今天天气很好。

**会议已被推迟**。我想要一杯咖啡。
学校在哪里？

- [安娜每天去车站。](https://ex.com/a_(b) "The station")
- 我儿子在休息吗？
  1. 凯特想找到这把钥匙`this key`。

> 我的自行车昨天晚上
> 被偷走了。

| 学校在哪里？ | 我儿子在休息吗？ |
|---------|------|
| *学校在哪里？* | `code` |

```python
print("The weather is nice today.")
```

    Where is the school?

<div>The meeting has been postponed.</div>

他欠学生们50元。\\
我想要一杯葡萄酒。

学校在哪里？© 2024 & — \\*

我想要一杯咖啡 &amp; 茶。

我儿子在休息吗？<https://ex.com/a?b=1&c=2>![Where is the school?](a.png)

[ref]: https://ex.com/ref
"""


@pytest.fixture(scope="module")
def translator(demo_dir) -> Translator:
    return Translator.load(demo_dir)


def md(translator: Translator, source: str) -> str:
    result = translate_document(translator, source, format="md", beam_size=1)
    assert isinstance(result, str)
    return result


def parser():
    return markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])


def blocks(source: str) -> list[tuple[str, str, object]]:
    return [(t.type, t.tag, t.map) for t in parser().parse(source)]


def inline_markup(source: str) -> list[tuple[str, object]]:
    """Every inline token but text, with what must survive translation (URLs, code, raw HTML)."""
    kept = []
    for token in parser().parse(source):
        for child in token.children or []:
            if child.type not in ("text", "softbreak", "hardbreak", "text_special"):
                kept.append((child.type, child.attrs.get("href") or child.attrs.get("src") or child.content))
    return kept


def test_markdown_exact_output(translator):
    assert md(translator, SOURCE) == EXPECTED


def test_markdown_structure_urls_and_code_are_kept(translator):
    out = md(translator, SOURCE)
    assert out.count("\n") == SOURCE.count("\n")
    assert blocks(out) == blocks(SOURCE)
    assert inline_markup(out) == inline_markup(SOURCE)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # Unclosed emphasis, link and inline HTML: the parser tolerates them; their characters are text.
        ("<b>Where is the school?\n", "<b>学校在哪里？\n"),
        ("Kate wants to find [this key.\n", "凯特想找到这把钥匙。\n"),
        # Nested marks around a whole sentence.
        ("***[Where is the school?](u)***\n", "***[学校在哪里？](u)***\n"),
        ("> - **Is my son resting?**\n>   Where is the school?\n", "> - **我儿子在休息吗？**\n>   学校在哪里？\n"),
        # A sentence wrapped over two lines is translated whole and re-broken once.
        ("My bicycle was stolen\nlast night.\n", "我的自行车昨天晚上\n被偷走了。\n"),
        # A hard break (two spaces) stays where the sentences meet.
        ("Where is the school?  \nIs my son resting?\n", "学校在哪里？  \n我儿子在休息吗？\n"),
        # Setext heading, CRLF line ends, an escaped character kept escaped.
        ("Where is the school?\r\n====\r\n", "学校在哪里？\r\n====\r\n"),
        ("# Where is the school?\r\rIs my son\rresting?\r", "# 学校在哪里？\r\r我儿子在\r休息吗？\r"),
        ("", ""),
        ("```\nWhere is the school?\n", "```\nWhere is the school?\n"),  # unclosed fence: code to the end
    ],
    ids=[
        "open-html",
        "open-link",
        "nested",
        "quote-list",
        "soft-break",
        "hard-break",
        "setext-crlf",
        "cr",
        "empty",
        "open-fence",
    ],
)
def test_markdown_edge_cases(translator, source, expected):
    out = md(translator, source)
    assert out == expected
    assert blocks(out) == blocks(source)


def test_emphasis_stays_valid_next_to_chinese_punctuation(translator):
    # "**…。**" followed by a CJK character would not close in CommonMark: the 。 moves outside the mark.
    out = md(translator, "**The meeting has been postponed.** I would like a cup of coffee.\n")
    assert out == "**会议已被推迟**。我想要一杯咖啡。\n"
    assert "<strong>会议已被推迟</strong>" in parser().render(out)


def write_with(source: str, text: str, spans: list[tuple[int, int]]) -> str:
    """The Markdown writer given a translation and mark spans by hand (no model, no placement)."""
    from enzh.documents.inline import Mark, TranslatedBlock
    from enzh.documents.markdown import FORMAT

    units = FORMAT.read(source)
    (block,) = units.blocks
    marks = tuple(Mark(a, b, m.tag) for (a, b), m in zip(spans, block.marks, strict=True))
    return FORMAT.write(units, [TranslatedBlock(text, marks)])


def test_writer_flanking_escapes_and_breaks():
    # "_" between CJK characters cannot open or close, and delimiters are written as in the source: a space on
    # each outer side makes it open and close (the output reads back as the same markup); edge whitespace and
    # punctuation move out.
    assert write_with("Is my son _resting_?\n", "我儿子在休息吗？", [(4, 6)]) == "我儿子在 _休息_ 吗？\n"
    assert write_with("A **b.** c\n", "甲乙。丙", [(1, 3)]) == "甲**乙**。丙\n"
    assert write_with("A **b** c\n", "甲 乙 丙", [(1, 4)]) == "甲 **乙** 丙\n"
    # Characters that would be markup are escaped; "1. " at a line start would start a list.
    assert write_with("Where is it?\n", "1. 是*的*[x]", []) == "1\\. 是\\*的\\*\\[x\\]\n"
    assert write_with("a\n", "# 不是标题", []) == "\\# 不是标题\n"
    # A soft break inside a sentence lands near the same relative place, after punctuation when close.
    assert write_with("one two\nthree four\n", "一二，三四五六", []) == "一二，\n三四五六\n"
    # Two code spans that the translation puts side by side get a space: "`bat``git`" would be one span.
    assert write_with("Use `bat` and `git` now.\n", "现在用batgit。", [(3, 6), (6, 9)]) == "现在用`bat` `git`。\n"
    # A soft break stays between the same two pieces of markup (here the two code spans), even with no text there.
    assert write_with("See `a` then\n`b` there.\n", "看ab。", [(1, 2), (2, 2), (2, 3)]) == "看`a`\n`b`。\n"
    # A block whose translation cannot read back as its markup (no text is left before the link for the line the
    # source has there) is kept as written. (The text there is an invisible "line" mark: the placement, unlike
    # these hand-made spans, keeps words in it.)
    assert write_with("Hello\n[x](u) there.\n", "某这里。", [(0, 0), (0, 1)]) == "Hello\n[x](u) there.\n"
    # Link destination and title are copied as written, whatever the translation.
    assert write_with('[x](<a b> "t")\n', "某", [(0, 1)]) == '[某](<a b> "t")\n'

"""HTML translation (enzh.documents.html): exact outputs on the demo model, and on random markup (hypothesis) the
same tags, comments and declarations out as in."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enzh.documents.formats import detect_format, get_format
from enzh.documents.html import FORMAT, set_attribute, tokenize, translate_html
from enzh.runtime.translator import Translator


@pytest.fixture(scope="module")
def translate():
    translator = Translator.load()
    return lambda texts: translator.translate(texts, beam_size=1)


def tags(document: str) -> list[tuple[str, str]]:
    return [(t.kind, t.name) for t in tokenize(document) if t.kind in ("start", "end", "startend")]


def kept(document: str) -> list[str]:
    """Raw comments, declarations, processing instructions and tags that carry no alt/title."""
    return [
        t.raw
        for t in tokenize(document)
        if t.kind in ("comment", "decl", "pi", "cdata")
        or (t.kind in ("start", "end", "startend") and not {"alt", "title"} & {a for a, _ in t.attrs})
    ]


CASES = {
    "nested inline tags": (
        "<p>They are buying <b>that bottle of <i>beer</i></b> now.</p>",
        "<p>他们现在在买<b><i>那瓶啤酒</i></b>。</p>",
    ),
    "link with attributes": (
        "<p>Please give me <a href='/tea?x=1&amp;y=2' target=_blank title=\"Please give me six cups of tea.\">"
        "six cups of <b>tea</b></a>.</p>",
        "<p>请给我<a href='/tea?x=1&amp;y=2' target=_blank title=\"请给我六杯茶。\"><b>六杯茶</b></a>。</p>",
    ),
    "numbers found as written": (
        "<p>There are <strong>28</strong> books at the bookstore.</p>",
        "<p>书店里有<strong>28</strong>本书。</p>",
    ),
    "entities decoded for the model": (
        "<p>These pencils cost &#36;300.</p>\n<p>Where is the school&#63;</p>",
        "<p>这些铅笔300美元。</p>\n<p>学校在哪里？</p>",
    ),
    "comments, doctype, script, style, pre, code, textarea untouched": (
        "<!DOCTYPE html>\n<html lang=en>\n<head><title>Where is the school?</title>"
        '<script>if (a < b && c) { x = "They have drunk juice."; }</script>\n'
        "<style>p > b { color: red }</style></head>\n"
        '<body><!-- Where is the school? --><?xml-stylesheet href="a.css"?>\n'
        "<p>He is in <b>the classroom</b> now.</p>\n<pre>  Where   is the school?  </pre>\n"
        "<code>They have drunk juice.</code>\n<textarea>Where is the school?</textarea>\n</body></html>\n",
        "<!DOCTYPE html>\n<html lang=en>\n<head><title>学校在哪里？</title>"
        '<script>if (a < b && c) { x = "They have drunk juice."; }</script>\n'
        "<style>p > b { color: red }</style></head>\n"
        '<body><!-- Where is the school? --><?xml-stylesheet href="a.css"?>\n'
        "<p>他现在在<b>教室</b>。</p>\n<pre>  Where   is the school?  </pre>\n"
        "<code>They have drunk juice.</code>\n<textarea>Where is the school?</textarea>\n</body></html>\n",
    ),
    "broken markup": (
        "<p>Kate wants to find <b>this key</i>.</p><p>Where is <a href=x>the school?</p></b>"
        "<div>They have drunk <em>juice.",
        "<p><b>凯特想找到这把钥匙</i>。</p><p><a href=x>学校在哪里？</p></b><div><em>他们喝过果汁。",
    ),
    "alt and title": (
        "<img src=cat.png alt=\"Where is the school?\" title='They have drunk juice.'> <img alt=Germany src=g.png>",
        '<img src=cat.png alt="学校在哪里？" title=\'他们喝过果汁。\'> <img alt="德国德国德国。" src=g.png>',
    ),
    "translate=no and notranslate": (
        '<p translate="no">They have drunk juice.</p><div class=notranslate><p>Where is the school?</p></div>'
        '<p>He is in <span class="brand notranslate">the classroom</span> now.</p>',
        '<p translate="no">They have drunk juice.</p><div class=notranslate><p>Where is the school?</p></div>'
        '<p>他现在在教室<span class="brand notranslate">the classroom</span>。</p>',
    ),
    "lines, list items and whitespace": (
        "<ul>\n  <li>Where is the school?\n  <li>He ordered <b>six cups of coffee</b>\n     last year.<br>"
        "He is in <i>the classroom</i> now.\n</ul>",
        "<ul>\n  <li>学校在哪里？\n  <li>他去年点了<b>六杯咖啡</b>。<br>他现在在<i>教室</i>。\n</ul>",
    ),
    "empty document": ("", ""),
}


@pytest.mark.parametrize("name", CASES)
def test_demo_model_output(name, translate):
    source, expected = CASES[name]
    output = translate_html(source, translate)
    assert output == expected
    assert tags(output) == tags(source) and kept(output) == kept(source)


def test_translated_text_is_escaped_and_untouched_entities_kept():
    source = "<p>A &amp; B &lt;c&gt;</p><p>&copy; 2024&nbsp;</p><p title='x &amp; y'>Z</p>"
    output = translate_html(source, lambda texts: [f"[{t}] <&>" for t in texts])
    assert output == (
        "<p>[A &amp; B &lt;c&gt;] &lt;&amp;&gt;</p><p>&copy; 2024&nbsp;</p>"
        "<p title='[x &amp; y] &lt;&amp;&gt;'>[Z] &lt;&amp;&gt;</p>"
    )


def test_set_attribute_keeps_quotes_and_every_other_byte():
    assert set_attribute('<img src=a.png alt="A cat" data-x=1>', "alt", "猫") == '<img src=a.png alt="猫" data-x=1>'
    assert set_attribute("<a TITLE='Go' href=x>", "title", "它's") == "<a TITLE='它&#x27;s' href=x>"
    assert set_attribute("<img alt=Dog src=d.png>", "alt", '"狗"') == '<img alt="&quot;狗&quot;" src=d.png>'


def test_registered_in_the_format_registry():
    assert get_format("html") is FORMAT and detect_format("page.HTM") == "html"


PIECES = st.sampled_from(
    [
        "<p>", "</p>", "<b>", "</b>", "<i>", "</i>", "<a href='x' title=\"Go there\">", "</a>", "<br>", "<br/>",
        '<img alt="A cat" src=c.png>', "<code>", "</code>", "<script>if (a<b) {}</script>", "<!-- note -->",
        "<!DOCTYPE html>", '<span translate="no">', "</span>", "<pre>", "</pre>", "<div class=notranslate>",
        "</div>", "<li>", "<td>", "&amp;", "&nbsp;", "&#36;", "&copy", "Hello", " world.", " ", "\n",
        "Where is the school?", "<", "&", "</", "<!--", "<?pi?>", "<![CDATA[x]]>", "e\u0301", "\U0001f600",
    ]
)  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(PIECES, max_size=25), data=st.data())
def test_random_markup_keeps_its_tags_comments_and_declarations(pieces, data):
    source = "".join(pieces)
    assert "".join(t.raw for t in tokenize(source)) == source

    def translate(texts: list[str]) -> list[str]:
        return [data.draw(st.sampled_from(["", "译文。", t, "<&>" + t, "e\u0301\U0001f600"]), label=t) for t in texts]

    output = translate_html(source, translate)
    assert tags(output) == tags(source)
    assert kept(output) == kept(source)

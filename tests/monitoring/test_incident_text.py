"""Update Markdown becomes safe HTML: an XSS corpus comes out inert, the formatting people
use survives, and links keep only absolute http, https and mailto targets."""

import re
from html.parser import HTMLParser

import pytest

from monitoring.incident_text import markdown_html

# Each of these tries to run script, load something, or smuggle an attribute in.
XSS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=https://evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<iframe src=javascript:alert(1)></iframe>",
    "<a href='javascript:alert(1)'>x</a>",
    "<details open ontoggle=alert(1)>",
    "<style>body{display:none}</style>",
    "<!-- <script>alert(1)</script> -->",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](  javascript:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript&#x3A;alert(1))",
    "[x](java&#x09;script:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![x](javascript:alert(1))",
    "<javascript:alert(1)>",
    '[x](https://example.com" onmouseover="alert(1))',
    '[x](<https://example.com" onmouseover="alert(1)>)',
    '[x](https://example.com "title\\" onmouseover=\\"alert(1)")',
    '![x" onerror="alert(1)](https://example.com/a.png)',
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;script&#62;alert(1)&#60;/script&#62;",
    "**<img src=x onerror=alert(1)>**",
    "`<script>alert(1)</script>`",
    "```html\n<script>alert(1)</script>\n```",
    "[click](https://example.com)<script>alert(1)</script>",
    "[x]: javascript:alert(1)\n\n[x]",
]

ALLOWED = {"p", "strong", "em", "code", "pre", "a", "ul", "ol", "li", "s", "br", "blockquote"}


class Elements(HTMLParser):
    """The tags and attributes a browser would build from the HTML."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))

    def handle_comment(self, data):
        self.found.append(("!--", []))


@pytest.mark.parametrize("text", XSS)
def test_the_xss_corpus_renders_inert(text):
    html = markdown_html(text)

    for tag, attributes in Elements(html).found:
        assert tag in ALLOWED, html
        for name, value in attributes:
            assert name in {"href", "title", "rel"}, html
            if name == "href":
                assert re.match(r"(https?|mailto):", value or "", re.IGNORECASE), html
    assert not re.search(r"<\s*/?\s*(script|img|svg|iframe|style)", html, re.IGNORECASE)


def test_typed_html_shows_as_text():
    assert markdown_html("<b>hi</b> & <i>there</i>") == (
        "<p>&lt;b&gt;hi&lt;/b&gt; &amp; &lt;i&gt;there&lt;/i&gt;</p>"
    )


def test_formatting_people_use_survives():
    text = (
        "**Payments** are *slow*; ~~all~~ some `checkout` calls fail.\n\n"
        "- first\n- second\n\n"
        "1. one\n2. two\n\n"
        "> quoted\n\n"
        "```\nretry --all\n```\n\n"
        'See [the runbook](https://example.com/runbook "Runbook") or '
        "[mail us](mailto:ops@example.com)."
    )

    html = markdown_html(text)

    assert "<strong>Payments</strong>" in html
    assert "<em>slow</em>" in html
    assert "<s>all</s>" in html
    assert "<code>checkout</code>" in html
    assert "<ul>\n<li>first</li>\n<li>second</li>\n</ul>" in html
    assert "<ol>\n<li>one</li>\n<li>two</li>\n</ol>" in html
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in html
    assert "<pre><code>retry --all\n</code></pre>" in html
    assert (
        '<a href="https://example.com/runbook" title="Runbook" rel="nofollow noopener">'
        "the runbook</a>"
    ) in html
    assert '<a href="mailto:ops@example.com" rel="nofollow noopener">mail us</a>' in html


def test_an_autolink_is_a_link_and_a_bare_url_stays_text():
    assert markdown_html("<https://example.com/a>") == (
        '<p><a href="https://example.com/a" rel="nofollow noopener">https://example.com/a</a></p>'
    )
    assert markdown_html("see https://example.com/a.") == "<p>see https://example.com/a.</p>"


def test_every_link_gets_nofollow_noopener():
    html = markdown_html("[a](https://a.example) [b](http://b.example)")

    assert html.count('rel="nofollow noopener"') == 2


@pytest.mark.parametrize("target", ["/status", "//evil.example/x", "ftp://files.example/x"])
def test_relative_and_other_scheme_links_lose_their_target(target):
    html = markdown_html(f"[x]({target})")

    assert "href" not in html
    assert ">x</a>" in html


def test_an_image_becomes_a_link_so_nothing_loads_from_elsewhere():
    html = markdown_html("![the graph](https://img.example/graph.png)")

    assert html == (
        '<p><a href="https://img.example/graph.png" rel="nofollow noopener">the graph</a></p>'
    )


def test_tables_lose_their_inline_alignment_styles():
    html = markdown_html("| a | b |\n|--:|:--|\n| 1 | 2 |")

    assert "<table>" in html
    assert "<td>1</td>" in html
    assert "style" not in html


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_a_blank_message_renders_nothing(text):
    assert markdown_html(text) == ""

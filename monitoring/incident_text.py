"""Incident update text: Markdown as people type it, made into HTML that is safe to show on
public status pages, in feeds and in mails.

Two independent layers, so a gap in one is not a hole. markdown-it-py parses CommonMark with
raw HTML turned off (a `<script>` typed in a message comes out as text) and refuses
`javascript:`-like link targets; then nh3, an allow-list sanitiser, keeps only the tags and
attributes below, links with absolute http, https or mailto targets only, each marked
`rel="nofollow noopener"`. Bare URLs are not turned into links (CommonMark's `<https://...>`
and `[text](url)` are): linkify needs another dependency and guesses wrong on trailing
punctuation. Images become links to them, so nothing loads from a third party when a reader
opens a status page (no tracking pixels, no mixed content, nothing for the CSP to block).

The HTML is rendered once, when an update is written, and stored beside its Markdown.
"""

from collections.abc import Sequence

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

ALLOWED_TAGS = frozenset(
    {
        "p",
        "br",
        "hr",
        "strong",
        "em",
        "del",
        "s",
        "code",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "li",
        "a",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
)
# No `style` (tables' alignment) or `class`: the site's CSP allows no inline styles, and
# the page's own stylesheet decides how an update looks.
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "nofollow noopener"


def _image_as_link(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    index: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    """An image as a link to it, its alt text (else its address) as the words."""
    token = tokens[index]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{escapeHtml(src)}">{escapeHtml(alt)}</a>'


def _parser() -> MarkdownIt:
    """CommonMark without raw HTML, with tables and strikethrough, images as links."""
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    parser.enable(["table", "strikethrough"])
    parser.add_render_rule("image", _image_as_link)
    return parser


_MARKDOWN = _parser()


def _absolute_links_only(tag: str, attribute: str, value: str) -> str | None:
    """Keep a link's target only when it names an allowed scheme itself: a relative one
    means nothing on a status page under another domain, or in a feed or a mail."""
    if tag == "a" and attribute == "href":
        scheme, colon, _ = value.partition(":")
        if not colon or scheme.lower() not in ALLOWED_SCHEMES:
            return None
    return value


def markdown_html(text: str) -> str:
    """The sanitised HTML of a Markdown message ("" for a blank one)."""
    if not text.strip():
        return ""
    rendered = _MARKDOWN.render(text)
    return nh3.clean(
        rendered,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(ALLOWED_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
        attribute_filter=_absolute_links_only,
    ).strip()

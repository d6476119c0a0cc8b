"""Badges drawn on the server: a flat two-part SVG (label on grey, message on a colour), as
README shields look, and the same words in shields.io's endpoint JSON.

Text widths are estimated, not measured: no font is loaded on the server, and the badge
names Verdana first, so each character's advance width in Verdana at 11 px (our own table,
from the font's proportions) sizes its part; `textLength` then fits whatever font the
reader's system draws with to the width we laid out. The SVG holds no script, no style, no
link and nothing fetched: an `<img>` of it is inert and CSP-clean anywhere.
"""

import hashlib
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape

# shields.io's named colours: the JSON says the name, the SVG draws its hex.
COLOURS = {
    "brightgreen": "#4c1",
    "green": "#97ca00",
    "yellowgreen": "#a4a61d",
    "yellow": "#dfb317",
    "orange": "#fe7d37",
    "red": "#e05d44",
    "blue": "#007ec6",
    "lightgrey": "#9f9f9f",
}
LABEL_COLOUR = "#555"
HEIGHT = 20
PADDING = 5  # each side of a part's text
FONT_SIZE = 11
FONT_FAMILY = "Verdana,Geneva,DejaVu Sans,sans-serif"

# Advance widths in Verdana, in ems (multiply by the font size for pixels). Verdana's digits
# share one width, so figures such as "99.95%" keep their size whatever the digits.
_EM: dict[str, float] = {
    " ": 0.352,
    **dict.fromkeys("0123456789", 0.636),
    **dict.fromkeys("il", 0.274),
    "j": 0.344,
    "f": 0.352,
    "t": 0.394,
    "r": 0.427,
    **dict.fromkeys("cs", 0.521),
    "z": 0.525,
    **dict.fromkeys("kvxy", 0.592),
    "e": 0.596,
    "a": 0.601,
    "o": 0.607,
    **dict.fromkeys("bdgpq", 0.623),
    **dict.fromkeys("hnu", 0.633),
    "w": 0.818,
    "m": 0.973,
    "I": 0.421,
    "J": 0.455,
    "L": 0.557,
    "F": 0.575,
    "P": 0.603,
    **dict.fromkeys("TY", 0.616),
    "E": 0.632,
    **dict.fromkeys("AVSXZ", 0.684),
    "B": 0.686,
    "K": 0.693,
    "R": 0.695,
    "C": 0.698,
    "U": 0.732,
    "N": 0.748,
    "H": 0.751,
    "D": 0.771,
    "G": 0.775,
    **dict.fromkeys("OQ", 0.787),
    "M": 0.843,
    "W": 0.989,
    "'": 0.269,
    **dict.fromkeys(",.", 0.364),
    **dict.fromkeys("!", 0.394),
    **dict.fromkeys("()-/:;[\\]|", 0.454),
    '"': 0.459,
    "?": 0.545,
    **dict.fromkeys("$*_`{}", 0.636),
    "&": 0.727,
    **dict.fromkeys("#+<=>^~", 0.818),
    "@": 1.0,
    "%": 1.076,
}
_OTHER_EM = 0.62  # a letter outside the table: about a lowercase Latin letter
_WIDE_EM = 1.0  # CJK and other full-width characters fill the em


def text_width(text: str) -> float:
    """The estimated width in pixels of text in Verdana 11 px."""
    ems = 0.0
    for char in text:
        if char in _EM:
            ems += _EM[char]
        elif unicodedata.combining(char):
            continue  # drawn over the letter before it
        elif unicodedata.east_asian_width(char) in ("W", "F"):
            ems += _WIDE_EM
        else:
            ems += _OTHER_EM
    return ems * FONT_SIZE


@dataclass(frozen=True)
class Badge:
    """What a badge says: its label, its message, and the shields.io colour name of the
    message's part."""

    label: str
    message: str
    color: str

    def as_json(self) -> dict[str, Any]:
        """shields.io's endpoint format, exactly its four required keys."""
        return {
            "schemaVersion": 1,
            "label": self.label,
            "message": self.message,
            "color": self.color,
        }

    def as_svg(self) -> str:
        """The flat badge as an SVG document."""
        return _svg(self)


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _text(x: float, width: float, text: str) -> str:
    """A part's text, centred, with the one-pixel shadow that keeps white legible on light
    colours; `textLength` fits the reader's font to the width laid out."""
    attrs = (
        f'x="{_number(x)}" textLength="{_number(width)}" lengthAdjust="spacing"'
        if width
        else f'x="{_number(x)}"'
    )
    body = escape(text)
    return (
        f'<text {attrs} y="15" fill="#010101" fill-opacity=".3" aria-hidden="true">{body}</text>'
        f'<text {attrs} y="14">{body}</text>'
    )


def _svg(badge: Badge) -> str:
    left_text, right_text = text_width(badge.label), text_width(badge.message)
    left, right = left_text + 2 * PADDING, right_text + 2 * PADDING
    total = left + right
    colour = COLOURS.get(badge.color, COLOURS["lightgrey"])
    words = f"{badge.label}: {badge.message}"
    # Ids unique to what is drawn, so that two badges inlined in one HTML page keep apart.
    suffix = hashlib.sha256(words.encode()).hexdigest()[:8]
    smooth, rounded = f"s{suffix}", f"r{suffix}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_number(total)}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(words)}">'
        f"<title>{escape(words)}</title>"
        f'<linearGradient id="{smooth}" x2="0" y2="100%">'
        '<stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="{rounded}"><rect width="{_number(total)}" height="{HEIGHT}" rx="3" '
        'fill="#fff"/></clipPath>'
        f'<g clip-path="url(#{rounded})">'
        f'<rect width="{_number(left)}" height="{HEIGHT}" fill="{LABEL_COLOUR}"/>'
        f'<rect x="{_number(left)}" width="{_number(right)}" height="{HEIGHT}" fill="{colour}"/>'
        f'<rect width="{_number(total)}" height="{HEIGHT}" fill="url(#{smooth})"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="{FONT_FAMILY}" '
        f'font-size="{FONT_SIZE}">'
        f"{_text(left / 2, left_text, badge.label)}"
        f"{_text(left + right / 2, right_text, badge.message)}"
        "</g></svg>"
    )

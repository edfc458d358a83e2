"""The allow-list every piece of student content passes before a page shows it
(docs/security.md#browser): ``clean_html`` is nh3 (the Ammonia sanitizer) keeping text,
tables, lists, emphasis, code, links to http(s) and mail, images only as ``data:image/...``,
and MathML; no attributes that run code, style a page or name an element. ``clean_mathml``
is the same for what latex2mathml makes of a student's LaTeX (glue/mathml.py).

Its own module so that both users import it one way: ``mathml`` (formulas) and ``inert``
(whole notebooks, which also renders markdown with ``mathml``).
"""

from __future__ import annotations

import re

import nh3

HTML_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "div", "span", "blockquote", "pre", "code", "kbd",
    "samp", "var", "em", "strong", "b", "i", "u", "s", "del", "ins", "sub", "sup", "small", "mark", "q", "cite",
    "abbr", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
    "colgroup", "col", "a", "img", "figure", "figcaption", "details", "summary"}
MATHML_TAGS = {
    "math", "mi", "mn", "mo", "ms", "mtext", "mspace", "mrow", "mfrac", "msqrt", "mroot", "mstyle", "merror",
    "mpadded", "mphantom", "mfenced", "menclose", "msub", "msup", "msubsup", "munder", "mover", "munderover",
    "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd", "semantics", "annotation"}
MATHML_ATTRIBUTES = {
    "display", "mathvariant", "stretchy", "fence", "separator", "separators", "lspace", "rspace", "form",
    "accent", "accentunder", "movablelimits", "largeop", "symmetric", "minsize", "maxsize", "displaystyle",
    "scriptlevel", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame",
    "framespacing", "linethickness", "width", "height", "depth", "voffset", "notation", "open", "close",
    "encoding", "rowspan", "columnspan", "xmlns"}
ATTRIBUTES = {
    "a": {"href", "title"}, "img": {"src", "alt", "title", "width", "height"}, "ol": {"start"},
    "td": {"colspan", "rowspan", "align"}, "th": {"colspan", "rowspan", "align", "scope"}, "col": {"span"},
    "table": {"border"}, "details": {"open"}, "abbr": {"title"}, **{tag: MATHML_ATTRIBUTES for tag in MATHML_TAGS},
    "math": MATHML_ATTRIBUTES | {"alttext", "tabindex"}}  # its LaTeX, and a wide one reachable (mathml.py)
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*", re.I)
_LINK = re.compile(r"(https?:|mailto:|#)", re.I)
NUMBER = re.compile(r"\d{1,5}")


def _attribute(tag: str, name: str, value: str) -> str | None:
    if tag == "img" and name == "src":
        return value if _DATA_IMAGE.fullmatch(value) else None
    if tag == "a" and name == "href":
        return value if _LINK.match(value) else None
    if name in ("width", "height") and tag not in MATHML_TAGS:
        return value if NUMBER.fullmatch(value) else None
    if name == "tabindex":  # in the page's order, never ahead of it
        return value if value == "0" else None
    return value


def clean_html(text: str) -> str:
    """``text`` with only the allow-listed tags, attributes and links (module doc)."""
    return nh3.clean(text, tags=HTML_TAGS | MATHML_TAGS, attributes=ATTRIBUTES, attribute_filter=_attribute,
                     url_schemes={"http", "https", "mailto", "data"}, strip_comments=True,
                     link_rel="noopener noreferrer nofollow")


def clean_mathml(mathml: str) -> str:
    """Sanitized MathML: what latex2mathml makes of a student's ``\\text{<img ...>}`` or
    ``\\href{javascript:...}`` loses the HTML and the link."""
    return clean_html(mathml)

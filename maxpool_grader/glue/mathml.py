"""Formulas as MathML, which browsers render without a network, each read exactly as written.

nbconvert's pages load MathJax from a CDN, so offline (and on many campus networks) formulas
stayed raw ``$...$``. Here every formula of a markdown text becomes latex2mathml's MathML,
sanitized (``allow_list.clean_mathml``: a student's ``\text{<img ...>}`` stays inert).

* What a formula is (``_MATH``): ``$$display$$``, and ``$inline$`` as pandoc reads it: no
  space just inside the dollars, no digit right after the closing one ("costs $5 and $6" is
  prose); never in code.
* Markdown never reads a formula (``markdown_to_html``): each one is held out of the text as
  an opaque placeholder (letters and digits), nbconvert's Markdown renders the rest, and the
  MathML goes in afterwards, as JupyterLab holds math out of its Markdown. Converted before
  Markdown, the MathML's ``*`` and ``_`` were read as emphasis and deleted in pairs:
  ``$(i^*, j^*)$`` read "(i, j)". Where a placeholder lands decides what it becomes: in text,
  the MathML; in code, in a tag (a link's address, a picture's alt text, raw HTML's
  attributes) and in a heading's anchor, the LaTeX as written (a heading's id is nbconvert's,
  made from the LaTeX: no MathML in an attribute). A formula latex2mathml cannot read stays
  its LaTeX, as written.
* ``MarkdownToHTML`` is the pages' ``markdown2html`` filter (``c.HTMLExporter.filters`` in
  nbgrader_config.py): formgrader's grading page, and the feedback page (its exporter is an
  HTMLExporter). It renders as the exporter's own filter does (attachments, anchor links,
  embedded images, lexer options), formulas held out."""

from __future__ import annotations

import html
import re
import unicodedata
import uuid
from dataclasses import dataclass
from functools import lru_cache

from latex2mathml.converter import convert
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from .allow_list import clean_mathml

# code (left alone), $$display$$, and $inline$ as pandoc reads it: no space just inside the
# dollars, and no digit right after the closing one ("costs $5 and $6" is not math)
_MATH = re.compile(r"(?P<code>```.*?```|`[^`\n]*`)"
                   r"|(?<!\\)\$\$(?P<display>.+?)\$\$"
                   r"|(?<![\\$])\$(?P<inline>[^\s$](?:[^$]*?[^\s$\\])?)\$(?!\d)", re.S)


_BLANK_LINE = re.compile(r"\n[ \t]*\n")  # a formula across one is two paragraphs, not math


_PLACEHOLDER = f"maxpoolmath{uuid.uuid4().hex}n{{}}x"  # letters and digits: no text holds one by chance


_HELD = re.compile(_PLACEHOLDER.format("([0-9]+)"))


_MARKUP = re.compile(r"<!--|-->|<[A-Za-z/!?]|[>\"']")  # where a tag, a comment or a quoted value starts or ends


_CODE_TAG = re.compile(r"<(/?)(pre|code|kbd|samp|script|style|textarea)\b", re.I)  # their text is code


_ANCHOR = '<a class="anchor-link"'  # nbconvert's anchor, last in a heading


@dataclass(frozen=True)
class Formula:
    written: str  # as the student wrote it, dollars included
    latex: str
    display: bool


# What MathJax (JupyterLab's) reads and latex2mathml prints as text ("\arg max"): the arg-max,
# the heart of Part A, among them. Operator names become \operatorname (\argmax is not LaTeX,
# but students write it and mean it); numbering, labels and spacing carry no meaning here.
_OPERATORS = re.compile(r"\\(arg|argmax|argmin)(?![A-Za-z])")


_DROPPED = re.compile(r"\\(?:nolimits|nonumber|notag)(?![A-Za-z])|\\(?:label|vspace\*?)\{[^{}]*\}")


_COMMAND_AS_TEXT = re.compile(r">[^<]*\\[A-Za-z]")  # a command latex2mathml did not know, shown as text


# A formula with more symbols than this may be wider than a phone's column (282 CSS px at 320):
# it scrolls in its own box, which the keyboard reaches (tabindex="0"), as code and outputs do.
# MathML in browsers does not break a formula across lines.
WIDE_FORMULA = 24


_TOKEN_TEXT = re.compile(r"<(mi|mn|mo|mtext|ms)\b[^>]*>([^<]*)</\1>")


# Browsers' MathML (MathML Core) ignores every mathvariant but "normal": \mathbb{1} showed a plain
# 1. These variants are written as Unicode's mathematical letters and digits instead, which every
# browser shows as written (name prefixes in Unicode's character names: the letters Unicode had
# before, as "ℝ", under the second).
_VARIANTS = {"double-struck": ("MATHEMATICAL DOUBLE-STRUCK", "DOUBLE-STRUCK"), "bold": ("MATHEMATICAL BOLD", None),
             "fraktur": ("MATHEMATICAL FRAKTUR", "BLACK-LETTER"), "script": ("MATHEMATICAL SCRIPT", "SCRIPT")}


_VARIANT_TOKEN = re.compile(r'<(mi|mn|mo|mtext)\b([^>]*?) mathvariant="(%s)"([^>]*)>([^<]*)</\1>' % "|".join(_VARIANTS))


def _styled(character: str, variant: str) -> str:
    """``character`` as the mathematical letter or digit of ``variant`` (itself when there is none)."""
    try:
        name = unicodedata.name(character)
    except ValueError:
        return character
    name = name.replace("LATIN ", "").replace(" LETTER", "")
    for prefix in _VARIANTS[variant]:
        if prefix and name.startswith(("CAPITAL ", "SMALL ", "DIGIT ")):
            try:
                return unicodedata.lookup(f"{prefix} {name}")
            except KeyError:
                continue
    return character


def _unicode_variants(mathml: str) -> str:
    def one(match: re.Match) -> str:
        tag, before, variant, after, text = match.groups()
        styled = html.escape("".join(_styled(character, variant) for character in html.unescape(text)), quote=False)
        return f"<{tag}{before}{after}>{styled}</{tag}>"
    return _VARIANT_TOKEN.sub(one, mathml)


@lru_cache(maxsize=4096)
def formula_to_mathml(latex: str, display: bool) -> str | None:
    """latex2mathml's MathML of one formula, sanitized, on one line, with its LaTeX as written as
    ``alttext`` (what assistive technology without MathML reads) and, when it may be wider than
    a phone's column, keyboard-reachable (``WIDE_FORMULA``); None: it cannot be read (it fails,
    or it would show a command's name as text: then the LaTeX as written reads better)."""
    readable = _DROPPED.sub("", _OPERATORS.sub(lambda m: r"\operatorname{%s}" % m[1], latex.strip()))
    try:
        mathml = convert(readable, display="block" if display else "inline")
    except Exception:  # noqa: BLE001  anything latex2mathml cannot read stays LaTeX
        return None
    if _COMMAND_AS_TEXT.search(mathml):
        return None
    mathml = _unicode_variants(clean_mathml(mathml).replace("\n", " "))  # \text{<img ...>} and \href stay inert
    symbols = sum(len(html.unescape(match[2]).strip()) for match in _TOKEN_TEXT.finditer(mathml))
    wide = ' tabindex="0"' if symbols > WIDE_FORMULA else ""
    return mathml.replace("<math ", f'<math alttext="{html.escape(latex.strip(), quote=True)}"{wide} ', 1)


def _formulas(text: str, replace) -> str:
    """``text`` with each formula outside code replaced by ``replace(Formula)``."""
    def found(match: re.Match) -> str:
        if match["code"] is not None:
            return match["code"]
        display = match["display"] is not None
        latex = match["display"] if display else match["inline"]
        if _BLANK_LINE.search(latex) or not latex.strip():
            return match[0]
        return replace(Formula(match[0], latex, display))
    return _MATH.sub(found, text)


def latex_to_mathml(text: str) -> str:
    """``text`` (LaTeX with dollars, no Markdown: a ``text/latex`` output) with each formula
    as MathML; display math stands apart; a formula that cannot be converted stays as it is."""
    def replace(formula: Formula) -> str:
        mathml = formula_to_mathml(formula.latex, formula.display)
        if mathml is None:
            return formula.written
        return f"\n\n{mathml}\n\n" if formula.display else mathml
    return _formulas(text, replace)


class MathRenderer(IPythonRenderer):
    """nbconvert's renderer, for a text whose formulas are held out: in code, raw HTML's tags
    and a heading's anchor, a placeholder is the LaTeX as written (module doc)."""

    def __init__(self, formulas: list[Formula] | None = None, **options):
        super().__init__(**options)
        self.formulas = [] if formulas is None else formulas  # filled as the text is read

    def written(self, text: str, escape: bool = False) -> str:
        """``text`` with each placeholder the formula as written (HTML-escaped: ``escape``)."""
        return _HELD.sub(lambda match: (html.escape if escape else str)(self.formulas[int(match[1])].written), text)

    def codespan(self, text):
        return super().codespan(self.written(text))

    def block_code(self, code, info=None):
        return super().block_code(self.written(code), info if info is None else self.written(info))

    def inline_html(self, html_):
        return super().inline_html(self.written(html_))  # one tag, comment or declaration

    def block_html(self, html_):
        return super().block_html(_in_tags(html_, self.written))

    def heading(self, text, level, **attrs):
        """nbconvert's heading, its id and anchor made from the LaTeX as written (as nbconvert
        and JupyterLab make them), its text keeping the placeholders for the MathML."""
        held = _anchored(super().heading(text, level, **attrs))
        anchored = _anchored(super().heading(self.written(text, escape=True), level, **attrs))
        return "".join(held) if not (held[0] and anchored[0]) else anchored[0] + held[1] + anchored[2]


def _anchored(heading: str) -> tuple[str, str, str]:
    """A heading of nbconvert's (``add_anchor``) as its start tag with the id, its text, and
    its anchor link; ("", heading, "") if it has none."""
    opened, anchor = heading.find(">") + 1, heading.rfind(_ANCHOR)
    if not (heading.startswith("<h") and ' id="' in heading[:opened] and anchor >= opened):
        return "", heading, ""
    return heading[:opened], heading[opened:anchor], heading[anchor:]


def _in_tags(text: str, inside, outside=lambda part, code: part) -> str:
    """``text`` (HTML) with ``inside`` applied to each tag and comment (an unclosed one runs
    to the end) and ``outside(part, in_code)`` to the text between them; ``in_code``: within
    ``<pre>``, ``<code>`` and the like. One pass, whatever the text holds."""
    parts, code, at, start, state = [], 0, 0, 0, ""  # state: "" text, "<" tag, "!" comment, a quote
    for mark in _MARKUP.finditer(text):
        found = mark[0]
        if not state and found[0] == "<":
            parts.append(outside(text[at:mark.start()], code > 0))
            start, state = mark.start(), "!" if found == "<!--" else "<"
        elif state == "<" and found in ('"', "'"):
            state = found
        elif state in ('"', "'") and found == state:
            state = "<"
        elif (state, found) in (("<", ">"), ("!", "-->")):
            tag, at, state = text[start:mark.end()], mark.end(), ""
            parts.append(inside(tag))
            opened = _CODE_TAG.match(tag)
            if opened and not tag.endswith("/>"):
                code = max(0, code + (-1 if opened[1] else 1))
    parts.append(inside(text[start:]) if state else outside(text[at:], code > 0))
    return "".join(parts)


def markdown_to_html(markdown: str, renderer_class: type[MathRenderer] = MathRenderer, **options) -> str:
    """Markdown (with LaTeX) as HTML, each formula latex2mathml's sanitized MathML where text
    stands, its LaTeX as written anywhere else (module doc). ``options`` go to the renderer,
    as nbconvert's ``markdown2html`` gives them (attachments, anchor links, ...)."""
    formulas: list[Formula] = []

    def hold(formula: Formula) -> str:
        formulas.append(formula)
        return _PLACEHOLDER.format(len(formulas) - 1)
    renderer = renderer_class(formulas=formulas, escape=False, **options)
    rendered = MarkdownWithMath(renderer=renderer).render(_formulas(markdown, hold))
    if not formulas:
        return rendered

    def shown(text: str, in_code: bool) -> str:
        def one(match: re.Match) -> str:
            formula = formulas[int(match[1])]
            mathml = None if in_code else formula_to_mathml(formula.latex, formula.display)
            return html.escape(formula.written, quote=False) if mathml is None else mathml
        return _HELD.sub(one, text)
    return _in_tags(rendered, lambda tag: renderer.written(tag, escape=True), shown)

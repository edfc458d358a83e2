"""The feedback page a student reads top-down (``GenerateFeedback``).

* ``FeedbackExporter`` (``GenerateFeedback.exporter_class``) renders the page with
  ``templates/maxpool_feedback``: nbgrader's feedback page with the summary above the
  table of contents, and each test's title instead of "Test cell" and its grade id. Titles
  are looked up by grade id when the page is made, so renamed tests show their new title.
  nbgrader makes a new exporter, so a new Jinja environment, for every student: compiling
  nbconvert's templates again was about a third of a page's time. The compiled templates
  are kept per process (``_CompiledTemplates``); a template whose source changed is
  compiled again, and the page is the same byte for byte. Likewise the code cells most
  pages share (the provided code, the tests) are highlighted once per process
  (``_RememberedHighlight``): Pygments was a fifth of what was left. Last, nbconvert
  reads the whole page into BeautifulSoup and writes it out again (alt texts, tabindex),
  and Pygments' spans are most of its tags: with this course's template each code cell
  stands in the page as a placeholder while it does, and is put back as BeautifulSoup
  writes that cell's HTML alone, once per process (``from_notebook_node``)."""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections import OrderedDict
from pathlib import Path

import nbgrader
from bs4 import BeautifulSoup
from jinja2 import BytecodeCache, FileSystemLoader, PrefixLoader
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from traitlets import default

from .thisexercise import is_exercise

NBGRADER_TEMPLATES = Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates"


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTMLExporter that also finds nbgrader's own templates as ``nbgrader/...``:
    the course's feedback template extends nbgrader's and changes only what it must."""

    @default("extra_loaders")
    def _nbgrader_templates(self):
        return [PrefixLoader({"nbgrader": FileSystemLoader(str(NBGRADER_TEMPLATES))})]

    def _create_environment(self):
        """nbconvert's environment, with this process's compiled templates (module doc)."""
        environment = super()._create_environment()
        shape = (environment.is_async, tuple(sorted(environment.extensions)))  # what compiling depends on
        environment.bytecode_cache = _COMPILED.setdefault(shape, _CompiledTemplates())
        return environment

    code_cells: list | None = None  # while a page is made: each code cell's HTML, by placeholder number

    def register_filter(self, name, jinja_filter):
        """nbconvert registers its code highlighter for each page: this one remembers (module doc)."""
        if name == "highlight_code" and type(jinja_filter) is Highlight2HTML:
            jinja_filter = _RememberedHighlight(jinja_filter, self)
        return super().register_filter(name, jinja_filter)

    def from_notebook_node(self, nb, resources=None, **kw):
        """nbconvert's page, its code cells passed through BeautifulSoup on their own (module
        doc). BeautifulSoup's html.parser builds each element from its own tags alone and
        writes it the same wherever it stands; what depends on the neighbours is only
        whitespace-only text, shortened to one newline, and the comment that stands in for
        a block bounds that text as the block did (the block's own text is in its ``<pre>``,
        kept as it is). In this template a code cell is the whole content of its
        ``input_area``, and nbconvert's pass changes nothing inside a block (images and cell
        wrappers only): so the page is the same, byte for byte. A placeholder not found
        exactly once (a template that moved one) makes the page again the plain way.
        Another assignment's page is nbgrader's own (its ``feedback`` template)."""
        configured = self.__dict__.setdefault("_configured_template", self.template_name)
        wanted = configured if configured != TEMPLATE or is_exercise(self, resources) else STOCK_TEMPLATE
        if self.template_name != wanted:
            self.template_name = wanted
            self.template_paths = self._template_paths()  # the template's folders (a default, read once)
        if self.template_name != TEMPLATE:  # only this template's code cells are known to stand alone
            return super().from_notebook_node(nb, resources, **kw)
        spare = copy.deepcopy(resources)  # the preprocessors write into it
        self.code_cells = []
        try:
            page, made = super().from_notebook_node(nb, resources, **kw)
            cells = self.code_cells
        finally:
            self.code_cells = None
        if sorted(int(number) for number in _PLACEHOLDER.findall(page)) != list(range(len(cells))):
            return super().from_notebook_node(nb, spare, **kw)
        return _PLACEHOLDER.sub(lambda match: cells[int(match[1])], page), made


class _CompiledTemplates(BytecodeCache):
    """Jinja's compiled templates in memory, by template name and file: Jinja compiles a
    template again when its source's checksum differs from the one stored with it."""

    def __init__(self):
        self.codes: dict[str, bytes] = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.codes:
            bucket.bytecode_from_string(self.codes[bucket.key])

    def dump_bytecode(self, bucket):
        self.codes[bucket.key] = bucket.bytecode_to_string()

    def clear(self):
        self.codes.clear()


_COMPILED: dict[tuple, _CompiledTemplates] = {}  # one per kind of environment (async, extensions)


class _RememberedHighlight:
    """nbconvert's ``Highlight2HTML``, its HTML kept by everything it reads: the source, the
    language (or the notebook's lexer), the formatter's options and a cell's
    ``magics_language``."""

    def __init__(self, highlight: Highlight2HTML, exporter: FeedbackExporter):
        self.highlight, self.exporter = highlight, exporter

    def __call__(self, source, language=None, metadata=None):
        if metadata is not None and not isinstance(metadata, dict):
            return self.highlight(source, language, metadata)
        key = (source, language, self.highlight.pygments_lexer, (metadata or {}).get("magics_language"),
               json.dumps(self.highlight.extra_formatter_options, sort_keys=True, default=repr))
        if key in _HIGHLIGHTED:
            _HIGHLIGHTED.move_to_end(key)
        else:
            _HIGHLIGHTED[key] = [self.highlight(source, language, metadata), None]
            if len(_HIGHLIGHTED) > _HIGHLIGHTS_KEPT:
                _HIGHLIGHTED.popitem(last=False)
        kept = _HIGHLIGHTED[key]
        cells, code = self.exporter.code_cells, kept[0].rstrip()
        if cells is None or not (code.startswith("<div ") and code.endswith("</pre></div>")):
            return kept[0]
        if kept[1] is None:  # as BeautifulSoup writes it: what the page's pass would make of it
            kept[1] = str(BeautifulSoup(code, features="html.parser"))
        cells.append(kept[1])
        # a comment in its place: the text around it (the "\n" after the block included), which
        # BeautifulSoup shortens when it is only whitespace, is the same as around the block
        return f"<!--{_NONCE}n{len(cells) - 1}x-->{kept[0][len(code):]}"


_HIGHLIGHTED: OrderedDict[tuple, list] = OrderedDict()  # [HTML, as BeautifulSoup writes it], most recent last


_NONCE = f"maxpoolcode{uuid.uuid4().hex}"  # a placeholder no page holds by chance (letters and digits only)


_PLACEHOLDER = re.compile(f"<!--{_NONCE}n([0-9]+)x-->")


TEMPLATE = "maxpool_feedback"
STOCK_TEMPLATE = "feedback"  # nbgrader's feedback page, for every other assignment


_HIGHLIGHTS_KEPT = 2000  # a class's shared cells many times over; a long-running serve stays small

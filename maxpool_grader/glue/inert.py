"""Student content made inert, as JupyterLab treats an untrusted notebook: no script runs
and nothing is loaded from another host wherever a graded notebook is shown (formgrader's
grading page, the feedback page, the autograded notebook in JupyterLab).

* ``inert_notebook`` cleans a notebook in place: every markdown cell that holds HTML or a
  link becomes one block of sanitized HTML (its formulas as MathML, its pasted images
  inlined as ``data:image/...``), every rich output keeps only what is safe to show
  (HTML sanitized; SVG, Markdown and LaTeX turned into sanitized HTML; JavaScript, widget
  views and every other type dropped), raw cells become quoted text, and metadata that a
  page puts into HTML unescaped (cell tags, image sizes, widget state) is checked or
  dropped. It is idempotent: cleaning a clean notebook changes nothing.
* ``MakeInert`` runs it: after the notebook is executed in autograde, and again at every
  HTML export (``HTMLExporter.preprocessors``), which also covers notebooks graded before.
* ``clean_html`` is the allow-list (glue/allow_list.py: nh3, the Ammonia sanitizer): text,
  tables, lists, emphasis, code, links to http(s) and mail, images only as
  ``data:image/...``, and MathML; no attributes that run code, style a page or name an
  element. Markdown is rendered with its formulas held out of it (glue/mathml.py)."""

from __future__ import annotations

import base64
import binascii
import functools
import html
import json
import re
from pathlib import Path

import nbgrader
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell

from ..names import MODEL_ANSWER_TAG, NOTES_KEY, NOTES_TAG, RUBRIC_TAG, SUMMARY_TAG
from .allow_list import NUMBER, clean_html
from .mathml import MathRenderer, latex_to_mathml, markdown_to_html

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")  # shown as they are: the page decodes them as pictures


_TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}")


_GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


RESERVED_TAGS = {RUBRIC_TAG, MODEL_ANSWER_TAG, NOTES_TAG, SUMMARY_TAG}  # the grader's cells: never a student's


BLOCK_CLASS = "maxpool-inert"  # the one element a cleaned markdown cell is made of


# classic/mathjax.html.j2 (no CDN, a Content-Security-Policy instead) ahead of nbgrader's templates
TEMPLATE_DIRS = [str(Path(__file__).resolve().parent / "templates"),
                 str(Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates")]


# ------------------------------------------------------------------ markdown cells
def _needs_cleaning(source: str) -> bool:
    """Whether markdown can put HTML or a link on the page: raw HTML and autolinks start
    with ``<``, links and images have ``](`` or a ``]:`` definition. Without them, markdown
    renders to text, emphasis, lists, code and math only (and math is cleaned by itself)."""
    return "<" in source or "](" in source or "]:" in source


def _image_data(attachments: dict) -> dict[str, str]:
    """Each pasted image as a ``data:`` URL, if it is one (name -> URL)."""
    found = {}
    for name, bundle in (attachments or {}).items():
        for kind in (*IMAGE_TYPES, "image/svg+xml"):
            payload = bundle.get(kind) if isinstance(bundle, dict) else None
            if kind == "image/svg+xml" and isinstance(payload, str) and not _is_base64(payload):
                payload = base64.b64encode(payload.encode()).decode()  # nbformat keeps SVG as text
            if isinstance(payload, str) and _is_base64(payload):
                found[name] = f"data:{kind};base64,{''.join(payload.split())}"
                break
    return found


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode("".join(text.split()), validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


class _Renderer(MathRenderer):
    def image(self, text, url, title=None):
        if url.startswith("attachment:"):  # a missing or unsafe one is left out, never an error
            url = self.attachments.get(url[len("attachment:"):], "")
        return super().image(text, url, title) if url else html.escape(text)


def markdown_block(source: str, attachments: dict | None = None) -> str:
    """Markdown (with LaTeX) as one line of sanitized HTML, which markdown renders as it is."""
    return _markdown_block(source, json.dumps(attachments or {}, sort_keys=True))


@functools.lru_cache(maxsize=512)  # the assignment's own cells are the same in every notebook of a class
def _markdown_block(source: str, attachments: str) -> str:
    return _block(markdown_to_html(source, _Renderer, attachments=_image_data(json.loads(attachments))))


_PREFIX = f'<div class="{BLOCK_CLASS}">'


def html_block(rendered: str) -> str:
    """The grader's HTML (text escaped already) as one sanitized block, as a cleaned cell is."""
    return _block(rendered)


@functools.lru_cache(maxsize=512)  # a pure function of its text: cleaned again at every export
def _block(rendered: str) -> str:
    # one line: an HTML block ends at a blank line; no "$": no later pass reads it as math
    flat = clean_html(rendered).replace("\r", "").replace("\n", "&#10;").replace("$", "&#36;")
    return f"{_PREFIX}{flat}</div>"


def inert_markdown(cell: NotebookNode) -> None:
    """A markdown cell that can show HTML or a link becomes one block of sanitized HTML,
    its pasted images inlined; the attachments keep only pictures."""
    source = cell.source
    if source.startswith(_PREFIX) and source.endswith("</div>") and "\n" not in source:
        cell.source = _block(source[len(_PREFIX):-len("</div>")])  # cleaned before: stays as it is
    elif _needs_cleaning(source):
        cell.source = markdown_block(source, cell.get("attachments"))
    if "attachments" in cell:  # kept: a cell nbgrader restores later (its source only) still finds them
        kept = {name: {url[5:url.index(";")]: url[url.index(",") + 1:]}
                for name, url in _image_data(cell.attachments).items()}
        if kept:
            cell.attachments = kept
        else:
            cell.pop("attachments")


# ------------------------------------------------------------------ outputs
def _html_of(data: dict) -> str | None:
    """The richest safe HTML of an output's data, from the first type that has one."""
    if isinstance(data.get("text/html"), str):
        return clean_html(data["text/html"])
    if isinstance(data.get("text/markdown"), str):
        return clean_html(markdown_to_html(data["text/markdown"], _Renderer))
    if isinstance(data.get("image/svg+xml"), str):  # as a picture: no script, nothing loaded
        svg = base64.b64encode(data["image/svg+xml"].encode()).decode()
        return f'<img src="data:image/svg+xml;base64,{svg}" alt="an SVG picture">'
    if isinstance(data.get("text/latex"), str):
        return clean_html(latex_to_mathml(data["text/latex"]))
    return None


def inert_output(output: NotebookNode) -> NotebookNode | None:
    """The output as it may be shown, or None (a kind that is never shown)."""
    kind = output.get("output_type")
    if kind == "stream":
        return output if isinstance(output.get("text"), str) and output.get("name") in ("stdout", "stderr") else None
    if kind == "error":
        return output
    if kind not in ("display_data", "execute_result"):
        return None
    data, metadata = dict(output.get("data", {})), output.get("metadata", {})
    kept, sizes = {}, {}
    if isinstance(data.get("text/plain"), str):
        kept["text/plain"] = data["text/plain"]
    for kind_ in IMAGE_TYPES:
        if isinstance(data.get(kind_), str) and _is_base64(data[kind_]):
            kept[kind_] = data[kind_]
            wanted = metadata.get(kind_, {}) if isinstance(metadata.get(kind_), dict) else {}
            size = {key: int(value) for key, value in wanted.items()
                    if key in ("width", "height") and NUMBER.fullmatch(str(value))}
            if size:
                sizes[kind_] = size
    rich = _html_of(data)
    if rich is not None:
        kept["text/html"] = rich
    dropped = sorted(set(data) - set(kept) - {"text/markdown", "text/latex", "image/svg+xml"})
    if not kept:
        kept["text/plain"] = f"[not shown: an output of type {', '.join(dropped)[:100]}]"
    output.data, output.metadata = kept, sizes
    return output


# ------------------------------------------------------------------ the notebook
def inert_notebook(nb: NotebookNode, *, submitted: bool = False) -> NotebookNode:
    """Clean ``nb`` in place (module doc). ``submitted``: the notebook as the student sent
    it, whose metadata holds nothing of the grader's yet: the grader's notes and the tags
    of the grader's own cells are dropped too, so a student cannot forge them."""
    keep_meta = {"kernelspec", "language_info", "nbgrader"} | (set() if submitted else {NOTES_KEY})
    for key in set(nb.metadata) - keep_meta:
        del nb.metadata[key]
    if submitted:
        nb.cells = _schema_valid_cells(nb.cells)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "raw":
            quoted = new_markdown_cell(_block(f"<pre>{html.escape(cell.source)}</pre>"), metadata=cell.metadata)
            if "id" in cell:
                quoted.id = cell.id
            nb.cells[index] = cell = quoted
        _inert_metadata(cell, submitted)
        if cell.cell_type == "markdown":
            inert_markdown(cell)
        elif cell.cell_type == "code":
            cell.outputs = [kept for kept in map(inert_output, cell.get("outputs", [])) if kept is not None]
    return nb


_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _schema_valid_cells(cells: list) -> list:
    """The cells as nbformat's schema wants them, whatever a hand-edited file held: known
    kinds only, text sources, valid and distinct ids, no outputs yet (nbgrader clears them
    next), metadata as a mapping. nbgrader checks the notebook after each of its steps, and
    an invalid one failed the whole submission."""
    kept, seen = [], set()
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("markdown", "code", "raw"):
            continue
        source = cell.get("source", "")
        source = "".join(part for part in source if isinstance(part, str)) if isinstance(source, list) else str(source)
        cell_id = cell.get("id")
        if not (isinstance(cell_id, str) and _CELL_ID.fullmatch(cell_id)) or cell_id in seen:
            cell_id = f"cell-{index}"
        seen.add(cell_id)
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        fresh = NotebookNode(cell_type=cell["cell_type"], id=cell_id, source=source, metadata=NotebookNode(
            {key: value for key, value in metadata.items()
             if key in ("nbgrader", "tags") or (key in ("deletable", "editable") and isinstance(value, bool))}))
        if cell["cell_type"] == "code":
            fresh.update(outputs=[], execution_count=None)
        elif isinstance(cell.get("attachments"), dict):
            fresh.attachments = cell["attachments"]
        kept.append(fresh)
    return kept


def _inert_metadata(cell: NotebookNode, submitted: bool) -> None:
    metadata = cell.metadata
    tags = metadata.get("tags")
    if tags is not None:
        metadata["tags"] = [tag for tag in tags if isinstance(tag, str) and _TAG.fullmatch(tag)
                            and not (submitted and tag in RESERVED_TAGS)] if isinstance(tags, list) else []
    nbgrader = metadata.get("nbgrader")
    if nbgrader is not None and not (isinstance(nbgrader, dict)
                                     and _GRADE_ID.fullmatch(str(nbgrader.get("grade_id", "x")))):
        del metadata["nbgrader"]  # nbgrader's pages put the grade id into HTML as it is

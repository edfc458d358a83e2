"""``MarkdownToHTML``: the ``markdown2html`` filter of every page nbgrader renders here
(``c.HTMLExporter.filters``): formulas as MathML, read exactly as written (mathml.py)."""

from __future__ import annotations

from jinja2 import pass_context
from traitlets.config import LoggingConfigurable

from .mathml import markdown_to_html


class MarkdownToHTML(LoggingConfigurable):
    """The ``markdown2html`` filter of nbconvert's HTMLExporter, formulas held out of
    Markdown (module doc). Configured by name, nbconvert makes one per exporter, its parent,
    whose settings it reads as the exporter's own filter does."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        pass_context(self)  # Jinja then gives it the template's context: the cell and its attachments

    def __call__(self, context, source: str) -> str:
        cell, exporter = context.get("cell", {}), self.parent
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        return markdown_to_html(
            source, attachments=cell.get("attachments", {}), embed_images=getattr(exporter, "embed_images", False),
            path=path, anchor_link_text=getattr(exporter, "anchor_link_text", "\u00b6"),
            exclude_anchor_links=getattr(exporter, "exclude_anchor_links", False),
            **getattr(exporter, "lexer_options", {}))

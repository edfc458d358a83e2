"""The grader's notes for the student: kept in the notebook's metadata (the class report
reads them) and shown in a cell at the top of the graded notebook and the feedback."""

from __future__ import annotations

import html

from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell

from ..names import NOTES_KEY, NOTES_TAG


def add_note(nb: NotebookNode, text: str) -> None:
    """A note for the student, shown at the top of the graded notebook and the feedback."""
    notes = nb.metadata.setdefault(NOTES_KEY, [])
    if text not in notes:
        notes.append(text)


def show_notes(nb: NotebookNode) -> None:
    notes = nb.metadata.get(NOTES_KEY, [])  # stays in the metadata too, for the class report
    if notes:
        # a note can quote the student (a file name): as text, never as HTML
        text = "**Notes from the grader**\n\n" + "\n".join(f"- {html.escape(note, quote=False)}" for note in notes)
        notes_cell = new_markdown_cell(text, metadata={"tags": [NOTES_TAG]})
        notes_cell.id = NOTES_TAG  # a fixed id: regrading writes the same notebook
        nb.cells.insert(0, notes_cell)

"""What a notebook may show (maxpool_grader/glue/inert.py), without a browser: the
allow-list, markdown cells, outputs, raw cells and metadata. The browser test
(test_browser_safety.py) shows the same holds where it matters: in a real page."""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser

import nbformat
from hostile_pages import PNG_B64, SVG_SCRIPT, html_payloads, js, latex_payloads
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from maxpool_grader.glue.inert import RUBRIC_TAG, clean_html, inert_notebook, markdown_block
from maxpool_grader.glue.mathml import latex_to_mathml

ACTIVE_TAGS = {"script", "iframe", "object", "embed", "form", "meta", "svg", "base", "link", "style"}


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.active: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ACTIVE_TAGS:
            self.active.append(tag)
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or name in ("srcdoc", "style", "id", "name") or (
                    name in ("href", "src") and not value.startswith(("https:", "http:", "mailto:", "#", "data:image/"))
            ) or (name == "src" and not value.startswith("data:image/")):
                self.active.append(f"{tag} {name}={value[:40]}")


def _inert(text: str) -> bool:
    """Whether HTML, parsed as a browser parses it, has no element or attribute that runs
    code, frames, submits or loads from another host (text that merely says "onerror" is fine)."""
    parser = _Elements()
    parser.feed(text)
    assert not parser.active, parser.active
    return True


def test_every_html_payload_comes_out_inert():
    for name, payload in html_payloads("unit").items():
        assert _inert(clean_html(payload)), name
        assert _inert(markdown_block(payload)), name


def test_latex_that_latex2mathml_turns_into_html_or_links_is_cleaned():
    for name, payload in latex_payloads("unit").items():
        converted = clean_html(latex_to_mathml(payload))  # as a text/latex output is shown (glue/inert.py)
        assert _inert(converted), (name, converted)
        assert "<math" in converted or name.endswith("_unknown_command"), (name, converted)  # that one stays LaTeX


def test_math_tables_emphasis_links_and_pictures_stay():
    text = ("| a | b |\n|---|---|\n| 1 | 2 |\n\n**bold** *it* `code` $\\frac{a}{b}$ "
            "[docs](https://pytorch.org) ![photo](attachment:p.png)")
    block = markdown_block(text, {"p.png": {"image/png": PNG_B64}})
    for kept in ("<table>", "<strong>bold</strong>", "<em>it</em>", "<code>code</code>", "<mfrac>",
                 'href="https://pytorch.org"', f'src="data:image/png;base64,{PNG_B64}"'):
        assert kept in block, kept
    assert "\n" not in block and "$" not in block  # one HTML block that no later pass reads as math


def test_a_missing_or_unsafe_attachment_is_left_out_not_an_error():
    block = markdown_block("![a](attachment:gone.png) ![b](attachment:page.html)",
                           {"page.html": {"text/html": f"<script>{js('x')}</script>"}})
    assert "<img" not in block and _inert(block)


def _hostile_notebook():
    nb = new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.metadata["title"] = "</title><script>x</script>"
    part_a = new_markdown_cell("An answer " + html_payloads("md")["md_onerror"])
    part_a.metadata["tags"] = [RUBRIC_TAG, 'x"><img src=x onerror=y>', "kept-tag"]
    code = new_code_cell("print(1)")
    code.metadata["nbgrader"] = {"grade": True, "grade_id": '"><img src=x onerror=y>', "points": 1}
    code.outputs = [
        new_output("display_data", {"text/html": html_payloads("o")["o_script"], "text/plain": "html"}),
        new_output("display_data", {"application/javascript": js("o_js"), "text/plain": "js"}),
        new_output("display_data", {"image/svg+xml": SVG_SCRIPT}),
        new_output("display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "1"}}),
        new_output("display_data", {"image/png": PNG_B64}, metadata={"image/png": {"width": "1 onerror=y",
                                                                                   "height": 40}}),
        new_output("display_data", {"image/png": 'x"><img src=x onerror=y>'}),
        new_output("stream", name="stdout", text="<b>printed</b>"),
    ]
    nb.cells = [part_a, code, new_raw_cell("<script>raw</script>")]
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def test_a_submitted_notebook_becomes_valid_and_claims_nothing_of_the_grader_s():
    nb = inert_notebook(_hostile_notebook(), submitted=True)
    nbformat.validate(nb)
    assert set(nb.metadata) <= {"kernelspec", "language_info"}
    assert nb.cells[0].metadata["tags"] == ["kept-tag"]  # no forged rubric, no tag that breaks out
    assert nb.cells[1].outputs == []  # nbgrader clears them next; the grader's run makes new ones


def test_a_hostile_notebook_is_inert_valid_and_stays_the_same_when_cleaned_again():
    nb = inert_notebook(_hostile_notebook())
    nbformat.validate(nb)
    for cell in nb.cells:
        _inert(cell.source)
        for output in cell.get("outputs", []):
            _inert(output.get("data", {}).get("text/html", ""))
    assert set(nb.metadata) <= {"kernelspec", "language_info"}
    assert nb.cells[0].metadata["tags"] == [RUBRIC_TAG, "kept-tag"]  # on a page, the grader's own tags stay
    assert "nbgrader" not in nb.cells[1].metadata
    outputs = nb.cells[1].outputs
    assert [sorted(output.get("data", {})) for output in outputs] == [
        ["text/html", "text/plain"], ["text/plain"], ["text/html"], ["text/plain"], ["image/png"], ["text/plain"], []]
    assert outputs[2].data["text/html"].startswith('<img src="data:image/svg+xml;base64,')
    assert outputs[4].metadata == {"image/png": {"height": 40}}
    assert "not shown" in outputs[3].data["text/plain"]
    assert nb.cells[2].cell_type == "markdown" and "&lt;script&gt;raw" in nb.cells[2].source
    again = inert_notebook(copy.deepcopy(nb))
    assert again == nb


def test_the_grader_s_own_notes_and_tags_survive_a_page_render():
    nb = new_notebook()
    nb.metadata["maxpool_grader_notes"] = ["a note"]
    rubric = new_markdown_cell("**Rubric**", metadata={"tags": [RUBRIC_TAG]})
    nb.cells = [rubric]
    inert_notebook(nb)
    assert nb.metadata["maxpool_grader_notes"] == ["a note"] and nb.cells[0].metadata["tags"] == [RUBRIC_TAG]

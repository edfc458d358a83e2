"""Hostile submissions for the instructor's browser: what a notebook *shows* as an attack.

Every payload tries two things when it runs in a page: to set ``top.__pwned`` (a global
the test reads back) and to write ``pwned-<case>.txt`` into the course through the
Jupyter server's contents API, with the ``_xsrf`` cookie, as the instructor. The cases
cover rich outputs of code cells (HTML, SVG, JavaScript, Markdown, LaTeX, widget views,
image metadata and data), markdown answers (raw HTML, links, LaTeX), the notebook's own
metadata (widget state, cell tags, attachments) and a solution cell that displays one.
Each payload is written with backticks only, so it fits in an HTML attribute, a markdown
link and a Python string alike.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import nbformat
from corpus import LOOP_CORRECT, notebook_with
from nbformat.v4 import new_code_cell, new_markdown_cell

from maxpool_grader.names import ASSIGNMENT, PART_A_CELL, grade_id

PART_A_ANSWER = (
    "Let $y_{ij} = \\max_{(k,l) \\in W_{ij}} x_{kl}$. By the chain rule\n\n"
    "$$\\frac{\\partial L}{\\partial x_{kl}} = \\sum_{i,j} \\frac{\\partial L}{\\partial y_{ij}}"
    "\\frac{\\partial y_{ij}}{\\partial x_{kl}}$$\n\n"
    "and $\\partial y_{ij} / \\partial x_{kl}$ is 1 at the window's maximum, 0 elsewhere.\n\n"
    "My derivation on paper:\n\n![my derivation](attachment:derivation.png)\n")


def js(case: str) -> str:
    """A payload: marks ``top.__pwned`` and PUTs a file into the course as the instructor."""
    return ("top.__pwned=(top.__pwned||[]).concat(`" + case + "`);"
            "fetch(`/api/contents/pwned-" + case + ".txt`,{method:`PUT`,headers:{[`X-XSRFToken`]:"
            "(document.cookie.match(/_xsrf=([^;]+)/)||[0,``])[1],[`Content-Type`]:`application/json`},"
            "body:JSON.stringify({type:`file`,format:`text`,content:`pwned`})})")


def png(width: int = 24, height: int = 16) -> bytes:
    """A small opaque PNG (a photographed derivation, as far as the page can tell)."""
    rows = b"".join(b"\x00" + bytes([200, 40, 40]) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


SVG_SCRIPT = '<svg xmlns="http://www.w3.org/2000/svg"><script>' + js("output_svg") + "</script></svg>"
PNG_B64 = base64.b64encode(png()).decode()


def html_payloads(prefix: str) -> dict[str, str]:
    """HTML that runs script where it is rendered as it is, one per case."""
    return {
        f"{prefix}_script": f"<script>{js(prefix + '_script')}</script>",
        f"{prefix}_onerror": f"<img src=x onerror={js(prefix + '_onerror')}>",
        f"{prefix}_svg_onload": f"<svg onload={js(prefix + '_svg_onload')}></svg>",
        f"{prefix}_svg_script": f"<svg><script>{js(prefix + '_svg_script')}</script></svg>",
        f"{prefix}_iframe_srcdoc": f"<iframe srcdoc=\"<script>{js(prefix + '_iframe_srcdoc')}</script>\"></iframe>",
        f"{prefix}_details_ontoggle": f"<details open ontoggle={js(prefix + '_details_ontoggle')}>x</details>",
        f"{prefix}_javascript_link": f"<a href=\"javascript:{js(prefix + '_javascript_link')}\">a link</a>",
        f"{prefix}_form": "<form action=\"/api/contents/pwned-form.txt\" method=\"post\"><button>Go</button></form>",
        f"{prefix}_object": "<object data=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\"></object>",
        f"{prefix}_external_image": "<img src=\"http://203.0.113.9/track.png\">",
    }


def latex_payloads(prefix: str) -> dict[str, str]:
    return {
        f"{prefix}_href": f"$\\href{{javascript:{js(prefix + '_href')}}}{{x}}$",
        f"{prefix}_text_html": f"$\\text{{<img src=x onerror={js(prefix + '_text_html')}>}}$",
        # a command latex2mathml does not know: the formula stays its LaTeX as written, HTML and all
        f"{prefix}_unknown_command": f"$\\weird <img src=x onerror={js(prefix + '_unknown_command')}>$",
    }


def _cell(code: str):
    return new_code_cell(code)


def _display(bundle: dict, metadata: dict | None = None) -> str:
    return (f"from IPython.display import display\n"
            f"display({json.dumps(bundle)}, raw=True, metadata={json.dumps(metadata or {})})")


def rich_outputs() -> list:
    """Code cells the student added, each showing one hostile output."""
    markdown = html_payloads("output_markdown")["output_markdown_onerror"]
    latex = latex_payloads("output_latex")["output_latex_href"]
    cells = [_cell(f"from IPython.display import HTML, display\ndisplay(HTML({html!r}))")
             for html in html_payloads("output_html").values()]
    cells += [
        _cell(f"from IPython.display import Javascript, display\ndisplay(Javascript({js('output_javascript')!r}))"),
        _cell(f"from IPython.display import SVG, display\ndisplay(SVG({SVG_SCRIPT!r}))"),
        _cell(f"from IPython.display import Markdown, display\ndisplay(Markdown({markdown!r}))"),
        _cell(f"from IPython.display import Latex, display\ndisplay(Latex({latex!r}))"),
        _cell(_display({"application/vnd.jupyter.widget-view+json": {"model_id": "1", "version_major": 2,
                                                                    "version_minor": 0},
                        "text/plain": "a widget"})),
        _cell(_display({"image/png": PNG_B64, "text/plain": "png"},
                       {"image/png": {"width": f"1 onerror={js('output_png_width')}"}})),
        _cell(_display({"image/png": f"x\"><img src=x onerror={js('output_png_data')}>"})),
        _cell(_display({"text/html": html_payloads("output_isolated")["output_isolated_script"]},
                       {"text/html": {"isolated": True}})),
    ]
    return cells


def build(folder: Path, release: nbformat.NotebookNode, kind: str) -> None:
    """One hostile notebook of ``kind`` (see ``KINDS``) in ``folder``."""
    nb = notebook_with(release, LOOP_CORRECT)
    at = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == ASSIGNMENT) + 1
    part_a = next(cell for cell in nb.cells if grade_id(cell) == PART_A_CELL)
    if kind == "decent":
        part_a.source = PART_A_ANSWER
        part_a.attachments = {"derivation.png": {"image/png": PNG_B64}}
    elif kind == "outputs":
        nb.cells[at:at] = rich_outputs()
    elif kind == "markdown":
        payloads = {**html_payloads("markdown"), **latex_payloads("markdown_latex")}
        part_a.source = PART_A_ANSWER + "\n\n" + "\n\n".join(payloads.values()) + (
            f"\n\n[a markdown link](<javascript:{js('markdown_link')}>)\n\n"
            f"<javascript:{js('markdown_autolink')}>\n")
        part_a.attachments = {"derivation.png": {"image/png": PNG_B64}}
        notes = html_payloads("markdown_added")["markdown_added_onerror"]
        nb.cells.insert(at, new_markdown_cell("My notes\n\n" + notes))
    elif kind == "navigation":  # alone: once a page has gone, nothing else on it can be seen
        nb.cells.insert(at, _cell('from IPython.display import HTML, display\n'
                                  'display(HTML(\'<meta http-equiv="refresh" content="0;url=about:blank">\'))'))
    elif kind == "in_solution":
        solution = next(cell for cell in nb.cells if grade_id(cell) == ASSIGNMENT)
        solution.source = (f"from IPython.display import HTML, display\n"
                           f"display(HTML({html_payloads('solution')['solution_onerror']!r}))\n\n" + solution.source)
    elif kind == "metadata":
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
            "state": {"1": {"model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls",
                            "state": {"value": f"</script><script>{js('metadata_widget_state')}</script>"}}},
            "version_major": 2, "version_minor": 0}}
        nb.metadata["title"] = f"</title><script>{js('metadata_title')}</script>"
        added = new_markdown_cell("A picture: ![evil](attachment:evil.svg) and ![page](attachment:page.html)")
        added.attachments = {
            "evil.svg": {"image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' onload='{js('metadata_svg')}'/>"},
            "page.html": {"text/html": f"<script>{js('metadata_attachment_html')}</script>"}}
        added.metadata["tags"] = [f"x\"><img src=x onerror={js('metadata_tag')}>"]
        claimed = new_code_cell("print('a test of my own')")  # a grade id nbgrader does not know
        claimed.metadata["nbgrader"] = {"grade": True, "grade_id": "my_own_test", "points": 100, "solution": False,
                                        "locked": False, "schema_version": 3}
        nb.cells[at:at] = [added, claimed]
        nb.cells[0].id = "not a valid id!"
    else:
        raise ValueError(kind)
    nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")


KINDS = ["decent", "outputs", "markdown", "in_solution", "metadata", "navigation"]

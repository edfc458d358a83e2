"""What a cell of a graded notebook may show: each output's size, an error shortened, one
stream's messages made one, the text of a cell that was not run (``SafeExecute``'s)."""

from __future__ import annotations

import json

from nbformat import NotebookNode
from nbformat.v4 import new_output

from ..verdict.verdicts import Verdict

OUTPUT_CUT = "\n[... output cut: this cell printed too much ...]\n"
NOTEBOOK_CUT = "\n[... output cut: the notebook printed too much in all ...]\n"


ERROR_BYTES = 64 << 10  # the first error of a cell is kept, shortened to this


def output_size(kind: str | None, content: dict) -> int:
    """What an output message would add to the notebook (and the grader's memory), in
    characters; at least 64, so that a flood of empty messages counts too."""
    if kind == "stream":
        size = len(str(content.get("text", "")))
    elif kind in ("display_data", "update_display_data", "execute_result"):
        size = len(json.dumps([content.get("data", {}), content.get("metadata", {})], default=str))
    elif kind == "error":
        size = len(json.dumps([content.get("ename"), content.get("evalue"), content.get("traceback")], default=str))
    else:
        size = 0
    return max(size, 64)


def shortened_error(content: dict) -> dict:
    """An error message cut to about ERROR_BYTES: its name, the start of its value and the
    last lines of its traceback."""
    traceback = [str(line)[:2000] for line in content.get("traceback", []) or []][-20:]
    return dict(content, ename=str(content.get("ename", ""))[:200], evalue=str(content.get("evalue", ""))[:4000],
                traceback=traceback)


def coalesced(outputs: list) -> list:
    """Consecutive outputs of one stream made one: how the kernel cut a print into messages
    depends on timing, and the same notebook must always give the same file."""
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")):
            last["text"] = "".join(last["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def not_run_output(reason: str, verdict: Verdict | None) -> NotebookNode:
    text = f"Not run: {reason}."
    if verdict is not None:
        text += f"\nThis test was graded outside the notebook: {verdict.message}"
    return new_output("stream", name="stdout", text=text + "\n")

"""A student fixes the forum answer by following the hidden tests' feedback alone.

The steps are the edits made by hand, reading only the feedback, when this was tried
through the real pipeline (`maxpool-grader grade`), then 2/15 -> 3/15 -> 15/15; since each
hidden test isolates one property and draws its rule's cases from every kind of input
(exercise/contract.py) it is 9/15 -> 11/15 -> 15/15. Each step's
feedback must name what the next step fixes. Since dx must have x's dtype for floating x,
step 1 creates dx as the integer-input feedback says to (it said `np.zeros(x.shape)`, which
is float64 for float32 x too). The feedback is the one a student reads before the deadline:
what their code does and the positions where their dx differs, never the derivation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from helpers import ROOT, flat

from maxpool_grader.exercise.checks import HIDDEN_CHECKS
from maxpool_grader.exercise.grading import evaluate

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import FORUM_VERBATIM, TIES_ALL_MAXIMA, forum_made_to_compile  # noqa: E402

STEPS = Path(__file__).parent / "data" / "walkthrough"


def feedback(source: str) -> dict[str, str]:
    namespace = {"np": np, "print": lambda *args, **kwargs: None}
    exec(source, namespace)
    messages = {grade_id: evaluate(grade_id, namespace["max_pool_backward"], source)  # the grader reads it too
                for grade_id in HIDDEN_CHECKS}
    return {grade_id: message for grade_id, message in messages.items() if message}


def test_forum_answer_fixed_by_following_the_feedback():
    start = feedback(forum_made_to_compile(FORUM_VERBATIM))
    text = "\n".join(start.values())
    assert flat("it has no stride parameter") in flat(text) and flat("add `stride=None`") in flat(text)
    assert flat("Likely mistake: dx has x's integer dtype") in flat(text)
    both = 'np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == "f" else np.float64)'
    assert flat(both) in flat(text) and "hidden_dtype_of_x" in start  # an integer dx breaks the dtype rule too
    assert both.replace("x.", "input.") in (STEPS / "forum_step1_stride_pairs_floats.py").read_text()
    # two mistakes in one test (pairs, and 2-D only): the smallest input's is named, as possible
    assert flat("Possible mistake: pool_size given as a pair (ph, pw) is not supported") in flat(text)

    step1 = feedback((STEPS / "forum_step1_stride_pairs_floats.py").read_text())
    text = "\n".join(step1.values())
    assert flat("Likely mistake: overlapping windows overwrite each other") in flat(step1["hidden_overlapping_windows"])
    assert flat("Likely mistake: only 2-D inputs supported.") in flat(text)
    assert "hidden_forum_integer_input" not in step1 and "hidden_dtype_of_x" not in step1

    assert feedback((STEPS / "forum_step2_accumulate_leading_axes.py").read_text()) == {}


def test_ties_all_maxima_fixed_by_following_the_feedback():
    start = feedback(TIES_ALL_MAXIMA)
    assert set(start) == {"hidden_ties_valid_subgradient", "hidden_ties_first_maximum"}
    assert all(flat("a mask marks each of the tied maxima") in flat(m) and flat("np.argmax(window)") in flat(m)
               for m in start.values())
    fixed = TIES_ALL_MAXIMA.replace(
        "mask = window == window.max(axis=(-2, -1), keepdims=True)  # every maximum",
        "flat = window.reshape(*window.shape[:-2], -1)\n"
        "            first = np.argmax(flat, axis=-1)  # the first maximum only\n"
        "            mask = (np.arange(flat.shape[-1]) == first[..., None]).reshape(window.shape)")
    assert fixed != TIES_ALL_MAXIMA
    assert feedback(fixed) == {}

"""The bug catalogue: realistic wrong ``max_pool_backward`` implementations (bugs.py), each
with a title, what the student's code does (``pattern``) and the full explanation (what goes
wrong, why, how to fix it), and correct controls (controls.py). Feedback runs the bugs on the
input where a student's dx is wrong and names those that give the student's answer (within
the grader's tolerance); the mutation test (tests/test_mutation.py) requires every hidden
check to pass every control and every bug to lose points somewhere.

Until the release of the final feedback, a report says what the student's code does and what
it gives (``pattern``), never why the right dx is right where that is what Part A asks the
student to derive (the gradient at the maximum alone, ties, the sum over overlapping windows);
Part B's own rules (shapes, strides, dtypes, the tie convention) are stated in full all along.
After the release the full ``explanation`` stands in its place (exercise/reveal.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import bugs, controls
from .source_marks import adds_into_dx, assigns_into_dx, calling

Backward = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Bug:
    name: str
    title: str  # the mistake in a few words: what the code does, never why it is wrong
    explanation: str  # what goes wrong, why, and how to fix it, for the student (after the release)
    function: Backward
    # Whether a student's source shows this mistake: True (it has the construct the mistake
    # needs), False (it cannot make it), None (reading the code cannot tell). Used to tell
    # apart mistakes that give the same dx (look-alikes).
    in_source: Callable[[str], bool | None] = lambda source: None
    # What the code does and gives, without the derivation Part A asks for (before the release);
    # empty: the explanation says nothing Part A asks for, and is given all along.
    pattern: str = ""

    @property
    def before_release(self) -> str:
        """What a report says about this mistake until the final feedback is released."""
        return self.pattern or self.explanation


@dataclass(frozen=True)
class Control:
    name: str
    description: str
    function: Backward


# How to create dx so that it follows Part B's dtype rule (the dtype mistakes' fix).
DX_IN_X_DTYPE = '`dx = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == "f" else np.float64)`'
DTYPE_RULE = ("Part B's rule: dx has x's dtype when x is floating, and is float64 when x is an integer array, as "
              f"PyTorch's gradient is. Create it with {DX_IN_X_DTYPE}.")


BUGS: dict[str, Bug] = {bug.name: bug for bug in [
    Bug("overwrite_overlaps", "overlapping windows overwrite each other (`dx[...] = ...`)",
        "When stride < pool_size, one element can be the maximum of several windows. Your code "
        "assigns each window's gradient with `dx[...] = d`, so the last window wins and the others "
        "are lost. Add instead: `dx[...] += d`.", bugs.overwrite_overlaps, assigns_into_dx,
        pattern="Your code stores each window's value into dx with `=` (`dx[...] = d`). Where two windows "
                "pick the same element, the second window's value replaces the first one's: compare your dx "
                "with the expected one at the positions above."),
    Bug("fancy_index_accumulate", "`dx[rows, cols] += d` with repeated indices adds only once",
        "With index arrays, NumPy's `+=` reads all the old values, adds, and writes back once per "
        "element: when two windows share their maximum, the same (row, col) appears twice and only "
        "one of the two gradients is kept. Accumulate with `np.add.at(dx, (rows, cols), d)`, or add "
        "window by window in a loop.", bugs.fancy_index_accumulate, adds_into_dx,
        pattern="Your code adds with index arrays, `dx[rows, cols] += d`. NumPy's `+=` with index arrays is "
                "buffered: it reads every old value first and writes each (row, col) once, so where the same "
                "position is listed twice only one of its values lands in dx (`np.add.at` is the unbuffered "
                "form). Compare your dx with the expected one at the positions above."),
    Bug("integer_truncation", "dx has x's integer dtype, so fractions are truncated",
        "`np.zeros_like(x)` copies x's dtype; with integer x, adding 0.5 to it stores 0. " + DTYPE_RULE,
        bugs.integer_truncation),
    Bug("float32_accumulator", "dx is float32, so the float64 gradient is rounded",
        "Your dx is float32 (e.g. `np.zeros(x.shape, dtype=np.float32)`): for float64 x every value of dx "
        "is rounded to about 7 significant digits (0.1 becomes 0.10000000149011612). " + DTYPE_RULE,
        bugs.float32_accumulator),
    Bug("dx_always_float64", "dx is float64 whatever x's dtype, so float32 x gets a float64 gradient",
        "`np.zeros(x.shape)` (or `dtype=float`) makes a float64 dx whatever x is; for float32 x, dx "
        "must be float32. " + DTYPE_RULE, bugs.dx_always_float64),
    Bug("float32_for_integer_input", "dx is float32 for integer x",
        "Your dx is float32 when x is an integer array (`dtype=np.float32` for integer x, say): it holds "
        "about 7 significant digits of each value of d_output. " + DTYPE_RULE, bugs.float32_for_integer_input),
    Bug("ties_all_maxima", "a mask marks each of the tied maxima, and each gets the window's value of d_output",
        "A mask like `window == window.max()` is true at every tied maximum, so a window with two "
        "equal maxima passes back its gradient twice. The forward pass picked one element; send the "
        "gradient to that one only: the first maximum, e.g. `np.argmax(window)`.", bugs.ties_all_maxima,
        calling("max", "amax", compared=True),
        pattern="A mask like `window == window.max()` is true at each tied maximum, so in a window with two "
                "equal maxima your dx holds the window's value of d_output at both. Part B's convention: on "
                "ties the forward pass selected the first maximum in row-major order, the element "
                "`np.argmax(window)` finds."),
    Bug("ties_shared", "tied maxima share the window's value of d_output equally",
        "Splitting a window's gradient equally among tied maxima is a valid subgradient, but PyTorch "
        "(and this assignment) sends all of it to the first maximum in row-major order, which is "
        "what `np.argmax` on the window returns.", bugs.ties_shared,
        pattern="Your code divides each window's value of d_output equally among the window's tied maxima (a "
                "mask divided by its count). Part B's convention: on ties the forward pass selected the first "
                "maximum in row-major order, the element `np.argmax(window)` finds."),
    Bug("ties_last_maximum", "on ties, the last maximum is chosen instead of the first",
        "A scan with `>=` (or an argmax over the reversed window) ends on the LAST tied maximum. "
        "Use `>` so the first maximum in row-major order is kept, or simply `np.argmax(window)`.",
        bugs.ties_last_maximum),
    Bug("stride_ignored", "stride ignored: windows always step by the pool size",
        "Your windows start at `k * pool_size`, so a stride different from the pool size is "
        "ignored. Window (k, l) starts at row `k * sh` and column `l * sw`.",
        bugs.stride_ignored),
    Bug("stride_none_means_one", "stride=None treated as stride 1",
        "`stride=None` means windows step by the pool size (non-overlapping windows), as in "
        "PyTorch. Start with `if stride is None: stride = pool_size`.", bugs.stride_none_means_one),
    Bug("window_from_stride", "window size taken from the stride",
        "Your windows are `stride` elements wide, not `pool_size`. Window (k, l) covers rows "
        "`k*sh : k*sh + ph` and columns `l*sw : l*sw + pw`.", bugs.window_from_stride),
    Bug("pool_transposed", "pool height and width swapped",
        "pool_size=(ph, pw) means ph rows and pw columns. Your windows are pw rows by ph columns; "
        "unpack it as `ph, pw = pool_size`.", bugs.pool_transposed),
    Bug("border_windows_dropped", "border windows of d_output's grid are skipped",
        "Your loop computes the number of windows from x with a floor, so when d_output has an "
        "extra row or column of windows that run past x's border (ceil mode), their values of d_output "
        "never reach dx. Loop over d_output's shape: `for k in range(d_output.shape[-2])`, and let "
        "slicing clip the window at the border.", bugs.border_windows_dropped),
    Bug("square_plane_assumed", "the plane is assumed square: the output width is taken from its height",
        "Your loops take the number of output columns from the number of rows (code written for "
        "square images), which is right only when H_out equals W_out. Take each from its own axis: "
        "`H_out, W_out = d_output.shape[-2:]`, and loop `for l in range(W_out)`.", bugs.square_plane_assumed),
    Bug("window_one_short", "windows one row and one column too small (off by one)",
        "Window (k, l) covers rows `k*sh` up to and including `k*sh + ph - 1`; the slice is "
        "`k*sh : k*sh + ph` (the end is exclusive). Your slice stops one element early, so a "
        "maximum in a window's last row or column is missed.", bugs.window_one_short),
    Bug("not_scaled_by_d_output", "dx holds 1 instead of the values of d_output",
        "Your dx holds 1 at each window's maximum. The chain rule multiplies by the upstream "
        "gradient: the maximum receives `d_output[..., k, l]`, not 1.", bugs.not_scaled_by_d_output,
        pattern="Your dx holds 1 where the expected dx holds that window's value of d_output, "
                "`d_output[..., k, l]`: your code does not use the values of d_output."),
    Bug("average_pool_routing", "each window's value of d_output is spread over the whole window (average pooling)",
        "Dividing a window's gradient by its size is the backward pass of AVERAGE pooling. Max "
        "pooling's output depends only on the maximum, so only that element gets the gradient.",
        bugs.average_pool_routing,
        pattern="Your code divides each window's value of d_output by the window's size and puts a share "
                "at every element of the window (the backward pass of average pooling): your dx is non-zero "
                "at every element of x, the expected dx at one element per window."),
    Bug("max_initialised_to_zero", "the running maximum starts at 0, so negative windows go wrong",
        "Your scan starts with `best = 0`; in a window of negative numbers nothing beats 0, so the "
        "window's value lands on an element that is not its maximum. Start from the window's first "
        "element (or -inf), or use `np.argmax(window)`.", bugs.max_initialised_to_zero),
    Bug("argmax_unravelled_with_pool_height", "the flat arg-max index is unravelled with the wrong width",
        "`flat = np.argmax(window)` is a flat row-major index: row = flat // window_width, column = "
        "flat % window_width. Dividing by the pool HEIGHT is right only for square windows. Use "
        "`np.unravel_index(flat, window.shape)`.", bugs.argmax_unravelled_with_pool_height),
    Bug("clipped_window_unravelled_with_pool_width",
        "the arg-max of a clipped border window is unravelled with the full pool width",
        "A window that runs past x's border is clipped: it has fewer columns than pool_size. Its "
        "flat arg-max index must be unravelled with the clipped window's own width: "
        "`np.unravel_index(flat, window.shape)`.", bugs.clipped_window_unravelled_with_pool_width),
    Bug("zero_padding", "x padded with zeros for the border windows",
        "Padding x with 0 to fit the border windows makes a padded 0 the maximum of a window of "
        "negative numbers, so that window's value of d_output lands in the padding, outside x. Slice "
        "the clipped window instead (NumPy slicing stops at the border), or pad with -inf.", bugs.zero_padding),
    Bug("pool_size_int_only", "pool_size given as a pair (ph, pw) is not supported",
        "pool_size may be one int or a pair (ph, pw); so may stride. Code like "
        "`pool_height = pool_width = pool_size` makes slice bounds out of a tuple. Unpack it first: "
        "`ph, pw = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size`.",
        bugs.pool_size_int_only),
    Bug("only_two_dimensional", "only 2-D inputs supported",
        "x may have leading batch/channel axes: shape (..., H, W). Pool over the last two axes only, "
        "e.g. loop over `np.ndindex(x.shape[:-2])`, or reshape to (-1, H, W) and back.",
        bugs.only_two_dimensional),
    Bug("one_argmax_across_leading_axes", "one arg-max taken across all batch/channel planes",
        "`x[..., rows, cols]` is a stack of windows, one per plane; `np.argmax` over it finds one "
        "maximum for all planes together. Each plane's window has its own maximum: take the arg-max "
        "over the last two axes only.", bugs.one_argmax_across_leading_axes),
    Bug("global_argmax", "one arg-max for the whole plane instead of one per window",
        "Your code finds the maximum of the whole input once and puts every window's value of d_output "
        "there. Each window (k, l) has its own maximum: take the arg-max of `x[..., rows, cols]` for "
        "every window.", bugs.global_argmax),
    Bug("upsampling_mask", "upsampling trick: non-overlapping windows that tile x exactly, and each tie",
        "`x == out.repeat(ph, 0).repeat(pw, 1)` builds the mask for windows that do not overlap and "
        "cover x exactly; it is wrong for any other stride or size, and it marks each of the tied "
        "maxima. Loop through the windows (or use sliding_window_view) and pick one maximum each.",
        bugs.upsampling_mask, calling("repeat", "kron", "tile")),
    Bug("modifies_x_in_place", "x modified in place through a window view",
        "A slice like `x[r0:r1, c0:c1]` is a VIEW: `window -= ...` or `window[...] = ...` changes x "
        "itself, which the caller still needs (and later windows read). Work on `window.copy()` or "
        "compute without writing to x.", bugs.modifies_x_in_place),
]}


CONTROLS: dict[str, Control] = {control.name: control for control in [
    Control("loop_with_argmax", "loops over windows, np.argmax per window", controls.loop_with_argmax),
    Control("vectorized_sliding_windows", "sliding_window_view, argmax and np.add.at",
            controls.vectorized_sliding_windows),
    Control("pure_python_scan", "nested Python loops and comparisons on lists", controls.pure_python_scan),
    Control("mask_with_first_tie", "max mask, keeping only its first true entry", controls.mask_with_first_tie),
    Control("noisy_but_correct", "correct, but prints to stderr and triggers a RuntimeWarning",
            controls.noisy_but_correct),
]}

"""Hypothesis strategies for pooling configurations, shared by the property tests."""

import numpy as np
from hypothesis import strategies as st

from maxpool_grader.exercise.geometry import ceil_output_size, floor_output_size


@st.composite
def pooling_configs(draw, values="ties", max_leading=2):
    """A dict with x, pool, stride, ceil_mode and the output grid's shape.

    values: "any" (ties or float), "ties" (small ints, many tied maxima), "float", or "distinct"
    (a permutation of well-separated floats: no ties anywhere).
    """
    leading = tuple(draw(st.lists(st.integers(1, 3), max_size=max_leading)))
    pool = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    stride = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    height, width = pool[0] + draw(st.integers(0, 5)), pool[1] + draw(st.integers(0, 5))
    ceil_mode = draw(st.booleans())
    shape = leading + (height, width)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if values == "any":
        values = draw(st.sampled_from(["ties", "float"]))
    if values == "ties":
        x = rng.integers(-2, 3, size=shape)
    elif values == "float":
        x = rng.standard_normal(shape)
    else:
        x = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) * 0.5
    size_of = ceil_output_size if ceil_mode else floor_output_size
    out = tuple(size_of(n, k, s) for n, k, s in zip((height, width), pool, stride))
    d_out = rng.standard_normal(leading + out).round(2)
    return {"x": x, "pool": pool, "stride": stride, "ceil_mode": ceil_mode, "d_out": d_out, "rng": rng}

"""The reference equals PyTorch 2.13.0's max_pool2d on the committed golden cases (no torch needed)."""

from pathlib import Path

import numpy as np
import pytest

from maxpool_grader import max_pool_backward, max_pool_forward

GOLDEN = Path(__file__).parent / "data" / "golden_max_pool2d.npz"


def load_cases():
    with np.load(GOLDEN, allow_pickle=False) as data:
        count = sum(1 for key in data.files if key.endswith("/params"))
        return [{name: data[f"{i}/{name}"] for name in ("x", "d_out", "out", "dx", "params")}
                for i in range(count)]


CASES = load_cases()


def test_golden_file_covers_the_configurations_the_spec_names():
    assert len(CASES) >= 500
    params = np.array([case["params"] for case in CASES])
    pools, strides, ceil = params[:, :2], params[:, 2:4], params[:, 4]
    assert {case["x"].ndim - 2 for case in CASES} == {0, 1, 2}
    assert (pools[:, 0] != pools[:, 1]).any(), "rectangular pools"
    assert (strides < pools).any() and (strides == pools).any() and (strides > pools).any()
    assert set(ceil) == {0, 1}
    assert any(case["x"].dtype.kind == "i" for case in CASES), "integer inputs with ties"
    assert any(np.isnan(case["x"]).any() for case in CASES if case["x"].dtype.kind == "f")
    border = [case for case in CASES if case["out"].shape[-2:] != max_pool_forward(
        case["x"], tuple(case["params"][:2]), tuple(case["params"][2:4])).shape[-2:]]
    assert len(border) >= 50, "enough ceil grids that really add border windows"


@pytest.mark.parametrize("index", range(len(CASES)))
def test_reference_matches_torch_golden(index):
    case = CASES[index]
    pool, stride, ceil_mode = tuple(case["params"][:2]), tuple(case["params"][2:4]), bool(case["params"][4])
    out = max_pool_forward(case["x"], pool, stride, ceil_mode=ceil_mode)
    np.testing.assert_array_equal(out, case["out"])
    dx = max_pool_backward(case["d_out"], case["x"], pool, stride)
    assert dx.shape == case["x"].shape and dx.dtype == np.float64
    np.testing.assert_array_equal(dx, case["dx"])

"""Contract mutants for the exercise `max_pool_backward(d_output, x, pool_size, stride=None)`.

`correct` is a clean reference solution of Part B; `MUTANTS` lists solutions that each break
exactly one rule of Part B, on one kind of input, the way a student plausibly would.
Importable with NumPy alone (verify.py checks everything with PyTorch).
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided


# ----------------------------------------------------------------------------------------------
# Reference solution
# ----------------------------------------------------------------------------------------------

def _pair(value):
    """An int (Python or NumPy) or a pair (rows, cols) -> (rows, cols) of Python ints."""
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    rows, cols = value
    return int(rows), int(cols)


def _out_dtype(x):
    """dx's dtype: x's when x is floating, float64 for integer (or boolean) x."""
    return x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)


def correct(d_output, x, pool_size, stride=None):
    """dx for max pooling over the last two axes; windows come from d_output's grid."""
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    planes = x.reshape((-1, H, W))                                # a copy if it must be: x unchanged
    grads = d_output.reshape((-1, Ho, Wo)).astype(np.float64)    # a new array: d_output unchanged
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W), dtype=np.float64)                    # accumulate in float64
    for k in range(Ho):
        r0 = k * sh
        r1 = min(r0 + ph, H)                                      # border windows are clipped
        for l in range(Wo):
            c0 = l * sw
            c1 = min(c0 + pw, W)
            window = planes[:, r0:r1, c0:c1].reshape(M, -1)
            first = np.argmax(window, axis=1)                     # first maximum, row-major
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]           # one element per plane: no clash
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# Helpers the mutants share (each is correct; a mutant's mistake is in its own code)
# ----------------------------------------------------------------------------------------------

def _first_max_backward(planes, grads, ph, pw, sh, sw):
    """Correct core on planes (M, H, W) and grads (M, Ho, Wo): float64 dx of shape (M, H, W)."""
    M, H, W = planes.shape
    Ho, Wo = grads.shape[-2:]
    plane = np.arange(M)
    dx = np.zeros((M, H, W))
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]
    return dx


def _setup(d_output, x, pool_size, stride):
    x, d = np.asarray(x), np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return d, x, ph, pw, sh, sw


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _pad_for_grid(x, Ho, Wo, ph, pw, sh, sw, value):
    """x padded at the bottom/right so that every window of the (Ho, Wo) grid fits."""
    H, W = x.shape[-2:]
    extra_h = max(0, (Ho - 1) * sh + ph - H)
    extra_w = max(0, (Wo - 1) * sw + pw - W)
    if not (extra_h or extra_w):
        return x
    widths = [(0, 0)] * (x.ndim - 2) + [(0, extra_h), (0, extra_w)]
    return np.pad(x, widths, constant_values=value)


def _running_max_backward(planes, grads, ph, pw, sh, sw, start):
    """The core with a hand-written running maximum that starts at `start` (strict >)."""
    M, H, W = planes.shape
    Ho, Wo = grads.shape[-2:]
    plane = np.arange(M)
    dx = np.zeros((M, H, W))
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            window = planes[:, r0:r1, c0:c1].reshape(M, -1)
            best = np.full(M, start, dtype=planes.dtype)
            first = np.zeros(M, dtype=np.intp)
            for p in range(window.shape[1]):
                bigger = window[:, p] > best
                best = np.where(bigger, window[:, p], best)
                first = np.where(bigger, p, first)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]
    return dx


# ----------------------------------------------------------------------------------------------
# shape: dx is a NumPy array of x's shape
# ----------------------------------------------------------------------------------------------

def shape_squeeze(d_output, x, pool_size, stride=None):
    """Squeezes dx 'to drop the batch axis I added': loses every size-1 axis."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape((-1,) + d.shape[-2:]), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(_out_dtype(x)).squeeze()


def shape_moveaxis_not_restored(d_output, x, pool_size, stride=None):
    """Moves H, W to the front to index windows first, and returns dx in that layout."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    xt = np.moveaxis(x, (-2, -1), (0, 1))            # (H, W, ...)
    dt = np.moveaxis(d, (-2, -1), (0, 1))            # (Ho, Wo, ...)
    H, W = xt.shape[:2]
    dx = np.zeros(xt.shape)
    rest = xt.shape[2:]
    flat_rest = int(np.prod(rest))
    for k in range(dt.shape[0]):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(dt.shape[1]):
            c0, c1 = l * sw, min(l * sw + pw, W)
            window = xt[r0:r1, c0:c1].reshape(-1, flat_rest)
            first = window.argmax(axis=0)
            i, j = np.divmod(first, c1 - c0)
            view = dx.reshape(H, W, flat_rest)
            view[r0 + i, c0 + j, np.arange(flat_rest)] += dt[k, l].reshape(flat_rest)
    return dx.astype(_out_dtype(x))                   # forgot np.moveaxis back


def shape_padded_not_cropped(d_output, x, pool_size, stride=None):
    """Pads x so that ceil-mode windows fit, and returns dx of the padded shape."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    Ho, Wo = d.shape[-2:]
    xp = _pad_for_grid(x, Ho, Wo, ph, pw, sh, sw, _lowest(x.dtype))
    Hp, Wp = xp.shape[-2:]
    dx = _first_max_backward(xp.reshape(-1, Hp, Wp), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(xp.shape).astype(_out_dtype(x))  # forgot dx[..., :H, :W]


# ----------------------------------------------------------------------------------------------
# dtype: x's dtype when x is floating, float64 for integer x (whatever d_output's dtype)
# ----------------------------------------------------------------------------------------------

def dtype_from_d_output(d_output, x, pool_size, stride=None):
    """dx allocated with d_output's dtype."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(d.dtype)


def dtype_zeros_like(d_output, x, pool_size, stride=None):
    """dx = np.zeros_like(x): integer x gives an integer dx (fractions truncated)."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes, grads = x.reshape(-1, H, W), d.reshape(-1, Ho, Wo)
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros_like(planes)
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] = dx[plane, r0 + i, c0 + j] + grads[:, k, l]
    return dx.reshape(x.shape)


def dtype_always_float64(d_output, x, pool_size, stride=None):
    """dx = np.zeros(x.shape): always float64, also for float32/float16 x."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    return _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw).reshape(x.shape)


def dtype_result_type(d_output, x, pool_size, stride=None):
    """dx in np.result_type(x, d_output)."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(np.result_type(x, d))


def dtype_float16_promoted(d_output, x, pool_size, stride=None):
    """Does the math in at least float32 ('float16 is too imprecise') and returns that dtype."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    work = np.result_type(x.dtype, np.float32) if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(work)


def dtype_float32_accumulator(d_output, x, pool_size, stride=None):
    """Accumulates dx in float32 'to save memory', casting to the right dtype at the end."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes, grads = x.reshape(-1, H, W), d.reshape(-1, Ho, Wo).astype(np.float32)
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W), dtype=np.float32)
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# unchanged: x and d_output are left unchanged
# ----------------------------------------------------------------------------------------------

def unchanged_dx_is_x(d_output, x, pool_size, stride=None):
    """Reuses x's memory for dx: x.astype(dtype, copy=False) is x itself for floating x."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    grad = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    dx = x.astype(_out_dtype(x), copy=False)
    dx[...] = grad.reshape(x.shape)
    return dx


def unchanged_d_output_consumed(d_output, x, pool_size, stride=None):
    """Zeroes each entry of d_output once it has been passed back ('consumed')."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    grads = d.reshape(-1, Ho, Wo)                    # a view of d_output when it can be
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W))
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]
            grads[:, k, l] = 0
    return dx.reshape(x.shape).astype(_out_dtype(x))


def unchanged_shift_x_in_place(d_output, x, pool_size, stride=None):
    """Makes x non-negative in place (x -= x.min()) for a running maximum that starts at 0."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    if x.min() < 0:
        x -= x.min()
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _running_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw, 0)
    return dx.reshape(x.shape).astype(_out_dtype(x))


def unchanged_nan_to_num_in_place(d_output, x, pool_size, stride=None):
    """Cleans x with np.nan_to_num(x, copy=False): -inf in x is overwritten."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    if np.issubdtype(x.dtype, np.floating):
        np.nan_to_num(x, copy=False)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# forms: pool_size and stride are an int or a pair
# ----------------------------------------------------------------------------------------------

def _core_with(d_output, x, ph, pw, sh, sw):
    x, d = np.asarray(x), np.asarray(d_output)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(_out_dtype(x))


def forms_int_pool_only(d_output, x, pool_size, stride=None):
    """ph = pw = pool_size: a pair pool_size breaks the slicing."""
    ph = pw = pool_size
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return _core_with(d_output, x, ph, pw, sh, sw)


def forms_pair_stride_only(d_output, x, pool_size, stride=None):
    """sh, sw = stride: an int stride cannot be unpacked."""
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else stride
    return _core_with(d_output, x, ph, pw, sh, sw)


def forms_width_height(d_output, x, pool_size, stride=None):
    """Reads pool_size as (width, height)."""
    pw, ph = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return _core_with(d_output, x, ph, pw, sh, sw)


def forms_stride_first_only(d_output, x, pool_size, stride=None):
    """Uses the first number of a pair stride for both axes."""
    ph, pw = _pair(pool_size)
    if stride is None:
        sh, sw = ph, pw
    else:
        sh = sw = stride if isinstance(stride, (int, np.integer)) else stride[0]
    return _core_with(d_output, x, ph, pw, sh, sw)


# ----------------------------------------------------------------------------------------------
# stride_none: stride=None means stride = pool_size
# ----------------------------------------------------------------------------------------------

def stride_none_or_1(d_output, x, pool_size, stride=None):
    """stride = stride or 1."""
    stride = stride or 1
    ph, pw = _pair(pool_size)
    sh, sw = _pair(stride)
    return _core_with(d_output, x, ph, pw, sh, sw)


def stride_none_square(d_output, x, pool_size, stride=None):
    """stride None -> ph in both directions (square default)."""
    ph, pw = _pair(pool_size)
    sh, sw = _pair(ph if stride is None else stride)
    return _core_with(d_output, x, ph, pw, sh, sw)


# ----------------------------------------------------------------------------------------------
# leading_axes: any number of leading axes
# ----------------------------------------------------------------------------------------------

def leading_at_most_one(d_output, x, pool_size, stride=None):
    """Handles (H, W) and (C, H, W) only: C, H, W = x.shape."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    single = x.ndim == 2
    if single:
        x, d = x[None], d[None]
    C, H, W = x.shape
    dx = _first_max_backward(x, d, ph, pw, sh, sw)
    if single:
        dx = dx[0]
    return dx.astype(_out_dtype(x))


def leading_global_argmax(d_output, x, pool_size, stride=None):
    """np.unravel_index(np.argmax(window), window.shape): one maximum across all planes."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = np.zeros(x.shape)
    for k in range(Ho):
        r0 = k * sh
        for l in range(Wo):
            c0 = l * sw
            window = x[..., r0:r0 + ph, c0:c0 + pw]
            where = np.unravel_index(np.argmax(window), window.shape)
            i, j = where[-2], where[-1]
            dx[..., r0 + i, c0 + j] += d[..., k, l]
    return dx.astype(_out_dtype(x))


def leading_d_output_kl(d_output, x, pool_size, stride=None):
    """Reads the upstream gradient as d_output[k, l] instead of d_output[..., k, l]."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W))
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += d[k, l]
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# layout: x and d_output may be views, Fortran order, negative strides
# ----------------------------------------------------------------------------------------------

def layout_as_strided(d_output, x, pool_size, stride=None):
    """All windows at once with as_strided, strides computed from the shape (C order assumed)."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    xp = _pad_for_grid(x, Ho, Wo, ph, pw, sh, sw, _lowest(x.dtype))   # ceil mode: padded copy
    Hp, Wp = xp.shape[-2:]
    planes = xp.reshape(-1, Hp, Wp)
    M, b = planes.shape[0], planes.itemsize
    windows = as_strided(planes, shape=(M, Ho, Wo, ph, pw),
                         strides=(Hp * Wp * b, sh * Wp * b, sw * b, Wp * b, b))
    first = windows.reshape(M, Ho, Wo, ph * pw).argmax(axis=-1)
    i, j = np.divmod(first, pw)
    rows = np.arange(Ho)[None, :, None] * sh + i
    cols = np.arange(Wo)[None, None, :] * sw + j
    dx = np.zeros((M, Hp, Wp))
    np.add.at(dx, (np.arange(M)[:, None, None], rows, cols), d.reshape(M, Ho, Wo))
    return dx[:, :H, :W].reshape(x.shape).astype(_out_dtype(x))


def layout_d_output_ravel_k(d_output, x, pool_size, stride=None):
    """Flattens d_output with ravel(order='K') ('no copy'): memory order, not index order."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    grads = d.ravel(order="K").reshape(planes.shape[0], Ho, Wo)
    dx = _first_max_backward(planes, grads, ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# windows: window (k, l) covers rows k*sh .. k*sh+ph-1, columns l*sw .. l*sw+pw-1
# ----------------------------------------------------------------------------------------------

def _core_windows(d_output, x, bounds):
    """Core with window bounds given by bounds(k, l, H, W) -> (r0, r1, c0, c1)."""
    x, d = np.asarray(x), np.asarray(d_output)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes, grads = x.reshape(-1, H, W), d.reshape(-1, Ho, Wo)
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W))
    for k in range(Ho):
        for l in range(Wo):
            r0, r1, c0, c1 = bounds(k, l, H, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, min(c1, W) - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]
    return dx.reshape(x.shape).astype(_out_dtype(x))


def windows_end_at_next_start(d_output, x, pool_size, stride=None):
    """A window ends where the next one starts: rows k*sh .. (k+1)*sh - 1."""
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return _core_windows(d_output, x, lambda k, l, H, W: (k * sh, min((k + 1) * sh, H),
                                                          l * sw, min((l + 1) * sw, W)))


def windows_start_k_times_pool(d_output, x, pool_size, stride=None):
    """Window (k, l) starts at k*ph, l*pw (pool size used as the step)."""
    ph, pw = _pair(pool_size)
    return _core_windows(d_output, x, lambda k, l, H, W: (k * ph, min(k * ph + ph, H),
                                                          l * pw, min(l * pw + pw, W)))


def windows_cols_use_row_stride(d_output, x, pool_size, stride=None):
    """Columns step by sh too: c0 = l * sh."""
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return _core_windows(d_output, x, lambda k, l, H, W: (k * sh, min(k * sh + ph, H),
                                                          l * sh, min(l * sh + pw, W)))


def windows_stride_capped_at_pool(d_output, x, pool_size, stride=None):
    """'A stride larger than the window would skip elements': sh = min(sh, ph)."""
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    sh, sw = min(sh, ph), min(sw, pw)
    return _core_with(d_output, x, ph, pw, sh, sw)


# ----------------------------------------------------------------------------------------------
# clipped: border windows of a ceil-mode grid are clipped to x
# ----------------------------------------------------------------------------------------------

def clipped_dropped(d_output, x, pool_size, stride=None):
    """Loops over the full-window grid (H - ph)//sh + 1: ceil-mode border windows are dropped."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = (H - ph) // sh + 1, (W - pw) // sw + 1
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape((-1,) + d.shape[-2:])[:, :Ho, :Wo],
                             ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(_out_dtype(x))


def clipped_zero_padding(d_output, x, pool_size, stride=None):
    """Zero-pads x for the border windows: a padded 0 beats negative x."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    xp = _pad_for_grid(x, Ho, Wo, ph, pw, sh, sw, 0)
    Hp, Wp = xp.shape[-2:]
    dx = _first_max_backward(xp.reshape(-1, Hp, Wp), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(xp.shape)[..., :H, :W].astype(_out_dtype(x))


def clipped_shifted_inside(d_output, x, pool_size, stride=None):
    """Keeps border windows full-size by moving them inside x: r0 = min(k*sh, H - ph)."""
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)

    def bounds(k, l, H, W):
        r0, c0 = max(0, min(k * sh, H - ph)), max(0, min(l * sw, W - pw))
        return r0, min(r0 + ph, H), c0, min(c0 + pw, W)
    return _core_windows(d_output, x, bounds)


# ----------------------------------------------------------------------------------------------
# negative: x may be negative (very negative, -inf)
# ----------------------------------------------------------------------------------------------

def negative_running_max_zero(d_output, x, pool_size, stride=None):
    """Running maximum initialised to 0 (index 0): all-negative windows go to their first element."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _running_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw, 0)
    return dx.reshape(x.shape).astype(_out_dtype(x))


def negative_running_max_minus_1e9(d_output, x, pool_size, stride=None):
    """Running maximum initialised to -1e9 for floats (iinfo.min for integers)."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    start = -1e9 if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    with np.errstate(over="ignore"):
        dx = _running_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw, start)
    return dx.reshape(x.shape).astype(_out_dtype(x))


def negative_shift_copy(d_output, x, pool_size, stride=None):
    """x = x - x.min() (a copy) then a running maximum from 0: -inf turns x into inf/nan."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    shifted = x - x.min()
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _running_max_backward(shifted.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw, 0)
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# integer: x may be an integer array (any integer dtype); dx keeps d_output's fractions
# ----------------------------------------------------------------------------------------------

def integer_float32_cast(d_output, x, pool_size, stride=None):
    """Integer x converted with x.astype(np.float32): distinct values above 2**24 tie."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    out = _out_dtype(x)
    if np.issubdtype(x.dtype, np.integer):
        x = x.astype(np.float32)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(out)


def integer_float64_cast(d_output, x, pool_size, stride=None):
    """Integer x converted with x.astype(float): int64/uint64 values above 2**53 tie."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    if np.issubdtype(x.dtype, np.integer):
        x = x.astype(float)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    dx = _first_max_backward(x.reshape(-1, H, W), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(x.shape).astype(_out_dtype(x))


def integer_pad_minus_inf(d_output, x, pool_size, stride=None):
    """Pads x with -inf for ceil-mode windows: impossible for an integer x."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    xp = _pad_for_grid(x, Ho, Wo, ph, pw, sh, sw, -np.inf)
    Hp, Wp = xp.shape[-2:]
    dx = _first_max_backward(xp.reshape(-1, Hp, Wp), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(xp.shape)[..., :H, :W].astype(_out_dtype(x))


def integer_pad_min_minus_one(d_output, x, pool_size, stride=None):
    """Pads with x.min() - 1, which wraps around for an integer x holding its dtype's minimum."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    with np.errstate(over="ignore"):
        xp = _pad_for_grid(x, Ho, Wo, ph, pw, sh, sw, x.min() - 1)
    Hp, Wp = xp.shape[-2:]
    dx = _first_max_backward(xp.reshape(-1, Hp, Wp), d.reshape(-1, Ho, Wo), ph, pw, sh, sw)
    return dx.reshape(xp.shape)[..., :H, :W].astype(_out_dtype(x))


def integer_truncates_fractions(d_output, x, pool_size, stride=None):
    """Integer x -> integer accumulator (int64), d_output cast to it; float64 only at the end."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    acc = np.float64 if np.issubdtype(x.dtype, np.floating) else np.int64
    grads = d.reshape(-1, Ho, Wo).astype(acc)
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W), dtype=acc)
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] += grads[:, k, l]
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# ties: the first maximum in row-major order
# ----------------------------------------------------------------------------------------------

def _core_pick(d_output, x, pool_size, stride, pick):
    """Core where pick(window (M, h, w)) -> float weights (M, h, w) of each element."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes, grads = x.reshape(-1, H, W), d.reshape(-1, Ho, Wo)
    dx = np.zeros(planes.shape)
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            dx[:, r0:r1, c0:c1] += pick(planes[:, r0:r1, c0:c1]) * grads[:, k, l, None, None]
    return dx.reshape(x.shape).astype(_out_dtype(x))


def ties_last_maximum(d_output, x, pool_size, stride=None):
    """Running maximum with >=: the last maximum in row-major order."""
    def pick(window):
        M, h, w = window.shape
        flat = window.reshape(M, -1)
        last = h * w - 1 - flat[:, ::-1].argmax(axis=1)
        mask = np.zeros(flat.shape)
        mask[np.arange(M), last] = 1
        return mask.reshape(window.shape)
    return _core_pick(d_output, x, pool_size, stride, pick)


def ties_all_maxima(d_output, x, pool_size, stride=None):
    """mask = window == window.max(): every tied maximum gets the whole gradient."""
    return _core_pick(d_output, x, pool_size, stride,
                      lambda window: (window == window.max(axis=(1, 2), keepdims=True)).astype(float))


def ties_split_evenly(d_output, x, pool_size, stride=None):
    """Splits the gradient evenly among tied maxima (a subgradient, but not PyTorch's)."""
    def pick(window):
        mask = (window == window.max(axis=(1, 2), keepdims=True)).astype(float)
        return mask / mask.sum(axis=(1, 2), keepdims=True)
    return _core_pick(d_output, x, pool_size, stride, pick)


def ties_column_major(d_output, x, pool_size, stride=None):
    """argmax of the window flattened column by column: the first maximum in column-major order."""
    def pick(window):
        M, h, w = window.shape
        first = window.transpose(0, 2, 1).reshape(M, -1).argmax(axis=1)
        j, i = np.divmod(first, h)
        mask = np.zeros(window.shape)
        mask[np.arange(M), i, j] = 1
        return mask
    return _core_pick(d_output, x, pool_size, stride, pick)


# ----------------------------------------------------------------------------------------------
# overlap: an element that is the maximum of several windows gets the sum of their gradients
# ----------------------------------------------------------------------------------------------

def overlap_assign(d_output, x, pool_size, stride=None):
    """dx[...] = gradient instead of +=: the last window overwrites the others."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes, grads = x.reshape(-1, H, W), d.reshape(-1, Ho, Wo)
    M = planes.shape[0]
    plane = np.arange(M)
    dx = np.zeros((M, H, W))
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            dx[plane, r0 + i, c0 + j] = grads[:, k, l]
    return dx.reshape(x.shape).astype(_out_dtype(x))


def overlap_fancy_index_add(d_output, x, pool_size, stride=None):
    """Vectorised dx[idx] += g with repeated indices: each element counted once (no np.add.at)."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes, grads = x.reshape(-1, H, W), d.reshape(-1, Ho, Wo)
    M = planes.shape[0]
    rows = np.zeros((M, Ho, Wo), dtype=np.intp)
    cols = np.zeros((M, Ho, Wo), dtype=np.intp)
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            rows[:, k, l], cols[:, k, l] = r0 + i, c0 + j
    dx = np.zeros((M, H, W))
    dx[np.arange(M)[:, None, None], rows, cols] += grads
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------
# state: the result does not depend on earlier calls
# ----------------------------------------------------------------------------------------------

def _argmax_positions(planes, Ho, Wo, ph, pw, sh, sw):
    M, H, W = planes.shape
    rows = np.zeros((M, Ho, Wo), dtype=np.intp)
    cols = np.zeros((M, Ho, Wo), dtype=np.intp)
    for k in range(Ho):
        r0, r1 = k * sh, min(k * sh + ph, H)
        for l in range(Wo):
            c0, c1 = l * sw, min(l * sw + pw, W)
            first = planes[:, r0:r1, c0:c1].reshape(M, -1).argmax(axis=1)
            i, j = np.divmod(first, c1 - c0)
            rows[:, k, l], cols[:, k, l] = r0 + i, c0 + j
    return rows, cols


_POSITIONS_BY_SHAPE = {}


def state_cache_by_shape(d_output, x, pool_size, stride=None):
    """Caches the argmax positions keyed by (shape, pool, stride): stale for a new x."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    key = (x.shape, d.shape, ph, pw, sh, sw)
    if key not in _POSITIONS_BY_SHAPE:
        _POSITIONS_BY_SHAPE[key] = _argmax_positions(planes, Ho, Wo, ph, pw, sh, sw)
    rows, cols = _POSITIONS_BY_SHAPE[key]
    dx = np.zeros(planes.shape)
    np.add.at(dx, (np.arange(planes.shape[0])[:, None, None], rows, cols), d.reshape(-1, Ho, Wo))
    return dx.reshape(x.shape).astype(_out_dtype(x))


_DX_BUFFERS = {}


def state_reused_buffer(d_output, x, pool_size, stride=None):
    """Preallocated dx buffer per shape, never zeroed: gradients pile up over calls."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    dx = _DX_BUFFERS.setdefault(planes.shape, np.zeros(planes.shape))
    rows, cols = _argmax_positions(planes, Ho, Wo, ph, pw, sh, sw)
    np.add.at(dx, (np.arange(planes.shape[0])[:, None, None], rows, cols), d.reshape(-1, Ho, Wo))
    return dx.reshape(x.shape).astype(_out_dtype(x))


_POSITIONS_BY_ID = {}


def state_cache_by_id(d_output, x, pool_size, stride=None):
    """Caches the argmax positions keyed by id(x): stale when the same array changed in between."""
    d, x, ph, pw, sh, sw = _setup(d_output, x, pool_size, stride)
    H, W = x.shape[-2:]
    Ho, Wo = d.shape[-2:]
    planes = x.reshape(-1, H, W)
    key = (id(x), x.shape, d.shape, ph, pw, sh, sw)
    if key not in _POSITIONS_BY_ID:
        _POSITIONS_BY_ID[key] = _argmax_positions(planes, Ho, Wo, ph, pw, sh, sw)
    rows, cols = _POSITIONS_BY_ID[key]
    dx = np.zeros(planes.shape)
    np.add.at(dx, (np.arange(planes.shape[0])[:, None, None], rows, cols), d.reshape(-1, Ho, Wo))
    return dx.reshape(x.shape).astype(_out_dtype(x))


# ----------------------------------------------------------------------------------------------

def _m(function, rule, kind):
    return {"name": function.__name__, "rule": rule, "kind": kind, "function": function}


MUTANTS = [
    _m(shape_squeeze, "shape", "x with a size-1 axis (a leading axis of 1, or H or W of 1)"),
    _m(shape_moveaxis_not_restored, "shape", "x with leading axes"),
    _m(shape_padded_not_cropped, "shape", "ceil-mode grid whose border windows stick out of x"),

    _m(dtype_from_d_output, "dtype", "d_output of another dtype than dx's (e.g. float32 d_output, float64 x)"),
    _m(dtype_zeros_like, "dtype", "integer x"),
    _m(dtype_always_float64, "dtype", "float32 or float16 x"),
    _m(dtype_result_type, "dtype", "float32 x with float64 d_output, or integer x with integer d_output"),
    _m(dtype_float16_promoted, "dtype", "float16 x"),
    _m(dtype_float32_accumulator, "dtype", "float64 x with d_output values float32 cannot hold"),

    _m(unchanged_dx_is_x, "unchanged", "floating x"),
    _m(unchanged_d_output_consumed, "unchanged", "any d_output that reshapes without a copy"),
    _m(unchanged_shift_x_in_place, "unchanged", "x with negative values"),
    _m(unchanged_nan_to_num_in_place, "unchanged", "floating x containing -inf"),

    _m(forms_int_pool_only, "forms", "pool_size given as a pair"),
    _m(forms_pair_stride_only, "forms", "stride given as an int"),
    _m(forms_width_height, "forms", "pool_size a pair with ph != pw"),
    _m(forms_stride_first_only, "forms", "stride a pair with sh != sw"),

    _m(stride_none_or_1, "stride_none", "stride None with a pool larger than 1"),
    _m(stride_none_square, "stride_none", "stride None with a pair pool_size, ph != pw"),

    _m(leading_at_most_one, "leading_axes", "x with 2 or more leading axes"),
    _m(leading_global_argmax, "leading_axes", "x with leading axes (several planes)"),
    _m(leading_d_output_kl, "leading_axes", "x with leading axes"),

    _m(layout_as_strided, "layout", "Fortran-order or transposed x (full-window grid)"),
    _m(layout_d_output_ravel_k, "layout", "Fortran-order or transposed d_output"),

    _m(windows_end_at_next_start, "windows", "stride different from the pool"),
    _m(windows_start_k_times_pool, "windows", "stride different from the pool"),
    _m(windows_cols_use_row_stride, "windows", "stride a pair with sh != sw"),
    _m(windows_stride_capped_at_pool, "windows", "stride larger than the pool"),

    _m(clipped_dropped, "clipped", "ceil-mode grid with border windows"),
    _m(clipped_zero_padding, "clipped", "ceil-mode grid, negative x in its border windows"),
    _m(clipped_shifted_inside, "clipped", "ceil-mode grid with border windows"),

    _m(negative_running_max_zero, "negative", "x with an all-negative window"),
    _m(negative_running_max_minus_1e9, "negative", "floating x below -1e9 (or -inf)"),
    _m(negative_shift_copy, "negative", "x containing -inf alongside finite values"),

    _m(integer_float32_cast, "integer", "integer x with distinct values above 2**24"),
    _m(integer_float64_cast, "integer", "int64/uint64 x with distinct values above 2**53"),
    _m(integer_pad_minus_inf, "integer", "signed (or uint64) integer x, ceil-mode grid whose windows stick out"),
    _m(integer_pad_min_minus_one, "integer", "integer x holding its dtype's minimum, ceil-mode grid"),
    _m(integer_truncates_fractions, "integer", "integer x with fractional d_output"),

    _m(ties_last_maximum, "ties", "windows with a tied maximum"),
    _m(ties_all_maxima, "ties", "windows with a tied maximum"),
    _m(ties_split_evenly, "ties", "windows with a tied maximum"),
    _m(ties_column_major, "ties", "windows whose tied maxima are in different rows and columns"),

    _m(overlap_assign, "overlap", "overlapping windows (stride < pool) sharing a maximum"),
    _m(overlap_fancy_index_add, "overlap", "overlapping windows (stride < pool) sharing a maximum"),

    _m(state_cache_by_shape, "state", "two calls with different x of the same shape"),
    _m(state_reused_buffer, "state", "two calls with x of the same shape"),
    _m(state_cache_by_id, "state", "the same x array changed in place between two calls"),
]

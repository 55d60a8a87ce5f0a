"""Small @triton.jit kernels for the triton-jit source's tests: an RMSNorm forward in the
style of Liger-Kernel's (an autotune list of three configs, a stride-1 argument and an
optional statistics pointer that Triton's JIT specialises away) and a vector add without
autotune."""
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4, num_stages=1),
                          triton.Config({"BLOCK_SIZE": 1024}, num_warps=8, num_stages=1),
                          triton.Config({"BLOCK_SIZE": 2048}, num_warps=16, num_stages=2)],
                 key=["n_cols"])
@triton.jit
def rms_norm_fwd(Y, Y_row_stride, X, X_row_stride, X_col_stride, W, RSTD, RSTD_row_stride, n_cols, eps,
                 BLOCK_SIZE: tl.constexpr):
    """Y = X / rms(X) * W per row; the row's 1 / rms goes to RSTD when it is given."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols * X_col_stride, mask=mask, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    if RSTD is not None:
        tl.store(RSTD + row * RSTD_row_stride, rstd)
    tl.store(Y + row * Y_row_stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out = x + y over n_elements."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)

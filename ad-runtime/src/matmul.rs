//! Vector and matrix products, including transposed-operand forms that read
//! the operand through a transposed view instead of copying it.
//!
//! Vector results (`dot`, `matvec`, `matvec_t`, `vecmat`) sum in the fixed
//! lane order of `Note [lane order]` (fold.rs), so they are bit-identical for
//! any thread count and for any memory layout of the matrix.
//! Matrix-matrix products call ndarray's `general_mat_mul` (the
//! `matrixmultiply` kernels, single-threaded) on blocks of
//! `max(64, ⌈len / 4⌉)` output rows (or columns when the output is wider than
//! tall); the blocks are fixed by the
//! shapes and each output element is computed by one call, so the result
//! does not depend on the thread count. Work for the parallel threshold:
//! `m·k·n / 8` multiply-adds for matrix-matrix products, the number of
//! matrix elements for matrix-vector products.

use crate::check;
use crate::elem::Elem;
use crate::fold::{reduce_axis, reduce_flat, tree, LaneOp, LANES};
use crate::par;
use ndarray::linalg::general_mat_mul;
use ndarray::{arr0, Array1, Array2, ArrayBase, ArrayView2, Axis, Data, Ix1, Ix2};

/// Fewest rows (or columns) of the output per matrix-multiply task.
const MM_BLOCK: usize = 64;

/// Most matrix-multiply tasks of one product: each task repacks the whole
/// of the other operand, so blocks are at least `len / MM_TASKS` wide (this
/// caps a product at 4-way parallelism; each block costs one repacking).
const MM_TASKS: usize = 4;

/// `acc + x · v[j]`: dot product with a fixed second operand.
struct Dot<'a, T>(&'a [T]);

impl<T: Elem> LaneOp<T> for Dot<'_, T> {
    type Acc = T;
    type P = ();
    #[inline(always)]
    fn init(&self) -> T {
        T::ZERO
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T, j: usize, _: ()) -> T {
        acc + x * self.0[j]
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        a + b
    }
    /// `fold_slice` with both operands as slices (no per-element index
    /// check): `first = 0 + x·v`, the same arithmetic as `step` from `init`.
    #[inline(always)]
    fn fold_chunk(&self, xs: &[T], base: usize, _: ()) -> T {
        let ys = &self.0[base..base + xs.len()];
        let mut acc = [T::ZERO; LANES];
        let mut body = |x: &[T], y: &[T]| {
            for l in 0..LANES {
                acc[l] = acc[l] + x[l] * y[l];
            }
        };
        let mut xi = xs.chunks_exact(LANES);
        let mut yi = ys.chunks_exact(LANES);
        for (x, y) in (&mut xi).zip(&mut yi) {
            body(x, y);
        }
        // The remainder, zero-padded to a full group: a lane accumulator is
        // never -0 (it starts at +0 and +0 + -0 = +0), so adding the padding's
        // 0·0 = +0 leaves every lane bit-identical to `fold_slice`.
        let (xr, yr) = (xi.remainder(), yi.remainder());
        if !xr.is_empty() {
            let mut xp = [T::ZERO; LANES];
            let mut yp = [T::ZERO; LANES];
            xp[..xr.len()].copy_from_slice(xr);
            yp[..yr.len()].copy_from_slice(yr);
            body(&xp, &yp);
        }
        tree(self, acc)
    }
}

fn contiguous<T: Elem, S: Data<Elem = T>>(v: &ArrayBase<S, Ix1>) -> std::borrow::Cow<'_, [T]> {
    match v.as_slice() {
        Some(s) => s.into(),
        None => v.to_vec().into(),
    }
}

/// Vector dot product `uᵀv = Σᵢ u[i]·v[i]`.
#[track_caller]
pub fn dot<T, S1, S2>(u: &ArrayBase<S1, Ix1>, v: &ArrayBase<S2, Ix1>) -> T
where
    T: Elem,
    S1: Data<Elem = T>,
    S2: Data<Elem = T>,
{
    check::same_shape("dot", u.shape(), v.shape());
    let v = contiguous(v);
    reduce_flat(&Dot(&v), u, ())
}

/// Matrix-vector product `(A v)[i] = Σⱼ A[i, j]·v[j]`.
#[track_caller]
pub fn matvec<T, SA, SV>(a: &ArrayBase<SA, Ix2>, v: &ArrayBase<SV, Ix1>) -> Array1<T>
where
    T: Elem,
    SA: Data<Elem = T>,
    SV: Data<Elem = T>,
{
    dot_along("matvec", a, v, 1)
}

/// Transposed matrix-vector product `(Aᵀ v)[j] = Σᵢ A[i, j]·v[i]`, without
/// forming `Aᵀ`.
#[track_caller]
pub fn matvec_t<T, SA, SV>(a: &ArrayBase<SA, Ix2>, v: &ArrayBase<SV, Ix1>) -> Array1<T>
where
    T: Elem,
    SA: Data<Elem = T>,
    SV: Data<Elem = T>,
{
    dot_along("matvec_t", a, v, 0)
}

/// `out[k] = Σ_l A[.., ..]·v[l]` with `l` running along `axis` of `A` (1:
/// `A v`, 0: `Aᵀ v`), by the fixed-order dot reduction; `kernel` names the
/// public kernel in the shape-mismatch panic.
#[track_caller]
fn dot_along<T, SA, SV>(
    kernel: &str,
    a: &ArrayBase<SA, Ix2>,
    v: &ArrayBase<SV, Ix1>,
    axis: usize,
) -> Array1<T>
where
    T: Elem,
    SA: Data<Elem = T>,
    SV: Data<Elem = T>,
{
    if a.shape()[axis] != v.len() {
        panic!(
            "ad_runtime::{kernel}: shape mismatch: {:?} vs {:?}",
            a.shape(),
            v.shape()
        );
    }
    let v = contiguous(v);
    let unit = arr0(());
    reduce_axis(
        &Dot(&v),
        a,
        axis,
        unit.broadcast(a.shape()[1 - axis]).expect("0-d broadcasts"),
    )
}

/// Row vector times matrix `(vᵀ A)[j] = Σᵢ v[i]·A[i, j]` (the same numbers
/// as [`matvec_t`]).
#[track_caller]
pub fn vecmat<T, SV, SA>(v: &ArrayBase<SV, Ix1>, a: &ArrayBase<SA, Ix2>) -> Array1<T>
where
    T: Elem,
    SV: Data<Elem = T>,
    SA: Data<Elem = T>,
{
    if a.nrows() != v.len() {
        panic!(
            "ad_runtime::vecmat: shape mismatch: {:?} vs {:?}",
            v.shape(),
            a.shape()
        );
    }
    matvec_t(a, v)
}

/// Matrix product `C = A B`, `C[i, j] = Σₖ A[i, k]·B[k, j]`.
#[track_caller]
pub fn matmul<T, SA, SB>(a: &ArrayBase<SA, Ix2>, b: &ArrayBase<SB, Ix2>) -> Array2<T>
where
    T: Elem,
    SA: Data<Elem = T>,
    SB: Data<Elem = T>,
{
    gemm("matmul", a.view(), b.view())
}

/// `C = Aᵀ B`, `C[i, j] = Σₖ A[k, i]·B[k, j]`, reading `A` through a
/// transposed view.
#[track_caller]
pub fn matmul_tn<T, SA, SB>(a: &ArrayBase<SA, Ix2>, b: &ArrayBase<SB, Ix2>) -> Array2<T>
where
    T: Elem,
    SA: Data<Elem = T>,
    SB: Data<Elem = T>,
{
    gemm("matmul_tn", a.t(), b.view())
}

/// `C = A Bᵀ`, `C[i, j] = Σₖ A[i, k]·B[j, k]`, reading `B` through a
/// transposed view.
#[track_caller]
pub fn matmul_nt<T, SA, SB>(a: &ArrayBase<SA, Ix2>, b: &ArrayBase<SB, Ix2>) -> Array2<T>
where
    T: Elem,
    SA: Data<Elem = T>,
    SB: Data<Elem = T>,
{
    gemm("matmul_nt", a.view(), b.t())
}

#[track_caller]
fn gemm<T: Elem>(kernel: &str, a: ArrayView2<'_, T>, b: ArrayView2<'_, T>) -> Array2<T> {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    if k != k2 {
        panic!(
            "ad_runtime::{kernel}: shape mismatch: {:?} vs {:?} (operands as multiplied)",
            a.shape(),
            b.shape()
        );
    }
    // With beta = 0 the product overwrites C: matrixmultiply (ndarray's
    // kernel for f32 and f64) reads no element of C then, and ndarray's
    // generic path zero-fills C first. No product (k = 0) gives zeros.
    let buf = if k == 0 {
        crate::scratch::output_filled(m * n, T::ZERO)
    } else {
        crate::scratch::output_for_overwrite(m * n, T::ZERO)
    };
    let mut c = Array2::from_shape_vec((m, n), buf).expect("row-major shape");
    if m == 0 || n == 0 || k == 0 {
        return c;
    }
    let parallel = par::go_parallel((m * n).saturating_mul(k) / 8);
    let mm = |a: ArrayView2<'_, T>, b: ArrayView2<'_, T>, mut c: ndarray::ArrayViewMut2<'_, T>| {
        general_mat_mul(T::ONE, &a, &b, T::ZERO, &mut c)
    };
    let rows = m >= n;
    let ax = if rows { Axis(0) } else { Axis(1) };
    let blk = MM_BLOCK.max(m.max(n).div_ceil(MM_TASKS));
    let c_blocks = c.axis_chunks_iter_mut(ax, blk);
    if rows {
        let items = c_blocks.zip(a.axis_chunks_iter(Axis(0), blk)).collect();
        par::for_each_item(items, parallel, |(c, a)| mm(a, b, c));
    } else {
        let items = c_blocks.zip(b.axis_chunks_iter(Axis(1), blk)).collect();
        par::for_each_item(items, parallel, |(c, b)| mm(a, b, c));
    }
    c
}

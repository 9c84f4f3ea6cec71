//! Helpers for checking derivatives: finite differences, tolerant comparison,
//! a seeded random generator, flattening of `f64` / arrays / tuples, and
//! [`check_derivatives`], which verifies a function's `f_jvp` and `f_vjp`
//! companions.
//!
//! ```
//! use linad::ndarray::{array, Array1};
//! use linad::testing::check_derivatives;
//!
//! // f(x, w) = x * sum(w), with derivatives written by hand.
//! fn f(x: f64, w: &Array1<f64>) -> f64 { x * w.sum() }
//! fn f_jvp(x: f64, w: &Array1<f64>, dx: f64, dw: &Array1<f64>) -> (f64, f64) {
//!     (f(x, w), dx * w.sum() + x * dw.sum())
//! }
//! fn f_vjp(x: f64, w: &Array1<f64>, ct: f64) -> (f64, (f64, Array1<f64>)) {
//!     (f(x, w), (ct * w.sum(), Array1::from_elem(w.len(), ct * x)))
//! }
//!
//! let report = check_derivatives(
//!     &(0.5, array![1.0, 2.0, 3.0]),
//!     |(x, w)| f(*x, w),
//!     |(x, w), (dx, dw)| f_jvp(*x, w, *dx, dw),
//!     |(x, w), ct| f_vjp(*x, w, *ct),
//! );
//! assert!(report.fd_max_err < 1e-6);
//! ```
//!
//! The three properties checked, for an input `x`, random tangents `u` and
//! random cotangents `w` (shaped like the inputs and the output):
//! 1. *forward mode*: the tangent of `f_jvp(x, u)` matches the central finite
//!    difference `(f(x + h u) - f(x - h u)) / 2h` component by component;
//! 2. *reverse mode*: `<w, jvp(x, u)> = <vjp(x, w), u>` (the dot-product
//!    identity, which holds exactly up to rounding when `f_vjp` is the
//!    transpose of `f_jvp`);
//! 3. *primal*: `f(x)`, the primal result of `f_jvp` and that of `f_vjp` are
//!    identical bit for bit (same shapes, same bits).

use ndarray::{Array, ArrayBase, Data, Dimension};

// ---------------------------------------------------------------------------
// Flattening
// ---------------------------------------------------------------------------

/// A value made of `f64` leaves (a scalar, an array, a tuple of those) seen as
/// a flat vector, in a fixed order: tuple fields in order, array elements in
/// logical row-major order.
pub trait Flatten {
    /// Appends the leaves to `out`.
    fn flatten_into(&self, out: &mut Vec<f64>);

    /// Appends the shape of every leaf to `out` (`[]` for a scalar, the array's
    /// shape for an array), in the order of [`Flatten::flatten_into`].
    fn shapes_into(&self, out: &mut Vec<Vec<usize>>);

    /// The leaves as a vector.
    fn flatten(&self) -> Vec<f64> {
        let mut out = Vec::new();
        self.flatten_into(&mut out);
        out
    }

    /// The shapes of the leaves.
    fn shapes(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        self.shapes_into(&mut out);
        out
    }
}

/// A [`Flatten`] value that can be rebuilt from a flat vector, taking its own
/// shape as the template (owned arrays, `f64`, tuples of those).
pub trait Unflatten: Flatten + Sized {
    /// A value shaped like `self` whose leaves are taken, in order, from `data`.
    ///
    /// # Panics
    /// When `data` runs out.
    fn unflatten_from(&self, data: &mut std::slice::Iter<'_, f64>) -> Self;

    /// A value shaped like `self` with the leaves `data`.
    ///
    /// # Panics
    /// When `data.len()` is not the number of leaves of `self`.
    fn unflatten_like(&self, data: &[f64]) -> Self {
        let mut it = data.iter();
        let v = self.unflatten_from(&mut it);
        assert!(
            it.next().is_none(),
            "unflatten_like: {} values given for a value with fewer leaves",
            data.len()
        );
        v
    }

    /// `self + s * dir`, leaf by leaf.
    fn add_scaled(&self, s: f64, dir: &Self) -> Self {
        let a = self.flatten();
        let b = dir.flatten();
        assert_eq!(a.len(), b.len(), "add_scaled: different numbers of leaves");
        let c: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x + s * y).collect();
        self.unflatten_like(&c)
    }
}

fn next_leaf(data: &mut std::slice::Iter<'_, f64>) -> f64 {
    *data
        .next()
        .expect("unflatten: not enough values for the template's leaves")
}

impl Flatten for f64 {
    fn flatten_into(&self, out: &mut Vec<f64>) {
        out.push(*self);
    }
    fn shapes_into(&self, out: &mut Vec<Vec<usize>>) {
        out.push(Vec::new());
    }
}

impl Unflatten for f64 {
    fn unflatten_from(&self, data: &mut std::slice::Iter<'_, f64>) -> Self {
        next_leaf(data)
    }
}

impl<S, D> Flatten for ArrayBase<S, D>
where
    S: Data<Elem = f64>,
    D: Dimension,
{
    fn flatten_into(&self, out: &mut Vec<f64>) {
        out.extend(self.iter().copied());
    }
    fn shapes_into(&self, out: &mut Vec<Vec<usize>>) {
        out.push(self.shape().to_vec());
    }
}

impl<D: Dimension> Unflatten for Array<f64, D> {
    /// In logical (row-major) order, as [`Flatten`] lists the elements,
    /// keeping `self`'s memory layout (ndarray's `map` would visit a
    /// column-major array in memory order and transpose the data).
    fn unflatten_from(&self, data: &mut std::slice::Iter<'_, f64>) -> Self {
        let mut out = self.clone();
        for x in out.iter_mut() {
            *x = next_leaf(data);
        }
        out
    }
}

impl<T: Flatten + ?Sized> Flatten for &T {
    fn flatten_into(&self, out: &mut Vec<f64>) {
        (**self).flatten_into(out);
    }
    fn shapes_into(&self, out: &mut Vec<Vec<usize>>) {
        (**self).shapes_into(out);
    }
}

impl Flatten for () {
    fn flatten_into(&self, _: &mut Vec<f64>) {}
    fn shapes_into(&self, _: &mut Vec<Vec<usize>>) {}
}

impl Unflatten for () {
    fn unflatten_from(&self, _: &mut std::slice::Iter<'_, f64>) -> Self {}
}

macro_rules! tuple_impls {
    ($($name:ident . $idx:tt),+) => {
        impl<$($name: Flatten),+> Flatten for ($($name,)+) {
            fn flatten_into(&self, out: &mut Vec<f64>) {
                $(self.$idx.flatten_into(out);)+
            }
            fn shapes_into(&self, out: &mut Vec<Vec<usize>>) {
                $(self.$idx.shapes_into(out);)+
            }
        }
        impl<$($name: Unflatten),+> Unflatten for ($($name,)+) {
            fn unflatten_from(&self, data: &mut std::slice::Iter<'_, f64>) -> Self {
                ($(self.$idx.unflatten_from(data),)+)
            }
        }
    };
}

tuple_impls!(A.0);
tuple_impls!(A.0, B.1);
tuple_impls!(A.0, B.1, C.2);
tuple_impls!(A.0, B.1, C.2, E.3);

// ---------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------

/// `sum a[i] * b[i]`.
///
/// # Panics
/// When the lengths differ.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "dot: lengths differ");
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The relative error `|a - b| / max(|a|, |b|, floor)`: relative for values
/// above `floor`, absolute (scaled by `floor`) below it. Two NaNs, or two
/// equal infinities, have error 0; otherwise a NaN gives `f64::INFINITY`.
pub fn rel_error(a: f64, b: f64, floor: f64) -> f64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0.0;
    }
    let e = (a - b).abs() / a.abs().max(b.abs()).max(floor);
    if e.is_nan() {
        f64::INFINITY
    } else {
        e
    }
}

/// Asserts `|a - b| <= rel_tol * max(|a|, |b|, 1)`.
///
/// # Panics
/// With both values and the error when they are not close.
#[track_caller]
pub fn assert_close(a: f64, b: f64, rel_tol: f64) {
    let e = rel_error(a, b, 1.0);
    assert!(
        e <= rel_tol,
        "assert_close: {a:e} and {b:e} differ by {:e} (relative error {e:e} > {rel_tol:e})",
        (a - b).abs()
    );
}

/// Asserts two slices are element-wise close (see [`assert_close`]).
///
/// # Panics
/// When the lengths differ or an element pair is not close.
#[track_caller]
pub fn assert_all_close(a: &[f64], b: &[f64], rel_tol: f64) {
    assert_eq!(a.len(), b.len(), "assert_all_close: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let e = rel_error(*x, *y, 1.0);
        assert!(
            e <= rel_tol,
            "assert_all_close: element {i}: {x:e} and {y:e} (relative error {e:e} > {rel_tol:e})"
        );
    }
}

/// The gradient of a scalar function of a flat vector by central
/// differences, `(f(x + h e_i) - f(x - h e_i)) / 2h` for every `i`.
pub fn central_difference(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            xp[i] = x[i] + h;
            let fp = f(&xp);
            xp[i] = x[i] - h;
            let fm = f(&xp);
            xp[i] = x[i];
            (fp - fm) / (2.0 * h)
        })
        .collect()
}

/// The directional derivative of `f` at `x` along `u` by central
/// differences, flattened: `(f(x + h u) - f(x - h u)) / 2h`.
pub fn directional_difference<P, Y>(f: impl Fn(&P) -> Y, x: &P, u: &P, h: f64) -> Vec<f64>
where
    P: Unflatten,
    Y: Flatten,
{
    let fp = f(&x.add_scaled(h, u)).flatten();
    let fm = f(&x.add_scaled(-h, u)).flatten();
    fp.iter()
        .zip(&fm)
        .map(|(a, b)| (a - b) / (2.0 * h))
        .collect()
}

// ---------------------------------------------------------------------------
// Random numbers
// ---------------------------------------------------------------------------

/// A small seeded random generator (SplitMix64): deterministic test inputs
/// and directions.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator with the given seed.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform in `[0, n)`.
    ///
    /// # Panics
    /// When `n == 0`.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below(0)");
        (self.next_u64() % n as u64) as usize
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// `n` values uniform in `[lo, hi)`.
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.range(lo, hi)).collect()
    }

    /// A vector of length `n`, uniform in `[lo, hi)`.
    pub fn array1(&mut self, n: usize, lo: f64, hi: f64) -> ndarray::Array1<f64> {
        ndarray::Array1::from_shape_simple_fn(n, || self.range(lo, hi))
    }

    /// A `r x c` matrix, uniform in `[lo, hi)`.
    pub fn array2(&mut self, r: usize, c: usize, lo: f64, hi: f64) -> ndarray::Array2<f64> {
        ndarray::Array2::from_shape_simple_fn((r, c), || self.range(lo, hi))
    }

    /// A `a x b x c` array, uniform in `[lo, hi)`.
    pub fn array3(
        &mut self,
        a: usize,
        b: usize,
        c: usize,
        lo: f64,
        hi: f64,
    ) -> ndarray::Array3<f64> {
        ndarray::Array3::from_shape_simple_fn((a, b, c), || self.range(lo, hi))
    }

    /// A value shaped like `v` with every leaf uniform in `[-1, 1)`.
    pub fn like<P: Unflatten>(&mut self, v: &P) -> P {
        let n = v.flatten().len();
        let data = self.vec(n, -1.0, 1.0);
        v.unflatten_like(&data)
    }
}

// ---------------------------------------------------------------------------
// Checking derivatives
// ---------------------------------------------------------------------------

/// Options of [`check_derivatives_with`].
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Step of the central differences.
    pub h: f64,
    /// Largest accepted `|jvp - fd| / max(|jvp|, |fd|, 1)` per component.
    pub fd_rel_tol: f64,
    /// Largest accepted `|<w, jvp u> - <vjp w, u>| / max(S, tiny)` where `S` is
    /// the larger of the sums of absolute products of the two sides.
    pub dot_rel_tol: f64,
    /// Number of random tangent / cotangent pairs.
    pub directions: usize,
    /// Seed of the random directions.
    pub seed: u64,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            h: 1e-6,
            fd_rel_tol: 1e-6,
            dot_rel_tol: 1e-9,
            directions: 3,
            seed: 0x5EED,
        }
    }
}

/// What [`check_derivatives`] measured (it panics on a failure, so a returned
/// report passed).
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Largest per-component relative error of the jvp tangent against finite
    /// differences.
    pub fd_max_err: f64,
    /// Largest relative error of the dot-product identity.
    pub dot_max_err: f64,
    /// Number of input leaves (differentiated inputs, flattened).
    pub n_inputs: usize,
    /// Number of output leaves.
    pub n_outputs: usize,
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Checks `jvp` and `vjp` against `f` at `x` with default options (see the
/// module docs for the three properties).
///
/// `x` holds the differentiated inputs (a bare value or a tuple, owned arrays);
/// `f(x)` computes the output; `jvp(x, u)` returns `(f(x), tangent)`;
/// `vjp(x, w)` returns `(f(x), cotangent of x)` with the shape of `x`.
///
/// # Panics
/// With a message naming the failed property and the values involved.
#[track_caller]
pub fn check_derivatives<P, Y>(
    x: &P,
    f: impl Fn(&P) -> Y,
    jvp: impl Fn(&P, &P) -> (Y, Y),
    vjp: impl Fn(&P, &Y) -> (Y, P),
) -> CheckReport
where
    P: Unflatten,
    Y: Unflatten,
{
    check_derivatives_with(&CheckOptions::default(), x, f, jvp, vjp)
}

/// [`check_derivatives`] with explicit options.
///
/// # Panics
/// With a message naming the failed property and the values involved.
#[track_caller]
pub fn check_derivatives_with<P, Y>(
    opts: &CheckOptions,
    x: &P,
    f: impl Fn(&P) -> Y,
    jvp: impl Fn(&P, &P) -> (Y, Y),
    vjp: impl Fn(&P, &Y) -> (Y, P),
) -> CheckReport
where
    P: Unflatten,
    Y: Unflatten,
{
    let mut rng = Rng::new(opts.seed);
    let y = f(x);
    let y_flat = y.flatten();
    let y_shapes = y.shapes();
    let x_shapes = x.shapes();
    let mut report = CheckReport {
        n_inputs: x.flatten().len(),
        n_outputs: y_flat.len(),
        ..CheckReport::default()
    };
    for k in 0..opts.directions {
        let u = rng.like(x);
        let w = rng.like(&y);

        // Forward mode: primal and tangent.
        let (y_j, t) = jvp(x, &u);
        assert!(
            same_bits(&y_j.flatten(), &y_flat) && y_j.shapes() == y_shapes,
            "primal of f_jvp differs from f: f = {:?}, f_jvp.0 = {:?}",
            y_flat,
            y_j.flatten()
        );
        assert_eq!(
            t.shapes(),
            y_shapes,
            "the tangent output of f_jvp is not shaped like the output"
        );
        let t_flat = t.flatten();
        let fd = directional_difference(&f, x, &u, opts.h);
        for (i, (a, b)) in t_flat.iter().zip(&fd).enumerate() {
            let e = rel_error(*a, *b, 1.0);
            assert!(
                e <= opts.fd_rel_tol,
                "f_jvp disagrees with finite differences (direction {k}, output component {i}): \
                 jvp {a:e}, fd {b:e}, relative error {e:e} > {:e}\n  jvp = {t_flat:?}\n  fd  = {fd:?}",
                opts.fd_rel_tol
            );
            report.fd_max_err = report.fd_max_err.max(e);
        }

        // Reverse mode: primal and the dot-product identity.
        let (y_v, ct) = vjp(x, &w);
        assert!(
            same_bits(&y_v.flatten(), &y_flat) && y_v.shapes() == y_shapes,
            "primal of f_vjp differs from f: f = {:?}, f_vjp.0 = {:?}",
            y_flat,
            y_v.flatten()
        );
        assert_eq!(
            ct.shapes(),
            x_shapes,
            "the cotangent of f_vjp is not shaped like the differentiated inputs"
        );
        let w_flat = w.flatten();
        let u_flat = u.flatten();
        let ct_flat = ct.flatten();
        let lhs = dot(&w_flat, &t_flat);
        let rhs = dot(&ct_flat, &u_flat);
        let scale_l: f64 = w_flat.iter().zip(&t_flat).map(|(a, b)| (a * b).abs()).sum();
        let scale_r: f64 = ct_flat
            .iter()
            .zip(&u_flat)
            .map(|(a, b)| (a * b).abs())
            .sum();
        let scale = scale_l.max(scale_r).max(1e-300);
        let e = if lhs == rhs {
            0.0
        } else {
            (lhs - rhs).abs() / scale
        };
        assert!(
            e <= opts.dot_rel_tol,
            "f_vjp is not the transpose of f_jvp (direction {k}): <w, jvp(u)> = {lhs:e}, \
             <vjp(w), u> = {rhs:e}, relative error {e:e} > {:e}\n  jvp(u) = {t_flat:?}\n  vjp(w) = {ct_flat:?}",
            opts.dot_rel_tol
        );
        report.dot_max_err = report.dot_max_err.max(e);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1, Array2};

    #[test]
    fn flatten_roundtrip() {
        let v = (1.0, array![[1.0, 2.0], [3.0, 4.0]], (5.0, 6.0));
        assert_eq!(v.flatten(), vec![1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(v.shapes(), vec![vec![], vec![2, 2], vec![], vec![]]);
        let w = v.unflatten_like(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(w.1, array![[1.0, 2.0], [3.0, 4.0]]);
        assert_eq!((w.2).1, 6.0);
        assert_eq!(
            array![[1.0, 2.0], [3.0, 4.0]].t().flatten(),
            vec![1.0, 3.0, 2.0, 4.0]
        );
    }

    /// A column-major array unflattens in logical order, as it flattens
    /// (perturbations of column-major inputs were transposed before).
    #[test]
    fn column_major_arrays_roundtrip_in_logical_order() {
        let c = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let f = c.t().as_standard_layout().into_owned().reversed_axes();
        assert!(!f.is_standard_layout());
        assert_eq!(f, c);
        let back = f.unflatten_like(&f.flatten());
        assert_eq!(back, c);
    }

    #[test]
    fn central_difference_of_a_quadratic() {
        let g = central_difference(|x| x[0] * x[0] + 3.0 * x[1], &[2.0, 1.0], 1e-6);
        assert_all_close(&g, &[4.0, 3.0], 1e-8);
    }

    #[test]
    fn hand_written_derivatives_pass() {
        fn f(a: &Array2<f64>, v: &Array1<f64>) -> (Array1<f64>, f64) {
            let y = a.dot(v);
            let s = y.sum();
            (y, s)
        }
        let mut rng = Rng::new(1);
        let x = (rng.array2(3, 4, -1.0, 1.0), rng.array1(4, -1.0, 1.0));
        let r = check_derivatives(
            &x,
            |(a, v)| f(a, v),
            |(a, v), (da, dv)| {
                let dy = da.dot(v) + a.dot(dv);
                let ds = dy.sum();
                (f(a, v), (dy, ds))
            },
            |(a, v), (wy, ws)| {
                let g = wy + *ws;
                let ga = Array2::from_shape_fn(a.dim(), |(i, j)| g[i] * v[j]);
                let gv = a.t().dot(&g);
                (f(a, v), (ga, gv))
            },
        );
        assert!(r.fd_max_err < 1e-8 && r.dot_max_err < 1e-12, "{r:?}");
    }

    #[test]
    #[should_panic(expected = "not the transpose")]
    fn wrong_vjp_fails() {
        check_derivatives(
            &(1.0, 2.0),
            |(a, b)| a * b,
            |(a, b), (da, db)| (a * b, da * b + a * db),
            |(a, b), w| (a * b, (w * b, w * b)),
        );
    }

    #[test]
    #[should_panic(expected = "finite differences")]
    fn wrong_jvp_fails() {
        check_derivatives(
            &0.3,
            |x| x.sin(),
            |x, dx| (x.sin(), dx * x.sin()),
            |x, w| (x.sin(), w * x.sin()),
        );
    }

    #[test]
    #[should_panic(expected = "primal of f_vjp")]
    fn wrong_primal_fails() {
        check_derivatives(
            &0.3,
            |x| x.sin(),
            |x, dx| (x.sin(), dx * x.cos()),
            |x, w| (x.sin() + 1e-16, w * x.cos()),
        );
    }
}

//! Every form a `#[linear]` body (or a rule's tangent part) accepts compiles
//! without warnings or missing docs, and the transposes satisfy
//! <ct, f(x)> = <f_transpose(ct), x>.
#![deny(warnings, missing_docs, unused, clippy::all)]

/// Linear functions, public so `missing_docs` applies to what is generated.
pub mod forms {
    use linad::ndarray::{Array1, Array2};
    use linad::{custom_jvp, linear};

    /// `+`, `-`, negation, scaling by and division by non-linear values.
    #[linear(x, y)]
    pub fn arithmetic(a: f64, x: f64, y: f64) -> f64 {
        -(a * x) + y / a - x * 2.0
    }

    /// Indexing, a gather through indices, a sum.
    #[linear(x)]
    pub fn gather_sum(idx: &Array1<usize>, w: &Array1<f64>, x: &Array1<f64>) -> f64 {
        let wx = w * x;
        let mut s = 0.0;
        for i in 0..idx.len() {
            s += wx[idx[i]];
        }
        s + x[0]
    }

    /// `dot` with a non-linear side, on either side.
    #[linear(x)]
    pub fn dots(a: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
        let y = a.dot(x);
        let z = y.dot(a);
        a.dot(&z)
    }

    /// `from_shape_fn` and `mapv` that stay linear, the literal zero.
    #[linear(x)]
    pub fn builds(h: f64, x: &Array1<f64>) -> Array1<f64> {
        let d = Array1::from_shape_fn(x.len(), |i| if i == 0 { 0.0 } else { x[i] - x[i - 1] });
        d.mapv(|v| v / h)
    }

    /// A loop accumulating linear values from a zero, an `if` on a constant.
    #[linear(x)]
    pub fn accumulate(flip: bool, w: &Array1<f64>, x: &Array1<f64>) -> f64 {
        let mut acc = 0.0;
        for i in 0..w.len() {
            acc += w[i] * x[i];
        }
        if flip {
            -acc
        } else {
            acc
        }
    }

    /// Calls of other linear functions in their linear slots; a zeros array.
    #[linear(x)]
    pub fn calls(a: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
        let z: Array1<f64> = Array1::zeros(a.nrows());
        let y = a.dot(x);
        let d: Array1<f64> = dots(a, x);
        &d + &z - &y
    }

    /// The function of a rule.
    pub fn cube(x: f64) -> f64 {
        x * x * x
    }

    /// A rule whose tangent part is linear.
    #[custom_jvp(cube)]
    pub fn cube_rule(x: f64, d_x: f64) -> (f64, f64) {
        (cube(x), 3.0 * x * x * d_x)
    }
}

fn main() {
    use forms::*;
    use linad::ndarray::{array, Array1};
    let close = |a: f64, b: f64| assert!((a - b).abs() <= 1e-12 * (1.0 + a.abs()), "{a} vs {b}");
    let (gx, gy) = arithmetic_transpose(1.5, 2.0);
    close(2.0 * arithmetic(1.5, 0.3, -0.7), gx * 0.3 - gy * 0.7);

    let idx = Array1::from(vec![2usize, 0, 2]);
    let w = array![0.5, -1.0, 2.0];
    let x = array![0.3, 0.1, -0.4];
    close(1.7 * gather_sum(&idx, &w, &x), (gather_sum_transpose(&idx, &w, 1.7) * &x).sum());

    let a = array![[1.0, 2.0, 0.0], [0.5, -1.0, 3.0]];
    let ct = array![0.2, -0.6];
    close((&ct * &dots(&a, &x)).sum(), (dots_transpose(&a, &ct) * &x).sum());
    close((&ct * &calls(&a, &x)).sum(), (calls_transpose(&a, &ct) * &x).sum());

    let ct3 = array![1.0, -2.0, 0.5];
    close((&ct3 * &builds(0.1, &x)).sum(), (builds_transpose(0.1, &ct3) * &x).sum());
    for flip in [false, true] {
        close(0.9 * accumulate(flip, &w, &x), (accumulate_transpose(flip, &w, 0.9) * &x).sum());
    }
    let (y, dy) = cube_jvp(2.0, 1.0);
    close(y, 8.0);
    close(dy, 12.0);
}

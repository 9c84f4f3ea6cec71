//! The code `#[differentiable]` generates compiles without warnings, without
//! missing docs, and works, for every kind of parameter and output.
#![deny(warnings, missing_docs, unused, clippy::all)]

/// Differentiable functions of every kind, public so `missing_docs` applies
/// to the generated companions too.
pub mod model {
    use linad::differentiable;
    use linad::ndarray::{Array1, Array2, ArrayView1};

    /// Scalars, a loop and a branch.
    #[differentiable]
    pub fn scalar(x: f64, y: f64, n: usize) -> f64 {
        let mut s = x;
        for i in 0..n {
            s = if s > y { s * 0.5 } else { s + (i as f64) * y };
        }
        s
    }

    /// Arrays of every passing kind and an array output.
    #[differentiable]
    pub fn arrays(a: &Array2<f64>, v: ArrayView1<f64>, b: Array1<f64>) -> Array1<f64> {
        a.dot(&v).mapv(|t| t.tanh()) + &b
    }

    /// A tuple parameter, a tuple output, a `wrt` subset and `dump`.
    #[differentiable(wrt(p), dump)]
    pub fn tuples(p: (f64, f64), w: &Array1<f64>, idx: &Array1<usize>) -> (f64, Array1<f64>) {
        let (a, b) = p;
        let s = w[idx[0]] * a;
        (s + b, w.mapv(|t| t * b))
    }

    /// Parameters with `#[differentiable]` methods.
    #[derive(linad::Differentiable, Clone, Debug)]
    pub struct Params {
        /// A weight.
        pub w: Array1<f64>,
        /// A scale.
        pub s: f64,
    }

    #[differentiable]
    impl Params {
        /// A method, `dump` too.
        #[differentiable(dump)]
        pub fn score(&self, x: &Array1<f64>) -> f64 {
            self.w.dot(x) * self.s + self.bias(x[0])
        }

        /// A private method it calls, used nowhere else.
        #[differentiable]
        fn bias(&self, t: f64) -> f64 {
            (t * self.s).sin()
        }
    }

    /// A call to another differentiable function.
    #[differentiable]
    pub fn caller(x: f64, y: f64) -> f64 {
        scalar(x, y, 3) * self::scalar(y, x, 2)
    }
}

fn main() {
    use linad::ndarray::{array, Array1};
    use model::*;

    let (v, d) = scalar_jvp(0.3, 0.7, 4, 1.0, 0.0);
    let (v2, (gx, _gy)) = scalar_vjp(0.3, 0.7, 4, 1.0);
    assert_eq!(v.to_bits(), v2.to_bits());
    assert!((d - gx).abs() < 1e-12);

    let a = array![[1.0, 2.0], [3.0, 4.0]];
    let x = array![0.1, 0.2];
    let b = array![0.5, -0.5];
    let (y, dy) = arrays_jvp(&a, x.view(), b.clone(), &a, x.view(), b.clone());
    let (y2, (ga, gx, gb)) = arrays_vjp(&a, x.view(), b.clone(), &Array1::ones(2));
    assert_eq!(y, y2);
    assert_eq!(dy.len(), 2);
    assert_eq!((ga.dim(), gx.len(), gb.len()), ((2, 2), 2, 2));

    let idx = array![1usize];
    let ((s, w), (ds, dw)) = tuples_jvp((1.0, 2.0), &b, &idx, (1.0, 0.0));
    let (_, gp) = tuples_vjp((1.0, 2.0), &b, &idx, (1.0, &Array1::zeros(2)));
    assert_eq!((s, ds, gp.0), (1.5, -0.5, -0.5));
    assert_eq!((w.len(), dw.len()), (2, 2));
    assert!(!tuples_linad_dump().is_empty());

    let p = Params { w: array![1.0, 2.0], s: 0.5 };
    let (m, (gm, gxm)) = p.score_vjp(&b, 1.0);
    assert_eq!(m.to_bits(), p.score(&b).to_bits());
    assert_eq!((gm.w.len(), gxm.len()), (2, 2));
    assert!(!Params::score_linad_dump().is_empty());

    let (c, _) = caller_vjp(0.3, 0.4, 1.0);
    let (c2, _) = caller_jvp(0.3, 0.4, 1.0, 1.0);
    assert_eq!(c, c2);
}

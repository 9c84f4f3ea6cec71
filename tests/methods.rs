//! `#[differentiable]` methods: an `impl` block marked `#[differentiable]`
//! whose marked methods get `f_jvp`, `f_vjp`, `f_linearize` and
//! `f_pullback` as methods (`crate::impls` in ad-macros): `&self` and
//! `self`, calls of other marked methods on `self` (differentiated
//! through), `Self`, `wrt(self)` / `wrt(x)`, associated functions, and
//! free `#[differentiable]` functions calling a method of a struct
//! parameter or of one of its struct fields.

mod common;
use common::*;
use linad::ndarray::{array, Array1, Array2};
use linad::{differentiable, Differentiable, Tangent};

/// A one-layer model with a learnt scale.
#[derive(Differentiable, Clone, Debug)]
pub struct Net {
    pub w: Array2<f64>,
    pub b: Array1<f64>,
    pub scale: f64,
    #[linad(constant)]
    pub steps: usize,
}

#[differentiable]
impl Net {
    /// The sum of the squashed outputs plus a penalty.
    #[differentiable]
    pub fn loss(&self, x: &Array1<f64>) -> f64 {
        let h = self.w.dot(x) + &self.b;
        h.mapv(f64::tanh).sum() * self.scale + self.penalty(0.5) + Self::offset(self.scale)
    }

    /// A penalty on the scale and the weights, repeated `steps` times.
    #[differentiable]
    fn penalty(&self, k: f64) -> f64 {
        let mut s = 0.0;
        for _ in 0..self.steps {
            s += k * self.scale * self.scale + (&self.w * &self.w).sum() * 0.01;
        }
        s
    }

    /// An associated function (no receiver).
    #[differentiable]
    pub fn offset(s: f64) -> f64 {
        (s * 0.3).sin()
    }

    /// By value, differentiated with respect to `x` alone.
    #[differentiable(wrt(x))]
    pub fn shifted(self, x: f64) -> f64 {
        (x - self.b[0]).powi(2) * self.scale
    }

    /// Not marked: an ordinary method.
    pub fn new(rng: &mut Rng) -> Self {
        Net {
            w: Array2::from_shape_fn((3, 2), |_| rng.normal()),
            b: Array1::from_shape_fn(3, |_| rng.normal() * 0.1),
            scale: 0.8,
            steps: 2,
        }
    }
}

fn tangent(rng: &mut Rng, p: &Net) -> NetTangent {
    let flat: Vec<f64> = (0..NetTangent::zeros_like(p).to_flat().len())
        .map(|_| rng.normal())
        .collect();
    NetTangent::from_flat(p, &flat)
}

fn moved(p: &Net, d: &NetTangent, s: f64) -> Net {
    Net {
        w: &p.w + &(&d.w * s),
        b: &p.b + &(&d.b * s),
        scale: p.scale + d.scale * s,
        steps: p.steps,
    }
}

#[test]
fn methods_in_both_modes() {
    let mut r = rng("methods_in_both_modes");
    let p = Net::new(&mut r);
    let x = array![0.4, -0.9];
    let dp = tangent(&mut r, &p);
    let dx = array![0.3, 0.2];
    let f = p.loss(&x);
    let (fj, t) = p.loss_jvp(&x, &dp, &dx);
    let (fv, (gp, gx)) = p.loss_vjp(&x, 1.0);
    assert_eq!(f.to_bits(), fj.to_bits());
    assert_eq!(f.to_bits(), fv.to_bits());
    // <ct, J d> = <J^T ct, d>, and central finite differences.
    assert_close(t, gp.dot(&dp) + gx.dot(&dx), 1e-10);
    let h = 1e-6;
    let fd = (moved(&p, &dp, h).loss(&(&x + &(&dx * h)))
        - moved(&p, &dp, -h).loss(&(&x - &(&dx * h))))
        / (2.0 * h);
    assert_close(t, fd, 1e-6);
    // linearize / pullback.
    let (fl, lin) = p.loss_linearize(&x);
    assert_eq!(f.to_bits(), fl.to_bits());
    assert_close(lin(&dp, &dx), t, 1e-12);
    let (fp, back) = p.loss_pullback(&x);
    assert_eq!(f.to_bits(), fp.to_bits());
    let (gp2, gx2) = back(2.0);
    assert_close(gp2.scale, 2.0 * gp.scale, 1e-12);
    assert_close(gx2[1], 2.0 * gx[1], 1e-12);
}

#[test]
fn called_methods_are_differentiated_through() {
    let mut r = rng("called_methods_are_differentiated_through");
    let p = Net::new(&mut r);
    // penalty = steps * (k scale^2 + 0.01 |w|^2): its scale derivative.
    let (v, (g, gk)) = p.penalty_vjp(0.5, 1.0);
    assert_eq!(v.to_bits(), p.penalty(0.5).to_bits());
    assert_close(g.scale, 2.0 * 0.5 * 2.0 * p.scale, 1e-12);
    assert_close(gk, 2.0 * p.scale * p.scale, 1e-12);
    assert_close(g.w[[1, 1]], 2.0 * 0.02 * p.w[[1, 1]], 1e-12);
    // An associated function.
    let (o, d) = Net::offset_jvp(0.7, 1.0);
    assert_eq!(o.to_bits(), Net::offset(0.7).to_bits());
    assert_close(d, 0.3 * (0.21f64).cos(), 1e-12);
}

#[test]
fn by_value_receiver_and_wrt() {
    let mut r = rng("by_value_receiver_and_wrt");
    let p = Net::new(&mut r);
    let (v, t) = p.clone().shifted_jvp(1.5, 1.0);
    assert_eq!(v.to_bits(), p.clone().shifted(1.5).to_bits());
    assert_close(t, 2.0 * (1.5 - p.b[0]) * p.scale, 1e-12);
    let (_, gx) = p.clone().shifted_vjp(1.5, 1.0);
    assert_close(gx, t, 1e-12);
}

/// A struct holding a `Net`, and free functions calling its methods.
#[derive(Differentiable, Clone, Debug)]
pub struct Pair {
    pub net: Net,
    pub bias: f64,
}

#[differentiable]
fn twice(p: &Net, x: &Array1<f64>) -> f64 {
    2.0 * p.loss(x) - p.penalty(1.0)
}

#[differentiable]
fn through_field(q: &Pair, x: &Array1<f64>) -> f64 {
    q.net.loss(x) + q.bias
}

#[test]
fn free_functions_call_methods() {
    let mut r = rng("free_functions_call_methods");
    let p = Net::new(&mut r);
    let x = array![-0.2, 0.6];
    let (v, (g, gx)) = twice_vjp(&p, &x, 1.0);
    assert_eq!(v.to_bits(), twice(&p, &x).to_bits());
    let (_, (g1, gx1)) = p.loss_vjp(&x, 1.0);
    let (_, (g2, _)) = p.penalty_vjp(1.0, 1.0);
    assert_close(g.scale, 2.0 * g1.scale - g2.scale, 1e-12);
    assert_close(gx[0], 2.0 * gx1[0], 1e-12);
    let q = Pair {
        net: p.clone(),
        bias: 0.25,
    };
    let (v, (gq, _)) = through_field_vjp(&q, &x, 1.0);
    assert_eq!(v.to_bits(), through_field(&q, &x).to_bits());
    assert_close(gq.net.scale, g1.scale, 1e-12);
    assert_close(gq.bias, 1.0, 0.0);
}

/// A method under `#[cfg]`: its derivatives exist in the same
/// configurations.
#[derive(Differentiable, Clone, Debug)]
pub struct Gated {
    pub a: f64,
}

#[differentiable]
impl Gated {
    #[cfg(not(any()))]
    #[differentiable]
    pub fn value(&self, x: f64) -> f64 {
        self.a * x * x
    }

    #[cfg(any())]
    #[differentiable]
    pub fn value(&self, x: f64) -> f64 {
        self.a * x
    }
}

#[test]
fn configured_methods() {
    let g = Gated { a: 3.0 };
    let (v, (ga, gx)) = g.value_vjp(2.0, 1.0);
    assert_eq!((v, ga.a, gx), (12.0, 4.0, 12.0));
}

/// Methods of a struct with an `f32` field, one returning a struct, called
/// by another.
#[derive(Differentiable, Clone, Debug)]
pub struct Weighted {
    pub w: Array1<f64>,
    pub k: f32,
}

/// A struct output.
#[derive(Differentiable, Clone, Debug)]
pub struct Moments {
    pub mean: f64,
    pub square: f64,
}

#[differentiable]
impl Weighted {
    #[differentiable]
    pub fn moments(&self, x: &Array1<f64>) -> Moments {
        let m = (&self.w * x).sum();
        Moments {
            mean: m,
            square: m * m,
        }
    }

    #[differentiable]
    pub fn value(&self) -> f64 {
        let s = self.moments(&self.w);
        s.mean + s.square * (self.k as f64)
    }

    /// `self` unused.
    #[differentiable]
    pub fn square(&self, x: f64) -> f64 {
        x * x
    }
}

#[test]
fn struct_outputs_and_f32_fields() {
    let p = Weighted {
        w: array![1.0, 2.0],
        k: 0.5,
    };
    let (v, g) = p.value_vjp(1.0);
    assert_eq!(v.to_bits(), p.value().to_bits());
    assert_eq!((v, g.w.to_vec(), g.k), (17.5, vec![12.0, 24.0], 25.0));
    let ct = MomentsTangent {
        mean: 1.0,
        square: 0.0,
    };
    let (m, (gw, gx)) = p.moments_vjp(&array![1.0, 1.0], &ct);
    assert_eq!((m.mean, m.square), (3.0, 9.0));
    assert_eq!(
        (gw.w.to_vec(), gx.to_vec()),
        (vec![1.0, 1.0], vec![1.0, 2.0])
    );
    let (s, (gs, gx)) = p.square_vjp(3.0, 1.0);
    assert_eq!(
        (s, gs.w.to_vec(), gs.k, gx),
        (9.0, vec![0.0, 0.0], 0.0, 6.0)
    );
}

//! A two-layer perceptron trained by gradient descent on three Gaussian
//! blobs in the plane, its gradient from linad's reverse mode. The
//! parameters are one struct deriving `linad::Differentiable`; its gradient
//! is a `ParamsTangent`, and an SGD step is `p - g * rate`. The model is
//! written the NumPy way: `x.dot(w1) + b1` (a bias row broadcast over the
//! batch), `mapv(f64::tanh)`, a numerically stable log-softmax with
//! `fold_axis` and `insert_axis` (`keepdims`), and the mean cross-entropy.
//!
//!     cargo run --release --example mlp
//!
//! It prints the loss going down and the final training accuracy, and
//! checks the gradient once against central finite differences. Then it
//! trains the same model in `f32` (`Params32`: `f32` fields, an `f32`
//! gradient and learning rate).

use linad::ndarray::{Array1, Array2, Axis};
use linad::{differentiable, Differentiable, Tangent};

/// The perceptron's parameters.
#[derive(Differentiable, Clone, Debug)]
pub struct Params {
    pub w1: Array2<f64>,
    pub b1: Array1<f64>,
    pub w2: Array2<f64>,
    pub b2: Array1<f64>,
}

/// Mean cross-entropy of a `tanh` hidden layer and a softmax output layer;
/// `y` holds one-hot labels.
#[differentiable(wrt(p))]
fn loss(p: &Params, x: &Array2<f64>, y: &Array2<f64>) -> f64 {
    let h = (x.dot(&p.w1) + &p.b1).mapv(f64::tanh);
    let z = h.dot(&p.w2) + &p.b2;
    // log-softmax, shifted by the row maxima (`keepdims` via `insert_axis`)
    let m = row_max(&z);
    let shifted = &z - &m.insert_axis(Axis(1));
    let lse = shifted.mapv(f64::exp).sum_axis(Axis(1)).mapv(f64::ln);
    let logp = &shifted - &lse.insert_axis(Axis(1));
    -(y * &logp).sum() / x.nrows() as f64
}

/// The maximum of every row: a differentiable callee, called above without
/// a type annotation (linad reads its result type from this file).
#[differentiable]
fn row_max(z: &Array2<f64>) -> Array1<f64> {
    z.fold_axis(Axis(1), f64::NEG_INFINITY, |a, b| a.max(*b))
}

/// The same parameters in `f32`.
#[derive(Differentiable, Clone, Debug)]
pub struct Params32 {
    pub w1: Array2<f32>,
    pub b1: Array1<f32>,
    pub w2: Array2<f32>,
    pub b2: Array1<f32>,
}

/// [`loss`] in `f32`: linad differentiates it through an `f64` copy and
/// rounds the gradient to the parameters' `f32`.
#[differentiable(wrt(p))]
fn loss32(p: &Params32, x: &Array2<f32>, y: &Array2<f32>) -> f32 {
    let h = (x.dot(&p.w1) + &p.b1).mapv(f32::tanh);
    let z = h.dot(&p.w2) + &p.b2;
    let m = z.fold_axis(Axis(1), f32::NEG_INFINITY, |a, b| a.max(*b));
    let shifted = &z - &m.insert_axis(Axis(1));
    let lse = shifted.mapv(f32::exp).sum_axis(Axis(1)).mapv(f32::ln);
    let logp = &shifted - &lse.insert_axis(Axis(1));
    -(y * &logp).sum() / x.nrows() as f32
}

/// A small deterministic generator (64-bit LCG), uniform in `[0, 1)`.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A standard normal sample (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-12), self.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// `n` points per class around three centres, and their one-hot labels.
fn blobs(n: usize, rng: &mut Lcg) -> (Array2<f64>, Array2<f64>, Vec<usize>) {
    let centres = [(-1.0, 0.0), (1.0, 0.5), (0.0, -1.2)];
    let mut x = Array2::zeros((3 * n, 2));
    let mut y = Array2::zeros((3 * n, 3));
    let mut labels = vec![];
    for (c, (cx, cy)) in centres.iter().enumerate() {
        for i in 0..n {
            let r = c * n + i;
            x[[r, 0]] = cx + 0.45 * rng.normal();
            x[[r, 1]] = cy + 0.45 * rng.normal();
            y[[r, c]] = 1.0;
            labels.push(c);
        }
    }
    (x, y, labels)
}

/// `p + step`: a parameter update from a tangent (every field).
fn sgd_step(p: &Params, step: ParamsTangent) -> Params {
    Params {
        w1: &p.w1 + &step.w1,
        b1: &p.b1 + &step.b1,
        w2: &p.w2 + &step.w2,
        b2: &p.b2 + &step.b2,
    }
}

/// Training accuracy: the share of points whose largest output is their class.
fn accuracy(p: &Params, x: &Array2<f64>, labels: &[usize]) -> f64 {
    let z = (x.dot(&p.w1) + &p.b1).mapv(f64::tanh).dot(&p.w2) + &p.b2;
    let hits = z
        .outer_iter()
        .zip(labels)
        .filter(|(row, &c)| {
            let best = (0..row.len()).fold(0, |b, k| if row[k] > row[b] { k } else { b });
            best == c
        })
        .count();
    hits as f64 / labels.len() as f64
}

fn main() {
    let mut rng = Lcg(7);
    let (x, y, labels) = blobs(100, &mut rng);
    let hidden = 16;
    let mut p = Params {
        w1: Array2::from_shape_fn((2, hidden), |_| 0.5 * rng.normal()),
        b1: Array1::zeros(hidden),
        w2: Array2::from_shape_fn((hidden, 3), |_| 0.5 * rng.normal()),
        b2: Array1::zeros(3),
    };

    // The gradient once against central finite differences (one weight).
    let (_, g) = loss_vjp(&p, &x, &y, 1.0);
    let h = 1e-6;
    let (mut pp, mut pm) = (p.clone(), p.clone());
    pp.w1[[1, 3]] += h;
    pm.w1[[1, 3]] -= h;
    let fd = (loss(&pp, &x, &y) - loss(&pm, &x, &y)) / (2.0 * h);
    println!(
        "d loss / d w1[1, 3]: reverse mode {:.9}, finite differences {fd:.9}",
        g.w1[[1, 3]]
    );
    assert!((g.w1[[1, 3]] - fd).abs() < 1e-6 * (1.0 + fd.abs()));
    println!(
        "{} parameters, gradient norm {:.4}",
        g.to_flat().len(),
        g.dot(&g).sqrt()
    );

    let rate = 0.5;
    let start = loss(&p, &x, &y);
    let mut last = start;
    for epoch in 0..=400 {
        let (l, g) = loss_vjp(&p, &x, &y, 1.0);
        if epoch % 50 == 0 {
            println!("epoch {epoch:3}: loss {l:.5}");
        }
        p = sgd_step(&p, g * -rate);
        last = l;
    }
    let acc = accuracy(&p, &x, &labels);
    println!(
        "loss {start:.4} -> {last:.4}, training accuracy {:.1}%",
        100.0 * acc
    );
    assert!(last < 0.5 * start, "the loss went down");

    // The same model in `f32`, from the same start.
    let (x32, y32) = (x.mapv(|v| v as f32), y.mapv(|v| v as f32));
    let mut rng = Lcg(7);
    let _ = blobs(100, &mut rng);
    let mut q = Params32 {
        w1: Array2::from_shape_fn((2, hidden), |_| 0.5 * rng.normal() as f32),
        b1: Array1::zeros(hidden),
        w2: Array2::from_shape_fn((hidden, 3), |_| 0.5 * rng.normal() as f32),
        b2: Array1::zeros(3),
    };
    let start32 = loss32(&q, &x32, &y32);
    let mut last32 = start32;
    for epoch in 0..=400 {
        let (l, g) = loss32_vjp(&q, &x32, &y32, 1.0);
        if epoch % 100 == 0 {
            println!("f32 epoch {epoch:3}: loss {l:.5}");
        }
        let step: Params32Tangent = g * -0.5f32;
        q = Params32 {
            w1: &q.w1 + &step.w1,
            b1: &q.b1 + &step.b1,
            w2: &q.w2 + &step.w2,
            b2: &q.b2 + &step.b2,
        };
        last32 = l;
    }
    println!("f32: loss {start32:.4} -> {last32:.4}");
    assert!(last32 < 0.5 * start32, "the f32 loss went down");
}

//! Linear maps and custom rules: Black-Scholes Greeks through a custom rule
//! for the normal CDF, a Jacobian one row per pullback call, and the
//! transpose of a declared-linear stencil.
//!
//!     cargo run --release --example linear_maps

use linad::ndarray::{Array1, Array2};
use linad::{custom_jvp, differentiable, linear};

/// The standard normal CDF by its erf series (any Rust: a `while` loop that
/// linad could not differentiate itself).
fn norm_cdf(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    if z.abs() > 5.0 {
        return if z > 0.0 { 1.0 } else { 0.0 };
    }
    let (mut sum, mut term, mut n) = (z, z, 0.0);
    while term.abs() > 1e-17 * sum.abs().max(1e-300) {
        n += 1.0;
        term *= -z * z / n;
        sum += term / (2.0 * n + 1.0);
    }
    0.5 + sum / std::f64::consts::PI.sqrt()
}

/// The rule linad uses for `norm_cdf`: d/dx Phi(x) = phi(x).
#[custom_jvp(norm_cdf)]
fn norm_cdf_rule(x: f64, d_x: f64) -> (f64, f64) {
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    (norm_cdf(x), pdf * d_x)
}

/// A European call option's price.
#[differentiable]
fn black_scholes(s: f64, k: f64, r: f64, sigma: f64, t: f64) -> f64 {
    let sq = t.sqrt();
    let d1 = ((s / k).ln() + (r + 0.5 * sigma * sigma) * t) / (sigma * sq);
    let d2 = d1 - sigma * sq;
    s * norm_cdf(d1) - k * (-r * t).exp() * norm_cdf(d2)
}

/// A small two-layer map, for its Jacobian.
#[differentiable]
fn layer(w: &Array2<f64>, x: &Array1<f64>) -> Array1<f64> {
    let h = w.dot(x).mapv(|v| v.tanh());
    w.dot(&h)
}

/// A second-difference stencil, declared linear in `u`.
#[linear(u)]
fn laplacian(h: f64, u: &Array1<f64>) -> Array1<f64> {
    Array1::from_shape_fn(u.len(), |i| {
        let left = if i > 0 { u[i - 1] } else { 0.0 };
        let right = if i + 1 < u.len() { u[i + 1] } else { 0.0 };
        (left - 2.0 * u[i] + right) / (h * h)
    })
}

fn main() {
    // Greeks: one reverse pass gives all five sensitivities.
    let (s, k, r, sigma, t) = (100.0, 95.0, 0.03, 0.25, 0.8);
    let (price, (delta, dk, rho, vega, theta)) = black_scholes_vjp(s, k, r, sigma, t, 1.0);
    assert_eq!(price.to_bits(), black_scholes(s, k, r, sigma, t).to_bits());
    println!("price {price:.6}");
    println!("delta {delta:.6}  vega {vega:.6}  rho {rho:.6}  d/dK {dk:.6}  d/dT {theta:.6}");
    let d1 = ((s / k).ln() + (r + 0.5 * sigma * sigma) * t) / (sigma * t.sqrt());
    println!("closed-form delta N(d1) = {:.6}", norm_cdf(d1));

    // A Jacobian, one row per call of the pullback (one forward pass in all).
    let w = Array2::from_shape_fn((3, 3), |(i, j)| {
        0.3 * (i as f64) - 0.2 * (j as f64) + 0.1 * ((i * j) as f64).cos()
    });
    let x = Array1::from(vec![0.5, -1.0, 0.25]);
    let (y, pullback) = layer_pullback(&w, &x);
    assert_eq!(y, layer(&w, &x));
    println!("layer(x) = {y:.4}");
    for i in 0..y.len() {
        let mut e = Array1::zeros(y.len());
        e[i] = 1.0;
        let (_, row) = pullback(&e);
        println!("  d y[{i}] / dx = {row:.4}");
    }

    // The transpose of a linear stencil (symmetric: it equals the stencil).
    let u = Array1::from(vec![1.0, 4.0, 9.0, 16.0, 25.0]);
    let lu = laplacian(1.0, &u);
    let lt = laplacian_transpose(1.0, &u);
    println!("laplacian(u) = {lu}, laplacian_transpose(u) = {lt}");
}

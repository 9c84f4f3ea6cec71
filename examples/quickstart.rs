//! The README's first example: a small function, its value, its
//! forward-mode derivative (`f_jvp`) and its reverse-mode gradient (`f_vjp`).
//!
//! ```text
//! cargo run --example quickstart
//! ```

use linad::differentiable;
use linad::ndarray::{array, Array1};

/// A weighted soft-plus loss: `sum_i w_i ln(1 + exp(x * v_i))`, scaled by `x^2`.
#[differentiable]
fn loss(x: f64, v: &Array1<f64>, w: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += w[i] * (x * v[i]).exp().ln_1p();
    }
    s * x * x
}

fn main() {
    let x = 0.5;
    let v = array![1.0, -2.0, 3.0];
    let w = array![0.2, 0.3, 0.5];

    // The function itself is unchanged.
    let y = loss(x, &v, &w);
    println!("loss(x, v, w)            = {y:.6}");

    // Forward mode: one tangent per differentiable parameter, after the
    // primal parameters; returns (value, directional derivative).
    let dv = Array1::zeros(3);
    let dw = Array1::zeros(3);
    let (y1, dy_dx) = loss_jvp(x, &v, &w, 1.0, &dv, &dw);
    println!("loss_jvp(.., dx = 1)     = ({y1:.6}, {dy_dx:.6})   // d loss / dx");

    // Reverse mode: one cotangent of the output; returns (value, gradients
    // of the differentiable parameters, in order).
    let (y2, (gx, gv, gw)) = loss_vjp(x, &v, &w, 1.0);
    println!("loss_vjp(.., ct = 1)     = {y2:.6}");
    println!("  d loss / dx = {gx:.6}");
    println!("  d loss / dv = {gv:.6}");
    println!("  d loss / dw = {gw:.6}");

    assert_eq!(y.to_bits(), y1.to_bits());
    assert_eq!(y.to_bits(), y2.to_bits());
    assert!((dy_dx - gx).abs() <= 1e-12 * gx.abs().max(1.0));
}

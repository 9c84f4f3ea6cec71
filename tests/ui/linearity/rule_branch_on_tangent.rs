#![allow(unused_imports)]
use linad::custom_jvp;
use linad::ndarray::Array1;

fn g(x: f64) -> f64 {
    x.abs()
}

#[custom_jvp(g)]
fn g_rule(x: f64, d_x: f64) -> (f64, f64) {
    let t = if d_x > 0.0 { d_x } else { -d_x };
    (g(x), t)
}

fn main() {}

#![allow(unused_imports)]
use linad::custom_jvp;
use linad::ndarray::Array1;

#[custom_jvp]
fn g_rule(x: f64, d_x: f64) -> (f64, f64) {
    (x, d_x)
}

fn main() {}

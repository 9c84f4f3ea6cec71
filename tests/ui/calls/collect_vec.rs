use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let w: Vec<f64> = v.iter().map(|x| x * 2.0).collect();
    w[0]
}

fn main() {}

use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let it = v.iter().map(|x| x * 2.0);
    it.sum::<f64>()
}

fn main() {}

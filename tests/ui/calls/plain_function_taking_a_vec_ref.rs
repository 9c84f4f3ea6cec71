use linad::differentiable;

fn total(v: &Vec<f64>) -> f64 {
    v.iter().sum()
}

#[differentiable]
fn f(x: f64) -> f64 {
    let c = vec![1.0, 2.0];
    x * total(&c)
}

fn main() {}

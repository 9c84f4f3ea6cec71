use linad::differentiable;

#[differentiable]
fn f(v: [[f64; 3]; 2]) -> f64 {
    v[0][1]
}

fn main() {}

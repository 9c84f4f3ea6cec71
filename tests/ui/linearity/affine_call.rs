use linad::linear;

#[linear(x, y)]
fn mix(x: f64, y: f64) -> f64 {
    x + 2.0 * y
}

// `mix(x, 1.0) = mix(x, 0.0) + mix(0.0, 1.0)`: affine in `x`, not linear.
#[linear(x)]
fn f(x: f64) -> f64 {
    mix(x, 1.0)
}

fn main() {}

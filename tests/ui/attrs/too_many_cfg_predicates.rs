use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    #[cfg(feature = "a")]
    { y = y * 2.0; }
    #[cfg(feature = "b")]
    { y = y * 3.0; }
    #[cfg(feature = "c")]
    { y = y * 5.0; }
    #[cfg(feature = "d")]
    { y = y * 7.0; }
    #[cfg(feature = "e")]
    { y = y * 11.0; }
    y
}

fn main() {}

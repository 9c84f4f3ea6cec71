//! The GMM example's objective (`examples/gmm.rs`) through linad: checked
//! against the hand-written gradient on the bundled ADBench inputs, and with
//! the generic checker on a small random instance.
#![allow(clippy::redundant_closure)]

#[path = "../examples/gmm.rs"]
#[allow(dead_code)]
mod gmm;

mod common;
use common::*;
use gmm::{gmm_objective, gmm_objective_jvp, gmm_objective_vjp, GmmInput};

fn data(name: &str) -> GmmInput {
    GmmInput::read(&format!(
        "{}/examples/data/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn against_hand(input: &GmmInput, tol: f64) {
    let f = input.objective();
    let (f_vjp, g) = input.gradient();
    let (f_hand, h) = input.gradient_hand();
    assert_eq!(f.to_bits(), f_vjp.to_bits());
    assert_close(f, f_hand, 1e-12);
    assert_eq!(g.len(), h.len());
    for (i, (a, b)) in g.iter().zip(&h).enumerate() {
        assert!(
            gmm::rel_err(*a, *b) < tol,
            "component {i}: vjp {a:e}, hand-written {b:e}"
        );
    }
}

#[test]
fn adbench_test_input_matches_hand_written_gradient() {
    let input = data("test.txt");
    assert_eq!(input.means.dim(), (3, 2));
    against_hand(&input, 1e-12);
    // and finite differences on every component
    let (_, g) = input.gradient();
    for (idx, gi) in g.iter().enumerate() {
        let fd = gmm::five_point(|d| input.objective_moved(idx, d), 1e-3);
        assert!(
            gmm::rel_err(*gi, fd) < 1e-8,
            "component {idx}: {gi:e} vs fd {fd:e}"
        );
    }
}

#[test]
fn adbench_d10_k25_matches_hand_written_gradient() {
    against_hand(&data("gmm_d10_K25.txt"), 1e-10);
}

#[test]
fn small_random_instance_passes_the_checker() {
    let mut rng = rng("gmm");
    let (d, k, n) = (3, 2, 5);
    let x = rng.array2(n, d, -1.0, 1.0);
    let params = (
        rng.array1(k, -1.0, 1.0),
        rng.array2(k, d, 0.0, 1.0),
        rng.array2(k, d * (d + 1) / 2, -0.5, 0.5),
    );
    for m in [0, 2] {
        check_derivatives(
            &params,
            |(a, mu, q)| gmm_objective(a, mu, q, &x, 1.3, m),
            |(a, mu, q), (da, dmu, dq)| gmm_objective_jvp(a, mu, q, &x, 1.3, m, da, dmu, dq),
            |(a, mu, q), ct| gmm_objective_vjp(a, mu, q, &x, 1.3, m, *ct),
        );
    }
}

#[test]
fn lanczos_ln_gamma() {
    // ln Γ(n) = ln((n-1)!), ln Γ(1/2) = ln √π
    assert_close(gmm::ln_gamma(1.0), 0.0, 1e-14);
    assert_close(gmm::ln_gamma(5.0), 24f64.ln(), 1e-14);
    assert_close(gmm::ln_gamma(0.5), 0.5 * std::f64::consts::PI.ln(), 1e-14);
    assert_close(gmm::ln_gamma(10.5), 13.940_625_219_403_763, 1e-14);
}

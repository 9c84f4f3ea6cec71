//! Local arrays updated in place element by element: `for v in
//! a.iter_mut()` (`&mut a`, `.enumerate()`, `break`), `a.iter_mut()
//! .for_each(..)` and `a.map_inplace(..)`, `*v` read and written and `v`
//! as a method's receiver. `iter_mut` walks the logical (row-major) order,
//! `map_inplace` the memory order: what the bodies accumulate has `f`'s
//! bits on row- and column-major inputs.
#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)]

mod common;
use common::*;
use linad::differentiable;
use linad::ndarray::{Array1, Array2, ShapeBuilder, Zip};

/// Rank 1: scale in place, then a running value read from the elements.
#[differentiable]
fn scaled_running(x: &Array1<f64>) -> f64 {
    let mut a = x.clone();
    let mut s = 0.0;
    for v in a.iter_mut() {
        *v *= 2.0;
        s = s * 0.5 + *v;
    }
    for v in &mut a {
        *v = v.max(0.1) + s;
    }
    a.sum() + s
}

/// Rank 2, enumerated, the element as a receiver; an order-dependent
/// accumulation (logical order on every layout).
#[differentiable]
fn enumerated(x: &Array2<f64>) -> f64 {
    let mut a = x.to_owned();
    let mut s = 0.0;
    for (i, v) in a.iter_mut().enumerate() {
        *v = v.sin() * (i as f64 + 1.0);
        s = s * 0.75 + *v * *v;
    }
    a.sum() * 0.5 + s
}

/// `break` out of a rank-2 `iter_mut` loop.
#[differentiable]
fn until_large(x: &Array2<f64>) -> f64 {
    let mut a = x.clone();
    let mut seen = 0.0;
    for v in a.iter_mut() {
        if seen > 2.0 {
            break;
        }
        seen += v.abs();
        *v = seen * *v;
    }
    a.sum()
}

/// `iter_mut().for_each(..)` and `.enumerate().for_each(..)`.
#[differentiable]
fn for_each_forms(x: &Array1<f64>) -> f64 {
    let mut a = x.clone();
    a.iter_mut().for_each(|v| *v = v.exp() - 1.0);
    a.iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v *= 1.0 + i as f64);
    a.sum()
}

/// `map_inplace`, plain and accumulating (memory order, as ndarray).
#[differentiable]
fn mapped_in_place(x: &Array2<f64>) -> f64 {
    let mut a = x.clone();
    a.map_inplace(|v| *v = v.tanh());
    let mut s = 0.0;
    a.map_inplace(|v| {
        s = s * 0.5 + *v;
        *v = s;
    });
    a.sum() + 3.0 * s
}

/// In-place updates inside loops (a `for`, a `while`, under an `if`): the
/// array is the loop's state (a mutable borrow writes it). The fuzzer
/// found `Zip::from(&mut a).for_each(..)` in a loop dropping its writes.
#[differentiable]
fn updated_in_loops(x: &Array1<f64>, n: usize) -> f64 {
    let mut a = x.clone();
    for _ in 0..n {
        for v in a.iter_mut() {
            *v = v.sin() * 0.5 + *v;
        }
        a.map_inplace(|v| *v *= 0.75);
    }
    let mut k = 0;
    while k < n {
        if k % 2 == 0 {
            Zip::from(&mut a).and(x).for_each(|v, &w| *v = v.cos() + w);
        }
        for v in &mut a {
            *v += 0.25;
        }
        k += 1;
    }
    a.sum()
}

fn layouts(rows: usize, cols: usize, rng: &mut Rng) -> Vec<Array2<f64>> {
    let c = rng.array2(rows, cols, -1.5, 1.5);
    let f = Array2::from_shape_vec((rows, cols).f(), c.iter().copied().collect()).unwrap();
    vec![c, f]
}

#[test]
fn primal_bits_on_every_layout_and_derivatives() {
    let mut rng = rng("inplace");
    let v = rng.array1(9, -1.5, 1.5);
    assert_same_bits(&scaled_running_vjp(&v, 1.0).0, &scaled_running(&v));
    assert_same_bits(&for_each_forms_vjp(&v, 1.0).0, &for_each_forms(&v));
    check_derivatives(&v, scaled_running, scaled_running_jvp, |x, ct| {
        scaled_running_vjp(x, *ct)
    });
    check_derivatives(&v, for_each_forms, for_each_forms_jvp, |x, ct| {
        for_each_forms_vjp(x, *ct)
    });
    for x in layouts(3, 4, &mut rng) {
        assert_same_bits(&enumerated_vjp(&x, 1.0).0, &enumerated(&x));
        assert_same_bits(&enumerated_jvp(&x, &x).0, &enumerated(&x));
        assert_same_bits(&until_large_vjp(&x, 1.0).0, &until_large(&x));
        assert_same_bits(&mapped_in_place_vjp(&x, 1.0).0, &mapped_in_place(&x));
        assert_same_bits(&mapped_in_place_jvp(&x, &x).0, &mapped_in_place(&x));
        check_derivatives(&x, enumerated, enumerated_jvp, |x, ct| {
            enumerated_vjp(x, *ct)
        });
        check_derivatives(&x, until_large, until_large_jvp, |x, ct| {
            until_large_vjp(x, *ct)
        });
        check_derivatives(&x, mapped_in_place, mapped_in_place_jvp, |x, ct| {
            mapped_in_place_vjp(x, *ct)
        });
    }
}

#[test]
fn updates_in_loops_are_loop_state() {
    let mut rng = rng("inplace_loops");
    let x = rng.array1(5, -1.5, 1.5);
    for n in [0, 1, 2, 3] {
        let y = updated_in_loops(&x, n);
        assert_same_bits(&updated_in_loops_vjp(&x, n, 1.0).0, &y);
        assert_same_bits(&updated_in_loops_jvp(&x, n, &x).0, &y);
        check_derivatives(
            &x,
            |x| updated_in_loops(x, n),
            |x, dx| updated_in_loops_jvp(x, n, dx),
            |x, ct| updated_in_loops_vjp(x, n, *ct),
        );
    }
}

#[test]
fn iteration_orders_are_ndarrays() {
    // On a column-major input, iter_mut walks rows and map_inplace memory:
    // the accumulations differ between the two orders, and each companion
    // follows its own.
    let mut rng = rng("inplace_orders");
    let x = layouts(4, 3, &mut rng).pop().unwrap();
    let row_major = x.as_standard_layout().to_owned();
    assert_ne!(
        mapped_in_place(&x).to_bits(),
        mapped_in_place(&row_major).to_bits()
    );
    assert_same_bits(&mapped_in_place_vjp(&x, 1.0).0, &mapped_in_place(&x));
    assert_same_bits(&enumerated(&x), &enumerated(&row_major));
    assert_same_bits(&enumerated_vjp(&x, 1.0).0, &enumerated(&row_major));
}

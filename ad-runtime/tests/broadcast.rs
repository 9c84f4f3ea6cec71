//! Broadcasting and its transpose, accumulation, zeros, residual stacks.

mod common;

use ad_runtime::*;
use common::*;
use ndarray::{arr1, arr2, s, Array1, Array2, Array3, Axis};

#[test]
fn broadcast_views() {
    let v = arr1(&[1.0, 2.0, 3.0]);
    let b = broadcast_to(&v, (2, 3));
    assert_eq!(b, arr2(&[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]));
    let col = arr2(&[[1.0], [2.0]]);
    assert_eq!(broadcast_to(&col, (2, 2)), arr2(&[[1.0, 1.0], [2.0, 2.0]]));
    let ba = broadcast_axis(&v, 1, 2);
    assert_eq!(ba, arr2(&[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]));
    assert_eq!(
        broadcast_axis(&v, 0, 2),
        arr2(&[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    );
    let m = mat(3, 4, 1);
    let b3 = broadcast_axis(&m, 1, 5);
    assert_eq!(b3.shape(), &[3, 5, 4]);
    for k in 0..5 {
        assert_eq!(b3.index_axis(Axis(1), k), m);
    }
    let z = ndarray::arr0(2.0);
    let s0 = broadcast_to(&z, 4);
    assert_eq!(s0, arr1(&[2.0; 4]));
}

#[test]
fn sum_to_shape_is_the_transpose_of_broadcast() {
    low_threshold();
    let x = arr3_ones();
    assert_eq!(sum_to_shape(&x, (3, 4)), Array2::from_elem((3, 4), 2.0));
    assert_eq!(sum_to_shape(&x, (1, 4)), Array2::from_elem((1, 4), 6.0));
    assert_eq!(sum_to_shape(&x, 4), Array1::from_elem(4, 6.0));
    assert_eq!(
        sum_to_shape(&x, (2, 1, 4)),
        Array3::from_elem((2, 1, 4), 3.0)
    );
    assert_eq!(sum_to_shape(&x, ()), ndarray::arr0(24.0));
    // <broadcast(v), y> == <v, sum_to_shape(y)>
    let v = vec1(300, 1);
    let y = mat(200, 300, 2);
    let lhs = (&broadcast_to(&v, (200, 300)) * &y).sum();
    close1(lhs, v.dot(&sum_to_shape(&y, 300)), 1e-12);
    let c = vec1(200, 3).insert_axis(Axis(1));
    let lhs = (&broadcast_to(&c, (200, 300)) * &y).sum();
    close1(lhs, (&c * &sum_to_shape(&y, (200, 1))).sum(), 1e-12);
    // Same bits on a transposed input.
    let yt = y.t().to_owned();
    assert_eq!(
        sum_to_shape(&yt.t(), 300).bits(),
        sum_to_shape(&y, 300).bits()
    );
}

fn arr3_ones() -> Array3<f64> {
    Array3::ones((2, 3, 4))
}

#[test]
fn accumulation() {
    low_threshold();
    let mut acc = mat(400, 300, 1);
    let start = acc.clone();
    let x = mat(300, 400, 2);
    add_scaled(&mut acc, 0.5, &x.t());
    assert_eq!(acc, &start + &(x.t().mapv(|v| 0.5 * v)));
    add_assign(&mut acc, &x.t());
    assert_eq!(acc, &start + &(x.t().mapv(|v| 0.5 * v)) + x.t());
    let mut v = vec1(100, 3);
    let v0 = v.clone();
    let w = vec1(200, 4);
    add_scaled(&mut v.view_mut(), 2.0, &w.slice(s![..;2]));
    assert_eq!(v, &v0 + &w.slice(s![..;2]).mapv(|x| 2.0 * x));
    let mut t = mat(5, 6, 5);
    let t0 = t.clone();
    let mut tv = t.view_mut().reversed_axes();
    add_assign(&mut tv, &Array2::ones((6, 5)));
    assert_eq!(t, &t0 + 1.0);
    let z = zeros_like(&x.t());
    assert_eq!(z.shape(), &[400, 300]);
    assert!(z.iter().all(|&v| v == 0.0));
    let mut e = Array1::<f64>::zeros(0);
    add_assign(&mut e, &Array1::zeros(0));
    same_bits("add_scaled", || {
        let mut a = mat(400, 300, 1);
        add_scaled(&mut a, 0.25, &x.t());
        a
    });
    same_bits("add_assign", || {
        let mut a = mat(400, 300, 1);
        add_assign(&mut a, &x.t());
        a
    });
    let big = arr3(40, 300, 20, 9);
    same_bits("sum_to_shape", || sum_to_shape(&big, (300, 1)));
    same_bits("sum_to_shape lead", || sum_to_shape(&big, 20));
}

#[test]
fn residual_stacks() {
    let mut s = ResidualStack::<f64>::new(4);
    assert_eq!((s.trip_count(), s.len(), s.is_empty()), (4, 0, true));
    for i in 0..4 {
        s.push(i as f64 * 1.5);
    }
    assert_eq!(s.get(3), 4.5);
    s.set(0, -1.0);
    assert_eq!(s.as_slice(), &[-1.0, 1.5, 3.0, 4.5]);
    let read: Vec<f64> = (0..4).rev().map(|i| s.get(i)).collect();
    assert_eq!(read, vec![4.5, 3.0, 1.5, -1.0]);
    assert_eq!(s.pop(), 4.5);
    assert_eq!(s.len(), 3);

    let mut a = ArrayResidualStack::<f64, ndarray::Ix2>::new(3, (2, 2));
    assert_eq!(a.shape(), &[2, 2]);
    a.push(&arr2(&[[1.0, 2.0], [3.0, 4.0]]));
    a.push(&arr2(&[[5.0, 6.0], [7.0, 8.0]]).t());
    a.row_mut(2).fill(9.0);
    assert_eq!(a.get(1), arr2(&[[5.0, 7.0], [6.0, 8.0]]));
    assert_eq!(a.get(2), Array2::from_elem((2, 2), 9.0));
    assert_eq!(a.len(), 2);
    assert_eq!(a.pop(), arr2(&[[5.0, 7.0], [6.0, 8.0]]));
    a.set(0, &Array2::zeros((2, 2)));
    assert_eq!(a.get(0).sum(), 0.0);
    let mut r1 = ArrayResidualStack::<f64, ndarray::Ix1>::new(10, 3);
    for i in 0..10 {
        r1.push(&Array1::from_elem(3, i as f64));
    }
    for i in (0..10).rev() {
        assert_eq!(r1.get(i), Array1::from_elem(3, i as f64));
    }
}

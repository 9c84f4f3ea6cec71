//! Maps and sets of one function's variables held as vectors indexed by
//! the variable ([`Var`]'s index is dense in its [`VarTable`](crate::ir::VarTable)).
//!
//! The analyses the macro runs look variables up at nearly every operand;
//! in the macro as cargo builds it for a user (unoptimised), a hash map's
//! lookup costs hundreds of instructions and an index a few.
//!
//! ```text
//! VarMap<T>: v -> slot v.0 of a Vec<Option<T>> (grown on insert)
//! VarSet:    VarMap<()>
//! ```

use crate::ir::Var;

/// A map from variables to values, a vector indexed by the variable.
#[derive(Debug, Clone)]
pub struct VarMap<T>(Vec<Option<T>>);

impl<T> Default for VarMap<T> {
    fn default() -> Self {
        VarMap(Vec::new())
    }
}

impl<T> VarMap<T> {
    /// The value of `v`, if any.
    pub fn get(&self, v: &Var) -> Option<&T> {
        self.0.get(v.0 as usize).and_then(Option::as_ref)
    }

    /// Whether `v` has a value.
    pub fn contains_key(&self, v: &Var) -> bool {
        self.get(v).is_some()
    }

    /// Sets the value of `v` (replacing any).
    pub fn insert(&mut self, v: Var, x: T) {
        let k = v.0 as usize;
        if k >= self.0.len() {
            self.0.resize_with(k + 1, || None);
        }
        self.0[k] = Some(x);
    }
}

impl<T> FromIterator<(Var, T)> for VarMap<T> {
    fn from_iter<I: IntoIterator<Item = (Var, T)>>(it: I) -> Self {
        let mut m = VarMap::default();
        for (v, x) in it {
            m.insert(v, x);
        }
        m
    }
}

/// A set of variables ([`VarMap`] without values).
#[derive(Debug, Clone, Default)]
pub struct VarSet(VarMap<()>);

impl VarSet {
    /// Whether `v` is in the set.
    pub fn contains(&self, v: &Var) -> bool {
        self.0.contains_key(v)
    }

    /// Adds `v`.
    pub fn insert(&mut self, v: Var) {
        self.0.insert(v, ());
    }
}

impl Extend<Var> for VarSet {
    fn extend<I: IntoIterator<Item = Var>>(&mut self, it: I) {
        for v in it {
            self.insert(v);
        }
    }
}

impl FromIterator<Var> for VarSet {
    fn from_iter<I: IntoIterator<Item = Var>>(it: I) -> Self {
        let mut s = VarSet::default();
        s.extend(it);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_and_sets_answer_for_any_variable() {
        let mut m: VarMap<u32> = VarMap::default();
        assert_eq!(m.get(&Var(7)), None);
        m.insert(Var(7), 1);
        m.insert(Var(2), 5);
        m.insert(Var(7), 3);
        assert_eq!((m.get(&Var(7)), m.get(&Var(2))), (Some(&3), Some(&5)));
        assert!(!m.contains_key(&Var(3)) && !m.contains_key(&Var(100)));
        let s: VarSet = [Var(4), Var(0)].into_iter().collect();
        assert!(s.contains(&Var(4)) && s.contains(&Var(0)) && !s.contains(&Var(1)));
    }
}

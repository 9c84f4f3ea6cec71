//! The environment of Rust local variables: scopes of bindings, each holding
//! the current lowered value of a variable.
//!
//! Mutable variables are SSA-converted by *updating the binding's value*: an
//! assignment stores the new value. Control flow compares snapshots of the
//! bindings to find what a branch or a loop body changed (see `control.rs`).
//! Bindings live in one arena (ids are stable); scopes map names to ids.

use super::val::Val;

/// One variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// Its name.
    pub name: String,
    /// Its current value.
    pub val: Val,
    /// Declared `mut`.
    pub mutable: bool,
}

/// Scopes of bindings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Env {
    bindings: Vec<Binding>,
    scopes: Vec<Vec<(String, usize)>>,
}

impl Env {
    /// An environment with one (function-level) scope.
    pub fn new() -> Env {
        Env {
            bindings: vec![],
            scopes: vec![vec![]],
        }
    }

    /// Opens a scope.
    pub fn push_scope(&mut self) {
        self.scopes.push(vec![]);
    }

    /// Closes the innermost scope.
    pub fn pop_scope(&mut self) {
        self.scopes.pop();
        if self.scopes.is_empty() {
            self.scopes.push(vec![]);
        }
    }

    /// Declares a variable in the innermost scope (shadowing any other of
    /// the same name); returns its id.
    pub fn declare(&mut self, name: &str, val: Val, mutable: bool) -> usize {
        let id = self.bindings.len();
        self.bindings.push(Binding {
            name: name.to_string(),
            val,
            mutable,
        });
        self.scopes
            .last_mut()
            .expect("at least one scope")
            .push((name.to_string(), id));
        id
    }

    /// The id of the visible variable named `name`.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    }

    /// A binding by id.
    pub fn get(&self, id: usize) -> &Binding {
        &self.bindings[id]
    }

    /// Sets the value of a binding.
    pub fn set(&mut self, id: usize, val: Val) {
        self.bindings[id].val = val;
    }

    /// Number of bindings ever declared (ids below it exist).
    pub fn len(&self) -> usize {
        self.bindings.len()
    }

    /// The values of the bindings with ids below `n`.
    pub fn snapshot(&self, n: usize) -> Vec<Val> {
        self.bindings[..n].iter().map(|b| b.val.clone()).collect()
    }

    /// Restores the values of the first `vals.len()` bindings.
    pub fn restore(&mut self, vals: &[Val]) {
        for (b, v) in self.bindings.iter_mut().zip(vals) {
            b.val = v.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadowing_and_scopes() {
        let mut env = Env::new();
        let a = env.declare("x", Val::Unit, false);
        env.push_scope();
        let b = env.declare("x", Val::Poison, true);
        assert_eq!(env.lookup("x"), Some(b));
        env.pop_scope();
        assert_eq!(env.lookup("x"), Some(a));
        assert_eq!(env.lookup("y"), None);
        let snap = env.snapshot(env.len());
        env.set(a, Val::Poison);
        env.restore(&snap);
        assert_eq!(env.get(a).val, Val::Unit);
    }
}

//! The generator's configuration: which constructs it may use.

/// Which constructs the generator may use (all by default). A construct can
/// be switched off for a run with `LINAD_GEN_DISABLE=loop,fold,...` (names as
/// the fields), to keep testing the others while a bug in one is open.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// `Expr::Tuple` / `Expr::Untuple`.
    pub tuple: bool,
    /// `If`.
    pub if_: bool,
    /// `Loop`.
    pub loop_: bool,
    /// `Build`.
    pub build: bool,
    /// `Map`.
    pub map: bool,
    /// `Reduce`.
    pub reduce: bool,
    /// `ArgReduce`.
    pub argreduce: bool,
    /// `Index`.
    pub index: bool,
    /// `Gather`.
    pub gather: bool,
    /// `ScatterAdd`.
    pub scatter: bool,
    /// `Update`.
    pub update: bool,
    /// `Scan`.
    pub scan: bool,
    /// `MatMul`.
    pub matmul: bool,
    /// `Transpose`.
    pub transpose: bool,
    /// `Broadcast` (also used to make operands of the right shape).
    pub broadcast: bool,
    /// `Fold`.
    pub fold: bool,
    /// `While` (its trip count then sizes other constructs).
    pub while_: bool,
    /// `Call` of helper functions.
    pub call: bool,
    /// Loop outputs and build/map results that are arrays (stacked to a
    /// higher rank). Off by default: reverse mode refuses differentiable
    /// stacked results with array elements (a documented limitation);
    /// `LINAD_GEN_STACK_ARRAYS=1` turns them on.
    pub stack_arrays: bool,
    /// Maximum number of statements of the entry function (about).
    pub max_stmts: usize,
    /// Maximum nesting depth of bodies.
    pub max_depth: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            tuple: true,
            if_: true,
            loop_: true,
            build: true,
            map: true,
            reduce: true,
            argreduce: true,
            index: true,
            gather: true,
            scatter: true,
            update: true,
            scan: true,
            matmul: true,
            transpose: true,
            broadcast: true,
            fold: true,
            while_: true,
            call: true,
            stack_arrays: false,
            max_stmts: 40,
            max_depth: 3,
        }
    }
}

impl GenConfig {
    /// The default configuration minus the constructs named in
    /// `LINAD_GEN_DISABLE` (comma-separated field names, `if`/`loop` accepted).
    pub fn from_env() -> Self {
        let mut c = GenConfig {
            stack_arrays: std::env::var("LINAD_GEN_STACK_ARRAYS").is_ok(),
            ..GenConfig::default()
        };
        if let Ok(s) = std::env::var("LINAD_GEN_DISABLE") {
            for name in s.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                c.disable(name);
            }
        }
        c
    }

    /// Switches one construct off by name.
    pub fn disable(&mut self, name: &str) {
        let f = match name.trim_end_matches('_') {
            "tuple" => &mut self.tuple,
            "if" => &mut self.if_,
            "loop" => &mut self.loop_,
            "build" => &mut self.build,
            "map" => &mut self.map,
            "reduce" => &mut self.reduce,
            "argreduce" => &mut self.argreduce,
            "index" => &mut self.index,
            "gather" => &mut self.gather,
            "scatter" => &mut self.scatter,
            "update" => &mut self.update,
            "scan" => &mut self.scan,
            "matmul" => &mut self.matmul,
            "transpose" => &mut self.transpose,
            "broadcast" => &mut self.broadcast,
            "fold" => &mut self.fold,
            "while" => &mut self.while_,
            "call" => &mut self.call,
            other => panic!("LINAD_GEN_DISABLE: unknown construct `{other}`"),
        };
        *f = false;
    }
}

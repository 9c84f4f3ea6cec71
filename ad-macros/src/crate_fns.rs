//! The other functions of the crate, as far as their source tells.
//!
//! A proc macro sees only its own item, but the files rustc compiles the
//! crate from are on disk. For a call `g(..)` the front end asks [`lookup`]
//! whether `g` is a function of the crate, whether it is differentiable
//! (`#[differentiable]`, `#[linear]`, or the target of a `#[custom_jvp(g)]`
//! rule), how many parameters it takes and what it returns. So a plain
//! function called with values that depend on differentiable parameters,
//! or a differentiable one called with the wrong number of arguments, is
//! one clear error at the call (not rustc's errors about generated names),
//! and a call needs no `let` annotation for an array or tuple result.
//!
//! Where it looks: the file of the item being expanded
//! (`proc_macro::Span::local_file`, stable since Rust 1.88), and every `.rs`
//! file under the crate's `src/` (`CARGO_MANIFEST_DIR`) when that file is
//! there, else (a test, example or bench: a crate of its own) the files its
//! `mod m;` declarations load, transitively. A file is parsed once per
//! process and again only when its length or modification time changes;
//! the answers are memoised for the rest of one expansion. A name defined
//! once in the expanding file is that function; otherwise every definition
//! of the name in those files must agree (kind, arity, return type), or the
//! lookup knows nothing and the macro behaves as without it (rustc then
//! reports what it finds). Only the entry points in `lib.rs` set the
//! current file ([`Scope`]): the unit tests and the
//! fuzzer's in-process runs see no crate.

use ad_core_ir::fast_hash::FastMap;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use syn::punctuated::Punctuated;

/// What the source says about one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnInfo {
    /// `#[differentiable]`, `#[linear]`, or given a `#[custom_jvp]` rule.
    pub differentiable: bool,
    /// The number of parameters.
    pub arity: usize,
    /// The return type as written (tokens as text), `None` for `()`.
    pub ret: Option<String>,
    /// The parameter types as written (tokens as text).
    pub params: Vec<String>,
    /// Mentions `f32` (its companions then come from an `f64` shadow).
    pub uses_f32: bool,
    /// The positions of the parameters named by its `#[linear(..)]`
    /// (empty if it has none).
    pub linear: Vec<usize>,
    /// The positions of the parameters its `#[differentiable(wrt(..))]`
    /// names (empty without `wrt`): its expansion then also emits hidden
    /// derivatives with respect to those alone (`__linadw_f_*`), which
    /// callers use where its other arguments are constants. Empty for the
    /// flat function of a struct-taking function, an `f64` shadow, a
    /// `#[linear]` function and the target of a rule.
    pub wrt: Vec<usize>,
    /// Its expansion emits the blocks that keep its residuals for callers
    /// (`__linad_f_fwdres`, `emit/residuals.rs`): a `#[differentiable]`
    /// function of the crate, not `#[linear]`, not the target of a rule,
    /// not a flat function or an `f64` shadow, not mentioning `f32`.
    pub residuals: bool,
    /// The function's source, when it is `#[differentiable]` (not `#[linear]`,
    /// not the target of a rule) and small enough to inline at its calls
    /// (`crate::inline`).
    pub inline: Option<String>,
}

/// A field of a struct deriving `Differentiable`, as its source tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: String,
    /// Its type as written (tokens as text).
    pub ty: String,
    /// Marked `#[linad(constant)]`.
    pub constant: bool,
}

/// The functions of one file: `(name, info)` in source order (a rule's
/// target is marked differentiable once the whole file is read), and the
/// names of the modules it declares (`mod m;` and `mod m { .. }`).
#[derive(Default, Debug, PartialEq)]
pub struct FileFns {
    fns: Vec<(String, FnInfo)>,
    mods: Vec<String>,
    /// Modules declared without a body (`mod m;`), with their `#[path]`.
    ext_mods: Vec<(String, Option<String>)>,
    /// Names imported from other crates (`use statrs::function::erf::erf;`).
    foreign: Vec<String>,
    /// Structs deriving `Differentiable`, with their fields.
    structs: Vec<(String, Vec<FieldInfo>)>,
    /// Enums without fields, with their variants' discriminants.
    enums: Vec<(String, Variants)>,
    /// `const` and (not `mut`) `static` items: name and written type.
    consts: Vec<(String, String)>,
    /// Type aliases without generic parameters: name and aliased type.
    aliases: Vec<(String, String)>,
    /// How often each word (a run of letters, digits and `_`) occurs in
    /// the text, comments and strings included: an over-count, never an
    /// under-count, of the identifiers (see [`callers_possible`]).
    words: FastMap<String, u32>,
    /// The text calls `include!`: code the index does not see.
    includes: bool,
    /// The names `use` items import with the paths they import (`use
    /// inner::sq;`: `("sq", "inner::sq")`; a rename's new name with the
    /// original path), and the inline modules around the `use` (`["a",
    /// "b"]` in `mod a { mod b { .. } }`; empty at the file's top level):
    /// what a bare name in the file may resolve to besides the crate's
    /// functions.
    import_paths: Vec<(String, String, Vec<String>)>,
    /// Some `use` item imports with `*`.
    globs: bool,
    /// Each function's name with the inline modules around it.
    fn_modules: Vec<(String, Vec<String>)>,
    /// The file has an item-level macro (`macro_rules!`, an invocation):
    /// it may define functions the index does not see.
    item_macros: bool,
    /// Every name that follows the word `fn` anywhere in the file's text
    /// (functions nested in bodies, in `impl`s, in macro bodies; also in
    /// comments: [`fn_words`]).
    fn_words: Vec<String>,
    /// Functions marked `#[differentiable]` in an `impl` block that is
    /// not (their attribute cannot work there: [`associated_only`]), and
    /// whether that block implements a trait (or is a trait's default
    /// method).
    assoc: Vec<(String, bool)>,
    /// Functions declared in traits without `#[differentiable]`.
    trait_fns: Vec<String>,
}

/// The variants of a field-less enum: names and discriminants.
pub type Variants = Vec<(String, i64)>;

/// Parsed files by path, with the length and modification time they had.
type Cache = FastMap<PathBuf, (u64, Option<SystemTime>, FileFns)>;

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

thread_local! {
    /// The file of the item being expanded (set by [`Scope`]).
    static CURRENT: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    /// Answers given during this expansion (one walk of the crate's files
    /// per expansion, not per call): function lookups and module names.
    static MEMO: RefCell<FastMap<String, Option<FnInfo>>> = RefCell::new(FastMap::default());
    static MODULES: RefCell<FastMap<String, bool>> = RefCell::new(FastMap::default());
    static STRUCTS: RefCell<FastMap<String, Option<Vec<FieldInfo>>>> = RefCell::new(FastMap::default());
    static ENUMS: RefCell<FastMap<String, Option<Variants>>> = RefCell::new(FastMap::default());
    static CONSTS: RefCell<FastMap<String, Option<String>>> = RefCell::new(FastMap::default());
    static ALIASES: RefCell<FastMap<String, Option<String>>> = RefCell::new(FastMap::default());
}

/// While alive, lookups see the crate around `file` (the expanding item's
/// source file); dropping it forgets it.
pub struct Scope;

impl Scope {
    /// Enters the crate of `file` (`None`: no crate is known).
    pub fn enter(file: Option<PathBuf>) -> Scope {
        CURRENT.with(|c| *c.borrow_mut() = file);
        Scope
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
        MEMO.with(|m| m.borrow_mut().clear());
        MODULES.with(|m| m.borrow_mut().clear());
        STRUCTS.with(|m| m.borrow_mut().clear());
        ENUMS.with(|m| m.borrow_mut().clear());
        CONSTS.with(|m| m.borrow_mut().clear());
        ALIASES.with(|m| m.borrow_mut().clear());
    }
}

/// The expanding file, then the crate's other source files: every file
/// under `src/` when the expanding file is there, else (an example, test or
/// bench is a crate of its own) the files its `mod m;` declarations load,
/// transitively.
fn files(cache: &mut Cache) -> Option<Vec<PathBuf>> {
    let current = CURRENT.with(|c| c.borrow().clone())?;
    let mut files = vec![current.clone()];
    if let Some(src) = src_dir_of(&current) {
        rs_files(&src, &mut files, 0);
        let rest: Vec<PathBuf> = files
            .split_off(1)
            .into_iter()
            .filter(|f| *f != current)
            .collect();
        files.extend(rest);
        return Some(files);
    }
    // Follow `mod m;` from the expanding file.
    let mut k = 0;
    while k < files.len() && files.len() < 256 {
        let f = files[k].clone();
        k += 1;
        let Some(ff) = fns_of(cache, &f) else {
            continue;
        };
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let base = if ["mod", "lib", "main"].contains(&stem) || k == 1 {
            dir.clone()
        } else {
            dir.join(stem)
        };
        for (m, path) in ff.ext_mods.clone() {
            let candidates = match path {
                Some(p) => vec![dir.join(p)],
                None => vec![base.join(format!("{m}.rs")), base.join(&m).join("mod.rs")],
            };
            if let Some(c) = candidates.into_iter().find(|c| c.is_file()) {
                if !files.contains(&c) {
                    files.push(c);
                }
            }
        }
    }
    Some(files)
}

/// Whether the crate's source declares a module called `name` (so a path
/// `name::g` stays in the crate).
pub fn is_module(name: &str) -> bool {
    if let Some(known) = MODULES.with(|m| m.borrow().get(name).copied()) {
        return known;
    }
    let found = find_module(name);
    MODULES.with(|m| m.borrow_mut().insert(name.to_string(), found));
    found
}

fn find_module(name: &str) -> bool {
    let Ok(mut guard) = CACHE.lock() else {
        return false;
    };
    let cache = guard.get_or_insert_with(FastMap::default);
    let Some(files) = files(cache) else {
        return false;
    };
    has_module(cache, &files, name)
}

/// Whether one of `files` declares a module `name`.
fn has_module(cache: &mut Cache, files: &[PathBuf], name: &str) -> bool {
    files
        .iter()
        .any(|f| fns_of(cache, f).is_some_and(|ff| ff.mods.iter().any(|m| m == name)))
}

/// What the crate's source says about the function `name` (see the module
/// doc for where it looks and when it knows nothing).
pub fn lookup(name: &str) -> Option<FnInfo> {
    if let Some(known) = MEMO.with(|m| m.borrow().get(name).cloned()) {
        return known;
    }
    // The flat function `structs` makes of a function with struct
    // parameters or output: the function's own answer, each struct
    // parameter counted as its leaf fields, a struct output as the tuple of
    // its leaves.
    if let Some(user) = name.strip_prefix(crate::structs::FLAT_PREFIX) {
        let found = lookup(user).and_then(|mut info| {
            let mut params = vec![];
            for t in &info.params {
                params.extend(crate::structs::flat_param_types(t)?);
            }
            info.arity = params.len();
            info.params = params;
            info.wrt = vec![];
            info.residuals = false;
            info.ret = info.ret.map(|r| crate::structs::flat_output_type(&r));
            // A struct's `f32` fields make the flat function an `f32` one
            // (its derivatives come from its `f64` shadow) even where the
            // function's own source never says `f32`.
            info.uses_f32 |= info.params.iter().chain(&info.ret).any(|t| {
                t.parse::<proc_macro2::TokenStream>()
                    .is_ok_and(crate::f32s::mentions_f32)
            });
            Some(info)
        });
        MEMO.with(|m| m.borrow_mut().insert(name.to_string(), found.clone()));
        return found;
    }
    // The `f64` shadow `f32s` makes of a function mentioning `f32`.
    if let Some(user) = name.strip_prefix(crate::f32s::SHADOW_PREFIX) {
        let found = lookup(user).map(|mut info| {
            let f64s = |t: &String| t.replace("f32", "f64");
            info.params = info.params.iter().map(f64s).collect();
            info.ret = info.ret.as_ref().map(f64s);
            info.uses_f32 = false;
            info.wrt = vec![];
            info.residuals = false;
            info
        });
        MEMO.with(|m| m.borrow_mut().insert(name.to_string(), found.clone()));
        return found;
    }
    let found = find(name);
    MEMO.with(|m| m.borrow_mut().insert(name.to_string(), found.clone()));
    found
}

fn find(name: &str) -> Option<FnInfo> {
    let mut guard = CACHE.lock().ok()?;
    let cache = guard.get_or_insert_with(FastMap::default);
    let files = files(cache)?;
    let current = files[0].clone();
    // A name this file imports from another crate is that crate's; one
    // imported from a module of this crate (`use inner::sq;`: the path
    // alone does not tell a module from a crate) is the crate's own.
    let roots: Option<Vec<String>> = {
        let here_fns = fns_of(cache, &current)?;
        here_fns.foreign.iter().any(|n| n == name).then(|| {
            here_fns
                .import_paths
                .iter()
                .filter(|(n, _, _)| n == name)
                .filter_map(|(_, p, _)| p.split("::").next().map(str::to_string))
                .collect()
        })
    };
    if let Some(roots) = roots {
        if roots.is_empty() || !roots.iter().all(|r| has_module(cache, &files, r)) {
            return None;
        }
    }
    let here_fns = fns_of(cache, &current)?;
    let here: Vec<FnInfo> = matches(here_fns, name);
    if let [one] = here.as_slice() {
        return Some(one.clone());
    }
    if !here.is_empty() {
        return None;
    }
    let mut found: Vec<FnInfo> = vec![];
    for f in files.iter().skip(1) {
        if let Some(fns) = fns_of(cache, f) {
            found.extend(matches(fns, name));
        }
    }
    let first = found.first()?.clone();
    found.iter().all(|f| *f == first).then_some(first)
}

/// Whether the bare name `name`, called as a function in the file being
/// expanded, certainly names nothing: no file of the crate defines a
/// function of that name, and the expanding file imports no such name,
/// defines none anywhere (not even nested in a body: `fn name` appears in
/// none of its tokens), has no glob import, no `include!` and no
/// item-level macro (which could define it). `None` without an index (the unit tests), `Some(false)`
/// whenever in doubt.
pub fn unresolvable(name: &str) -> Option<bool> {
    with_index(|cache, files| {
        let here = fns_of(cache, &files[0])?;
        if here.globs
            || here.item_macros
            || here.includes
            || here.import_paths.iter().any(|(n, _, _)| n == name)
            || here.fn_words.iter().any(|n| n == name)
        {
            return Some(false);
        }
        for f in files {
            let fns = fns_of(cache, f)?;
            if fns.includes || fns.fns.iter().any(|(n, _)| n == name) {
                return Some(false);
            }
        }
        Some(true)
    })
}

/// The path that a bare name `name` called in the function `caller` of
/// the file being expanded is imported from (`use inner::sq;` gives
/// `inner::sq` for `sq`): `caller` is defined once in the file, no function
/// `name` is defined in its module, and the `use` items of its module
/// import `name` from one path only.
pub fn import_path(name: &str, caller: &str) -> Option<String> {
    with_index(|cache, files| {
        let here = fns_of(cache, &files[0])?;
        let mut callers = here.fn_modules.iter().filter(|(n, _)| n == caller);
        let (_, module) = callers.next()?;
        if callers.next().is_some()
            || here
                .fn_modules
                .iter()
                .any(|(n, m)| n == name && m == module)
        {
            return None;
        }
        let mut paths = here
            .import_paths
            .iter()
            .filter(|(n, _, m)| n == name && m == module)
            .map(|(_, p, _)| p);
        let first = paths.next()?;
        paths.all(|p| p == first).then(|| first.clone())
    })
}

/// Whether the function `name` being expanded is certainly an associated
/// function of a plain `impl` block (not `#[differentiable]` itself), and
/// then whether that block implements a trait: the expanding file marks
/// `name` `#[differentiable]` inside such blocks, and every function of
/// that name in the file (`fn name` anywhere in its tokens, but for the
/// declarations of traits) is one of those. Its expansion could not compile there (a block's items must be
/// associated ones), so the macro says what to do instead. `None`: no
/// index (the unit tests), or not certain.
pub fn associated_only(name: &str) -> Option<bool> {
    with_index(|cache, files| {
        let here = fns_of(cache, &files[0])?;
        let marked: Vec<bool> = here
            .assoc
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .collect();
        let declared = here.trait_fns.iter().filter(|n| *n == name).count();
        let all = here
            .fn_words
            .iter()
            .filter(|n| *n == name)
            .count()
            .saturating_sub(declared);
        let certain =
            !marked.is_empty() && marked.len() == all && !here.fns.iter().any(|(n, _)| n == name);
        certain.then(|| marked.iter().any(|t| *t))
    })
}

/// Whether the function `name` is defined in the file being expanded
/// (`None`: no index, as in the unit tests).
pub fn defined_here(name: &str) -> Option<bool> {
    with_index(|cache, files| {
        let here = fns_of(cache, &files[0])?;
        Some(here.fns.iter().any(|(n, _)| n == name))
    })
}

/// `f` on the crate index (locked) and the crate's files, the file being
/// expanded first (`None`: no index, as in the unit tests).
fn with_index<R>(f: impl FnOnce(&mut Cache, &[PathBuf]) -> Option<R>) -> Option<R> {
    let mut guard = CACHE.lock().ok()?;
    let cache = guard.get_or_insert_with(FastMap::default);
    let files = files(cache)?;
    f(cache, &files)
}

/// The fields of the struct `name` deriving `Differentiable` (the same
/// rules as [`lookup`]: a definition in the expanding file, else one the
/// other files agree on).
pub fn lookup_struct(name: &str) -> Option<Vec<FieldInfo>> {
    memoised(&STRUCTS, name, |ff| named(&ff.structs, name))
}

/// The variants (name, discriminant) of the field-less enum `name` (the
/// same rules as [`lookup`]).
pub fn lookup_enum(name: &str) -> Option<Variants> {
    memoised(&ENUMS, name, |ff| named(&ff.enums, name))
}

/// The written type of the `const` or `static` item `name` (`"f64"`,
/// `"usize"`; the same rules as [`lookup`]: the definition in the
/// expanding file, else the one type all other files agree on).
pub fn lookup_const(name: &str) -> Option<String> {
    memoised(&CONSTS, name, |ff| named(&ff.consts, name))
}

/// The type the alias `name` stands for (`type V = Array1<f64>;` gives
/// `"Array1 < f64 >"`; the same rules as [`lookup`]).
pub fn lookup_alias(name: &str) -> Option<String> {
    memoised(&ALIASES, name, |ff| named(&ff.aliases, name))
}

/// [`find_item`]`(of)`, answered once per expansion for `name` (`memo`).
fn memoised<T: Clone + PartialEq + 'static>(
    memo: &'static std::thread::LocalKey<RefCell<FastMap<String, Option<T>>>>,
    name: &str,
    of: impl Fn(&FileFns) -> Vec<T>,
) -> Option<T> {
    if let Some(known) = memo.with(|m| m.borrow().get(name).cloned()) {
        return known;
    }
    let found = find_item(of);
    memo.with(|m| m.borrow_mut().insert(name.to_string(), found.clone()));
    found
}

/// The entries of `items` called `name`.
fn named<T: Clone>(items: &[(String, T)], name: &str) -> Vec<T> {
    items
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, t)| t.clone())
        .collect()
}

/// The one definition `of` finds in the expanding file, else the one all
/// other files agree on.
fn find_item<T: Clone + PartialEq>(of: impl Fn(&FileFns) -> Vec<T>) -> Option<T> {
    let mut guard = CACHE.lock().ok()?;
    let cache = guard.get_or_insert_with(FastMap::default);
    let files = files(cache)?;
    let here = of(fns_of(cache, &files[0])?);
    if let [one] = here.as_slice() {
        return Some(one.clone());
    }
    if !here.is_empty() {
        return None;
    }
    let mut found = vec![];
    for f in files.iter().skip(1) {
        if let Some(ff) = fns_of(cache, f) {
            found.extend(of(ff));
        }
    }
    let first = found.first()?.clone();
    found.iter().all(|f| *f == first).then_some(first)
}

fn matches(fns: &FileFns, name: &str) -> Vec<FnInfo> {
    fns.fns
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, i)| i.clone())
        .collect()
}

/// Whether code other than `name`'s own definition may call the building
/// blocks of the `#[differentiable]` function `name` (`__linad_name_lin`,
/// ..., `crate::names`), which its expansion then has to emit. `false`
/// only when the source settles it: the function is not visible outside
/// the crate (not `pub`, or `pub` in a binary: `CARGO_BIN_NAME`), the
/// index sees the whole crate (the files under `src/`, or those a test's,
/// example's or bench's root file loads; every file parsed, none calling
/// `include!`), and the word `name` occurs exactly once in all of it (its
/// definition: any other occurrence, a call, a `use`, a comment, keeps the
/// blocks). A caller the index cannot see (made by a macro from pieces of
/// names, in a file loaded from outside `src/`) then fails to compile
/// with rustc's "cannot find function `__linad_name_lin`"; nothing runs
/// wrong.
pub fn callers_possible(name: &str, vis: &syn::Visibility) -> bool {
    let exported = match vis {
        syn::Visibility::Public(_) => std::env::var_os("CARGO_BIN_NAME").is_none(),
        syn::Visibility::Restricted(_) | syn::Visibility::Inherited => false,
    };
    exported || !sole_mention(name).unwrap_or(false)
}

/// Whether the word `word` occurs in the crate's source (`None`: the index
/// does not see the whole crate). A function nothing outside the crate can
/// call gets only the public derivatives (`f_vjp`, ...) its crate names.
pub fn mentioned(word: &str) -> Option<bool> {
    Some(occurrences(word)? > 0)
}

/// Whether `name` occurs once in the whole crate (`None`: the index does
/// not see the whole crate).
fn sole_mention(name: &str) -> Option<bool> {
    Some(occurrences(name)? == 1)
}

/// How often the word `word` occurs in the crate's source (`None`: the
/// index does not see the whole crate).
fn occurrences(word: &str) -> Option<u32> {
    let mut guard = CACHE.lock().ok()?;
    let cache = guard.get_or_insert_with(FastMap::default);
    let files = files(cache)?;
    if !whole_crate(&files[0]) {
        return None;
    }
    let mut count = 0;
    for f in &files {
        let ff = fns_of(cache, f)?;
        if ff.includes {
            return None;
        }
        count += ff.words.get(word).copied().unwrap_or(0);
    }
    Some(count)
}

/// Whether [`files`] starting at `current` is the whole crate: `current`
/// is under `src/` (all of it is read), or it is the crate's root file
/// (`tests/t.rs`, `examples/e/main.rs`: named after the crate or `main`),
/// not a module a root loads.
fn whole_crate(current: &Path) -> bool {
    if src_dir_of(current).is_some() {
        return true;
    }
    let stem = current.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let krate = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
    stem == "main" || (!krate.is_empty() && stem.replace('-', "_") == krate)
}

/// The package's `src/` (`CARGO_MANIFEST_DIR`), when `file` is under it.
fn src_dir_of(file: &Path) -> Option<PathBuf> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let src = Path::new(&std::env::var("CARGO_MANIFEST_DIR").ok()?).join("src");
    canon(file).starts_with(canon(&src)).then_some(src)
}

/// The words of `text` (runs of alphanumeric characters and `_`), counted.
pub(crate) fn words(text: &str) -> FastMap<String, u32> {
    let mut out: FastMap<String, u32> = FastMap::default();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    for w in text.split(|c: char| !is_word(c)).filter(|w| !w.is_empty()) {
        *out.entry(w.to_string()).or_insert(0) += 1;
    }
    out
}

/// The `.rs` files under `dir` (at most 8 directories deep).
fn rs_files(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && depth < 8 {
            rs_files(&p, out, depth + 1);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The functions of `path`, parsed now or earlier (`None` if it cannot be
/// read or parsed).
fn fns_of<'c>(cache: &'c mut Cache, path: &Path) -> Option<&'c FileFns> {
    let meta = std::fs::metadata(path).ok()?;
    let (len, mtime) = (meta.len(), meta.modified().ok());
    let fresh = matches!(cache.get(path), Some((l, m, _)) if *l == len && *m == mtime);
    if !fresh {
        let text = std::fs::read_to_string(path).ok()?;
        let fns = parse_fns(&text)?;
        cache.insert(path.to_path_buf(), (len, mtime, fns));
    }
    cache.get(path).map(|(_, _, f)| f)
}

/// The free functions of a file (inline modules included).
pub fn parse_fns(text: &str) -> Option<FileFns> {
    // Lexed once for both the parse and the names (`syn::parse_file` would
    // lex it again, each time twice inside a proc macro: `proc_macro2`
    // checks the text with its own lexer first), without a byte order mark
    // and a `#!` line (as `syn::parse_file` strips them).
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = match body.strip_prefix("#!") {
        Some(rest) if !rest.trim_start().starts_with('[') => {
            rest.find('\n').map_or("", |k| &rest[k..])
        }
        _ => body,
    };
    let tokens: proc_macro2::TokenStream = body.parse().ok()?;
    let file: syn::File = syn::parse2(without_plain_bodies(tokens.clone(), text.contains("f32")))
        .or_else(|_| syn::parse2(tokens))
        .ok()?;
    Some(index(text, &file))
}

/// The index of the file `text`, parsed as `file`.
fn index(text: &str, file: &syn::File) -> FileFns {
    let mut fns = FileFns {
        words: words(text),
        includes: text.contains("include!"),
        ..FileFns::default()
    };
    let mut ruled = vec![];
    collect(&file.items, &mut fns, &mut ruled, &mut vec![]);
    fn_words(text, &mut fns.fn_words);
    for (name, info) in &mut fns.fns {
        if ruled.contains(name) {
            info.differentiable = true;
            // Its rule, not its body, defines its derivative.
            info.inline = None;
            info.wrt = vec![];
            info.residuals = false;
        }
    }
    fns
}

/// `tokens` with the body of every function that does not mention `f32`
/// (`f32s`: the file's text does somewhere) replaced by `{}`, unless an
/// attribute of linad's marks it (`differentiable`, `linear`,
/// `custom_jvp`, anywhere in one of its attributes) and the body is short
/// enough to inline (`inline::short_enough`). The index
/// reads a function's attributes and signature only (the body matters for
/// a short `#[differentiable]` function, which may be inlined, and for the
/// `f32` path), and
/// bodies are most of a crate: parsing them with `syn` in the unoptimised
/// macro made the index's cost grow with all the code of the crate, not
/// with its differentiable functions. Functions nested in a plain body are
/// gone with it (the index does not record them; `fn_words` reads the
/// text).
fn without_plain_bodies(tokens: proc_macro2::TokenStream, f32s: bool) -> proc_macro2::TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    fn names_linad_attr(ts: proc_macro2::TokenStream) -> bool {
        ts.into_iter().any(|t| match t {
            TokenTree::Ident(i) => i == "differentiable" || i == "linear" || i == "custom_jvp",
            TokenTree::Group(g) => names_linad_attr(g.stream()),
            _ => false,
        })
    }
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(toks.len());
    // A linad attribute since the last item's end; `fn` seen, body to come.
    let (mut marked, mut in_fn) = (false, false);
    for (k, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket && k > 0 => {
                let attr = matches!(&toks[k - 1], TokenTree::Punct(p) if p.as_char() == '#' || p.as_char() == '!');
                if attr && names_linad_attr(g.stream()) {
                    marked = true;
                }
                out.push(t.clone());
            }
            TokenTree::Ident(i) if i == "fn" => {
                in_fn = true;
                out.push(t.clone());
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let kept = marked && crate::inline::short_enough(g.stream());
                let body = if in_fn && !kept && !(f32s && crate::f32s::mentions_f32(g.stream())) {
                    proc_macro2::TokenStream::new()
                } else if in_fn {
                    g.stream()
                } else {
                    // A module's, an `impl`'s or a trait's items.
                    without_plain_bodies(g.stream(), f32s)
                };
                let mut ng = Group::new(Delimiter::Brace, body);
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
                (marked, in_fn) = (false, false);
            }
            TokenTree::Punct(p) if p.as_char() == ';' => {
                (marked, in_fn) = (false, false);
                out.push(t.clone());
            }
            _ => out.push(t.clone()),
        }
    }
    out.into_iter().collect()
}

/// The positions of the parameters `#[differentiable(.., wrt(x, y), ..)]`
/// names (empty without `wrt(..)`, or if the attribute does not parse or
/// names an unknown parameter: the function's own expansion reports that).
fn wrt_positions(a: &syn::Attribute, sig: &syn::Signature) -> Vec<usize> {
    let metas = Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated;
    let Ok(metas) = a.parse_args_with(metas) else {
        return vec![];
    };
    let Some(syn::Meta::List(list)) = metas.iter().find(|m| m.path().is_ident("wrt")) else {
        return vec![];
    };
    let idents = Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated;
    list.parse_args_with(idents)
        .map_or(vec![], |names| positions(sig, &names))
}

/// The positions of the parameters named `names` (empty if one is unknown).
fn positions(sig: &syn::Signature, names: &Punctuated<syn::Ident, syn::Token![,]>) -> Vec<usize> {
    let position = |n: &syn::Ident| {
        sig.inputs.iter().position(|p| {
            matches!(p, syn::FnArg::Typed(pt)
                if matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.ident == *n))
        })
    };
    names
        .iter()
        .map(position)
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// The positions of the parameters `#[linear(x, y)]` names (empty if the
/// attribute does not parse or names an unknown parameter: the function's
/// own expansion reports that).
fn linear_positions(a: &syn::Attribute, sig: &syn::Signature) -> Vec<usize> {
    let parser = Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated;
    a.parse_args_with(parser)
        .map_or(vec![], |names| positions(sig, &names))
}

/// Records `items` (inside the inline modules `chain`) in `out`.
fn collect(
    items: &[syn::Item],
    out: &mut FileFns,
    ruled: &mut Vec<String>,
    chain: &mut Vec<String>,
) {
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                out.fn_modules
                    .push((f.sig.ident.to_string(), chain.clone()));
                collect_fn(f, out, ruled)
            }
            // The marked methods of a `#[differentiable] impl`, as the free
            // functions its expansion makes (`crate::impls`).
            syn::Item::Impl(imp) if marked(&imp.attrs) => {
                for f in crate::impls::free_functions(imp) {
                    collect_fn(&f, out, ruled);
                }
            }
            syn::Item::Impl(imp) => {
                for it in &imp.items {
                    if let syn::ImplItem::Fn(m) = it {
                        if marked(&m.attrs) {
                            let name = syn::ext::IdentExt::unraw(&m.sig.ident).to_string();
                            out.assoc.push((name, imp.trait_.is_some()));
                        }
                    }
                }
            }
            syn::Item::Trait(t) => {
                for it in &t.items {
                    if let syn::TraitItem::Fn(m) = it {
                        let name = syn::ext::IdentExt::unraw(&m.sig.ident).to_string();
                        if marked(&m.attrs) {
                            out.assoc.push((name, true));
                        } else {
                            out.trait_fns.push(name);
                        }
                    }
                }
            }
            syn::Item::Use(u) => {
                foreign_names(&u.tree, true, &mut out.foreign);
                let mut paths = vec![];
                use_paths(&u.tree, "", &mut paths, &mut out.globs);
                out.import_paths
                    .extend(paths.into_iter().map(|(n, p)| (n, p, chain.clone())));
            }
            // (An `extern { fn g(..); }` block's names are in `fn_words`.)
            syn::Item::Macro(_) => out.item_macros = true,
            syn::Item::Type(t) if t.generics.params.is_empty() => {
                let ty = quote::ToTokens::to_token_stream(&t.ty).to_string();
                out.aliases.push((t.ident.to_string(), ty));
            }
            syn::Item::Const(c) => {
                let ty = quote::ToTokens::to_token_stream(&c.ty).to_string();
                out.consts.push((c.ident.to_string(), ty));
            }
            syn::Item::Static(st) if matches!(st.mutability, syn::StaticMutability::None) => {
                let ty = quote::ToTokens::to_token_stream(&st.ty).to_string();
                out.consts.push((st.ident.to_string(), ty));
            }
            syn::Item::Enum(e) => {
                if let Some(vs) = unit_variants(e) {
                    out.enums.push((e.ident.to_string(), vs));
                }
            }
            syn::Item::Struct(st) if derives_differentiable(&st.attrs) => {
                if let syn::Fields::Named(f) = &st.fields {
                    let fields = f
                        .named
                        .iter()
                        .map(|f| FieldInfo {
                            name: f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default(),
                            ty: quote::ToTokens::to_token_stream(&f.ty).to_string(),
                            constant: crate::derive::is_constant(&f.attrs).unwrap_or(false),
                        })
                        .collect();
                    out.structs.push((st.ident.to_string(), fields));
                }
            }
            syn::Item::Mod(m) => {
                let name = syn::ext::IdentExt::unraw(&m.ident).to_string();
                if m.content.is_none() {
                    let path = m.attrs.iter().find_map(|a| match &a.meta {
                        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                            syn::Expr::Lit(syn::ExprLit {
                                lit: syn::Lit::Str(s),
                                ..
                            }) => Some(s.value()),
                            _ => None,
                        },
                        _ => None,
                    });
                    out.ext_mods.push((name.clone(), path));
                }
                out.mods.push(name);
                if let Some((_, items)) = &m.content {
                    chain.push(m.ident.to_string());
                    collect(items, out, ruled, chain);
                    chain.pop();
                }
            }
            _ => {}
        }
    }
}

/// The function `f` as the index records it.
fn collect_fn(f: &syn::ItemFn, out: &mut FileFns, ruled: &mut Vec<String>) {
    let mut differentiable = false;
    let mut linear = vec![];
    let mut wrt = vec![];
    let mut attributed = false;
    for a in &f.attrs {
        match attr_name(a).as_deref() {
            Some("differentiable") => {
                differentiable = true;
                attributed = true;
                wrt = wrt_positions(a, &f.sig);
            }
            Some("linear") => {
                differentiable = true;
                linear = linear_positions(a, &f.sig);
            }
            Some("custom_jvp") => {
                if let Ok(target) = a.parse_args::<syn::Ident>() {
                    ruled.push(syn::ext::IdentExt::unraw(&target).to_string());
                }
            }
            _ => {}
        }
    }
    let uses_f32 = crate::f32s::mentions_f32(quote::ToTokens::to_token_stream(f));
    let ret = match &f.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, t) => Some(quote::ToTokens::to_token_stream(t).to_string()),
    };
    out.fns.push((
        syn::ext::IdentExt::unraw(&f.sig.ident).to_string(),
        FnInfo {
            differentiable,
            arity: f.sig.inputs.len(),
            ret,
            params: f
                .sig
                .inputs
                .iter()
                .map(|a| match a {
                    syn::FnArg::Typed(pt) => quote::ToTokens::to_token_stream(&pt.ty).to_string(),
                    syn::FnArg::Receiver(_) => "self".to_string(),
                })
                .collect(),
            uses_f32,
            inline: (attributed && linear.is_empty() && crate::inline::inlinable(f))
                .then(|| quote::ToTokens::to_token_stream(f).to_string()),
            wrt: if linear.is_empty() { wrt } else { vec![] },
            residuals: attributed && linear.is_empty() && !uses_f32,
            linear,
        },
    ));
}

/// The names a `use` tree imports from other crates (`root`: the tree's
/// first segment is still to come).
fn foreign_names(t: &syn::UseTree, root: bool, out: &mut Vec<String>) {
    match t {
        syn::UseTree::Path(p) => {
            let local = ["crate", "self", "super"].contains(&p.ident.to_string().as_str());
            if !(root && local) {
                foreign_names(&p.tree, false, out);
            }
        }
        syn::UseTree::Name(n) if !root => out.push(n.ident.to_string()),
        syn::UseTree::Rename(r) if !root => out.push(r.rename.to_string()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                foreign_names(t, root, out);
            }
        }
        _ => {}
    }
}

/// The words right after a word `fn` in `text`, across white space (a raw
/// identifier without its `r#`): the names of all functions, nested ones
/// and those in macros included, and of any such pair in a comment or a
/// string (an over-count, which the index's users take as doubt). Read from
/// the text rather than the tokens: walking a file's tokens crosses the
/// proc-macro bridge once per token.
fn fn_words(text: &str, out: &mut Vec<String>) {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut at = 0;
    while let Some(k) = text[at..].find("fn") {
        let start = at + k;
        at = start + 2;
        if text[..start].chars().next_back().is_some_and(is_word) {
            continue;
        }
        let after = &text[at..];
        let trimmed = after.trim_start();
        if trimmed.len() == after.len() {
            continue;
        }
        let trimmed = trimmed.strip_prefix("r#").unwrap_or(trimmed);
        let name: String = trimmed.chars().take_while(|c| is_word(*c)).collect();
        if name.chars().next().is_some_and(|c| !c.is_ascii_digit()) {
            out.push(name);
        }
    }
}

/// The names a `use` tree imports with their full paths (`prefix` the
/// segments above `t`, `a::b::`); sets `globs` at a `*`.
fn use_paths(t: &syn::UseTree, prefix: &str, out: &mut Vec<(String, String)>, globs: &mut bool) {
    match t {
        syn::UseTree::Path(p) => use_paths(&p.tree, &format!("{prefix}{}::", p.ident), out, globs),
        syn::UseTree::Name(n) if n.ident != "self" => {
            out.push((n.ident.to_string(), format!("{prefix}{}", n.ident)))
        }
        syn::UseTree::Rename(r) if r.ident != "self" => {
            out.push((r.rename.to_string(), format!("{prefix}{}", r.ident)))
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out, globs);
            }
        }
        syn::UseTree::Glob(_) => *globs = true,
        syn::UseTree::Name(_) | syn::UseTree::Rename(_) => {}
    }
}

/// The variants and discriminants of an enum without fields (`None` if a
/// variant has fields or a discriminant is not an integer literal).
fn unit_variants(e: &syn::ItemEnum) -> Option<Variants> {
    let mut next = 0i64;
    let mut out = vec![];
    for v in &e.variants {
        if !matches!(v.fields, syn::Fields::Unit) {
            return None;
        }
        if let Some((_, d)) = &v.discriminant {
            next = match d {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse().ok()?,
                syn::Expr::Unary(syn::ExprUnary {
                    op: syn::UnOp::Neg(_),
                    expr,
                    ..
                }) => match &**expr {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => -i.base10_parse::<i64>().ok()?,
                    _ => return None,
                },
                _ => return None,
            };
        }
        out.push((v.ident.to_string(), next));
        next = next.checked_add(1)?;
    }
    Some(out)
}

/// Whether `#[derive(..)]` among `attrs` names `Differentiable`.
fn derives_differentiable(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            let mut yes = false;
            let _ = a.parse_nested_meta(|m| {
                yes |= m
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "Differentiable");
                Ok(())
            });
            yes
        })
}

/// The last segment of an attribute's path (`linad::differentiable` ->
/// `differentiable`).
fn attr_name(a: &syn::Attribute) -> Option<String> {
    a.path().segments.last().map(|s| s.ident.to_string())
}

/// Whether `attrs` hold `#[differentiable]` (any path ending in it).
fn marked(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| attr_name(a).as_deref() == Some("differentiable"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with a byte order mark and a `#!` line is read as
    /// `syn::parse_file` reads it; an inner attribute is not a `#!` line.
    #[test]
    fn byte_order_mark_and_shebang_lines_are_skipped() {
        let text = "\u{feff}#!/usr/bin/env run-cargo-script\nfn a() {}\nfn b() { a() }";
        let fns = parse_fns(text).expect("the file parses");
        assert!(fns.fns.iter().any(|(n, _)| n == "a") && fns.fns.iter().any(|(n, _)| n == "b"));
        assert!(fns.fn_words.iter().any(|w| w == "b"));
        let inner = parse_fns("#![allow(dead_code)]\nfn c() {}").expect("the file parses");
        assert!(inner.fns.iter().any(|(n, _)| n == "c"));
        assert!(parse_fns("fn d( {").is_none());
    }

    /// The index of a file is the same whether plain functions' bodies are
    /// parsed or skipped ([`without_plain_bodies`]): on the sources of this
    /// repository (the compiler, the runtime, the examples and tests with
    /// their `#[differentiable]` functions, rules, `f32` and methods) and on
    /// a file of edge cases.
    #[test]
    fn skipping_plain_bodies_keeps_the_index() {
        let full = |text: &str| index(text, &syn::parse_file(text).expect("a file"));
        let edge = "type F = fn(f64) -> f64;
            fn make() -> fn(f64) -> f64 { fn inner(x: f64) -> f64 { x } inner }
            pub fn plain(x: f64) -> f64 { let v = x as f32; v as f64 }
            #[linad::differentiable(wrt(x))] fn d(x: f64, y: f64) -> f64 { x * y }
            #[cfg_attr(all(), differentiable)] fn c(x: f64) -> f64 { x }
            struct S { f: fn(f64) -> f64 }
            impl S { fn m(&self) -> f64 { 1.0 } #[differentiable] fn a(x: f64) -> f64 { x } }
            trait T { fn t(&self) -> f64 { 2.0 } }
            macro_rules! mk { () => { fn made() -> f64 { 1.0 } } }
            extern \"C\" { fn ext(x: f64) -> f64; }
            mod inner { #[differentiable] pub fn sq(x: f64) -> f64 { x * x } fn h() {} }
            fn g<const N: usize>() -> [f64; N] { [0.0; N] }";
        let mut texts = vec![edge.to_string()];
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for dir in [
            "ad-core-ir/src",
            "ad-macros/src",
            "ad-runtime/src",
            "examples",
            "tests",
        ] {
            let mut files = vec![];
            rs_files(&root.join(dir), &mut files, 0);
            texts.extend(files.iter().filter_map(|f| std::fs::read_to_string(f).ok()));
        }
        // (Deeply nested test inputs need more than a test thread's stack.)
        let compare = move || {
            let mut compared = 0;
            for text in &texts {
                if syn::parse_file(text).is_err() {
                    continue;
                }
                let tokens: proc_macro2::TokenStream = text.parse().expect("tokens");
                let rewritten = without_plain_bodies(tokens, true);
                assert!(syn::parse2::<syn::File>(rewritten).is_ok(), "{text}");
                let skipped = parse_fns(text).expect("the file parses");
                assert_eq!(skipped, full(text));
                compared += 1;
            }
            compared
        };
        let compared = std::thread::Builder::new()
            .stack_size(1 << 30)
            .spawn(compare)
            .expect("a thread")
            .join()
            .expect("the comparison");
        assert!(compared > 100, "{compared} files");
    }

    /// Functions marked `#[differentiable]` inside `impl` blocks that are
    /// not, with whether the block implements a trait; a
    /// `#[differentiable] impl`'s methods are free functions instead.
    #[test]
    fn marked_functions_of_plain_impls() {
        let fns = parse_fns(
            "impl A { #[differentiable] fn f(x: f64) -> f64 { x } fn g() {} }
             trait T { fn h(x: f64) -> f64; }
             impl T for A { #[differentiable] fn h(x: f64) -> f64 { x } }
             #[differentiable] impl B { #[differentiable] fn k(x: f64) -> f64 { x } }",
        )
        .expect("the file parses");
        assert_eq!(
            fns.assoc,
            [("f".to_string(), false), ("h".to_string(), true)]
        );
        assert_eq!(fns.trait_fns, ["h"]);
        assert!(fns.fns.iter().all(|(n, _)| n != "f" && n != "h"));
    }

    /// What a bare name may resolve to: `use` leaves with their paths and
    /// modules, globs, item macros, and every name after `fn` (nested in
    /// bodies too).
    #[test]
    fn imports_and_nested_functions() {
        let fns = parse_fns(
            "use inner::sq;
             use crate::m::{a as b, c::*};
             mod inner {
                 use super::other::g;
                 pub fn sq(x: f64) -> f64 { fn nested(t: f64) -> f64 { t } nested(x) * x }
             }",
        )
        .unwrap();
        assert_eq!(
            fns.import_paths,
            [
                ("sq".to_string(), "inner::sq".to_string(), vec![]),
                ("b".to_string(), "crate::m::a".to_string(), vec![]),
                (
                    "g".to_string(),
                    "super::other::g".to_string(),
                    vec!["inner".to_string()]
                ),
            ]
        );
        let imported: Vec<&str> = fns
            .import_paths
            .iter()
            .map(|(n, _, _)| n.as_str())
            .collect();
        assert_eq!(imported, ["sq", "b", "g"]);
        assert!(fns.globs && !fns.item_macros);
        assert_eq!(fns.fn_words, ["sq", "nested"]);
        assert_eq!(
            fns.fn_modules,
            [("sq".to_string(), vec!["inner".to_string()])]
        );
        let m = parse_fns("macro_rules! make { () => { fn made() {} } } make!();").unwrap();
        assert!(m.item_macros && !m.globs);
    }

    #[test]
    fn kinds_arity_and_results() {
        let fns = parse_fns(
            "use statrs::function::erf::{erf, erfc as c};
             use crate::m::local;
             fn plain(a: f64) -> usize { 1 }
             #[differentiable] fn d(x: f64, w: &Array1<f64>) -> Array1<f64> { w * x }
             #[linad::linear(x)] fn l(x: f64) -> f64 { x }
             #[differentiable(dump, wrt(w, b))] fn lay(x: f64, w: f64, b: f64) -> f64 { w * x + b }
             fn ruled(x: f64) -> f64 { x }
             #[custom_jvp(ruled)] fn rule(x: f64, d_x: f64) -> (f64, f64) { (x, d_x) }
             mod inner { pub fn nothing() {} }",
        )
        .unwrap();
        let get = |n: &str| fns.fns.iter().find(|(m, _)| m == n).unwrap().1.clone();
        assert_eq!(fns.mods, ["inner"]);
        assert_eq!(fns.foreign, ["erf", "c"]);
        assert!(!get("plain").differentiable);
        assert_eq!(get("plain").ret.as_deref(), Some("usize"));
        assert!(get("d").differentiable);
        assert_eq!(get("d").arity, 2);
        assert_eq!(get("d").ret.as_deref(), Some("Array1 < f64 >"));
        assert!(get("l").differentiable);
        assert_eq!(get("l").linear, [0]);
        assert!(get("l").wrt.is_empty() && get("d").wrt.is_empty());
        assert_eq!(get("lay").wrt, [1, 2]);
        assert!(get("d").linear.is_empty());
        assert!(get("ruled").differentiable);
        assert_eq!(get("nothing").ret, None);
    }

    /// The building blocks of a function nothing else in the crate names
    /// are not emitted, nor the public derivatives the crate does not name;
    /// everything of a called, exported or unindexed function is.
    #[test]
    fn building_blocks_only_for_possible_callers() {
        use crate::test_crate::TestCrate;
        let items = [
            "#[differentiable] fn alone(x: f64) -> f64 { x.sin() * x }",
            "#[differentiable] fn called(x: f64) -> f64 { x.exp() }",
            "#[differentiable] fn caller(x: f64) -> f64 { called(x) * 2.0 }",
            "#[differentiable] pub fn exported(x: f64) -> f64 { x.cos() }",
            "#[differentiable(reverse)] fn back(x: f64) -> f64 { x.ln() }",
            "#[differentiable(wrt(a))] fn some(a: f64, b: f64) -> f64 { a * b.sin() }",
        ];
        // What the crate calls of them.
        let uses = "fn main() { alone_vjp(0.5, 1.0); exported_jvp(1.0, 1.0); back_pullback(2.0);
                     some_vjp(1.0, 2.0, 1.0); caller_jvp(1.0, 1.0); }";
        let source = items.join("\n") + "\n" + uses;
        // The attribute's arguments go to the macro, the rest is the item.
        let has = |krate: &TestCrate, item: &str, name: &str| {
            let (attr, rest) = item.split_once(']').unwrap();
            let args = attr.trim_start_matches("#[differentiable");
            let args = args
                .strip_prefix('(')
                .and_then(|a| a.strip_suffix(')'))
                .unwrap_or("");
            let idents = krate.expand_idents_with(args.parse().unwrap(), rest.parse().unwrap());
            idents.iter().any(|i| i == name)
        };
        let whole = TestCrate::whole("blocks-whole", &source);
        // The public derivatives the crate names, and what they call.
        assert!(has(&whole, items[0], "alone_vjp"));
        for unused in [
            "alone_jvp",
            "alone_linearize",
            "alone_pullback",
            "__linad_alone_jvp",
        ] {
            assert!(!has(&whole, items[0], unused), "{unused}");
        }
        assert!(!has(&whole, items[0], "__linad_alone_lin_at"));
        // An exported function and a called one keep every item.
        for item in ["exported_vjp", "exported_linearize", "exported_pullback"] {
            assert!(has(&whole, items[3], item), "{item}");
        }
        assert!(has(&whole, items[1], "called_linearize"));
        for block in ["primal", "lin", "lin_t", "fwdres", "linres_t"] {
            let name = |f: &str| format!("__linad_{f}_{block}");
            assert!(!has(&whole, items[0], &name("alone")), "{block}");
            assert!(has(&whole, items[1], &name("called")), "{block}");
            assert!(has(&whole, items[3], &name("exported")), "{block}");
        }
        // One mode: the pullback, not the forward mode it does not have.
        assert!(has(&whole, items[4], "back_pullback"));
        assert!(has(&whole, items[4], "__linad_back_lin_t_at"));
        assert!(!has(&whole, items[4], "__linad_back_jvp"));
        assert!(!has(&whole, items[4], "__linad_back_lin_at"));
        // `wrt`: only the restricted set, for the public items.
        assert!(has(&whole, items[5], "some_vjp") && !has(&whole, items[5], "some_jvp"));
        assert!(has(&whole, items[5], "__linadw_some_fwd"));
        assert!(!has(&whole, items[5], "__linad_some_fwd"));
        assert!(!has(&whole, items[5], "__linadw_some_lin"));
        drop(whole);
        // A file some other root may load as a module: everything.
        let part = TestCrate::new("blocks-part", &source);
        assert!(has(&part, items[0], "__linad_alone_lin_t"));
        assert!(has(&part, items[0], "alone_linearize"));
        assert!(has(&part, items[5], "__linad_some_fwd"));
    }

    #[test]
    fn words_over_count_identifiers() {
        let w = words("fn f(x: f64) { g(x) } // f again\n\"f\" r#f é_f");
        assert_eq!(w["f"], 4);
        assert_eq!(w["g"], 1);
        assert_eq!(w["é_f"], 1);
    }

    #[test]
    fn nothing_is_known_outside_an_expansion() {
        assert_eq!(lookup("kinds_arity_and_results"), None);
    }

    #[test]
    fn the_expanding_file_first_then_the_crate() {
        let dir = std::env::temp_dir().join(format!("linad-crate-fns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let here = dir.join("here.rs");
        std::fs::write(&here, "#[differentiable] fn g(x: f64) -> f64 { x }\nfn twice(a: f64) -> f64 { a }\nmod m { fn twice(a: f64, b: f64) -> f64 { a } }\nmod helpers;\n#[path = \"other/place.rs\"] mod placed;").unwrap();
        std::fs::write(
            dir.join("helpers.rs"),
            "pub fn h(a: f64, b: f64, c: f64) -> (f64, f64) { (a, b) }",
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("other")).unwrap();
        std::fs::write(
            dir.join("other/place.rs"),
            "#[differentiable] pub fn p(v: &Array1<f64>) -> Array1<f64> { v * 2.0 }",
        )
        .unwrap();
        let scope = Scope::enter(Some(here.clone()));
        assert_eq!(
            lookup("g").map(|i| (i.differentiable, i.arity)),
            Some((true, 1))
        );
        assert_eq!(
            lookup("twice"),
            None,
            "two definitions in the file: unknown"
        );
        assert_eq!(lookup("absent"), None);
        assert!(is_module("m") && !is_module("absent"));
        // Modules loaded from other files (`mod helpers;`, `#[path]`).
        assert_eq!(
            lookup("h").map(|i| (i.differentiable, i.arity)),
            Some((false, 3))
        );
        assert_eq!(
            lookup("p").and_then(|i| i.ret).as_deref(),
            Some("Array1 < f64 >")
        );
        // Answers hold for one expansion; the next sees a changed file.
        std::fs::write(&here, "fn g(x: f64, y: f64) -> f64 { x }").unwrap();
        assert_eq!(lookup("g").map(|i| i.arity), Some(1));
        drop(scope);
        let _scope = Scope::enter(Some(here.clone()));
        assert_eq!(
            lookup("g").map(|i| (i.differentiable, i.arity)),
            Some((false, 2))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

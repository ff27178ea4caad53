//! Loading experiment files: TOML → presets merged underneath → `--set` overrides on top → typed schema →
//! validated `Experiment`. Every error names the file, the line and the key.

mod build;
mod homa;
mod jobs;
pub(crate) mod limits;
mod linkguardian;
mod mechanisms;
mod paths;
mod pcap;
mod presets;
mod qjump;
mod receiver_driven;
pub mod schema;
mod sqr;
mod transport;
pub mod units;
mod workload;

pub use build::{build, check_topology_file, Experiment, OutputFormat};
pub use schema::ExperimentConfig;

use std::fmt;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// A configuration error: where (file, line, key) and what was expected.
#[derive(Debug, Clone)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub msg: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.msg)
    }
}
impl std::error::Error for ConfigError {}

/// A key path inside the document, e.g. `workload[0].load`.
#[derive(Debug, Clone, Default)]
pub struct KeyPath(pub Vec<String>);

impl KeyPath {
    pub fn parse(s: &str) -> KeyPath {
        KeyPath(s.replace('[', ".").replace(']', "").split('.').filter(|x| !x.is_empty()).map(String::from).collect())
    }
}
impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if s.parse::<usize>().is_ok() {
                write!(f, "[{s}]")?;
            } else if i == 0 {
                write!(f, "{s}")?;
            } else {
                write!(f, ".{s}")?;
            }
        }
        Ok(())
    }
}

/// A document being loaded: its text (for line numbers) and where it came from.
pub struct Source {
    pub origin: String,
    pub text: String,
    pub base_dir: PathBuf,
}

impl Source {
    pub fn from_file(path: &Path) -> Result<Source, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.display().to_string(),
            line: None,
            key: None,
            msg: format!("cannot read the experiment file: {e}"),
        })?;
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Source { origin: path.display().to_string(), text, base_dir })
    }

    /// An error at `key`, with the line where that key (or its nearest existing parent) is written.
    pub fn error(&self, key: &KeyPath, msg: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.origin.clone(),
            line: locate(&self.text, key),
            key: (!key.0.is_empty()).then(|| key.to_string()),
            msg: msg.into(),
        }
    }
}

/// 1-based line of the deepest part of `key` present in `text`.
fn locate(text: &str, key: &KeyPath) -> Option<usize> {
    use toml_edit::{ArrayOfTables, ImDocument, Item, TableLike, Value as V};
    enum Node<'a> {
        Table(&'a dyn TableLike),
        Tables(&'a ArrayOfTables),
        Value(&'a V),
    }
    fn node(item: &Item) -> Option<Node<'_>> {
        match item {
            Item::Table(t) => Some(Node::Table(t)),
            Item::ArrayOfTables(a) => Some(Node::Tables(a)),
            Item::Value(V::InlineTable(t)) => Some(Node::Table(t)),
            Item::Value(v) => Some(Node::Value(v)),
            Item::None => None,
        }
    }
    let doc = ImDocument::parse(text.to_owned()).ok()?;
    let mut span = None;
    let mut cur = Node::Table(doc.as_table());
    for seg in &key.0 {
        let next = match (&cur, seg.parse::<usize>()) {
            (Node::Tables(a), Ok(i)) => a.get(i).map(|t| (t.span(), Some(Node::Table(t)))),
            (Node::Value(V::Array(a)), Ok(i)) => a.get(i).map(|v| (v.span(), Some(Node::Value(v)))),
            (Node::Table(t), _) => t.get_key_value(seg).map(|(k, v)| (k.span(), node(v))),
            _ => None,
        };
        match next {
            Some((s, n)) => {
                span = s.or(span);
                match n {
                    Some(n) => cur = n,
                    None => break,
                }
            }
            None => break,
        }
    }
    span_to_line(text, span)
}

fn span_to_line(text: &str, span: Option<std::ops::Range<usize>>) -> Option<usize> {
    span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
}

/// Apply `key.path=value` overrides (value in TOML syntax; a bare word is taken as a string).
fn apply_set(root: &mut Table, set: &str) -> Result<(), String> {
    let (k, v) = set.split_once('=').ok_or_else(|| format!("--set expects key=value, found \"{set}\""))?;
    let value: Value = match format!("v = {v}").parse::<Table>() {
        Ok(mut t) => t.remove("v").expect("parsed"),
        Err(_) => Value::String(v.to_string()),
    };
    let path = KeyPath::parse(k.trim());
    if path.0.is_empty() {
        return Err(format!("--set has an empty key in \"{set}\""));
    }
    let mut cur = root;
    for (i, seg) in path.0.iter().enumerate() {
        let last = i + 1 == path.0.len();
        if last {
            cur.insert(seg.clone(), value);
            return Ok(());
        }
        let next_is_index = path.0[i + 1].parse::<usize>().is_ok();
        let entry = cur.entry(seg.clone()).or_insert_with(|| Value::Table(Table::new()));
        if next_is_index {
            let idx: usize = path.0[i + 1].parse().unwrap();
            let arr = entry.as_array_mut().ok_or_else(|| format!("--set {k}: `{seg}` is not a list"))?;
            let t = arr
                .get_mut(idx)
                .and_then(Value::as_table_mut)
                .ok_or_else(|| format!("--set {k}: `{seg}` has no table at index {idx}"))?;
            if i + 2 == path.0.len() {
                return Err(format!("--set {k}: cannot replace a whole list element"));
            }
            // Skip the index segment.
            let rest = KeyPath(path.0[i + 2..].to_vec()).to_string();
            return apply_set(t, &format!("{rest}={v}"));
        }
        cur = entry.as_table_mut().ok_or_else(|| format!("--set {k}: `{seg}` is not a table"))?;
    }
    Ok(())
}

fn merge_under(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge_under(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Parse, merge the preset, apply overrides and deserialize. Returns the typed config and the resolved
/// table (for the config echo in summary.json).
pub fn parse(src: &Source, sets: &[String]) -> Result<(ExperimentConfig, Table), ConfigError> {
    let user: Table = src.text.parse().map_err(|e: toml::de::Error| ConfigError {
        file: src.origin.clone(),
        line: e.span().map(|s| src.text[..s.start].matches('\n').count() + 1),
        key: None,
        msg: e.message().to_string(),
    })?;
    resolve(src, user, sets)
}

/// Merge the preset under an already-parsed table, apply overrides and deserialize.
pub fn resolve(src: &Source, user: Table, sets: &[String]) -> Result<(ExperimentConfig, Table), ConfigError> {
    let mut user = user;
    for s in sets {
        apply_set(&mut user, s).map_err(|m| ConfigError { file: src.origin.clone(), line: None, key: None, msg: m })?;
    }
    let preset = user.get("topology").and_then(|t| t.get("preset")).map(|p| p.as_str().map(str::to_owned));
    let mut resolved = match preset {
        None => Table::new(),
        Some(None) => return Err(src.error(&KeyPath::parse("topology.preset"), "expected a preset name (a string)")),
        Some(Some(name)) => presets::table(&name).ok_or_else(|| {
            src.error(
                &KeyPath::parse("topology.preset"),
                format!("unknown preset \"{name}\"; known: {}", presets::NAMES.join(", ")),
            )
        })?,
    };
    // A preset's transport settings belong to its transport: a file that picks another kind starts afresh
    // (the lg-* presets' DCTCP keys would not apply to RDMA).
    let kind = |t: &Table| t.get("transport").and_then(|t| t.get("kind")).and_then(|k| k.as_str()).map(str::to_owned);
    if let (Some(mine), Some(theirs)) = (kind(&user), kind(&resolved)) {
        if mine != theirs {
            resolved.remove("transport");
        }
    }
    merge_under(&mut resolved, user);
    let de = Value::Table(resolved.clone());
    let cfg: ExperimentConfig = serde_path_to_error::deserialize(de).map_err(|e| {
        let mut key = KeyPath(
            e.path()
                .iter()
                .filter_map(|s| match s {
                    serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                    serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                    _ => None,
                })
                .collect(),
        );
        let msg = e.inner().message().trim().to_string();
        // For an unknown key, point at the key itself.
        if let Some(name) = msg.strip_prefix("unknown field `").and_then(|r| r.split('`').next()) {
            if key.0.last().map(String::as_str) != Some(name) {
                key.0.push(name.to_string());
            }
        }
        src.error(&key, msg)
    })?;
    Ok((cfg, resolved))
}

/// Load an experiment file with overrides and build it.
pub fn load(path: &Path, sets: &[String]) -> Result<Experiment, ConfigError> {
    let src = Source::from_file(path)?;
    let (cfg, resolved) = parse(&src, sets)?;
    build(&src, cfg, resolved)
}

/// Load an experiment from an already-parsed table, e.g. a Python dict (errors name keys, not lines).
pub fn load_table(table: Table, origin: &str, base_dir: &Path, sets: &[String]) -> Result<Experiment, ConfigError> {
    let src = Source { origin: origin.to_string(), text: String::new(), base_dir: base_dir.to_path_buf() };
    let (cfg, resolved) = resolve(&src, table, sets)?;
    build(&src, cfg, resolved)
}

/// Load an experiment from TOML text (paths resolve against `base_dir`).
pub fn load_str(text: &str, origin: &str, base_dir: &Path, sets: &[String]) -> Result<Experiment, ConfigError> {
    let src = Source { origin: origin.to_string(), text: text.to_string(), base_dir: base_dir.to_path_buf() };
    let (cfg, resolved) = parse(&src, sets)?;
    build(&src, cfg, resolved)
}

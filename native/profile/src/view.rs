//! The narrow view of an XSpace that the analysis consumes, one line at a time: the decoder (decode.rs) fills
//! one line's columns, hands them to the visitor, and reuses them for the next line. It keeps only the stats the
//! analysis reads, so a capture decoded is a fraction of its size in memory.

use std::collections::HashMap;
use std::sync::Arc;

/// A stat value: numbers for the numeric oneof members, strings for str_value, ref_value resolved to its name.
#[derive(Clone, Debug, PartialEq)]
pub enum StatValue {
    Num(f64),
    Str(String),
}

/// What the analysis needs of one event metadata entry, resolved once per plane.
#[derive(Clone, Debug, Default)]
pub struct EventInfo {
    /// Shared with the string table (a TPU op's name is its whole HLO text, and every chip's plane names it).
    pub name: Arc<str>,
    /// Index of `name` in the thread's string table (PlaneView::strings).
    pub key: i32,
    /// Metadata-level stats (TPU captures carry these per op): hlo_category (a string stat only).
    pub category: Option<String>,
    /// flops / bytes_accessed (numeric stats only).
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    /// The op's short name on TPU (`copy-start.4`); '' when absent.
    pub display_name: Arc<str>,
    /// The program_id stat, as exact decimal digits.
    pub program: Option<String>,
}

impl EventInfo {
    /// An entry with a name only (most are).
    pub fn plain(name: Arc<str>, key: i32) -> Self {
        EventInfo { name, key, display_name: Arc::from(""), ..Default::default() }
    }
}

/// A program's HLO, from the /host:metadata plane (an "Hlo Proto" stat of its metadata).
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// Its id as exact digits (the metadata id where the HLO names none).
    pub key: String,
    pub name: String,
    /// Category by instruction name.
    pub categories: std::sync::Arc<crate::hlo_categories::Categories>,
}

/// Event metadata by id.
pub type MetaTable = IdTable<EventInfo>;

/// A table keyed by XPlane metadata id: a vector for the small dense ids XLA writes (counting from 1), so that a
/// lookup per event is an index, and a map for any other id. It iterates dense ids ascending, then the others in
/// the order they were first set.
#[derive(Debug, Clone)]
pub struct IdTable<T> {
    dense: Vec<Option<T>>,
    sparse: Vec<(i64, T)>,
    sparse_at: HashMap<i64, usize>,
}

/// Ids below this live in the vector.
const DENSE_IDS: i64 = 1 << 20;

impl<T> Default for IdTable<T> {
    fn default() -> Self {
        IdTable { dense: Vec::new(), sparse: Vec::new(), sparse_at: HashMap::new() }
    }
}

impl<T> IdTable<T> {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn get(&self, id: &i64) -> Option<&T> {
        let id = *id;
        if (0..DENSE_IDS).contains(&id) {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse_at.get(&id).map(|&k| &self.sparse[k].1)
        }
    }

    /// Sets `id` (an id set before keeps its place in the iteration order).
    pub fn insert(&mut self, id: i64, v: T) {
        if (0..DENSE_IDS).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(v);
        } else if let Some(&k) = self.sparse_at.get(&id) {
            self.sparse[k].1 = v;
        } else {
            self.sparse_at.insert(id, self.sparse.len());
            self.sparse.push((id, v));
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (i64, &T)> {
        let dense = self.dense.iter().enumerate().filter_map(|(i, v)| v.as_ref().map(|v| (i as i64, v)));
        dense.chain(self.sparse.iter().map(|(id, v)| (*id, v)))
    }
}

impl<T> FromIterator<(i64, T)> for IdTable<T> {
    fn from_iter<I: IntoIterator<Item = (i64, T)>>(iter: I) -> Self {
        let mut t = IdTable::new();
        for (id, v) in iter {
            t.insert(id, v);
        }
        t
    }
}

pub struct PlaneView<'a> {
    /// Position of the plane in the file (0-based).
    pub index: usize,
    pub name: String,
    /// Number of XLine fields of the plane.
    pub line_count: usize,
    pub meta: MetaTable,
    /// The plane's own stats, by name.
    pub stats: HashMap<String, StatValue>,
    /// The programs' HLO (entries of the /host:metadata plane).
    pub programs: Vec<Program>,
    /// Interned strings; EventInfo::key and LineView::op/module/category/program index into it.
    pub strings: &'a [Arc<str>],
}

/// Kinds of step-grouping stats, in LineView::tag_kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    Correlation = 9,
    Root = 10,
    ProducerType = 11,
    ProducerId = 12,
    ConsumerType = 13,
    ConsumerId = 14,
    Async = 15,
    GroupId = 16,
}

/// One line's events, columnar. Vectors are exactly `count` long (tag_* are tag_count long).
#[derive(Default, Debug)]
pub struct LineView {
    pub name: String,
    /// display_name, or name when it has none.
    pub display_name: String,
    pub timestamp_ns: f64,
    pub count: usize,
    pub meta_id: Vec<i64>,
    /// Relative to timestamp_ns.
    pub offset_ps: Vec<f64>,
    pub duration_ps: Vec<f64>,
    /// Index into PlaneView::strings of the event's hlo_op / hlo_module / hlo_category / program_id stat, or -1.
    pub op: Vec<i32>,
    pub module: Vec<i32>,
    pub category: Vec<i32>,
    pub program: Vec<i32>,
    /// The event's flops / bytes_accessed / device_offset_ps / device_duration_ps stat, or NaN.
    pub flops: Vec<f64>,
    pub bytes: Vec<f64>,
    pub dev_offset_ps: Vec<f64>,
    pub dev_duration_ps: Vec<f64>,
    /// The step-grouping stats of the line's events (only on planes step grouping reads): entry k is event
    /// tag_event[k]'s stat of kind tag_kind[k], value tag_value[k] (NaN if not a number). Grouped by event, in
    /// event order.
    pub tag_count: usize,
    pub tag_event: Vec<i32>,
    pub tag_kind: Vec<Tag>,
    pub tag_value: Vec<f64>,
}

pub struct SpaceInfo {
    pub hostnames: Vec<String>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

pub trait XSpaceVisitor {
    /// A plane's metadata is known; its lines follow.
    fn plane(&mut self, p: &PlaneView);
    fn line(&mut self, p: &PlaneView, l: &LineView);
}

impl LineView {
    /// Empty, for the next line (the vectors keep their memory).
    pub fn clear(&mut self) {
        self.name.clear();
        self.display_name.clear();
        self.timestamp_ns = 0.0;
        self.count = 0;
        self.tag_count = 0;
        self.meta_id.clear();
        for v in [&mut self.op, &mut self.module, &mut self.category, &mut self.program] {
            v.clear();
        }
        for v in [
            &mut self.offset_ps,
            &mut self.duration_ps,
            &mut self.flops,
            &mut self.bytes,
            &mut self.dev_offset_ps,
            &mut self.dev_duration_ps,
            &mut self.tag_value,
        ] {
            v.clear();
        }
        self.tag_event.clear();
        self.tag_kind.clear();
    }
}

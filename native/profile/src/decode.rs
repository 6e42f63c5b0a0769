//! XSpace (`*.xplane.pb`) decoding into a visitor, one XLine at a time: a port of the streaming decoder
//! (extension/src/core/profiles/stream.ts, xevent.ts) over a file held in memory. Field numbers from
//! tsl/profiler/protobuf/xplane.proto: XSpace = planes (1), errors (2), warnings (3), hostnames (4); XPlane =
//! id (1), name (2), lines (3), event_metadata (4), stat_metadata (5), stats (6); XLine = name (2),
//! timestamp_ns (3), events (4), display_name (11); XEvent = metadata_id (1), offset_ps (2), duration_ps (3),
//! stats (4); XStat = metadata_id (1), double (2), uint64 (3), int64 (4), str (5), bytes (6), ref (7).
//!
//! It accepts what the TypeScript decoder accepts, or less: where a capture is corrupt this one may stop
//! earlier, and the caller hands the capture to the node CLI, whose message is the one users see.

use std::collections::HashMap;

use crate::intern::{FastMap, Interner};
use crate::jsfmt::num_to_string as number_to_string;
use crate::view::{LineView, MetaTable, PlaneView, SpaceInfo, StatValue, XSpaceVisitor};
use crate::wire::{utf8_no_bom, Corrupt, Reader, Res};
use line::{decode_line, kept_of_name, Kept};
use meta::{
    decode_event_meta, decode_stat_meta, js_number_of, meta_info, plain_info, read_stat, MetaEntry, RawStat, RawValue,
    StatNames,
};

mod line;
mod meta;

/// The planes whose events step grouping reads: the host's threads and GPUs.
fn grouping_plane(name: &str) -> bool {
    name == "/host:CPU" || name.starts_with("/device:GPU:")
}

/// The file's strings, and what is derived per string, across all its planes.
struct Strings {
    table: Interner,
    last_number: f64,
    last_number_key: i32,
    key_of_number: FastMap<u64, i32>,
}

impl Strings {
    /// The key of a number's decimal digits, as JS's String(n) writes them.
    fn number_key(&mut self, n: f64) -> i32 {
        if n.to_bits() == self.last_number.to_bits() {
            return self.last_number_key;
        }
        let bits = if n == 0.0 { 0 } else { n.to_bits() };
        let key = match self.key_of_number.get(&bits) {
            Some(&k) => k,
            None => {
                let k = self.table.intern_str(&number_to_string(n));
                self.key_of_number.insert(bits, k);
                k
            }
        };
        self.last_number = n;
        self.last_number_key = key;
        key
    }
}

/// Top-level field scan (stream.ts field()): tag, wire type and payload [start, end).
struct Field {
    field: u64,
    wire: u64,
    start: usize,
    end: usize,
}

/// Why the top-level scan stopped, worded as the TypeScript's FileWindow words it (offsets from the file's start).
#[derive(Debug, Clone, PartialEq)]
pub enum Fail {
    /// A message for the user, after `FILE: `.
    Say(String),
    /// Corrupt inside a plane: the node CLI says where (its messages name offsets this decoder does not track).
    HandOff,
}

impl From<Corrupt> for Fail {
    fn from(_: Corrupt) -> Self {
        Fail::HandOff
    }
}

fn truncated(off: usize, size: usize) -> Fail {
    Fail::Say(format!(
        "the profile is truncated or corrupt: a field at byte {off} runs past the end of the file ({size} bytes)"
    ))
}

/// FileWindow.varint: up to ten bytes; the file ending inside one is a truncation, ten without an end corrupt.
fn top_varint(buf: &[u8], off: usize) -> Result<(u64, usize), Fail> {
    let mut v: u64 = 0;
    for i in 0..10 {
        if off + i >= buf.len() {
            return Err(truncated(off, buf.len()));
        }
        let b = buf[off + i];
        v |= ((b & 0x7f) as u64).wrapping_shl(7 * i as u32);
        if b < 0x80 {
            return Ok((v, off + i + 1));
        }
    }
    Err(Fail::Say(format!("not a valid XSpace profile: invalid varint at byte {off}")))
}

fn field_at(buf: &[u8], off: usize, limit: usize) -> Result<Field, Fail> {
    let (tag, next) = top_varint(buf, off)?;
    let (field, wire) = (tag >> 3, tag & 7);
    if field == 0 || wire == 3 || wire == 4 || wire > 5 {
        if tag >= 1 << 53 {
            return Err(Fail::HandOff);
        }
        return Err(Fail::Say(format!("not a valid XSpace profile: invalid field tag {tag} at byte {off}")));
    }
    let (start, end) = match wire {
        0 => (next, top_varint(buf, next)?.1),
        1 => (next, next + 8),
        5 => (next, next + 4),
        _ => {
            let (len, s) = top_varint(buf, next)?;
            (s, s.saturating_add(len.min(usize::MAX as u64 / 2) as usize))
        }
    };
    if end > limit {
        return Err(if end > buf.len() {
            truncated(off, buf.len())
        } else {
            Fail::Say(
                "the profile is truncated or corrupt: a field at byte {off} runs past the end of its message"
                    .replace("{off}", &off.to_string()),
            )
        });
    }
    Ok(Field { field, wire, start, end })
}

/// Whether the plane at [start, end) is the host's (`/host:CPU`) with a step-root stat (`_r`) in its stat
/// metadata: only then can step grouping find a step, and only then are the grouping stats worth keeping
/// (stream.ts keeps them only where step-roots.ts says so; keeping them anyway would give the same answer).
fn host_roots(buf: &[u8], start: usize, end: usize) -> bool {
    host_roots_or_err(buf, start, end).unwrap_or(true)
}

fn host_roots_or_err(buf: &[u8], start: usize, end: usize) -> Result<bool, Fail> {
    let mut host = false;
    let mut root = false;
    let mut off = start;
    while off < end {
        let f = field_at(buf, off, end)?;
        off = f.end;
        if f.wire != 2 {
            continue;
        }
        if f.field == 2 && buf[f.start..f.end].starts_with(b"/device:TPU:") {
            return Ok(true);
        }
        if f.field == 2 {
            host = &buf[f.start..f.end] == b"/host:CPU";
            // Not the host: its lines need not be walked (nor their pages read in).
            if !host {
                return Ok(false);
            }
        } else if f.field == 5 && !root {
            let mut r = Reader::new(buf, f.start, f.end);
            let mut names = StatNames::new(buf);
            decode_stat_meta(&mut r, &mut names)?;
            root = names.range.values().any(|&(a, b)| &buf[a..b] == b"_r");
        }
    }
    Ok(host && root)
}

impl Strings {
    fn new() -> Self {
        Strings {
            table: Interner::new(),
            last_number: f64::NAN,
            last_number_key: -1,
            key_of_number: FastMap::default(),
        }
    }
}

/// Where a capture's planes lie, and what its top level says, from a scan of its top-level fields only.
pub struct Layout {
    /// Each plane's payload [start, end).
    pub planes: Vec<(usize, usize)>,
    pub info: SpaceInfo,
    /// Whether the step-grouping stats are worth keeping (a host plane has a step-root stat).
    grouping: bool,
    /// Per plane: whether a TPU plane comes before it (step grouping then skips the host's events).
    tpu_before: Vec<bool>,
}

impl Layout {
    pub fn tpu_before(&self, plane: usize) -> bool {
        self.tpu_before.get(plane).copied().unwrap_or(false)
    }
}

/// The top level of the capture in `buf` (stream.ts scanXSpaceFile): its planes, hostnames, errors, warnings.
pub fn scan_xspace(buf: &[u8]) -> Result<Layout, Fail> {
    if buf.is_empty() {
        return Err(Fail::Say("the profile file is empty".into()));
    }
    let mut info = SpaceInfo { hostnames: vec![], errors: vec![], warnings: vec![] };
    let mut planes: Vec<(usize, usize)> = vec![];
    let mut off = 0;
    while off < buf.len() {
        let f = field_at(buf, off, buf.len())?;
        off = f.end;
        if f.wire == 2 && f.field == 1 {
            planes.push((f.start, f.end));
        } else if f.wire == 2 && (2..=4).contains(&f.field) {
            let s = utf8_no_bom(&buf[f.start..f.end]);
            match f.field {
                2 => info.errors.push(s),
                3 => info.warnings.push(s),
                _ => info.hostnames.push(s),
            }
        }
    }
    if planes.is_empty() {
        return Err(Fail::Say("no planes in the profile: not an XSpace file, or an empty capture".into()));
    }
    let grouping = planes.iter().any(|&(s, e)| host_roots(buf, s, e));
    let mut tpu_before = Vec::with_capacity(planes.len());
    let mut seen = false;
    for &(s, e) in &planes {
        tpu_before.push(seen);
        seen = seen || plane_name(buf, s, e).is_some_and(|n| n.starts_with(b"/device:TPU:"));
    }
    Ok(Layout { planes, info, grouping, tpu_before })
}

/// A plane's name field (it comes right after the id in what serializers write); None if it cannot be read.
fn plane_name(buf: &[u8], start: usize, end: usize) -> Option<&[u8]> {
    let mut off = start;
    while off < end {
        let f = field_at(buf, off, end).ok()?;
        if f.wire == 2 && f.field == 2 {
            return Some(&buf[f.start..f.end]);
        }
        off = f.end;
    }
    None
}

/// Decodes planes `range` of the capture into `visitor`, calling `done(start, end)` with each plane's bytes once
/// it has been decoded (the caller may drop them from memory). Planes keep their index in the whole capture.
pub fn decode_planes(
    buf: &[u8],
    layout: &Layout,
    range: std::ops::Range<usize>,
    visitor: &mut dyn XSpaceVisitor,
    done: &mut dyn FnMut(usize, usize),
) -> Result<(), Fail> {
    let mut strings = Strings::new();
    let mut cols = LineView::default();
    for index in range {
        let (start, end) = layout.planes[index];
        decode_plane(buf, index, start, end, visitor, &mut cols, &mut strings, layout.grouping)?;
        done(start, end);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn decode_plane(
    buf: &[u8],
    index: usize,
    start: usize,
    end: usize,
    visitor: &mut dyn XSpaceVisitor,
    cols: &mut LineView,
    strings: &mut Strings,
    grouping: bool,
) -> Res<()> {
    let mut name = String::new();
    let mut lines: Vec<(usize, usize)> = vec![];
    let mut meta = MetaTable::new();
    let mut with_stats: Vec<MetaEntry> = vec![];
    let mut plane_stats: Vec<RawStat> = vec![];
    let mut names = StatNames::new(buf);
    let mut r = Reader::new(buf, start, end);
    while r.pos < end {
        let tag = r.uint32()?;
        let wire = tag & 7;
        if tag >> 3 == 0 || wire == 3 || wire == 4 || wire > 5 {
            return Err(Corrupt);
        }
        if wire != 2 {
            r.skip_type(wire, 0)?;
            continue;
        }
        let e = r.uint32()? as usize + r.pos;
        if e > end {
            return Err(Corrupt);
        }
        let mut fr = Reader::new(buf, r.pos, e);
        match tag >> 3 {
            3 => lines.push((r.pos, e)),
            2 => name = utf8_no_bom(&buf[r.pos..e]),
            4 => {
                let m = decode_event_meta(&mut fr, strings)?;
                if m.stats.is_some() || m.display >= 0 {
                    with_stats.push(m);
                } else {
                    meta.insert(meta_id(m.id)?, plain_info(strings, m.key));
                }
            }
            5 => decode_stat_meta(&mut fr, &mut names)?,
            6 => plane_stats.push(read_stat(&mut fr, e)?),
            _ => {}
        }
        r.pos = e;
    }
    for m in with_stats {
        let id = meta_id(m.id)?;
        let info = meta_info(&m, &names, strings);
        meta.insert(id, info);
    }
    // Kept code by stat metadata id (ids past 2^24 are never kept, as in the TypeScript).
    let group_here = grouping && grouping_plane(&name);
    let mut kept: Vec<Kept> = vec![];
    for (id, &(a, b)) in names.range.iter() {
        let k = kept_of_name(&buf[a..b]);
        let k = if group_here || (k as u8) < Kept::Correlation as u8 { k } else { Kept::No };
        if k != Kept::No && (0..1 << 24).contains(&id) {
            let id = id as usize;
            if id >= kept.len() {
                kept.resize(id + 1, Kept::No);
            }
            kept[id] = k;
        }
    }
    let mut stats = HashMap::new();
    for st in &plane_stats {
        let v = if st.is_ref {
            match &st.value {
                Some(RawValue::Num(n)) => Some(StatValue::Str(names.name(*n))),
                Some(RawValue::Str(s)) => Some(StatValue::Str(names.name(js_number_of(s)))),
                None => None,
            }
        } else {
            st.value.as_ref().map(|v| match v {
                RawValue::Num(n) => StatValue::Num(*n),
                RawValue::Str(s) => StatValue::Str(s.clone()),
            })
        };
        if let Some(v) = v {
            stats.insert(names.name(st.meta), v);
        }
    }
    let mut view =
        PlaneView { index, name, line_count: lines.len(), meta, stats, strings: strings.table.strings(), bytes: buf };
    visitor.plane(&view);
    for &(s, e) in &lines {
        // The view lends the string table, which a line's decoding may add to: taken back, then lent again.
        let PlaneView { index, name, line_count, meta, stats, .. } = view;
        let mut lr = Reader::new(buf, s, e);
        decode_line(&mut lr, cols, &kept, &mut names, strings)?;
        view = PlaneView { index, name, line_count, meta, stats, strings: strings.table.strings(), bytes: buf };
        visitor.line(&view, cols);
    }
    Ok(())
}

/// A metadata id as an IdTable key (ids are integers; a double past 2^63 cannot be one here).
fn meta_id(id: f64) -> Res<i64> {
    if id.trunc() != id || id.abs() >= 9.2e18 {
        return Err(Corrupt);
    }
    Ok(id as i64)
}

//! XSpace (`*.xplane.pb`) decoding into a visitor, one XLine at a time, through a Window of the file. Field
//! numbers from tsl/profiler/protobuf/xplane.proto: XSpace = planes (1), errors (2), warnings (3), hostnames (4);
//! XPlane = id (1), name (2), lines (3), event_metadata (4), stat_metadata (5), stats (6); XLine = name (2),
//! timestamp_ns (3), events (4), display_name (11); XEvent = metadata_id (1), offset_ps (2), duration_ps (3),
//! stats (4); XStat = metadata_id (1), double (2), uint64 (3), int64 (4), str (5), bytes (6), ref (7).
//!
//! Serializers write a plane's lines before its metadata, so a plane is read in two steps: a walk over its fields
//! (noting where each line lies, decoding the metadata), then each line from its offset. Every fault names the
//! file offset it is at.

use std::collections::HashMap;

use crate::hlo_categories::HloDecoder;
use crate::intern::{FastMap, Interner};
use crate::output::types::Hardware;
use crate::source::{Fault, Window};
use crate::view::{LineView, MetaTable, PlaneView, Program, SpaceInfo, XSpaceVisitor};
use crate::wire::{utf8, varint_at, Corrupt, Kind, Reader, Res};
use line::{decode_line, kept_of_name, Kept};
use meta::{decode_event_meta, decode_stat_meta, meta_info, read_stat, MetaEntry, RawStat, StatNames};

mod line;
mod meta;
#[cfg(test)]
mod tests;

/// The planes whose events step grouping reads: the host's threads and GPUs.
fn grouping_plane(name: &str) -> bool {
    name == "/host:CPU" || name.starts_with("/device:GPU:")
}

/// The file's strings, and what is derived per string, across all its planes.
pub(crate) struct Strings {
    table: Interner,
    last_int: Option<(i128, i32)>,
    key_of_int: FastMap<i128, i32>,
}

impl Strings {
    fn new() -> Self {
        Strings { table: Interner::new(), last_int: None, key_of_int: FastMap::default() }
    }

    /// The key of a whole number's decimal digits (program ids, on every GPU kernel and mostly the one before).
    fn int_key(&mut self, v: i128) -> i32 {
        if let Some((last, key)) = self.last_int {
            if last == v {
                return key;
            }
        }
        let key = match self.key_of_int.get(&v) {
            Some(&k) => k,
            None => {
                let k = self.table.intern_str(&v.to_string());
                self.key_of_int.insert(v, k);
                k
            }
        };
        self.last_int = Some((v, key));
        key
    }
}

/// A field: its number, wire type, and payload [start, end) (file offsets; for a varint, the varint).
#[derive(Clone, Copy)]
struct Field {
    at: usize,
    field: u64,
    wire: u8,
    start: usize,
    end: usize,
}

/// The field at file offset `off`, which must end by `limit`.
fn field_at(w: &mut Window, off: usize, limit: usize) -> Result<Field, Fault> {
    let head = w.get_up_to(off, 20)?;
    let n = head.len();
    let past = |k: Kind| match k {
        // The header itself runs past what is there: past the limit, or (where the limit is the file's end) the file.
        Kind::PastEnd { .. } => Kind::PastEnd { end: if off + n >= limit { limit + 1 } else { off + n + 1 } },
        k => k,
    };
    let (tag, p) = varint_at(head, 0, n.min(limit - off)).map_err(|k| Corrupt { at: off, kind: past(k) })?;
    let (field, wire) = (tag >> 3, (tag & 7) as u8);
    if field == 0 || !matches!(wire, 0 | 1 | 2 | 5) {
        return Err(Corrupt { at: off, kind: Kind::BadTag(tag) }.into());
    }
    let room = n.min(limit - off);
    let (start, end) = match wire {
        0 => {
            let (_, q) = varint_at(head, p, room).map_err(|k| Corrupt { at: off, kind: past(k) })?;
            (off + p, off + q)
        }
        1 => (off + p, off + p + 8),
        5 => (off + p, off + p + 4),
        _ => {
            let (len, q) = varint_at(head, p, room).map_err(|k| Corrupt { at: off, kind: past(k) })?;
            let s = off + q;
            (s, s.saturating_add(usize::try_from(len).unwrap_or(usize::MAX)))
        }
    };
    if end > limit {
        return Err(Corrupt { at: off, kind: Kind::PastEnd { end } }.into());
    }
    Ok(Field { at: off, field, wire, start, end })
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
    /// A TPU or GPU plane is in the capture (xprof then takes no steps from the host).
    devices: bool,
}

impl Layout {
    pub fn tpu_before(&self, plane: usize) -> bool {
        self.tpu_before.get(plane).copied().unwrap_or(false)
    }

    /// Whether steps may come from the host's own step annotations: a capture with no TPU or GPU plane whose host
    /// has step roots (xprof's host step events count only where there is no device).
    pub fn host_steps(&self) -> bool {
        self.grouping && !self.devices
    }
}

/// The top level of the capture (read through `w`, a small window): its planes, hostnames, errors, warnings.
pub fn scan_xspace(w: &mut Window) -> Result<Layout, Fault> {
    let size = w.size();
    if size == 0 {
        return Err(Fault::Say("the profile file is empty".into()));
    }
    let mut info = SpaceInfo { hostnames: vec![], errors: vec![], warnings: vec![] };
    let mut planes: Vec<(usize, usize)> = vec![];
    let mut grouping = false;
    let mut tpu_before = vec![];
    let mut tpu = false;
    let mut devices = false;
    let mut off = 0;
    while off < size {
        let f = field_at(w, off, size)?;
        off = f.end;
        if f.wire == 2 && f.field == 1 {
            planes.push((f.start, f.end));
            tpu_before.push(tpu);
            let (host_root, device) = plane_kind(w, f.start, f.end);
            grouping |= host_root;
            tpu |= device == Some(Hardware::Tpu);
            devices |= device.is_some();
        } else if f.wire == 2 && (2..=4).contains(&f.field) {
            let s = utf8(w.get(f.start, f.end)?);
            match f.field {
                2 => info.errors.push(s),
                3 => info.warnings.push(s),
                _ => info.hostnames.push(s),
            }
        }
    }
    if planes.is_empty() {
        return Err(Fault::Say("no planes in the profile: not an XSpace file, or an empty capture".into()));
    }
    // A TPU capture groups its steps otherwise; its host is read as before.
    Ok(Layout { planes, info, grouping: grouping || tpu, tpu_before, devices })
}

/// Of the plane at [start, end): whether it is the host's (`/host:CPU`) with a step-root stat (`_r`) in its stat
/// metadata (only then can step grouping find a step, and only then are the grouping stats worth keeping), and
/// the device it is, if a TPU's or a GPU's. What cannot be read counts as a host with roots: the decode reports
/// the fault.
fn plane_kind(w: &mut Window, start: usize, end: usize) -> (bool, Option<Hardware>) {
    let mut host = false;
    let mut off = start;
    while off < end {
        let Ok(f) = field_at(w, off, end) else { return (true, None) };
        off = f.end;
        if f.wire != 2 {
            continue;
        }
        if f.field == 2 {
            let Ok(name) = w.get(f.start, f.end) else { return (true, None) };
            if name.starts_with(b"/device:TPU:") {
                return (false, Some(Hardware::Tpu));
            }
            if name.starts_with(b"/device:GPU:") {
                return (false, Some(Hardware::Gpu));
            }
            if name != b"/host:CPU" {
                return (false, None);
            }
            host = true;
        } else if host && (f.field == 4 || f.field == 5) {
            // The rest of the plane is its metadata (it lies together after the lines): one read.
            let Ok(rest) = w.get(f.at, end) else { return (true, None) };
            return (names_root_stat(rest).unwrap_or(true), None);
        }
    }
    (false, None)
}

/// Whether any stat_metadata field (5) of these plane fields names a stat `_r` (map entry value 2, name 2).
fn names_root_stat(b: &[u8]) -> Res<bool> {
    let mut r = Reader::new(b, 0, 0, b.len());
    while let Some(mut entry) = r.next_message(5)? {
        while let Some(mut value) = entry.next_message(2)? {
            while let Some((a, z)) = value.next_bytes(2)? {
                if &b[a..z] == b"_r" {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Decodes planes `range` of the capture into `visitor`, calling `done(start, end)` with each plane's bytes once
/// it has been decoded (the caller may drop them from memory). Planes keep their index in the whole capture.
pub fn decode_planes(
    w: &mut Window,
    layout: &Layout,
    range: std::ops::Range<usize>,
    visitor: &mut dyn XSpaceVisitor,
    done: &mut dyn FnMut(usize, usize),
) -> Result<(), Fault> {
    let mut strings = Strings::new();
    let mut cols = LineView::default();
    let mut hlo = HloDecoder::new();
    for index in range {
        let (start, end) = layout.planes[index];
        let mut d = PlaneDecoder { w: &mut *w, cols: &mut cols, strings: &mut strings, hlo: &mut hlo };
        d.plane(index, start, end, visitor, layout.grouping)?;
        done(start, end);
    }
    Ok(())
}

struct PlaneDecoder<'w, 'a> {
    w: &'w mut Window<'a>,
    cols: &'w mut LineView,
    strings: &'w mut Strings,
    hlo: &'w mut HloDecoder,
}

impl PlaneDecoder<'_, '_> {
    fn plane(
        &mut self,
        index: usize,
        start: usize,
        end: usize,
        visitor: &mut dyn XSpaceVisitor,
        grouping: bool,
    ) -> Result<(), Fault> {
        let mut name = String::new();
        let mut lines: Vec<(usize, usize)> = vec![];
        let mut meta = MetaTable::new();
        let mut with_stats: Vec<MetaEntry> = vec![];
        let mut plane_stats: Vec<RawStat> = vec![];
        let mut names = StatNames::default();
        let mut off = start;
        while off < end {
            let f = field_at(self.w, off, end)?;
            off = f.end;
            if f.wire != 2 {
                continue;
            }
            if f.field == 3 {
                lines.push((f.start, f.end));
                continue;
            }
            if !matches!(f.field, 2 | 4 | 5 | 6) {
                continue;
            }
            let b = self.w.get(f.start, f.end)?;
            let mut r = Reader::new(b, f.start, 0, b.len());
            match f.field {
                2 => name = utf8(b),
                4 => {
                    let m = decode_event_meta(&mut r, &mut self.strings.table)?;
                    if m.stats.is_some() || m.display >= 0 {
                        with_stats.push(m);
                    } else {
                        let key = m.key;
                        meta.insert(m.id, crate::view::EventInfo::plain(self.strings.table.shared(key), key));
                    }
                }
                5 => decode_stat_meta(&mut r, &mut names, &mut self.strings.table)?,
                _ => plane_stats.push(read_stat(&mut r)?),
            }
        }
        let mut programs = vec![];
        for m in with_stats {
            let info = meta_info(&m, &names, self.strings);
            if let Some((a, b)) = m
                .stats
                .iter()
                .flatten()
                .find(|s| names.named(s.meta, HLO_PROTO_STAT, &self.strings.table))
                .and_then(|s| s.bin)
            {
                // A program whose HLO cannot be read keeps its ops uncategorized rather than failing the capture.
                if let Ok(p) = self.hlo.decode(self.w.get(a, b)?) {
                    let key = if p.id.is_empty() { m.id.to_string() } else { p.id.clone() };
                    programs.push(Program { key, name: p.name, categories: std::sync::Arc::new(p.categories) });
                }
            }
            meta.insert(m.id, info);
        }
        // Kept code by stat metadata id (ids past 2^24 are never kept).
        let group_here = grouping && grouping_plane(&name);
        let mut kept: Vec<Kept> = vec![];
        for (id, &key) in names.key.iter() {
            let k = kept_of_name(self.strings.table.get(key).as_bytes());
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
            if let Some(v) = st.resolved(&names, &self.strings.table) {
                stats.insert(names.name(st.meta, &self.strings.table), v);
            }
        }
        let line_count = lines.len();
        let mut view =
            PlaneView { index, name, line_count, meta, stats, programs, strings: self.strings.table.strings() };
        visitor.plane(&view);
        for &(s, e) in &lines {
            // The view lends the string table, which a line's decoding may add to: taken back, then lent again.
            let PlaneView { index, name, line_count, meta, stats, programs, .. } = view;
            let b = self.w.get(s, e)?;
            let mut r = Reader::new(b, s, 0, b.len());
            decode_line(&mut r, self.cols, &kept, &mut names, self.strings)?;
            view = PlaneView { index, name, line_count, meta, stats, programs, strings: self.strings.table.strings() };
            visitor.line(&view, self.cols);
        }
        Ok(())
    }
}

const HLO_PROTO_STAT: &str = "Hlo Proto";

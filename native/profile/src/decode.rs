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
use std::sync::Arc;

use crate::intern::Interner;
use crate::jsfmt::num_to_string as number_to_string;
use crate::view::{EventInfo, IdTable, LineView, MetaTable, PlaneView, SpaceInfo, StatValue, Tag, XSpaceVisitor};
use crate::wire::{is_safe_integer, utf8_no_bom, varint_decimal, varint_f64, Corrupt, Reader, Res};

/// Which of an event's stats are kept, by stat name (stream.ts KEPT_STATS); the rest are skipped by length.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Kept {
    No = 0,
    Op,
    Module,
    Category,
    Program,
    Flops,
    Bytes,
    DevOffset,
    DevDuration,
    Correlation,
    Root,
    ProducerType,
    ProducerId,
    ConsumerType,
    ConsumerId,
    Async,
    GroupId,
}

fn kept_of_name(name: &[u8]) -> Kept {
    match name {
        b"hlo_op" => Kept::Op,
        b"hlo_module" => Kept::Module,
        b"hlo_category" => Kept::Category,
        b"program_id" => Kept::Program,
        b"flops" => Kept::Flops,
        b"bytes_accessed" => Kept::Bytes,
        b"device_offset_ps" => Kept::DevOffset,
        b"device_duration_ps" => Kept::DevDuration,
        b"correlation_id" => Kept::Correlation,
        b"_r" => Kept::Root,
        b"_pt" => Kept::ProducerType,
        b"_p" => Kept::ProducerId,
        b"_ct" => Kept::ConsumerType,
        b"_c" => Kept::ConsumerId,
        b"_a" => Kept::Async,
        b"group_id" => Kept::GroupId,
        _ => Kept::No,
    }
}

fn tag_of(k: Kept) -> Tag {
    match k {
        Kept::Correlation => Tag::Correlation,
        Kept::Root => Tag::Root,
        Kept::ProducerType => Tag::ProducerType,
        Kept::ProducerId => Tag::ProducerId,
        Kept::ConsumerType => Tag::ConsumerType,
        Kept::ConsumerId => Tag::ConsumerId,
        Kept::Async => Tag::Async,
        _ => Tag::GroupId,
    }
}

/// The planes whose events step grouping reads: the host's threads and GPUs.
fn grouping_plane(name: &str) -> bool {
    name == "/host:CPU" || name.starts_with("/device:GPU:")
}

const HLO_PROTO_STAT: &str = "Hlo Proto";

/// The file's strings, and what is derived per string, across all its planes.
struct Strings {
    table: Interner,
    last_number: f64,
    last_number_key: i32,
    key_of_number: HashMap<u64, i32>,
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

/// A metadata-level XStat, its value resolved once the plane's stat names are all known.
#[derive(Clone)]
struct RawStat {
    meta: f64,
    value: Option<RawValue>,
    is_ref: bool,
    bin: Option<(usize, usize)>,
}

#[derive(Clone)]
enum RawValue {
    Num(f64),
    Str(String),
}

fn read_stat(r: &mut Reader, end: usize) -> Res<RawStat> {
    let mut s = RawStat { meta: 0.0, value: None, is_ref: false, bin: None };
    while r.pos < end {
        let tag = r.uint32()?;
        match tag >> 3 {
            1 => s.meta = r.varint64()?,
            2 => s.value = Some(RawValue::Num(r.double()?)),
            3 | 4 => {
                let at = r.pos;
                let v = r.varint64()?;
                s.value =
                    Some(if is_safe_integer(v) { RawValue::Num(v) } else { RawValue::Str(varint_decimal(r.buf, at)?) });
            }
            5 => {
                let (a, b) = r.bytes()?;
                s.value = Some(RawValue::Str(crate::wire::utf8(&r.buf[a..b])));
            }
            6 => s.bin = Some(r.bytes()?),
            7 => {
                s.value = Some(RawValue::Num(r.varint64()?));
                s.is_ref = true;
            }
            _ => r.skip_type(tag & 7, 0)?,
        }
    }
    if r.pos > end {
        return Err(Corrupt);
    }
    Ok(s)
}

/// One plane's stat names: stat metadata id → where its name lies in the capture. A name is interned only
/// when a ref value needs its key: a TensorFlow host plane names thousands of stats that no event refers to.
struct StatNames<'b> {
    buf: &'b [u8],
    range: IdTable<(usize, usize)>,
    key: IdTable<i32>,
}

impl<'b> StatNames<'b> {
    fn new(buf: &'b [u8]) -> Self {
        StatNames { buf, range: IdTable::new(), key: IdTable::new() }
    }

    fn bytes(&self, id: f64) -> Option<&'b [u8]> {
        if id.trunc() != id {
            return None;
        }
        self.range.get(&(id as i64)).map(|&(a, b)| &self.buf[a..b])
    }

    /// The name of stat `id`, or `stat#ID` where the plane has no such stat (as the TS names it).
    fn name(&self, id: f64) -> String {
        match self.bytes(id) {
            Some(b) => crate::wire::utf8(b),
            None => format!("stat#{}", number_to_string(id)),
        }
    }

    /// The key of stat `id`'s name (a ref value's string), interned on first use.
    fn key(&mut self, s: &mut Strings, id: f64) -> i32 {
        if id.trunc() == id {
            if let Some(&k) = self.key.get(&(id as i64)) {
                return k;
            }
        }
        let k = match self.bytes(id) {
            Some(b) => s.table.intern(b),
            None => s.table.intern_str(&format!("stat#{}", number_to_string(id))),
        };
        if id.trunc() == id && self.range.get(&(id as i64)).is_some() {
            self.key.insert(id as i64, k);
        }
        k
    }
}

struct MetaEntry {
    id: f64,
    key: i32,
    display: i32,
    stats: Option<Vec<RawStat>>,
}

fn decode_event_meta(r: &mut Reader, s: &mut Strings) -> Res<MetaEntry> {
    let mut key = 0.0;
    let mut id = 0.0;
    let mut m = MetaEntry { id: 0.0, key: -1, display: -1, stats: None };
    while r.pos < r.len {
        let tag = r.uint32()?;
        if tag >> 3 == 1 && tag & 7 == 0 {
            key = r.varint64()?;
            continue;
        }
        if tag >> 3 != 2 {
            r.skip_type(tag & 7, 0)?;
            continue;
        }
        let end = r.uint32()? as usize + r.pos;
        if end > r.len {
            return Err(Corrupt);
        }
        while r.pos < end {
            let t = r.uint32()?;
            match t >> 3 {
                1 => id = r.varint64()?,
                2 => m.key = read_key(r, s)?,
                5 => {
                    let e = r.uint32()? as usize + r.pos;
                    if e > r.len {
                        return Err(Corrupt);
                    }
                    let st = read_stat(r, e)?;
                    m.stats.get_or_insert_with(Vec::new).push(st);
                }
                4 => m.display = read_key(r, s)?,
                _ => r.skip_type(t & 7, 0)?,
            }
        }
        if r.pos > end {
            return Err(Corrupt);
        }
    }
    m.id = if id != 0.0 { id } else { key };
    if m.key < 0 {
        m.key = s.table.intern_str("");
    }
    Ok(m)
}

/// The key of the length-delimited string at r.pos (bounds checked).
fn read_key(r: &mut Reader, s: &mut Strings) -> Res<i32> {
    let (a, b) = r.bytes()?;
    Ok(s.table.intern(&r.buf[a..b]))
}

fn decode_stat_meta(r: &mut Reader, names: &mut StatNames) -> Res<()> {
    let mut key = 0.0;
    let mut id = 0.0;
    let mut name = (0, 0);
    while r.pos < r.len {
        let tag = r.uint32()?;
        if tag >> 3 == 1 && tag & 7 == 0 {
            key = r.varint64()?;
            continue;
        }
        if tag >> 3 != 2 {
            r.skip_type(tag & 7, 0)?;
            continue;
        }
        let end = r.uint32()? as usize + r.pos;
        if end > r.len {
            return Err(Corrupt);
        }
        while r.pos < end {
            let t = r.uint32()?;
            match t >> 3 {
                1 => id = r.varint64()?,
                2 => name = r.bytes()?,
                _ => r.skip_type(t & 7, 0)?,
            }
        }
        if r.pos > end {
            return Err(Corrupt);
        }
    }
    let id = if id != 0.0 { id } else { key };
    if id.trunc() != id {
        return Err(Corrupt);
    }
    names.range.insert(id as i64, name);
    Ok(())
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
        Strings { table: Interner::new(), last_number: f64::NAN, last_number_key: -1, key_of_number: HashMap::new() }
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

/// Decodes the whole capture in `buf` into `visitor` (tests and examples; analyze.rs splits it over threads).
pub fn decode_xspace(buf: &[u8], visitor: &mut dyn XSpaceVisitor) -> Result<SpaceInfo, Fail> {
    let layout = scan_xspace(buf)?;
    decode_planes(buf, &layout, 0..layout.planes.len(), visitor, &mut |_, _| {})?;
    Ok(layout.info)
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

/// A ref value given as digits (a 64-bit id past 2^53): Number() of them, as the JS would index with it.
fn js_number_of(s: &str) -> f64 {
    s.parse::<f64>().unwrap_or(f64::NAN)
}

fn plain_info(s: &Strings, key: i32) -> EventInfo {
    EventInfo { name: s.table.shared(key), key, ..Default::default() }
}

/// view.ts eventInfo of an entry with stats or a display name.
fn meta_info(m: &MetaEntry, names: &StatNames, s: &Strings) -> EventInfo {
    let stats = m.stats.as_deref().unwrap_or(&[]);
    let find = |n: &str| -> Option<StatValue> {
        for st in stats {
            if names.name(st.meta) == n {
                return match &st.value {
                    None => None,
                    Some(RawValue::Num(x)) if st.is_ref => Some(StatValue::Str(names.name(*x))),
                    Some(RawValue::Str(x)) if st.is_ref => Some(StatValue::Str(names.name(js_number_of(x)))),
                    Some(RawValue::Num(x)) => Some(StatValue::Num(*x)),
                    Some(RawValue::Str(x)) => Some(StatValue::Str(x.clone())),
                };
            }
        }
        None
    };
    let cat = find("hlo_category");
    let flops = find("flops");
    let bytes = find("bytes_accessed");
    let program = find("program_id");
    let hlo = stats.iter().find(|st| st.bin.is_some() && names.name(st.meta) == HLO_PROTO_STAT);
    EventInfo {
        name: s.table.shared(m.key),
        key: m.key,
        category: match cat {
            Some(StatValue::Str(c)) => Some(c),
            _ => None,
        },
        flops: match flops {
            Some(StatValue::Num(x)) => Some(x),
            _ => None,
        },
        bytes: match bytes {
            Some(StatValue::Num(x)) => Some(x),
            _ => None,
        },
        display_name: if m.display >= 0 { s.table.shared(m.display) } else { Arc::from("") },
        program: program.map(|p| match p {
            StatValue::Num(x) => number_to_string(x),
            StatValue::Str(x) => x,
        }),
        hlo_proto: hlo.and_then(|st| st.bin).map(|(a, b)| a..b),
    }
}

/// xevent.ts decodeLine: the XLine at [r.pos, r.len) into `c`.
fn decode_line(r: &mut Reader, c: &mut LineView, kept: &[Kept], names: &mut StatNames, s: &mut Strings) -> Res<()> {
    c.name.clear();
    c.display_name.clear();
    c.timestamp_ns = 0.0;
    c.count = 0;
    c.tag_count = 0;
    for v in [&mut c.meta_id, &mut c.op, &mut c.module, &mut c.category, &mut c.program] {
        v.clear();
    }
    for v in [
        &mut c.offset_ps,
        &mut c.duration_ps,
        &mut c.flops,
        &mut c.bytes,
        &mut c.dev_offset_ps,
        &mut c.dev_duration_ps,
        &mut c.tag_value,
    ] {
        v.clear();
    }
    c.tag_event.clear();
    c.tag_kind.clear();
    let buf = r.buf;
    let len = r.len;
    while r.pos < len {
        let tag = r.uint32()?;
        match tag {
            0x12 => {
                let (a, b) = r.bytes()?;
                c.name = crate::wire::utf8(&buf[a..b]);
            }
            0x18 => {
                let (v, after) = varint_f64(buf, r.pos)?;
                c.timestamp_ns = v;
                r.pos = after;
            }
            0x22 => {
                let (n, after) = varint_f64(buf, r.pos)?;
                let end = after + n as usize;
                if n >= len as f64 || end > len {
                    return Err(Corrupt);
                }
                decode_event(buf, after, end, c, kept, names, s)?;
                r.pos = end;
            }
            0x5a => {
                let (a, b) = r.bytes()?;
                c.display_name = crate::wire::utf8(&buf[a..b]);
            }
            _ => {
                if tag >> 3 == 0 {
                    return Err(Corrupt);
                }
                r.skip_type(tag & 7, 0)?;
            }
        }
        if r.pos > len {
            return Err(Corrupt);
        }
    }
    if c.display_name.is_empty() {
        c.display_name.push_str(&c.name);
    }
    Ok(())
}

/// One XEvent at buf[pos, end) appended to `c` (xevent.ts decodeEvent).
fn decode_event(
    buf: &[u8],
    mut pos: usize,
    end: usize,
    c: &mut LineView,
    kept: &[Kept],
    names: &mut StatNames,
    s: &mut Strings,
) -> Res<()> {
    let (mut meta, mut offset, mut dur) = (0.0f64, 0.0f64, 0.0f64);
    let (mut op, mut module, mut cat, mut prog) = (-1i32, -1i32, -1i32, -1i32);
    let (mut flops, mut bytes, mut dev_off, mut dev_dur) = (f64::NAN, f64::NAN, f64::NAN, f64::NAN);
    let i = c.count;
    while pos < end {
        let (tag, p) = read_tag(buf, pos)?;
        pos = p;
        match tag {
            0x08 => (meta, pos) = varint_f64(buf, pos)?,
            0x10 => (offset, pos) = varint_f64(buf, pos)?,
            0x18 => (dur, pos) = varint_f64(buf, pos)?,
            0x22 => {
                let (n, after) = varint_f64(buf, pos)?;
                let e = after + n as usize;
                if n >= end as f64 || e > end {
                    return Err(Corrupt);
                }
                pos = after;
                let mut k = Kept::No;
                while pos < e {
                    let (t, p) = read_tag(buf, pos)?;
                    pos = p;
                    if t == 0x08 {
                        let (m, next) = varint_f64(buf, pos)?;
                        if next > e {
                            return Err(Corrupt);
                        }
                        k = if m >= 0.0 && (m as usize) < kept.len() { kept[m as usize] } else { Kept::No };
                        if k == Kept::No {
                            pos = e;
                            break;
                        }
                        pos = next;
                        continue;
                    }
                    let mut num = f64::NAN;
                    let mut key = -1i32;
                    match t {
                        0x18 | 0x20 => {
                            let (v, after) = varint_f64(buf, pos)?;
                            num = v;
                            if k == Kept::Program && !is_safe_integer(num) {
                                key = s.table.intern_str(&varint_decimal(buf, pos)?);
                            }
                            pos = after;
                        }
                        0x38 => {
                            let (id, after) = varint_f64(buf, pos)?;
                            pos = after;
                            key = names.key(s, id);
                        }
                        0x11 => {
                            if pos + 8 > end {
                                return Err(Corrupt);
                            }
                            let mut b = [0u8; 8];
                            b.copy_from_slice(&buf[pos..pos + 8]);
                            num = f64::from_le_bytes(b);
                            pos += 8;
                        }
                        0x2a => {
                            let mut r = Reader::new(buf, pos, end);
                            let (a, b) = r.bytes()?;
                            key = s.table.intern(&buf[a..b]);
                            pos = r.pos;
                        }
                        _ => {
                            if t >> 3 == 0 {
                                return Err(Corrupt);
                            }
                            let mut r = Reader::new(buf, pos, end);
                            r.skip_type(t & 7, 0)?;
                            pos = r.pos;
                            continue;
                        }
                    }
                    if key < 0 && k != Kept::No && (k as u8) <= Kept::Program as u8 {
                        key = s.number_key(num);
                    }
                    match k {
                        Kept::Op => op = key,
                        Kept::Module => module = key,
                        Kept::Category => cat = key,
                        Kept::Program => prog = key,
                        Kept::Flops => flops = num,
                        Kept::Bytes => bytes = num,
                        Kept::DevOffset => dev_off = num,
                        Kept::DevDuration => dev_dur = num,
                        Kept::No => {}
                        _ => {
                            c.tag_count += 1;
                            c.tag_event.push(i as i32);
                            c.tag_kind.push(tag_of(k));
                            c.tag_value.push(num);
                        }
                    }
                }
                if pos > e {
                    return Err(Corrupt);
                }
            }
            _ => {
                if tag >> 3 == 0 {
                    return Err(Corrupt);
                }
                let mut r = Reader::new(buf, pos, end);
                r.skip_type(tag & 7, 0)?;
                pos = r.pos;
            }
        }
    }
    if pos > end {
        return Err(Corrupt);
    }
    c.count += 1;
    c.meta_id.push(to_int32(meta));
    c.offset_ps.push(offset);
    c.duration_ps.push(dur);
    c.op.push(op);
    c.module.push(module);
    c.category.push(cat);
    c.program.push(prog);
    c.flops.push(flops);
    c.bytes.push(bytes);
    c.dev_offset_ps.push(dev_off);
    c.dev_duration_ps.push(dev_dur);
    Ok(())
}

/// A tag: one byte as it lies, or a longer varint (a field past 15, or an overlong encoding).
#[inline(always)]
fn read_tag(buf: &[u8], pos: usize) -> Res<(u32, usize)> {
    let b = buf[pos];
    if b < 0x80 {
        return Ok((b as u32, pos + 1));
    }
    let (v, after) = varint_f64(buf, pos)?;
    if v > u32::MAX as f64 {
        return Err(Corrupt);
    }
    Ok((v as u32, after))
}

/// ECMAScript ToInt32 (what an Int32Array stores).
#[inline(always)]
fn to_int32(x: f64) -> i32 {
    // Metadata ids are small: the modulo below only for the rare rest.
    if (0.0..2147483648.0).contains(&x) {
        return x as i32;
    }
    if !x.is_finite() {
        return 0;
    }
    let m = x.trunc().rem_euclid(4294967296.0);
    (m as u64 as u32) as i32
}

//! One XLine's events into a LineView, keeping the stats that the analysis reads. The event loop is where the
//! time goes: one-byte tags and varints are read inline, and a stat the analysis does not keep is skipped by its
//! length after its metadata id.

use super::meta::StatNames;
use super::Strings;
use crate::view::{LineView, Tag};
use crate::wire::{varint_at, Kind, Reader, Res};

/// Which of an event's stats are kept, by stat name; the rest are skipped by length.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(super) enum Kept {
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

pub(super) fn kept_of_name(name: &[u8]) -> Kept {
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

/// The XLine that `r` holds into `c`.
#[inline(never)] // kept small: lib.rs, "Function size"
pub(super) fn decode_line(
    r: &mut Reader,
    c: &mut LineView,
    kept: &[Kept],
    names: &mut StatNames,
    s: &mut Strings,
) -> Res<()> {
    c.clear();
    while r.more() {
        let (field, wire) = r.tag()?;
        match (field, wire) {
            (2, 2) => c.name = r.string()?,
            (3, 0) => c.timestamp_ns = r.varint()? as i64 as f64,
            (4, 2) => {
                let (a, b) = r.bytes()?;
                decode_event(&mut r.sub(a, b), c, kept, names, s)?;
            }
            (11, 2) => c.display_name = r.string()?,
            _ => r.skip(wire)?,
        }
    }
    if c.display_name.is_empty() {
        c.display_name.push_str(&c.name);
    }
    Ok(())
}

/// A stat's value as read: a number, a string's key, or both absent.
struct Value {
    num: f64,
    key: i32,
}

/// The XEvent that `r` holds, appended to `c`.
fn decode_event(r: &mut Reader, c: &mut LineView, kept: &[Kept], names: &mut StatNames, s: &mut Strings) -> Res<()> {
    let (buf, end) = (r.buf, r.end);
    let (mut meta, mut offset, mut dur) = (0i64, 0.0f64, 0.0f64);
    let (mut op, mut module, mut cat, mut prog) = (-1i32, -1i32, -1i32, -1i32);
    let (mut flops, mut bytes, mut dev_off, mut dev_dur) = (f64::NAN, f64::NAN, f64::NAN, f64::NAN);
    let i = c.count;
    let mut pos = r.pos;
    let fault = |at: usize, k: Kind| r.fault_at(at, k);
    // A varint of the field whose tag is at `at` (its faults are reported there).
    let varint = |at: usize, pos: usize| varint_at(buf, pos, end).map_err(|k| fault(at, k));
    while pos < end {
        let at = pos;
        let (tag, p) = varint(at, pos)?;
        pos = p;
        match tag {
            0x08 => (meta, pos) = varint(at, pos).map(|(v, p)| (v as i64, p))?,
            0x10 => (offset, pos) = varint(at, pos).map(|(v, p)| (v as i64 as f64, p))?,
            0x18 => (dur, pos) = varint(at, pos).map(|(v, p)| (v as i64 as f64, p))?,
            0x22 => {
                let (n, after) = varint(at, pos)?;
                let e = after.saturating_add(usize::try_from(n).unwrap_or(usize::MAX));
                if e > end {
                    return Err(fault(at, Kind::PastEnd { end: e }));
                }
                let mut st = r.sub(after, e);
                let (k, v) = stat(&mut st, kept, names, s)?;
                pos = e;
                match k {
                    Kept::No => {}
                    Kept::Op => op = v.key,
                    Kept::Module => module = v.key,
                    Kept::Category => cat = v.key,
                    Kept::Program => prog = v.key,
                    Kept::Flops => flops = v.num,
                    Kept::Bytes => bytes = v.num,
                    Kept::DevOffset => dev_off = v.num,
                    Kept::DevDuration => dev_dur = v.num,
                    _ => {
                        c.tag_count += 1;
                        c.tag_event.push(i as i32);
                        c.tag_kind.push(tag_of(k));
                        c.tag_value.push(v.num);
                    }
                }
            }
            _ => {
                let mut rest = r.sub(at, end);
                let (_, wire) = rest.tag()?;
                rest.skip(wire)?;
                pos = rest.pos;
            }
        }
    }
    c.count += 1;
    c.meta_id.push(meta);
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

/// One XStat of an event: which kept stat it is (No: its value is not read) and its value. Strings and refs
/// become string keys; whole numbers of the string-valued stats (a numeric program_id) their digits' key.
fn stat(r: &mut Reader, kept: &[Kept], names: &mut StatNames, s: &mut Strings) -> Res<(Kept, Value)> {
    let mut k = Kept::No;
    let mut v = Value { num: f64::NAN, key: -1 };
    let stringy = |k: Kept| (k as u8) <= Kept::Program as u8;
    while r.more() {
        let (field, wire) = r.tag()?;
        match (field, wire) {
            (1, 0) => {
                let m = r.varint()?;
                k = usize::try_from(m).ok().and_then(|m| kept.get(m)).copied().unwrap_or(Kept::No);
                if k == Kept::No {
                    // Nothing else of this stat is read (the metadata id comes first in what XLA writes).
                    r.pos = r.end;
                    break;
                }
            }
            (2, 1) => {
                v.num = r.double()?;
                if stringy(k) {
                    v.key = s.table.intern_str(&v.num.to_string());
                }
            }
            (3, 0) => {
                let x = r.varint()?;
                v.num = x as f64;
                if stringy(k) {
                    v.key = s.int_key(x as i128);
                }
            }
            (4, 0) => {
                let x = r.varint()? as i64;
                v.num = x as f64;
                if stringy(k) {
                    v.key = s.int_key(x as i128);
                }
            }
            (5, 2) => {
                let (a, b) = r.bytes()?;
                v.key = s.table.intern(&r.buf[a..b]);
            }
            (7, 0) => {
                let id = r.varint()? as i64;
                v.key = names.ref_key(&mut s.table, id);
            }
            _ => r.skip(wire)?,
        }
    }
    Ok((k, v))
}

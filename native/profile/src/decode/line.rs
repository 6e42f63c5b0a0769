//! One XLine's events into a LineView (xevent.ts decodeLine, decodeEvent), keeping the stats that the analysis
//! reads.

use super::meta::StatNames;
use super::Strings;
use crate::view::{LineView, Tag};
use crate::wire::{is_safe_integer, varint_decimal, varint_f64, Corrupt, Reader, Res};

/// Which of an event's stats are kept, by stat name (stream.ts KEPT_STATS); the rest are skipped by length.
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

/// xevent.ts decodeLine: the XLine at [r.pos, r.len) into `c`.
pub(super) fn decode_line(
    r: &mut Reader,
    c: &mut LineView,
    kept: &[Kept],
    names: &mut StatNames,
    s: &mut Strings,
) -> Res<()> {
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

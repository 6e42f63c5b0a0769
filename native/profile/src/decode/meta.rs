//! A plane's event and stat metadata: their names, and the stats of an event's metadata that the op table reads.

use std::sync::Arc;

use super::Strings;
use crate::jsfmt::num_to_string as number_to_string;
use crate::view::{EventInfo, IdTable, StatValue};
use crate::wire::{is_safe_integer, varint_decimal, Corrupt, Reader, Res};

const HLO_PROTO_STAT: &str = "Hlo Proto";

/// A metadata-level XStat, its value resolved once the plane's stat names are all known.
#[derive(Clone)]
pub(super) struct RawStat {
    pub(super) meta: f64,
    pub(super) value: Option<RawValue>,
    pub(super) is_ref: bool,
    bin: Option<(usize, usize)>,
}

#[derive(Clone)]
pub(super) enum RawValue {
    Num(f64),
    Str(String),
}

pub(super) fn read_stat(r: &mut Reader, end: usize) -> Res<RawStat> {
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
pub(super) struct StatNames<'b> {
    buf: &'b [u8],
    pub(super) range: IdTable<(usize, usize)>,
    key: IdTable<i32>,
}

impl<'b> StatNames<'b> {
    pub(super) fn new(buf: &'b [u8]) -> Self {
        StatNames { buf, range: IdTable::new(), key: IdTable::new() }
    }

    fn bytes(&self, id: f64) -> Option<&'b [u8]> {
        if id.trunc() != id {
            return None;
        }
        self.range.get(&(id as i64)).map(|&(a, b)| &self.buf[a..b])
    }

    /// The name of stat `id`, or `stat#ID` where the plane has no such stat (as the TS names it).
    pub(super) fn name(&self, id: f64) -> String {
        match self.bytes(id) {
            Some(b) => crate::wire::utf8(b),
            None => format!("stat#{}", number_to_string(id)),
        }
    }

    /// Whether stat `id` is named `n` (as name() would say, without making the string).
    pub(super) fn is(&self, id: f64, n: &str) -> bool {
        match self.bytes(id) {
            Some(b) if b.is_ascii() || std::str::from_utf8(b).is_ok() => b == n.as_bytes(),
            Some(_) => self.name(id) == n,
            None => n.starts_with("stat#") && self.name(id) == n,
        }
    }

    /// The key of stat `id`'s name (a ref value's string), interned on first use.
    pub(super) fn key(&mut self, s: &mut Strings, id: f64) -> i32 {
        if id.trunc() == id {
            if let Some(&k) = self.key.get(&(id as i64)) {
                return k;
            }
        }
        let k = match self.bytes(id) {
            Some(b) => s.table.intern(b),
            None => s.table.intern_str(&format!("stat#{}", number_to_string(id))),
        };
        // Cached for ids the plane does not name too: GPU captures' events refer to such ids on every kernel.
        if id.trunc() == id && id.abs() < 9.2e18 {
            self.key.insert(id as i64, k);
        }
        k
    }
}

pub(super) struct MetaEntry {
    pub(super) id: f64,
    pub(super) key: i32,
    pub(super) display: i32,
    pub(super) stats: Option<Vec<RawStat>>,
}

/// A map<int64, Message> entry (key 1, value 2) at [r.pos, r.len): `field(r, tag)` reads each field of the value
/// (the tag already read); returns the id the value names (its field 1), else the entry's key.
fn map_entry(r: &mut Reader, mut field: impl FnMut(&mut Reader, u32) -> Res<()>) -> Res<f64> {
    let (mut key, mut id) = (0.0, 0.0);
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
        let end = r.end()?;
        while r.pos < end {
            let t = r.uint32()?;
            if t >> 3 == 1 {
                id = r.varint64()?;
            } else {
                field(r, t)?;
            }
        }
        if r.pos > end {
            return Err(Corrupt);
        }
    }
    Ok(if id != 0.0 { id } else { key })
}

pub(super) fn decode_event_meta(r: &mut Reader, s: &mut Strings) -> Res<MetaEntry> {
    let mut m = MetaEntry { id: 0.0, key: -1, display: -1, stats: None };
    m.id = map_entry(r, |r, t| {
        match t >> 3 {
            2 => m.key = read_key(r, s)?,
            5 => {
                let e = r.end()?;
                let st = read_stat(r, e)?;
                m.stats.get_or_insert_with(Vec::new).push(st);
            }
            4 => m.display = read_key(r, s)?,
            _ => r.skip_type(t & 7, 0)?,
        }
        Ok(())
    })?;
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

pub(super) fn decode_stat_meta(r: &mut Reader, names: &mut StatNames) -> Res<()> {
    let mut name = (0, 0);
    let id = map_entry(r, |r, t| {
        match t >> 3 {
            2 => name = r.bytes()?,
            _ => r.skip_type(t & 7, 0)?,
        }
        Ok(())
    })?;
    if id.trunc() != id {
        return Err(Corrupt);
    }
    names.range.insert(id as i64, name);
    Ok(())
}

/// A ref value given as digits (a 64-bit id past 2^53): Number() of them, as the JS would index with it.
pub(super) fn js_number_of(s: &str) -> f64 {
    s.parse::<f64>().unwrap_or(f64::NAN)
}

pub(super) fn plain_info(s: &Strings, key: i32) -> EventInfo {
    EventInfo { name: s.table.shared(key), key, ..Default::default() }
}

/// view.ts eventInfo of an entry with stats or a display name.
pub(super) fn meta_info(m: &MetaEntry, names: &StatNames, s: &Strings) -> EventInfo {
    let stats = m.stats.as_deref().unwrap_or(&[]);
    let find = |n: &str| -> Option<StatValue> {
        for st in stats {
            if names.is(st.meta, n) {
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
    let hlo = stats.iter().find(|st| st.bin.is_some() && names.is(st.meta, HLO_PROTO_STAT));
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

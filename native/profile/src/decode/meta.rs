//! A plane's event and stat metadata: their names, and the stats of an event's metadata that the op table reads.

use std::sync::Arc;

use super::Strings;
use crate::intern::Interner;
use crate::view::{EventInfo, IdTable, StatValue};
use crate::wire::{Reader, Res};

/// An XStat's value as written.
#[derive(Clone, Debug)]
pub(super) enum RawValue {
    U(u64),
    I(i64),
    F(f64),
    Str(String),
    /// ref_value: the id of a stat metadata entry whose name is the value (XLA interns op names so).
    Ref(i64),
}

/// A metadata-level XStat, its value resolved once the plane's stat names are all known.
#[derive(Clone, Debug)]
pub(super) struct RawStat {
    pub(super) meta: i64,
    pub(super) value: Option<RawValue>,
    /// A bytes value: where it lies in the file.
    pub(super) bin: Option<(usize, usize)>,
}

/// The XStat that `r` holds, to its end.
#[inline(never)] // kept small: lib.rs, "Function size"
pub(super) fn read_stat(r: &mut Reader) -> Res<RawStat> {
    let mut s = RawStat { meta: 0, value: None, bin: None };
    while r.more() {
        let (field, wire) = r.tag()?;
        match (field, wire) {
            (1, 0) => s.meta = r.varint()? as i64,
            (2, 1) => s.value = Some(RawValue::F(r.double()?)),
            (3, 0) => s.value = Some(RawValue::U(r.varint()?)),
            (4, 0) => s.value = Some(RawValue::I(r.varint()? as i64)),
            (5, 2) => s.value = Some(RawValue::Str(r.string()?)),
            (6, 2) => {
                let (a, b) = r.bytes()?;
                s.bin = Some((r.base + a, r.base + b));
            }
            (7, 0) => s.value = Some(RawValue::Ref(r.varint()? as i64)),
            _ => r.skip(wire)?,
        }
    }
    Ok(s)
}

impl RawStat {
    /// The value, with a ref named and numbers as numbers.
    pub(super) fn resolved(&self, names: &StatNames, t: &Interner) -> Option<StatValue> {
        Some(match self.value.as_ref()? {
            RawValue::U(v) => StatValue::Num(*v as f64),
            RawValue::I(v) => StatValue::Num(*v as f64),
            RawValue::F(v) => StatValue::Num(*v),
            RawValue::Str(s) => StatValue::Str(s.clone()),
            RawValue::Ref(id) => StatValue::Str(names.name(*id, t)),
        })
    }

    /// The value as text: whole numbers exactly (program ids are 64-bit), a ref as its name.
    fn text(&self, names: &StatNames, t: &Interner) -> Option<String> {
        Some(match self.value.as_ref()? {
            RawValue::U(v) => v.to_string(),
            RawValue::I(v) => v.to_string(),
            RawValue::F(v) => v.to_string(),
            RawValue::Str(s) => s.clone(),
            RawValue::Ref(id) => names.name(*id, t),
        })
    }
}

/// One plane's stat names: stat metadata id → the key of its name.
#[derive(Default)]
pub(super) struct StatNames {
    pub(super) key: IdTable<i32>,
    /// Keys of `stat#ID` for ids the plane does not name (GPU captures' events refer to such ids on every kernel).
    unnamed: IdTable<i32>,
}

impl StatNames {
    /// The name of stat `id`, or `stat#ID` where the plane has no such stat.
    pub(super) fn name(&self, id: i64, t: &Interner) -> String {
        match self.key.get(&id) {
            Some(&k) => t.get(k).to_string(),
            None => format!("stat#{id}"),
        }
    }

    /// The key of stat `id`'s name (a ref value's string).
    pub(super) fn ref_key(&mut self, t: &mut Interner, id: i64) -> i32 {
        if let Some(&k) = self.key.get(&id) {
            return k;
        }
        if let Some(&k) = self.unnamed.get(&id) {
            return k;
        }
        let k = t.intern_str(&format!("stat#{id}"));
        self.unnamed.insert(id, k);
        k
    }
}

pub(super) struct MetaEntry {
    pub(super) id: i64,
    pub(super) key: i32,
    pub(super) display: i32,
    pub(super) stats: Option<Vec<RawStat>>,
}

/// A map<int64, Message> entry (key 1, value 2) that `r` holds: `field(r, field, wire)` reads each field of the
/// value; returns the id the value names (its field 1), else the entry's key.
fn map_entry(r: &mut Reader, mut field: impl FnMut(&mut Reader, u64, u8) -> Res<()>) -> Res<i64> {
    let (mut key, mut id) = (0, 0);
    while r.more() {
        let (f, wire) = r.tag()?;
        if f == 1 && wire == 0 {
            key = r.varint()? as i64;
            continue;
        }
        if f != 2 || wire != 2 {
            r.skip(wire)?;
            continue;
        }
        let (s, e) = r.bytes()?;
        let mut v = r.sub(s, e);
        while v.more() {
            let (vf, vw) = v.tag()?;
            if vf == 1 && vw == 0 {
                id = v.varint()? as i64;
            } else {
                field(&mut v, vf, vw)?;
            }
        }
    }
    Ok(if id != 0 { id } else { key })
}

#[inline(never)] // kept small: lib.rs, "Function size"
pub(super) fn decode_event_meta(r: &mut Reader, t: &mut Interner) -> Res<MetaEntry> {
    let mut m = MetaEntry { id: 0, key: -1, display: -1, stats: None };
    m.id = map_entry(r, |r, f, wire| {
        match (f, wire) {
            (2, 2) => m.key = read_key(r, t)?,
            (4, 2) => m.display = read_key(r, t)?,
            (5, 2) => {
                let (s, e) = r.bytes()?;
                let st = read_stat(&mut r.sub(s, e))?;
                m.stats.get_or_insert_with(Vec::new).push(st);
            }
            _ => r.skip(wire)?,
        }
        Ok(())
    })?;
    if m.key < 0 {
        m.key = t.intern_str("");
    }
    Ok(m)
}

fn read_key(r: &mut Reader, t: &mut Interner) -> Res<i32> {
    let (a, b) = r.bytes()?;
    Ok(t.intern(&r.buf[a..b]))
}

#[inline(never)] // kept small: lib.rs, "Function size"
pub(super) fn decode_stat_meta(r: &mut Reader, names: &mut StatNames, t: &mut Interner) -> Res<()> {
    let mut name = -1;
    let id = map_entry(r, |r, f, wire| {
        match (f, wire) {
            (2, 2) => name = read_key(r, t)?,
            _ => r.skip(wire)?,
        }
        Ok(())
    })?;
    if name < 0 {
        name = t.intern_str("");
    }
    names.key.insert(id, name);
    Ok(())
}

/// What the analysis needs of a metadata entry with stats or a display name.
#[inline(never)] // kept small: lib.rs, "Function size"
pub(super) fn meta_info(m: &MetaEntry, names: &StatNames, s: &Strings) -> EventInfo {
    let t = &s.table;
    let stats = m.stats.as_deref().unwrap_or(&[]);
    let find = |n: &str| stats.iter().find(|st| names.named(st.meta, n, t));
    let num = |n: &str| match find(n)?.resolved(names, t)? {
        StatValue::Num(x) => Some(x),
        StatValue::Str(_) => None,
    };
    EventInfo {
        name: t.shared(m.key),
        key: m.key,
        category: match find("hlo_category").and_then(|st| st.resolved(names, t)) {
            Some(StatValue::Str(c)) => Some(c),
            _ => None,
        },
        flops: num("flops"),
        bytes: num("bytes_accessed"),
        display_name: if m.display >= 0 { t.shared(m.display) } else { Arc::from("") },
        program: find("program_id").and_then(|st| st.text(names, t)),
    }
}

impl StatNames {
    /// Whether stat `id` is named `n` in table `t`.
    pub(super) fn named(&self, id: i64, n: &str, t: &Interner) -> bool {
        self.key.get(&id).is_some_and(|&k| t.get(k) == n)
    }
}

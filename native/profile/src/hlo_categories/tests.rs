use super::*;

pub(crate) fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn tag(field: u64, wire: u64, out: &mut Vec<u8>) {
    varint(field << 3 | wire, out);
}

pub(crate) fn bytes_field(field: u64, b: &[u8], out: &mut Vec<u8>) {
    tag(field, 2, out);
    varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

pub(crate) fn instruction(name: &str, opcode: Option<&str>, kind: Option<&str>) -> Vec<u8> {
    let mut v = Vec::new();
    // Skipped fields around the ones read: a varint, a fixed64, a two-byte tag's string, a fixed32.
    tag(7, 0, &mut v);
    varint(300, &mut v);
    bytes_field(1, name.as_bytes(), &mut v);
    tag(9, 1, &mut v);
    v.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    if let Some(o) = opcode {
        bytes_field(2, o.as_bytes(), &mut v);
    }
    bytes_field(20, b"skipped", &mut v);
    if let Some(k) = kind {
        bytes_field(11, k.as_bytes(), &mut v);
    }
    tag(10, 5, &mut v);
    v.extend_from_slice(&[9, 9, 9, 9]);
    v
}

pub(crate) fn proto(name: &str, id: Option<u64>, instrs: &[Vec<u8>]) -> Vec<u8> {
    let mut comp = Vec::new();
    bytes_field(1, b"main", &mut comp);
    for i in instrs {
        bytes_field(2, i, &mut comp);
    }
    let mut module = Vec::new();
    bytes_field(1, name.as_bytes(), &mut module);
    bytes_field(3, &comp, &mut module);
    if let Some(id) = id {
        tag(5, 0, &mut module);
        varint(id, &mut module);
    }
    let mut out = Vec::new();
    tag(2, 0, &mut out);
    varint(7, &mut out);
    bytes_field(1, &module, &mut out);
    out
}

fn cat<'a>(p: &'a HloProgram, name: &str) -> Option<&'a str> {
    p.categories.get(name).map(|c| c.as_ref())
}

#[test]
fn categories_of_instructions() {
    let instrs = [
        instruction("add.1", Some("add"), None),
        instruction("fusion.2", Some("fusion"), Some("kLoop")),
        instruction("fusion.3", Some("fusion"), Some("kWeird")),
        instruction("fusion.4", Some("fusion"), None),
        instruction("dot.5", Some("dot"), None),
        instruction("copy.6", Some("copy"), None),
        instruction("noop", None, None),
        instruction("", Some("add"), None),
        instruction("add.7", Some("add"), Some("kInput")),
        // Seen again: the later instruction's category.
        instruction("dot.5", Some("transpose"), None),
        instruction("f.8", Some("fusion"), Some("kOutput")),
        instruction("f.9", Some("fusion"), Some("kCustom")),
        instruction("f.10", Some("fusion"), Some("kInput")),
    ];
    let p = HloDecoder::new().decode(&proto("jit_step", Some(42), &instrs)).unwrap();
    assert_eq!(p.id, "42");
    assert_eq!(p.name, "jit_step");
    assert_eq!(p.categories.len(), 11);
    assert_eq!(cat(&p, "add.1"), Some("non-fusion elementwise"));
    assert_eq!(cat(&p, "fusion.2"), Some("loop fusion"));
    assert_eq!(cat(&p, "fusion.3"), Some("fusion"));
    assert_eq!(cat(&p, "fusion.4"), Some("fusion"));
    assert_eq!(cat(&p, "dot.5"), Some("data formatting"));
    assert_eq!(cat(&p, "copy.6"), Some("data formatting"));
    assert_eq!(cat(&p, "noop"), Some(""));
    assert_eq!(cat(&p, ""), None);
    // A fusion kind on a non-fusion: the opcode's category all the same.
    assert_eq!(cat(&p, "add.7"), Some("non-fusion elementwise"));
    assert_eq!(cat(&p, "f.8"), Some("output fusion"));
    assert_eq!(cat(&p, "f.9"), Some("custom fusion"));
    assert_eq!(cat(&p, "f.10"), Some("input fusion"));
}

#[test]
fn ids() {
    let mut d = HloDecoder::new();
    assert_eq!(d.decode(&proto("m", None, &[])).unwrap().id, "");
    assert_eq!(d.decode(&proto("m", Some(0), &[])).unwrap().id, "0");
    assert_eq!(d.decode(&proto("m", Some((1 << 53) - 1), &[])).unwrap().id, "9007199254740991");
    assert_eq!(d.decode(&proto("m", Some(1 << 53), &[])).unwrap().id, "9007199254740992");
    assert_eq!(d.decode(&proto("m", Some((1 << 63) + 5), &[])).unwrap().id, "9223372036854775813");
    assert_eq!(d.decode(&proto("m", Some(u64::MAX), &[])).unwrap().id, "18446744073709551615");
    assert_eq!(d.decode(&proto("m", Some(u64::MAX - 4096), &[])).unwrap().id, "18446744073709547519");
    assert_eq!(d.decode(&[]).unwrap(), HloProgram::default());
}

#[test]
fn corrupt_input() {
    let good = proto("m", Some(3), &[instruction("a", Some("add"), None)]);
    let mut d = HloDecoder::new();
    // Every truncation that cuts the module short fails (its length then runs past the buffer).
    for cut in 3..good.len() {
        assert_eq!(d.decode(&good[..cut]), Err(HloError), "cut {cut}");
    }
    // Wire types 4, 6 and 7 are invalid.
    assert_eq!(d.decode(&[0x0c]), Err(HloError));
    assert_eq!(d.decode(&[0x0e]), Err(HloError));
    // A module name whose length runs past its module.
    assert_eq!(d.decode(&[0x0a, 0x04, 0x0a, 0x05, b'a', b'b']), Err(HloError));
    // Invalid UTF-8 becomes U+FFFD.
    let p = d.decode(&[0x0a, 0x03, 0x0a, 0x01, 0xff]).unwrap();
    assert_eq!(p.name, "\u{fffd}");
}

/// An instruction that ends with a field's tag and no value: the program cannot be read.
#[test]
fn tag_at_the_very_end() {
    fn mk(tag: &[u8]) -> Vec<u8> {
        let mut instr = vec![0x0a, 0x01, b'a', 0x12, 0x03, b'a', b'd', b'd'];
        instr.extend_from_slice(tag);
        let mut comp = vec![0x12, instr.len() as u8];
        comp.extend(instr);
        let mut module = vec![0x1a, comp.len() as u8];
        module.extend(comp);
        let mut out = vec![0x0a, module.len() as u8];
        out.extend(module);
        out
    }
    assert_eq!(cat(&HloDecoder::new().decode(&mk(&[])).unwrap(), "a"), Some("non-fusion elementwise"));
    for t in [&[0x22][..], &[0xa2, 0x01], &[0x0a], &[0x12], &[0x5a], &[0x08], &[0xa2], &[0x09], &[0x0d]] {
        assert_eq!(HloDecoder::new().decode(&mk(t)), Err(HloError), "{t:?}");
    }
}

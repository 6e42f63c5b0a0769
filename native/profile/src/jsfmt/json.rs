//! `JSON.stringify(value, null, indent)` to the byte, and string lengths, prefixes and order in UTF-16 code units
//! (what JS's `length`, `slice` and `sort()` count).

use std::fmt::Write as _;

use super::write_num;

/// A string's JS `length`: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `s.slice(0, n)` as node then writes it: n UTF-16 code units; a cut through a surrogate pair leaves a lone
/// surrogate, which node writes to a stream as U+FFFD.
pub fn utf16_prefix(s: &str, n: usize) -> String {
    let mut out = String::with_capacity(s.len().min(n * 4));
    let mut used = 0;
    for c in s.chars() {
        let w = c.len_utf16();
        if used + w > n {
            if used < n {
                out.push('\u{fffd}');
            }
            break;
        }
        out.push(c);
        used += w;
    }
    out
}

/// JS's default `sort()` order of strings: by UTF-16 code units.
pub fn cmp_utf16(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A JSON value as `JSON.stringify` sees it; a key JS would leave out (undefined) is simply not pushed.
#[derive(Clone, Debug, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    /// Non-finite numbers are written as null.
    Num(f64),
    Str(&'a str),
    Arr(Vec<Json<'a>>),
    Obj(Vec<(&'a str, Json<'a>)>),
}

/// `JSON.stringify(v, null, indent)` (indent > 0).
pub fn stringify(v: &Json, indent: usize) -> String {
    let mut out = String::new();
    write_json(&mut out, v, indent, 0);
    out
}

fn newline(out: &mut String, indent: usize, depth: usize) {
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', indent * depth));
}

fn write_json(out: &mut String, v: &Json, indent: usize, depth: usize) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Num(x) if x.is_finite() => write_num(out, *x),
        Json::Num(_) => out.push_str("null"),
        Json::Str(s) => write_json_string(out, s),
        Json::Arr(items) if items.is_empty() => out.push_str("[]"),
        Json::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_json(out, item, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Json::Obj(fields) if fields.is_empty() => out.push_str("{}"),
        Json::Obj(fields) => {
            out.push('{');
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_json_string(out, k);
                out.push_str(": ");
                write_json(out, item, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push('}');
        }
    }
}

/// A string as JSON.stringify quotes it: `"` `\` and the short escapes, other controls as \u00xx, the rest as is
/// (U+2028, U+2029 and DEL included). Rust strings hold no lone surrogates, so none needs \udxxx.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: &str = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(esc);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16() {
        assert_eq!(utf16_len("µs"), 2);
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(utf16_prefix("ab😀c", 3), "ab\u{fffd}");
        assert_eq!(utf16_prefix("ab😀c", 4), "ab😀");
        assert_eq!(utf16_prefix("abc", 5), "abc");
        // U+FF61 sorts after U+1F600 by code point, before it by UTF-16 units (0xFF61 > 0xD83D).
        assert_eq!(cmp_utf16("\u{ff61}", "\u{1f600}"), std::cmp::Ordering::Greater);
        assert_eq!(cmp_utf16("a/b", "a.b"), std::cmp::Ordering::Greater);
    }

    #[test]
    fn json() {
        let v = Json::Obj(vec![
            ("a", Json::Arr(vec![])),
            ("b", Json::Obj(vec![])),
            (
                "c",
                Json::Arr(vec![
                    Json::Num(1.0),
                    Json::Obj(vec![("d", Json::Str("x\u{1}\u{1f}\u{7f}\u{2028}\"\\\u{8}\u{c}\n\r\t/é"))]),
                ]),
            ),
            ("f", Json::Num(f64::NAN)),
            ("g", Json::Num(-0.0)),
            ("h", Json::Null),
            ("i", Json::Bool(true)),
            ("j", Json::Num(1e21)),
        ]);
        let want = "{\n \"a\": [],\n \"b\": {},\n \"c\": [\n  1,\n  {\n   \"d\": \"x\\u0001\\u001f\u{7f}\u{2028}\\\"\\\\\\b\\f\\n\\r\\t/é\"\n  }\n ],\n \"f\": null,\n \"g\": 0,\n \"h\": null,\n \"i\": true,\n \"j\": 1e+21\n}";
        assert_eq!(stringify(&v, 1), want);
        assert_eq!(stringify(&Json::Arr(vec![]), 1), "[]");
    }
}

//! JSON out, and the TypeScript type of each value written: every record the analysis hands out is declared
//! once (`record!`), and both its JSON and its TypeScript interface come from that declaration.

use std::fmt::Write as _;

/// Writes JSON, compact or indented (`indent` spaces per level, as `JSON.stringify(v, null, indent)` lays it).
pub struct Json {
    pub out: String,
    indent: usize,
    /// Per open object or array: how many members it has so far.
    open: Vec<usize>,
}

impl Json {
    pub fn new(indent: usize) -> Self {
        Json { out: String::new(), indent, open: vec![] }
    }

    fn newline(&mut self) {
        if self.indent > 0 {
            self.out.push('\n');
            for _ in 0..self.indent * self.open.len() {
                self.out.push(' ');
            }
        }
    }

    /// Before a member of the innermost object or array: the comma and the line break.
    fn member(&mut self) {
        if let Some(n) = self.open.last_mut() {
            if *n > 0 {
                self.out.push(',');
            }
            *n += 1;
            self.newline();
        }
    }

    pub fn begin(&mut self, bracket: char) {
        self.out.push(bracket);
        self.open.push(0);
    }

    pub fn end(&mut self, bracket: char) {
        let n = self.open.pop().unwrap_or(0);
        if n > 0 {
            self.newline();
        }
        self.out.push(bracket);
    }

    /// An object member's key; its value follows.
    pub fn key(&mut self, k: &str) {
        self.member();
        string(&mut self.out, k);
        self.out.push(':');
        if self.indent > 0 {
            self.out.push(' ');
        }
    }

    /// An array member; its value follows.
    pub fn item(&mut self) {
        self.member();
    }

    pub fn field<T: ToJson + ?Sized>(&mut self, k: &str, v: &T) {
        self.key(k);
        v.write(self);
    }
}

/// A JSON string.
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A value that writes itself as JSON.
pub trait ToJson {
    fn write(&self, j: &mut Json);
}

/// The TypeScript type of what a ToJson writes.
pub trait Ts {
    fn ts() -> String;
}

impl ToJson for f64 {
    fn write(&self, j: &mut Json) {
        if self.is_finite() {
            let _ = write!(j.out, "{self}");
        } else {
            j.out.push_str("null");
        }
    }
}

impl Ts for f64 {
    fn ts() -> String {
        "number".into()
    }
}

macro_rules! whole_numbers {
    ($($t:ty),*) => {$(
        impl ToJson for $t {
            fn write(&self, j: &mut Json) {
                let _ = write!(j.out, "{self}");
            }
        }

        impl Ts for $t {
            fn ts() -> String {
                "number".into()
            }
        }
    )*};
}
whole_numbers!(usize, u64, u32, i64);

impl ToJson for bool {
    fn write(&self, j: &mut Json) {
        j.out.push_str(if *self { "true" } else { "false" });
    }
}

impl Ts for bool {
    fn ts() -> String {
        "boolean".into()
    }
}

impl ToJson for String {
    fn write(&self, j: &mut Json) {
        string(&mut j.out, self);
    }
}

impl Ts for String {
    fn ts() -> String {
        "string".into()
    }
}

impl ToJson for str {
    fn write(&self, j: &mut Json) {
        string(&mut j.out, self);
    }
}

impl Ts for str {
    fn ts() -> String {
        "string".into()
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write(&self, j: &mut Json) {
        self.as_slice().write(j);
    }
}

impl<T: Ts> Ts for Vec<T> {
    fn ts() -> String {
        let t = T::ts();
        if t.contains(['|', ' ']) {
            format!("({t})[]")
        } else {
            format!("{t}[]")
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write(&self, j: &mut Json) {
        j.begin('[');
        for v in self {
            j.item();
            v.write(j);
        }
        j.end(']');
    }
}

impl<T: Ts> Ts for [T] {
    fn ts() -> String {
        format!("{}[]", T::ts())
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write(&self, j: &mut Json) {
        match self {
            Some(v) => v.write(j),
            None => j.out.push_str("null"),
        }
    }
}

impl<T: Ts> Ts for Option<T> {
    fn ts() -> String {
        format!("{} | null", T::ts())
    }
}

/// Names with a number each, in order: a JSON object (TypeScript `Record<string, number>`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts(pub Vec<(String, u64)>);

impl Counts {
    /// Adds n to `name`'s count (a new name goes last).
    pub fn add(&mut self, name: &str, n: u64) {
        match self.0.iter_mut().find(|(k, _)| k == name) {
            Some(e) => e.1 += n,
            None => self.0.push((name.to_string(), n)),
        }
    }
}

impl ToJson for Counts {
    fn write(&self, j: &mut Json) {
        j.begin('{');
        for (k, v) in &self.0 {
            j.field(k, v);
        }
        j.end('}');
    }
}

impl Ts for Counts {
    fn ts() -> String {
        "Record<string, number>".into()
    }
}

/// The second of one or two keys.
macro_rules! second {
    ($k:literal) => {
        $k
    };
    ($k:literal, $alt:literal) => {
        $alt
    };
}
pub(crate) use second;

/// A struct whose fields are written as a JSON object, keys in declaration order, and declared as a TypeScript
/// interface of the same name with the same docs: `record! { /// doc  Name { /// doc  field: Type = "key", … } }`.
/// A field may have a second key (`= "startUs" | "start_us"`), which `write_alt` writes (`tpw profile --json`).
macro_rules! record {
    ($(#[doc = $doc:literal])* $name:ident { $($(#[doc = $fdoc:literal])* $field:ident : $ty:ty = $key:literal $(| $alt:literal)?),* $(,)? }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $($(#[doc = $fdoc])* pub $field: $ty,)*
        }

        impl $crate::output::json::ToJson for $name {
            fn write(&self, j: &mut $crate::output::json::Json) {
                j.begin('{');
                $(j.field($key, &self.$field);)*
                j.end('}');
            }
        }

        impl $name {
            /// As JSON, each field under its second key where it has one.
            #[allow(dead_code)]
            pub fn write_alt(&self, j: &mut $crate::output::json::Json) {
                j.begin('{');
                $(j.field($crate::output::json::second!($key $(, $alt)?), &self.$field);)*
                j.end('}');
            }
        }

        impl $crate::output::json::Ts for $name {
            fn ts() -> String {
                stringify!($name).into()
            }
        }

        impl $crate::output::json::Declared for $name {
            fn declaration() -> String {
                let mut s = String::new();
                $crate::output::json::doc(&mut s, "", &[$($doc),*]);
                s.push_str(concat!("export interface ", stringify!($name), " {\n"));
                $(
                    $crate::output::json::doc(&mut s, "  ", &[$($fdoc),*]);
                    s.push_str(&format!("  {}: {};\n", $key, <$ty as $crate::output::json::Ts>::ts()));
                )*
                s.push_str("}\n");
                s
            }
        }
    };
}
pub(crate) use record;

/// A fixed set of strings: a Rust enum, written as its string, a union of string literals in TypeScript.
macro_rules! literals {
    ($(#[doc = $doc:literal])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl $crate::output::json::ToJson for $name {
            fn write(&self, j: &mut $crate::output::json::Json) {
                $crate::output::json::string(&mut j.out, self.as_str());
            }
        }

        impl $crate::output::json::Ts for $name {
            fn ts() -> String {
                [$(concat!("'", $text, "'")),+].join(" | ")
            }
        }
    };
}
pub(crate) use literals;

/// A record's TypeScript declaration.
pub trait Declared {
    fn declaration() -> String;
}

/// A doc comment from `///` lines (each begins with a space), at `indent`.
pub fn doc(s: &mut String, indent: &str, lines: &[&str]) {
    match lines {
        [] => {}
        [one] => s.push_str(&format!("{indent}/**{one} */\n")),
        _ => {
            s.push_str(&format!("{indent}/**\n"));
            for l in lines {
                s.push_str(&format!("{indent} *{l}\n"));
            }
            s.push_str(&format!("{indent} */\n"));
        }
    }
}

/// `v` as JSON, compact (indent 0) or laid out.
pub fn to_json<T: ToJson + ?Sized>(v: &T, indent: usize) -> String {
    let mut j = Json::new(indent);
    v.write(&mut j);
    j.out
}

#[cfg(test)]
mod tests {
    use super::*;

    record! {
        /// A test record.
        Pair {
            /// The first.
            a: f64 = "aKey",
            b: Vec<String> = "b",
            c: Option<u64> = "c",
        }
    }

    #[test]
    fn records_write_json_and_declare_their_type() {
        let p = Pair { a: 0.1 + 0.2, b: vec!["x\"\n\u{1}".into()], c: None };
        assert_eq!(to_json(&p, 0), r#"{"aKey":0.30000000000000004,"b":["x\"\n\u0001"],"c":null}"#);
        assert_eq!(
            to_json(&p, 1),
            "{\n \"aKey\": 0.30000000000000004,\n \"b\": [\n  \"x\\\"\\n\\u0001\"\n ],\n \"c\": null\n}"
        );
        assert_eq!(to_json(&Pair::default(), 1), "{\n \"aKey\": 0,\n \"b\": [],\n \"c\": null\n}");
        assert_eq!(
            Pair::declaration(),
            "/** A test record. */\nexport interface Pair {\n  /** The first. */\n  aKey: number;\n  b: string[];\n  c: number | null;\n}\n"
        );
        assert_eq!(to_json(&vec![f64::NAN, 1e21, -0.5], 0), "[null,1000000000000000000000,-0.5]");
    }
}

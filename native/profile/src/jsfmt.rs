//! JavaScript's number and JSON formatting, to the byte: the output must equal what the node CLI prints.
//! `Number.prototype.toString()`, `toFixed(digits)`, `Number(string)`, `JSON.stringify(value, null, indent)` and
//! string lengths in UTF-16 code units (what JS's `length` and `slice` count).

use std::fmt::Write as _;

mod json;
pub use json::{cmp_utf16, stringify, utf16_len, utf16_prefix, write_json_string, Json};

/// The decimal digits of `v` (the formatting machinery of `write!` cost more than the digits, per number).
fn write_integer(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    let mut n = v.unsigned_abs();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// `String(x)` for a number (ECMAScript Number::toString, radix 10).
pub fn num_to_string(x: f64) -> String {
    let mut s = String::new();
    write_num(&mut s, x);
    s
}

/// Appends `String(x)`. Rust's `{:e}` gives the shortest digits that round-trip, as ECMAScript asks; they are
/// laid out here by ECMAScript's rules (plain below 1e21 and from 1e-6, exponential otherwise).
pub fn write_num(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x == 0.0 {
        // -0 too.
        out.push('0');
        return;
    }
    if x.is_infinite() {
        out.push_str(if x < 0.0 { "-Infinity" } else { "Infinity" });
        return;
    }
    // Whole numbers below 2^53 (counts, FLOPs, bytes, picoseconds): their decimal digits are the shortest form,
    // and ECMAScript writes them plainly below 1e21.
    if x.trunc() == x && x.abs() < 9007199254740992.0 {
        write_integer(out, x as i64);
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    let mut buf = String::with_capacity(32);
    let _ = write!(buf, "{:e}", x.abs());
    let (mantissa, exp) = buf.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let mut digits = [0u8; 24];
    let mut k = 0usize;
    for b in mantissa.bytes().filter(|b| b.is_ascii_digit()) {
        digits[k] = b;
        k += 1;
    }
    let even = even_on_tie(x.abs(), &digits[..k], exp);
    let digits = match &even {
        Some(d) => d.as_bytes(),
        None => &digits[..k],
    };
    let text = |d: &[u8]| std::str::from_utf8(d).expect("ASCII digits").to_owned();
    // n: where the decimal point goes, counted from the first digit (value = 0.d1d2… × 10^n).
    let n = exp + 1;
    let ki = k as i32;
    if ki <= n && n <= 21 {
        out.push_str(&text(digits));
        out.extend(std::iter::repeat_n('0', (n - ki) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&text(&digits[..n as usize]));
        out.push('.');
        out.push_str(&text(&digits[n as usize..]));
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&text(digits));
    } else {
        out.push_str(&text(&digits[..1]));
        if k > 1 {
            out.push('.');
            out.push_str(&text(&digits[1..]));
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

/// Where two shortest digit strings are equally close to x (its exact value ends in a 5 just past the last
/// digit, as 924717240207.78125 does), ECMAScript (and V8) take the even one, Rust the one above: the even one's
/// digits when it is not Rust's and also reads back as x. `digits` (Rust's) stand for 0.d1d2… × 10^(exp + 1).
fn even_on_tie(x: f64, digits: &[u8], exp: i32) -> Option<String> {
    let k = digits.len() as i32;
    if k > 17 {
        return None;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if biased == 0 { (frac, -1074) } else { (frac | (1u64 << 52), biased - 1075) };
    let tz = m.trailing_zeros();
    m >>= tz;
    e += tz as i32;
    // The last digit is worth 10^s. x = (T + 1/2) × 10^s needs x's lowest set bit at 2^(s-1): s = e + 1.
    let s = exp + 1 - k;
    if s != e + 1 {
        return None;
    }
    // X = x / 10^(s-1), an integer ending in 5 when x is a tie.
    let big_x: u128 = if e < 0 {
        if -e > 26 {
            return None; // x would have more than 18 significant digits: no tie at ≤ 17
        }
        m as u128 * 5u128.pow((-e) as u32)
    } else {
        let p = 5u64.checked_pow(e as u32)?;
        if m % p > 0 {
            return None;
        }
        (m / p) as u128
    };
    if big_x % 10 != 5 {
        return None;
    }
    let t = big_x / 10;
    let d: u128 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let other = if d == t {
        t + 1
    } else if d == t + 1 {
        t
    } else {
        return None;
    };
    if d & 1 == 0 {
        return None;
    }
    let other = other.to_string();
    if other.len() != digits.len() || other.ends_with('0') {
        return None;
    }
    let reads_back = format!("{other}e{s}").parse::<f64>().ok()? == x;
    reads_back.then_some(other)
}

/// `x.toFixed(digits)` (digits up to 15): the integer n nearest to x × 10^digits on x's exact binary value, the
/// larger on a tie (so 0.125 → "0.13" but 1.005, a little below 1.005, → "1.00"); from 1e21 on, String(x).
pub fn to_fixed(x: f64, digits: u32) -> String {
    assert!(digits <= 15, "to_fixed supports up to 15 digits");
    if !x.is_finite() {
        return num_to_string(x);
    }
    let mut out = String::new();
    let mut x = x;
    if x < 0.0 {
        // Not for -0: ECMAScript asks x < 0 of the mathematical value.
        out.push('-');
        x = -x;
    }
    if x >= 1e21 {
        write_num(&mut out, x);
        return out;
    }
    // x = m × 2^e exactly.
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 { (frac, -1074) } else { (frac | (1u64 << 52), biased - 1075) };
    let scale = 10u128.pow(digits);
    let n: u128 = if e >= 0 {
        // x < 1e21 < 2^70 and scale ≤ 10^15 < 2^50: no overflow.
        ((m as u128) << e) * scale
    } else {
        let v = m as u128 * scale; // < 2^103
        let s = (-e) as u32;
        if s >= 104 {
            // v < 2^103 ≤ half of 2^s: rounds to 0.
            0
        } else {
            let q = v >> s;
            let r = v & ((1u128 << s) - 1);
            if r >= 1u128 << (s - 1) {
                q + 1
            } else {
                q
            }
        }
    };
    let m = n.to_string();
    if digits == 0 {
        out.push_str(&m);
        return out;
    }
    let f = digits as usize;
    let m = if m.len() <= f { format!("{}{}", "0".repeat(f + 1 - m.len()), m) } else { m };
    let (a, b) = m.split_at(m.len() - f);
    out.push_str(a);
    out.push('.');
    out.push_str(b);
    out
}

/// JS's StrWhiteSpaceChar: WhiteSpace (with every Zs) and LineTerminator, what `Number(s)` trims.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// `Number(s)` for a string (ECMAScript StringToNumber): trimmed; '' → 0; 0x / 0o / 0b integers (unsigned);
/// decimal literals with sign, fraction and exponent, or ±Infinity; anything else NaN.
pub fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    let b = t.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            let mut v = 0f64;
            for &c in &b[2..] {
                match (c as char).to_digit(radix) {
                    Some(d) => v = v * radix as f64 + d as f64,
                    None => return f64::NAN,
                }
            }
            return v;
        }
    }
    let (neg, u) = match b[0] {
        b'+' => (false, &t[1..]),
        b'-' => (true, &t[1..]),
        _ => (false, t),
    };
    if u == "Infinity" {
        return if neg { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    if !is_decimal_literal(u.as_bytes()) {
        return f64::NAN;
    }
    // The grammar is checked; Rust's parse rounds correctly, as ECMAScript asks.
    let v: f64 = u.parse().unwrap_or(f64::NAN);
    if neg {
        -v
    } else {
        v
    }
}

/// StrUnsignedDecimalLiteral without Infinity: `1`, `1.`, `1.5`, `.5`, each with an optional `e±N`.
fn is_decimal_literal(b: &[u8]) -> bool {
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = 0;
    let int = digits(i);
    i += int;
    let mut fraction = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        fraction = digits(i);
        i += fraction;
    }
    if int == 0 && fraction == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp = digits(i);
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

/// JS `Number.isInteger(x)`.
pub fn is_integer(x: f64) -> bool {
    x.is_finite() && x.trunc() == x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::excessive_precision)] // exact values of the doubles, on purpose
    fn number_to_string() {
        let cases: &[(f64, &str)] = &[
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e20, "100000000000000000000"),
            (5e-7, "5e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-7, "1e-7"),
            (1e-6, "0.000001"),
            (0.000001234, "0.000001234"),
            (123e-20, "1.23e-18"),
            (-0.0, "0"),
            (0.0, "0"),
            (100.0, "100"),
            (-1.5, "-1.5"),
            (1.0 / 3.0, "0.3333333333333333"),
            (9007199254740992.0, "9007199254740992"),
            (12345.678, "12345.678"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-2.5e30, "-2.5e+30"),
            // Two shortest strings equally close: the even one (Rust alone would end these in 3, 5, 3 and 7).
            (924717240207.78125, "924717240207.7812"),
            (2.98023223876953125e-8, "2.9802322387695312e-8"),
            (123427607253974.625, "123427607253974.62"),
            (181365692743.91864, "181365692743.91864"),
            (17296303687986.344, "17296303687986.344"),
            (1547947565346.6172, "1547947565346.6172"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for &(x, s) in cases {
            assert_eq!(num_to_string(x), s, "{x:?}");
        }
    }

    #[test]
    fn fixed() {
        let cases: &[(f64, u32, &str)] = &[
            (0.125, 2, "0.13"),
            (2.5, 0, "3"),
            (1.005, 2, "1.00"),
            (1e21, 2, "1e+21"),
            (-1e21, 1, "-1e+21"),
            (-0.0, 1, "0.0"),
            (-0.04, 1, "-0.0"),
            (-0.001, 2, "-0.00"),
            (0.05, 1, "0.1"),
            (0.15, 1, "0.1"),
            (0.25, 1, "0.3"),
            (0.35, 1, "0.3"),
            (1.45, 1, "1.4"),
            (f64::NAN, 1, "NaN"),
            (f64::INFINITY, 2, "Infinity"),
            (f64::NEG_INFINITY, 1, "-Infinity"),
            (5e-324, 2, "0.00"),
            (123.456, 1, "123.5"),
            (999.95, 1, "1000.0"),
            (999.96, 1, "1000.0"),
            (0.5, 0, "1"),
            (1.5, 0, "2"),
            (-2.5, 0, "-3"),
            (1e20, 2, "100000000000000000000.00"),
            (9.995, 2, "9.99"),
            (4.35, 1, "4.3"),
            (1234567.891, 2, "1234567.89"),
            (0.0, 2, "0.00"),
            (7.0, 1, "7.0"),
        ];
        for &(x, d, s) in cases {
            assert_eq!(to_fixed(x, d), s, "{x:?}.toFixed({d})");
        }
    }

    #[test]
    fn number_of_string() {
        let cases: &[(&str, f64)] = &[
            ("", 0.0),
            (" 5 ", 5.0),
            ("1e3", 1000.0),
            ("0x14", 20.0),
            ("0X1f", 31.0),
            ("5.0", 5.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e400", f64::INFINITY),
            ("Infinity", f64::INFINITY),
            ("+Infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("\u{a0}5\u{feff}", 5.0),
            ("\u{2028}5", 5.0),
            ("1.5", 1.5),
            ("00012", 12.0),
            ("\t\n12\r\u{b}\u{c}", 12.0),
            ("-3", -3.0),
            ("+7", 7.0),
        ];
        for &(s, x) in cases {
            assert_eq!(string_to_number(s), x, "Number({s:?})");
        }
        assert!(string_to_number("-0").is_sign_negative());
        for s in [
            "+0x1",
            "infinity",
            "1_0",
            "1e",
            "e1",
            "5\u{180e}",
            "-",
            "+",
            "0x",
            "1 2",
            "x",
            ".",
            "1e+",
            "inf",
            "nan",
            "0x1g",
        ] {
            assert!(string_to_number(s).is_nan(), "Number({s:?})");
        }
    }

    #[test]
    fn integers() {
        assert!(is_integer(5.0) && is_integer(-0.0) && is_integer(1e300));
        assert!(!is_integer(0.5) && !is_integer(f64::NAN) && !is_integer(f64::INFINITY));
    }
}

//! JSON for the targets: arbitrary values drawn from the input, the same value written as
//! many different texts ([`respell`]: key order, whitespace, string escapes, number spellings),
//! value equality as JCS (RFC 8785) sees it ([`jcs_equal`]: numbers are IEEE doubles), and an
//! independent RFC 8785 serializer ([`reference_jcs`]) the canonicalizer is compared with.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Characters worth having in strings: escapes JSON requires, escapes it allows, the
/// surrogate range's neighbours, characters JCS sorts differently in UTF-16 than in UTF-8.
const CHARS: &[char] = &[
    'a',
    'Z',
    '0',
    ' ',
    '"',
    '\\',
    '/',
    '\u{0}',
    '\u{1}',
    '\u{8}',
    '\u{9}',
    '\u{a}',
    '\u{c}',
    '\u{d}',
    '\u{1f}',
    '\u{7f}',
    '\u{80}',
    '\u{ff}',
    '\u{2028}',
    '\u{2029}',
    '\u{d7ff}',
    '\u{e000}',
    '\u{fb33}',
    '\u{fffd}',
    '\u{ffff}',
    '\u{10000}',
    '\u{1f600}',
    '\u{10ffff}',
    'é',
    '€',
];

/// Doubles worth having: zeros, the edges of JCS's plain notation (1e-7, 1e21), the integers
/// doubles stop counting at (2^53), subnormals, extremes, and decimals with no exact double.
const DOUBLES: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    0.2,
    0.3,
    1e-7,
    f64::from_bits(0x3e7a_d7f2_9abc_af47), // the double below 1e-7
    1e-6,
    1e20,
    1e21,
    9.999999999999999e20,
    123456789012345680000.0,
    9007199254740992.0,
    9007199254740994.0,
    4.5,
    0.002,
    1e30,
    1e-27,
    333333333.3333333,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    std::f64::consts::E,
    1.0000000000000002,
];

/// A string drawn from the input: pieces of [`CHARS`] and arbitrary text.
pub fn arbitrary_string(u: &mut Unstructured<'_>) -> Result<String> {
    let mut s = String::new();
    for _ in 0..u.int_in_range(0..=6u8)? {
        if u.ratio(1, 2)? {
            s.push(*u.choose(CHARS)?);
        } else {
            let piece: String = u.arbitrary()?;
            s.extend(piece.chars().take(12));
        }
    }
    Ok(s)
}

/// A number drawn from the input: small and large integers of both signs, interesting
/// doubles, doubles from arbitrary bits (finite ones), short decimals.
pub fn arbitrary_number(u: &mut Unstructured<'_>) -> Result<Number> {
    Ok(match u.int_in_range(0..=6u8)? {
        0 => Number::from(u.int_in_range(-1000i64..=1000)?),
        1 => Number::from(u.arbitrary::<i64>()?),
        2 => Number::from(u.arbitrary::<u64>()?),
        3 => Number::from_f64(*u.choose(DOUBLES)?).expect("finite"),
        4 => {
            let bits: u64 = u.arbitrary()?;
            Number::from_f64(f64::from_bits(bits)).unwrap_or_else(|| Number::from(0))
        }
        5 => {
            // A short decimal, e.g. 12.375 or -0.05.
            let mantissa = u.int_in_range(-99_999i64..=99_999)?;
            let scale = u.int_in_range(0..=8i32)?;
            let f = mantissa as f64 / 10f64.powi(scale);
            Number::from_f64(f).expect("finite")
        }
        _ => Number::from(u.int_in_range(0u64..=(1 << 54))?),
    })
}

/// A JSON value drawn from the input, at most `depth` levels of arrays and objects deep.
pub fn arbitrary_value(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let top = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Number(arbitrary_number(u)?),
        3 => Value::String(arbitrary_string(u)?),
        4 => {
            let n = u.int_in_range(0..=4u8)?;
            let mut items = Vec::with_capacity(n.into());
            for _ in 0..n {
                items.push(arbitrary_value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=4u8)? {
                map.insert(arbitrary_string(u)?, arbitrary_value(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

/// Whether `a` and `b` are the same JSON value for JCS: numbers compared as IEEE doubles
/// (so `1`, `1.0` and `1e0` are one value, and so are `0` and `-0`), objects as sets of
/// members, everything else exactly.
pub fn jcs_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| jcs_equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| jcs_equal(v, w)))
        }
        _ => false,
    }
}

/// `value` with one place changed, chosen by the input: a leaf replaced, a member added or
/// removed, an item dropped. The change may leave it JCS-equal (`1` for `1.0`), which is
/// what [`jcs_equal`] then says.
pub fn mutate(u: &mut Unstructured<'_>, value: &Value) -> Result<Value> {
    let mut copy = value.clone();
    mutate_in(u, &mut copy)?;
    Ok(copy)
}

fn mutate_in(u: &mut Unstructured<'_>, value: &mut Value) -> Result<()> {
    let descend = u.ratio(2, 3)?;
    match value {
        Value::Array(items) if descend && !items.is_empty() => {
            let i = u.choose_index(items.len())?;
            mutate_in(u, &mut items[i])
        }
        Value::Object(map) if descend && !map.is_empty() => {
            let key = map.keys().nth(u.choose_index(map.len())?).expect("in range").clone();
            mutate_in(u, map.get_mut(&key).expect("present"))
        }
        Value::Array(items) if !items.is_empty() && u.ratio(1, 3)? => {
            items.pop();
            Ok(())
        }
        Value::Object(map) if u.ratio(1, 2)? => {
            if !map.is_empty() && u.ratio(1, 2)? {
                let key = map.keys().nth(u.choose_index(map.len())?).expect("in range").clone();
                map.remove(&key);
            } else {
                map.insert(arbitrary_string(u)?, arbitrary_value(u, 1)?);
            }
            Ok(())
        }
        Value::Number(n) if u.ratio(1, 2)? => {
            // A neighbouring double, or the same value as an integer or a double.
            let f = n.as_f64().unwrap_or(0.0);
            let next = match u.int_in_range(0..=2u8)? {
                0 => f64::from_bits(f.to_bits().wrapping_add(1)),
                1 => f64::from_bits(f.to_bits().wrapping_sub(1)),
                _ => f,
            };
            *n = match Number::from_f64(next) {
                Some(m) if next.fract() != 0.0 || u.ratio(1, 2)? => m,
                _ if next.fract() == 0.0 && next.abs() < 1e18 => Number::from(next as i64),
                _ => n.clone(),
            };
            Ok(())
        }
        Value::String(s) if u.ratio(1, 2)? => {
            s.push(*u.choose(CHARS)?);
            Ok(())
        }
        _ => {
            *value = arbitrary_value(u, 1)?;
            Ok(())
        }
    }
}

/// Writes `value` as JSON text, each choice (key order, whitespace, escapes, number
/// spelling) drawn from the input; every text parses back to the same value for JCS.
pub fn respell(u: &mut Unstructured<'_>, value: &Value, out: &mut String) -> Result<()> {
    space(u, out)?;
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => spell_number(u, n, out)?,
        Value::String(s) => spell_string(u, s, out)?,
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                respell(u, item, out)?;
            }
            space(u, out)?;
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            // A Fisher-Yates shuffle driven by the input.
            for i in (1..members.len()).rev() {
                let j = u.int_in_range(0..=i)?;
                members.swap(i, j);
            }
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(u, out)?;
                spell_string(u, key, out)?;
                space(u, out)?;
                out.push(':');
                respell(u, item, out)?;
            }
            space(u, out)?;
            out.push('}');
        }
    }
    space(u, out)
}

fn space(u: &mut Unstructured<'_>, out: &mut String) -> Result<()> {
    if u.ratio(1, 4)? {
        out.push_str(u.choose(&[" ", "\n", "\t", "\r\n  ", "  "])?);
    }
    Ok(())
}

/// A string literal: each character as itself where JSON allows it, or escaped (`\u` with
/// either hex case, a surrogate pair beyond the BMP, or a short escape).
fn spell_string(u: &mut Unstructured<'_>, s: &str, out: &mut String) -> Result<()> {
    out.push('"');
    for c in s.chars() {
        let must = c == '"' || c == '\\' || (c as u32) < 0x20;
        if !must && u.ratio(3, 4)? {
            out.push(c);
            continue;
        }
        let short = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '/' => Some("\\/"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            _ => None,
        };
        match short {
            Some(escape) if u.ratio(1, 2)? => out.push_str(escape),
            _ => {
                let mut units = [0u16; 2];
                let upper = u.arbitrary::<bool>()?;
                for unit in c.encode_utf16(&mut units) {
                    if upper {
                        out.push_str(&format!("\\u{unit:04X}"));
                    } else {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
    }
    out.push('"');
    Ok(())
}

/// The exact decimal a number stands for: `digits × 10^exponent` (digits without leading
/// zeros), and its sign. A double is taken at its shortest round-trip decimal, which every
/// correctly rounding parser reads back as that double.
fn decimal(n: &Number) -> (bool, String, i32) {
    if let Some(i) = n.as_u64() {
        return (false, i.to_string(), 0);
    }
    if let Some(i) = n.as_i64() {
        return (i < 0, i.unsigned_abs().to_string(), 0);
    }
    let f = n.as_f64().expect("a finite number");
    let text = format!("{:e}", f.abs());
    let (mantissa, exponent) = text.split_once('e').expect("{:e} writes an exponent");
    let exponent: i32 = exponent.parse().expect("a decimal exponent");
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int}{frac}");
    (f.is_sign_negative(), digits, exponent - frac.len() as i32)
}

/// A spelling of `n`: the same decimal with trailing zeros, the point moved, an exponent in
/// any of JSON's forms (`e`/`E`, with or without a sign, with leading zeros) or none.
fn spell_number(u: &mut Unstructured<'_>, n: &Number, out: &mut String) -> Result<()> {
    let (negative, digits, exponent) = decimal(n);
    if u.ratio(1, 3)? {
        out.push_str(&n.to_string());
        return Ok(());
    }
    let zeros = u.int_in_range(0..=2usize)?;
    let digits = format!("{digits}{}", "0".repeat(zeros));
    let exponent = exponent - zeros as i32;
    let len = digits.len() as i32;
    // The written exponent: none (plain decimal) when short enough, or one that puts the
    // point after k digits.
    let plain = exponent.abs() <= 40 && u.ratio(1, 2)?;
    let written = if plain { 0 } else { exponent + len - u.int_in_range(0..=len)? };
    let shift = exponent - written;
    let (int, frac) = if shift >= 0 {
        (format!("{digits}{}", "0".repeat(shift as usize)), String::new())
    } else if len + shift > 0 {
        let at = (len + shift) as usize;
        (digits[..at].to_owned(), digits[at..].to_owned())
    } else {
        ("0".to_owned(), format!("{}{digits}", "0".repeat((-(len + shift)) as usize)))
    };
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let zero = int == "0" && frac.chars().all(|c| c == '0');
    // `-0` is 0 for JCS; a negative zero double keeps its sign either way.
    if negative || (zero && u.ratio(1, 8)?) {
        out.push('-');
    }
    out.push_str(int);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(&frac);
    } else if u.ratio(1, 4)? {
        out.push_str(".0");
    }
    if !plain || u.ratio(1, 8)? {
        out.push(if u.arbitrary()? { 'e' } else { 'E' });
        match (written < 0, u.arbitrary::<bool>()?) {
            (true, _) => out.push('-'),
            (false, true) => out.push('+'),
            (false, false) => {}
        }
        out.push_str(&"0".repeat(u.int_in_range(0..=2usize)?));
        out.push_str(&written.unsigned_abs().to_string());
    }
    Ok(())
}

/// RFC 8785 written from the RFC, independently of the canonicalizer the product uses:
/// members sorted by their names' UTF-16 code units, strings with the minimal escapes,
/// numbers as ECMAScript's `Number.prototype.toString` writes doubles.
pub fn reference_jcs(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&ecmascript_number(n.as_f64().expect("a finite number"))),
        Value::String(s) => reference_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_jcs(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_string(key, out);
                out.push(':');
                reference_jcs(item, out);
            }
            out.push('}');
        }
    }
}

fn reference_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript's Number::toString(x) (ECMA-262 §6.1.6.1.20) for a finite double.
pub fn ecmascript_number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let (digits, n) = shortest_digits(x.abs());
    let k = digits.len() as i32;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e < 0 { format!("-{}", -e) } else { format!("+{e}") };
        if k == 1 { format!("{digits}e{e}") } else { format!("{}.{}e{e}", &digits[..1], &digits[1..]) }
    };
    format!("{sign}{body}")
}

/// The digits `s` and the exponent `n` of ECMAScript's Number::toString: the fewest digits
/// that read back as `x` (what Rust's `{:e}` writes), and of two such candidates equally close
/// to `x`, the even one (where Rust rounds half up). Such a tie happens when the exact value
/// of `x` has exactly one digit more, a 5.
fn shortest_digits(x: f64) -> (String, i32) {
    let text = format!("{x:e}");
    let (mantissa, exponent) = text.split_once('e').expect("an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = exponent.parse::<i32>().expect("a decimal exponent") + 1;
    // Every double's exact decimal expansion has fewer than 800 significant digits.
    let exact = format!("{x:.800e}");
    let (exact_mantissa, exact_exponent) = exact.split_once('e').expect("an exponent");
    let exact_digits: String = exact_mantissa.chars().filter(|c| *c != '.').collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    let exact_n = exact_exponent.parse::<i32>().expect("a decimal exponent") + 1;
    if exact_n != n || exact_digits.len() != digits.len() + 1 || !exact_digits.ends_with('5') {
        return (digits, n);
    }
    let lower = &exact_digits[..digits.len()];
    let last = lower.as_bytes()[lower.len() - 1] - b'0';
    if last.is_multiple_of(2) {
        return (lower.trim_end_matches('0').to_owned(), n);
    }
    // The upper neighbour: add one to the last digit, carrying.
    let mut up: Vec<u8> = lower.bytes().collect();
    let mut i = up.len();
    loop {
        if i == 0 {
            up.insert(0, b'1');
            let up = String::from_utf8(up).expect("ASCII digits");
            return (up.trim_end_matches('0').to_owned(), n + 1);
        }
        i -= 1;
        if up[i] == b'9' {
            up[i] = b'0';
        } else {
            up[i] += 1;
            break;
        }
    }
    let up = String::from_utf8(up).expect("ASCII digits");
    (up.trim_end_matches('0').to_owned(), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecmascript_numbers_as_rfc_8785_lists_them() {
        // RFC 8785 Appendix B (a selection) and the §3.2.2 example.
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, want) in cases {
            assert_eq!(ecmascript_number(f64::from_bits(*bits)), *want, "{bits:#x}");
        }
    }

    #[test]
    fn respelled_texts_parse_back_to_the_value() {
        let value: Value = serde_json::from_str(
            r#"{"b":[1,2.5,-0.001,1e21,123456789,"x\u0001\u20ac😀"],"a":{"z":null,"y":true},"€":-7}"#,
        )
        .unwrap();
        for seed in 0u8..64 {
            let bytes: Vec<u8> = (0..512u32).map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed)).collect();
            let mut u = Unstructured::new(&bytes);
            let mut text = String::new();
            respell(&mut u, &value, &mut text).unwrap();
            let back: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(jcs_equal(&value, &back), "{text}");
        }
    }
}

//! A small JSON value: what the host's settings, events and metadata are
//! written in, parsed and written without any crate beyond `std`.

use std::fmt;

/// A JSON value. Objects keep their keys in the order they were written or
/// parsed; [`Value::set`] replaces a key that is already there.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// a number, as a 64-bit float (integers are exact up to 2^53)
    Number(f64),
    /// a string
    String(String),
    /// an array
    Array(Vec<Value>),
    /// an object, as its members in order
    Object(Vec<(String, Value)>),
}

/// The most arrays and objects one value may nest, so that hostile input
/// cannot exhaust the stack.
const MAX_DEPTH: usize = 512;

impl Value {
    /// Parses one complete JSON value (RFC 8259); surrounding white space is
    /// allowed, anything else after the value is an error.
    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        p.ws();
        let v = p.value(0)?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected {} at offset {}", p.what(), p.i));
        }
        Ok(v)
    }

    /// An empty object, to fill with [`Value::set`].
    pub fn object() -> Value {
        Value::Object(Vec::new())
    }

    /// Sets the member `key` of an object to `v` (replacing one of that
    /// name) and returns the object, so calls chain. On anything but an
    /// object it does nothing.
    pub fn set(mut self, key: &str, v: impl Into<Value>) -> Value {
        if let Value::Object(members) = &mut self {
            let v = v.into();
            match members.iter_mut().find(|(k, _)| k == key) {
                Some(m) => m.1 = v,
                None => members.push((key.to_string(), v)),
            }
        }
        self
    }

    /// The member `key` of an object; `None` for a missing key or a value
    /// that is not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value of a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The value of a number that is a whole number within ±2^53.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) if n.fract() == 0.0 && n.abs() <= 9007199254740992.0 => Some(*n as i64),
            _ => None,
        }
    }

    /// The value of `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The members of an object.
    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// `to_string()` writes the value as compact JSON. A number that is not
/// finite, which JSON cannot hold, is written as `null`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{}", b),
            Value::Number(n) => {
                if !n.is_finite() {
                    f.write_str("null")
                } else if n.fract() == 0.0 && n.abs() < 1e15 {
                    write!(f, "{}", *n as i64)
                } else {
                    write!(f, "{}", n)
                }
            }
            Value::String(s) => write_string(f, s),
            Value::Array(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}", v)?;
                }
                f.write_str("]")
            }
            Value::Object(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_string(f, k)?;
                    write!(f, ":{}", v)?;
                }
                f.write_str("}")
            }
        }
    }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => write!(f, "{}", c)?,
        }
    }
    f.write_str("\"")
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

macro_rules! from_number {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Number(n as f64)
            }
        }
    )*};
}
from_number!(i32, i64, u32, u64, usize, f32, f64);

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn what(&self) -> String {
        match self.s.get(self.i) {
            Some(c) => format!("{:?}", *c as char),
            None => "end of text".to_string(),
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(())
        } else {
            Err(format!("unexpected {} at offset {}", self.what(), self.i))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("more than {} levels of nesting", MAX_DEPTH));
        }
        match self.s.get(self.i) {
            Some(b'n') => self.expect("null").map(|_| Value::Null),
            Some(b't') => self.expect("true").map(|_| Value::Bool(true)),
            Some(b'f') => self.expect("false").map(|_| Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Array(a));
                }
                loop {
                    self.ws();
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Array(a));
                        }
                        _ => return Err(format!("unexpected {} in an array at offset {}", self.what(), self.i)),
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut m: Vec<(String, Value)> = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Value::Object(m));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(format!("unexpected {} for a key at offset {}", self.what(), self.i));
                    }
                    let k = self.string()?;
                    self.ws();
                    self.expect(":")?;
                    self.ws();
                    let v = self.value(depth + 1)?;
                    // The last of duplicate keys wins, as in Go's decoder.
                    match m.iter_mut().find(|(key, _)| *key == k) {
                        Some(e) => e.1 = v,
                        None => m.push((k, v)),
                    }
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Object(m));
                        }
                        _ => return Err(format!("unexpected {} in an object at offset {}", self.what(), self.i)),
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(format!("unexpected {} at offset {}", self.what(), self.i)),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.s.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        if self.s[self.i] == b'-' {
            self.i += 1;
        }
        let leading_zero = self.s.get(self.i) == Some(&b'0');
        let n = self.digits();
        if n == 0 || leading_zero && n > 1 {
            return Err(format!("bad number at offset {}", start));
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(format!("bad number at offset {}", start));
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(format!("bad number at offset {}", start));
            }
        }
        // The bytes are ASCII digits and signs: valid UTF-8.
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
        text.parse::<f64>().map(Value::Number).map_err(|e| format!("bad number at offset {}: {}", start, e))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.s.get(self.i) {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(format!("bad \\u escape at offset {}", self.i)),
            };
            v = v * 16 + d as u32;
            self.i += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.i;
        self.i += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.s.get(self.i) {
                None => return Err(format!("unterminated string at offset {}", start)),
                Some(b'"') => {
                    self.i += 1;
                    return String::from_utf8(out).map_err(|_| format!("string at offset {} is not UTF-8", start));
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = match self.s.get(self.i) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.i += 1;
                            let mut u = self.hex4()?;
                            if (0xd800..0xdc00).contains(&u) && self.s[self.i..].starts_with(b"\\u") {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    self.i = save;
                                }
                            }
                            self.i -= 1; // hex4 moved past the escape already
                            char::from_u32(u).unwrap_or('\u{fffd}')
                        }
                        _ => return Err(format!("bad escape at offset {}", self.i)),
                    };
                    self.i += 1;
                    let mut b = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                }
                Some(c) if *c < 0x20 => return Err(format!("control character in a string at offset {}", self.i)),
                Some(c) => {
                    out.push(*c);
                    self.i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Value;

    #[test]
    fn round_trip() {
        let cases = [
            (r#"{"a":1,"b":[true,false,null],"c":"x\"y\\z\n","d":-1.5e3,"e":{}}"#, r#"{"a":1,"b":[true,false,null],"c":"x\"y\\z\n","d":-1500,"e":{}}"#),
            (" [ 0.25 , \"\\u00e9\\ud83d\\ude00\" ] ", "[0.25,\"é😀\"]"),
            ("{\"k\":1,\"k\":2}", "{\"k\":2}"),
            ("12345678901", "12345678901"),
        ];
        for (input, want) in cases {
            let v = Value::parse(input).unwrap_or_else(|e| panic!("{}: {}", input, e));
            assert_eq!(v.to_string(), want, "{}", input);
        }
    }

    #[test]
    fn refuses() {
        for input in ["", "{", "[1,]", "{\"a\"}", "01", "1.", "nul", "\"\u{1}\"", "1 2", "{a:1}", "-", "\"\\x\""] {
            assert!(Value::parse(input).is_err(), "{:?} parsed", input);
        }
        let deep = "[".repeat(600) + &"]".repeat(600);
        assert!(Value::parse(&deep).is_err(), "600 levels parsed");
    }

    #[test]
    fn build() {
        let v = Value::object().set("a", 1).set("b", "x").set("a", true);
        assert_eq!(v.to_string(), r#"{"a":true,"b":"x"}"#);
        assert_eq!(v.get("b").and_then(Value::as_str), Some("x"));
        assert_eq!(Value::parse("7").unwrap().as_i64(), Some(7));
        assert_eq!(Value::parse("7.5").unwrap().as_i64(), None);
    }
}

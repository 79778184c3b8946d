// A small JSON value: what the host's settings, events and metadata are
// written in, parsed and written without any package beyond AssemblyScript's
// standard library.

export enum JSONKind {
  Null,
  Bool,
  Number,
  String,
  Array,
  Object,
}

// The most arrays and objects one value may nest, so that hostile input
// cannot exhaust the stack.
const MAX_DEPTH: i32 = 512;

/** A JSON value. Objects keep their keys in the order they were written or
 * parsed; set() replaces a key that is already there. */
export class JSONValue {
  kind: JSONKind = JSONKind.Null;
  b: bool = false;
  n: f64 = 0;
  s: string = "";
  items: Array<JSONValue> = new Array<JSONValue>();
  keys: Array<string> = new Array<string>();

  static null(): JSONValue {
    return new JSONValue();
  }

  static bool(b: bool): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Bool;
    v.b = b;
    return v;
  }

  static number(n: f64): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Number;
    v.n = n;
    return v;
  }

  static string(s: string): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.String;
    v.s = s;
    return v;
  }

  static array(): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Array;
    return v;
  }

  /** An empty object, to fill with set(). */
  static object(): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Object;
    return v;
  }

  /** Sets the member key of an object to v (replacing one of that name) and
   * returns the object, so calls chain. On anything but an object it does
   * nothing. */
  set(key: string, v: JSONValue): JSONValue {
    if (this.kind != JSONKind.Object) return this;
    const i = this.keys.indexOf(key);
    if (i >= 0) {
      this.items[i] = v;
    } else {
      this.keys.push(key);
      this.items.push(v);
    }
    return this;
  }

  /** Appends v to an array and returns the array. */
  push(v: JSONValue): JSONValue {
    if (this.kind == JSONKind.Array) this.items.push(v);
    return this;
  }

  /** The member key of an object; null for a missing key or a value that is
   * not an object. */
  get(key: string): JSONValue | null {
    if (this.kind != JSONKind.Object) return null;
    const i = this.keys.indexOf(key);
    return i >= 0 ? this.items[i] : null;
  }

  /** The number of elements of an array or members of an object. */
  get length(): i32 {
    return this.items.length;
  }

  /** Element i of an array, or the value of member i of an object. */
  at(i: i32): JSONValue {
    return this.items[i];
  }

  isNull(): bool {
    return this.kind == JSONKind.Null;
  }

  /** Whether the value is a whole number within ±2^53. */
  isInteger(): bool {
    return this.kind == JSONKind.Number && Math.floor(this.n) == this.n && Math.abs(this.n) <= 9007199254740992.0;
  }

  /** Writes the value as compact JSON. A number that is not finite, which
   * JSON cannot hold, is written as null. */
  toString(): string {
    switch (this.kind) {
      case JSONKind.Bool:
        return this.b ? "true" : "false";
      case JSONKind.Number:
        if (!isFinite(this.n)) return "null";
        if (Math.floor(this.n) == this.n && Math.abs(this.n) < 1e15) return (<i64>this.n).toString();
        return this.n.toString();
      case JSONKind.String:
        return quote(this.s);
      case JSONKind.Array: {
        const parts = new Array<string>(this.items.length);
        for (let i = 0; i < this.items.length; i++) parts[i] = this.items[i].toString();
        return "[" + parts.join(",") + "]";
      }
      case JSONKind.Object: {
        const parts = new Array<string>(this.items.length);
        for (let i = 0; i < this.items.length; i++) parts[i] = quote(this.keys[i]) + ":" + this.items[i].toString();
        return "{" + parts.join(",") + "}";
      }
    }
    return "null";
  }
}

const HEX = "0123456789abcdef";

function quote(s: string): string {
  let out = '"';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20) esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    else continue;
    out += s.substring(from, i) + esc;
    from = i + 1;
  }
  return out + s.substring(from) + '"';
}

/** Why the last parseJSON returned null. */
export let jsonError: string = "";

/** Parses one complete JSON value (RFC 8259); surrounding white space is
 * allowed, anything else after the value is an error. It returns null for
 * text that is not JSON, and jsonError says why. */
export function parseJSON(text: string): JSONValue | null {
  const p = new Parser(text);
  p.ws();
  const v = p.value(0);
  if (v == null) {
    jsonError = p.err;
    return null;
  }
  p.ws();
  if (p.i != text.length) {
    jsonError = "unexpected " + p.what() + " at offset " + p.i.toString();
    return null;
  }
  jsonError = "";
  return v;
}

function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

class Parser {
  s: string;
  i: i32 = 0;
  err: string = "";

  constructor(s: string) {
    this.s = s;
  }

  at(): i32 {
    return this.i < this.s.length ? this.s.charCodeAt(this.i) : -1;
  }

  what(): string {
    return this.i < this.s.length ? '"' + this.s.charAt(this.i) + '"' : "end of text";
  }

  fail(msg: string): JSONValue | null {
    if (this.err == "") this.err = msg + " at offset " + this.i.toString();
    return null;
  }

  ws(): void {
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
      this.i++;
    }
  }

  word(w: string, v: JSONValue): JSONValue | null {
    if (this.s.substring(this.i, this.i + w.length) != w) return this.fail("unexpected " + this.what());
    this.i += w.length;
    return v;
  }

  value(depth: i32): JSONValue | null {
    if (depth > MAX_DEPTH) return this.fail("more than " + MAX_DEPTH.toString() + " levels of nesting");
    const c = this.at();
    if (c == 0x6e) return this.word("null", JSONValue.null());
    if (c == 0x74) return this.word("true", JSONValue.bool(true));
    if (c == 0x66) return this.word("false", JSONValue.bool(false));
    if (c == 0x22) {
      const s = this.string();
      return s == null ? null : JSONValue.string(s);
    }
    if (c == 0x5b) return this.array(depth);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x2d || isDigit(c)) return this.number();
    return this.fail("unexpected " + this.what());
  }

  array(depth: i32): JSONValue | null {
    this.i++;
    const a = JSONValue.array();
    this.ws();
    if (this.at() == 0x5d) {
      this.i++;
      return a;
    }
    while (true) {
      this.ws();
      const v = this.value(depth + 1);
      if (v == null) return null;
      a.push(v);
      this.ws();
      const c = this.at();
      if (c == 0x2c) {
        this.i++;
      } else if (c == 0x5d) {
        this.i++;
        return a;
      } else {
        return this.fail("unexpected " + this.what() + " in an array");
      }
    }
    return null;
  }

  object(depth: i32): JSONValue | null {
    this.i++;
    const o = JSONValue.object();
    this.ws();
    if (this.at() == 0x7d) {
      this.i++;
      return o;
    }
    while (true) {
      this.ws();
      if (this.at() != 0x22) return this.fail("unexpected " + this.what() + " for a key");
      const k = this.string();
      if (k == null) return null;
      this.ws();
      if (this.at() != 0x3a) return this.fail("unexpected " + this.what() + " after a key");
      this.i++;
      this.ws();
      const v = this.value(depth + 1);
      if (v == null) return null;
      o.set(k, v); // the last of duplicate keys wins, as in Go's decoder
      this.ws();
      const c = this.at();
      if (c == 0x2c) {
        this.i++;
      } else if (c == 0x7d) {
        this.i++;
        return o;
      } else {
        return this.fail("unexpected " + this.what() + " in an object");
      }
    }
    return null;
  }

  digits(): i32 {
    const start = this.i;
    while (isDigit(this.at())) this.i++;
    return this.i - start;
  }

  number(): JSONValue | null {
    const start = this.i;
    if (this.at() == 0x2d) this.i++;
    const leadingZero = this.at() == 0x30;
    const n = this.digits();
    if (n == 0 || (leadingZero && n > 1)) return this.fail("bad number");
    if (this.at() == 0x2e) {
      this.i++;
      if (this.digits() == 0) return this.fail("bad number");
    }
    if (this.at() == 0x65 || this.at() == 0x45) {
      this.i++;
      if (this.at() == 0x2b || this.at() == 0x2d) this.i++;
      if (this.digits() == 0) return this.fail("bad number");
    }
    return JSONValue.number(parseFloat(this.s.substring(start, this.i)));
  }

  hex4(): i32 {
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.at();
      let d = -1;
      if (isDigit(c)) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      if (d < 0) return -1;
      v = v * 16 + d;
      this.i++;
    }
    return v;
  }

  string(): string | null {
    const start = this.i;
    this.i++; // the opening quote
    let out = "";
    let from = this.i;
    while (true) {
      if (this.i >= this.s.length) {
        this.i = start;
        this.fail("unterminated string");
        return null;
      }
      const c = this.s.charCodeAt(this.i);
      if (c == 0x22) {
        out += this.s.substring(from, this.i);
        this.i++;
        return out;
      }
      if (c < 0x20) {
        this.fail("control character in a string");
        return null;
      }
      if (c != 0x5c) {
        this.i++;
        continue;
      }
      out += this.s.substring(from, this.i);
      this.i++;
      const e = this.at();
      this.i++;
      if (e == 0x22) out += '"';
      else if (e == 0x5c) out += "\\";
      else if (e == 0x2f) out += "/";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x6e) out += "\n";
      else if (e == 0x72) out += "\r";
      else if (e == 0x74) out += "\t";
      else if (e == 0x75) {
        const u = this.hex4();
        if (u < 0) {
          this.fail("bad \\u escape");
          return null;
        }
        out += String.fromCharCode(u); // a surrogate pair arrives as two escapes
      } else {
        this.i--;
        this.fail("bad escape");
        return null;
      }
      from = this.i;
    }
    return null;
  }
}

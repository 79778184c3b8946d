// The AssemblyScript SDK for vitrine filters: typed access to the host
// functions of the filter ABI, version 1 (wasm-sdk/ABI.md, the normative
// contract). A transformation's entry file:
//
//   import { Image, Params, runTransformation } from "vitrine-filter-sdk/assembly";
//   export { vitrine_abi_v1, abort } from "vitrine-filter-sdk/assembly";
//
//   export function vitrine_transform(): i32 {
//     return runTransformation(invert);
//   }
//
//   function invert(img: Image, p: Params): Image | null { ... }
//
// built with asc and the options of asconfig.json (a reactor exporting
// _initialize, abort routed to the server's log).

import { JSONValue, JSONKind, parseJSON, jsonError } from "./json";

export { JSONValue, JSONKind, parseJSON, jsonError };

// ---------------------------------------------------------------- the raw ABI

// The host functions of ABI.md section 5. Pointers and lengths are i32.
@external("vitrine", "param_get")
declare function raw_param_get(name: usize, nameLen: usize, buf: usize, bufLen: usize): i32;
@external("vitrine", "settings_get")
declare function raw_settings_get(buf: usize, bufLen: usize): i32;
@external("vitrine", "image_width")
declare function raw_image_width(): i32;
@external("vitrine", "image_height")
declare function raw_image_height(): i32;
@external("vitrine", "pixels_read")
declare function raw_pixels_read(buf: usize, bufLen: usize): i32;
@external("vitrine", "pixels_write")
declare function raw_pixels_write(width: i32, height: i32, buf: usize, bufLen: usize): i32;
@external("vitrine", "event_get")
declare function raw_event_get(buf: usize, bufLen: usize): i32;
@external("vitrine", "body_read")
declare function raw_body_read(buf: usize, bufLen: usize): i32;
@external("vitrine", "body_write")
declare function raw_body_write(buf: usize, len: usize): i32;
@external("vitrine", "metadata_get")
declare function raw_metadata_get(buf: usize, bufLen: usize): i32;
@external("vitrine", "metadata_set")
declare function raw_metadata_set(json: usize, len: usize): i32;
@external("vitrine", "stats_add")
declare function raw_stats_add(name: usize, nameLen: usize, delta: i64): i32;
@external("vitrine", "stats_set")
declare function raw_stats_set(name: usize, nameLen: usize, json: usize, jsonLen: usize): i32;
@external("vitrine", "log")
declare function raw_log(level: i32, msg: usize, len: usize): i32;
@external("vitrine", "reject")
declare function raw_reject(status: i32, msg: usize, len: usize): i32;

/** The version marker; the host never calls it. Re-export it from the
 * module's entry file. */
export function vitrine_abi_v1(): void {}

// ---------------------------------------------------------------- errors

/** The host's return codes (ABI.md section 5). */
export const ERR_NOT_FOUND: i32 = -1;
export const ERR_FAULT: i32 = -2;
export const ERR_INVALID: i32 = -3;
export const ERR_UNAVAILABLE: i32 = -4;
export const ERR_LIMIT: i32 = -5;

/** The words for a host return code, as the Go SDK's errors say them. */
export function errorText(code: i32): string {
  if (code == ERR_NOT_FOUND) return "not found";
  if (code == ERR_FAULT) return "buffer outside guest memory";
  if (code == ERR_INVALID) return "invalid argument";
  if (code == ERR_UNAVAILABLE) return "not available in this call";
  if (code == ERR_LIMIT) return "limit exceeded";
  return "unknown host error code " + code.toString();
}

/** The code of the last host call that failed in a function returning null
 * (settings, metadata, body...), and the message that names it:
 * "vitrine: metadata_get: not found". */
export let lastError: i32 = 0;
export let lastErrorMessage: string = "";

function hostError(fn: string, code: i32): void {
  lastError = code;
  lastErrorMessage = "vitrine: " + fn + ": " + errorText(code);
}

// Why the strings: AssemblyScript strings are UTF-16; the host speaks UTF-8.
function utf8(s: string): ArrayBuffer {
  return String.UTF8.encode(s);
}

/** Reads a value through a host function that copies into a buffer and
 * returns the value's full size: first into hint bytes, then once more into
 * exactly that size. null, with lastError set, when the host answers an
 * error. */
function readValue(fn: string, hint: i32, read: (buf: usize, len: usize) => i32): Uint8Array | null {
  let buf = new Uint8Array(hint);
  let n = read(buf.dataStart, <usize>buf.length);
  if (n < 0) {
    hostError(fn, n);
    return null;
  }
  if (n > buf.length) {
    buf = new Uint8Array(n);
    const m = read(buf.dataStart, <usize>buf.length);
    if (m < 0) {
      hostError(fn, m);
      return null;
    }
    if (m > buf.length) {
      lastError = ERR_INVALID;
      lastErrorMessage = "vitrine: " + fn + ": value grew between two reads";
      return null;
    }
    n = m;
  }
  return buf.subarray(0, n);
}

function text(b: Uint8Array): string {
  return String.UTF8.decodeUnsafe(b.dataStart, <usize>b.length);
}

function readJSON(fn: string, read: (buf: usize, len: usize) => i32): JSONValue | null {
  const b = readValue(fn, 1024, read);
  if (b == null) return null;
  const v = parseJSON(text(b));
  if (v == null) {
    lastError = ERR_INVALID;
    lastErrorMessage = "vitrine: " + fn + ": decode: " + jsonError;
  }
  return v;
}

// ---------------------------------------------------------------- failing a call

let failed = false;

/** Fails the call: the message goes to the server's log at error level, and
 * the export returns 1 once the function returns (the request answers 500
 * "Filter <name> failed"). Return from the function right after. A throw
 * (or any abort) fails the call too, but traps: the host throws the
 * instance away. */
export function fail(message: string): void {
  log(Level.Error, message);
  failed = true;
}

/** Where AssemblyScript's abort() (a throw, a failed assert, an index out
 * of range) goes: a line in the server's log, then a trap. The module's
 * asconfig routes abort here ("use": ["abort=..."]). */
export function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  let m = message != null ? message : "abort";
  if (fileName != null) m += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  log(Level.Error, m);
  unreachable();
}

// ---------------------------------------------------------------- parameters

/** A colour, 8 bits a channel, straight alpha. */
export class Color {
  constructor(public r: u8 = 0, public g: u8 = 0, public b: u8 = 0, public a: u8 = 255) {}
}

function hexDigit(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** Parses a colour as vitrine writes it: hexadecimal rgb, rrggbb or
 * rrggbbaa, with or without a leading #, in either case; null for anything
 * else. A colour without alpha is opaque. */
export function parseColor(s: string): Color | null {
  let h = s.startsWith("#") ? s.substring(1) : s;
  if (h.length == 3) {
    h = h.charAt(0) + h.charAt(0) + h.charAt(1) + h.charAt(1) + h.charAt(2) + h.charAt(2) + "ff";
  } else if (h.length == 6) {
    h += "ff";
  } else if (h.length != 8) {
    return null;
  }
  const c = new StaticArray<u8>(4);
  for (let i = 0; i < 4; i++) {
    const hi = hexDigit(h.charCodeAt(2 * i));
    const lo = hexDigit(h.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) return null;
    c[i] = <u8>(hi * 16 + lo);
  }
  return new Color(c[0], c[1], c[2], c[3]);
}

// The name of the parameter param_get reads.
let paramName = new ArrayBuffer(0);

function isInt(s: string): bool {
  let i = s.startsWith("-") || s.startsWith("+") ? 1 : 0;
  if (i >= s.length) return false;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** A transformation's parameters for one call. The host has validated them
 * against the manifest's schema and applied defaults, so only a parameter
 * without a default can be absent. The typed getters take a default for an
 * absent parameter; a value that does not read as the type asked for (the
 * manifest and the code disagree) throws, which fails the call. */
export class Params {
  private values: Map<string, string> | null = null;

  /** Parameters that answer from values, in the normalised forms of ABI.md
   * section 2 (a colour as rrggbbaa, a bool as true or false): for tests. */
  static of(values: Map<string, string>): Params {
    const p = new Params();
    p.values = values;
    return p;
  }

  /** The parameter name as text (a string or enum parameter's value, any
   * other's normalised form); null when it is absent. */
  string(name: string): string | null {
    const values = this.values;
    if (values != null) return values.has(name) ? values.get(name) : null;
    // Why a global: AssemblyScript functions cannot close over locals.
    paramName = utf8(name);
    const b = readValue("param_get", 64, (buf: usize, len: usize): i32 =>
      raw_param_get(changetype<usize>(paramName), <usize>paramName.byteLength, buf, len));
    return b == null ? null : text(b);
  }

  /** Whether the parameter name has a value. */
  has(name: string): bool {
    return this.string(name) != null;
  }

  /** The int parameter name, def when absent. */
  int(name: string, def: i64 = 0): i64 {
    const s = this.string(name);
    if (s == null) return def;
    if (!isInt(s)) throw new Error("vitrine: parameter \"" + name + "\": \"" + s + "\" is not an int");
    return I64.parseInt(s, 10);
  }

  /** The number parameter name, def when absent. */
  number(name: string, def: f64 = 0): f64 {
    const s = this.string(name);
    if (s == null) return def;
    const v = parseFloat(s);
    if (isNaN(v)) throw new Error("vitrine: parameter \"" + name + "\": \"" + s + "\" is not a number");
    return v;
  }

  /** The bool parameter name, def when absent. */
  bool(name: string, def: bool = false): bool {
    const s = this.string(name);
    if (s == null) return def;
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
    throw new Error("vitrine: parameter \"" + name + "\": \"" + s + "\" is not a bool");
  }

  /** The color parameter name, def (or opaque black) when absent. */
  color(name: string, def: Color | null = null): Color {
    const s = this.string(name);
    if (s == null) return def != null ? def : new Color();
    const c = parseColor(s);
    if (c == null) throw new Error("vitrine: parameter \"" + name + "\": \"" + s + "\" is not a colour");
    return c;
  }
}

/** The manifest's settings, the operator's configuration of the filter;
 * null when the manifest has none (lastError ERR_NOT_FOUND) or they cannot
 * be read. */
export function settings(): JSONValue | null {
  return readJSON("settings_get", (buf: usize, len: usize): i32 => raw_settings_get(buf, len));
}

// ---------------------------------------------------------------- pixels

/** An image as the ABI passes it: 8-bit RGBA, straight alpha, sRGB, rows top
 * to bottom, pixels.length == 4 * width * height. */
export class Image {
  pixels: Uint8Array;

  /** A transparent black image of the given size. */
  constructor(public width: i32, public height: i32) {
    this.pixels = new Uint8Array(4 * width * height);
  }
}

// The input buffer of the previous call, reused so that a module working on
// large images does not allocate a new one every call. The host copies the
// output when pixels_write returns, so reuse is safe.
let pixelBuffer: Image | null = null;

function readPixels(): Image | null {
  const w = raw_image_width();
  if (w < 0) {
    hostError("image_width", w);
    return null;
  }
  const h = raw_image_height();
  if (h < 0) {
    hostError("image_height", h);
    return null;
  }
  let img = pixelBuffer;
  if (img == null || img.width != w || img.height != h) {
    pixelBuffer = null; // let the old buffer go before allocating the new one
    img = new Image(w, h);
    pixelBuffer = img;
  }
  const n = raw_pixels_read(img.pixels.dataStart, <usize>img.pixels.length);
  if (n < 0) {
    hostError("pixels_read", n);
    return null;
  }
  if (n != img.pixels.length) {
    lastError = ERR_INVALID;
    lastErrorMessage = "vitrine: pixels_read: " + n.toString() + " bytes for a " + w.toString() + "x" + h.toString() + " image";
    return null;
  }
  return img;
}

function writePixels(img: Image): i32 {
  if (img.width < 1 || img.height < 1 || img.pixels.length != 4 * img.width * img.height) {
    lastError = ERR_INVALID;
    lastErrorMessage = "vitrine: output image is " + img.width.toString() + "x" + img.height.toString() + " with " +
      img.pixels.length.toString() + " bytes of pixels, want at least 1x1 and 4 bytes a pixel";
    return ERR_INVALID;
  }
  const code = raw_pixels_write(img.width, img.height, img.pixels.dataStart, <usize>img.pixels.length);
  if (code < 0) hostError("pixels_write", code);
  return code;
}

// ---------------------------------------------------------------- events

/** An image without its pixels. */
export class ImageInfo {
  width: i64 = 0;
  height: i64 = 0;
  mime: string = "";
  size: i64 = 0;
}

/** The event a listener is called for (ABI.md section 5, "Events"). */
export class Event {
  /** the event's name, such as "images.post" or "stats.get" */
  name: string = "";
  /** the user of the request's route, "" on routes without one */
  user: string = "";
  /** the public key that signed or authorised the request */
  publicKey: string = "";
  /** the image of the route, "" on routes without one */
  imageIdentifier: string = "";
  /** the upload on images.post, the stored image on the events of routes
   * naming an image that exists; null elsewhere */
  image: ImageInfo | null = null;
  /** the whole event object, for fields this version does not know */
  json: JSONValue = JSONValue.object();

  /** Decodes an event object as the host writes it; null for text that is
   * not a JSON object. */
  static parse(text: string): Event | null {
    const v = parseJSON(text);
    if (v == null || v.kind != JSONKind.Object) return null;
    const ev = new Event();
    ev.json = v;
    ev.name = str(v, "event");
    ev.user = str(v, "user");
    ev.publicKey = str(v, "publicKey");
    ev.imageIdentifier = str(v, "imageIdentifier");
    const i = v.get("image");
    if (i != null && i.kind == JSONKind.Object) {
      const info = new ImageInfo();
      info.width = int(i, "width");
      info.height = int(i, "height");
      info.mime = str(i, "mime");
      info.size = int(i, "size");
      ev.image = info;
    }
    return ev;
  }
}

function str(v: JSONValue, key: string): string {
  const m = v.get(key);
  return m != null && m.kind == JSONKind.String ? m.s : "";
}

function int(v: JSONValue, key: string): i64 {
  const m = v.get(key);
  return m != null && m.isInteger() ? <i64>m.n : 0;
}

/** The bytes of the image being uploaded, on images.post; null elsewhere
 * (lastError ERR_UNAVAILABLE). */
export function body(): Uint8Array | null {
  return readValue("body_read", 64 << 10, (buf: usize, len: usize): i32 => raw_body_read(buf, len));
}

/** Replaces the image to be stored, on images.post. The host checks the
 * bytes as it checks any upload; when it refuses them (ERR_INVALID,
 * ERR_LIMIT) the original stays. Returns 0 or the host's error code. */
export function setBody(b: Uint8Array): i32 {
  return check("body_write", raw_body_write(b.dataStart, <usize>b.length));
}

// ---------------------------------------------------------------- metadata

/** The metadata of the call's image (the image being transformed, or the
 * event's); {} when it has none. On images.post it is what the new image
 * will get so far, on metadata.put and metadata.post the document the
 * client sent. null where the event has no image (ERR_NOT_FOUND). */
export function metadata(): JSONValue | null {
  return readJSON("metadata_get", (buf: usize, len: usize): i32 => raw_metadata_get(buf, len));
}

/** Sets metadata from doc, a JSON object: merged over the new image's
 * metadata on images.post, replacing the client's document on metadata.put
 * and metadata.post; ERR_UNAVAILABLE elsewhere. Returns 0 or the code. */
export function setMetadata(doc: JSONValue): i32 {
  const b = utf8(doc.toString());
  return check("metadata_set", raw_metadata_set(changetype<usize>(b), <usize>b.byteLength));
}

function check(fn: string, code: i32): i32 {
  if (code < 0) hostError(fn, code);
  return code;
}

// ---------------------------------------------------------------- statistics

function statName(name: string): bool {
  if (name.length < 1 || name.length > 64) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c == 0x5f || c == 0x2e || c == 0x2d;
    if (!ok) return false;
  }
  return true;
}

/** Adds delta to the filter's counter name ([a-zA-Z0-9_.-]{1,64}), kept by
 * the host and shown in GET /stats under custom.<filter>.<name>. A counter
 * stops at the i64 bounds; past 256 names a new one is ERR_LIMIT. Returns 0
 * or the code. */
export function statsAdd(name: string, delta: i64): i32 {
  if (!statName(name)) {
    lastError = ERR_INVALID;
    lastErrorMessage = "vitrine: statistic \"" + name + "\": want 1 to 64 of a-z A-Z 0-9 _ . -";
    return ERR_INVALID;
  }
  const n = utf8(name);
  return check("stats_add", raw_stats_add(changetype<usize>(n), <usize>n.byteLength, delta));
}

/** Sets custom.<filter>.<name> of this GET /stats response to v, in a
 * listener called for stats.get (ERR_UNAVAILABLE elsewhere); ERR_LIMIT past
 * 64 KiB a value, 256 KiB or 256 names a call. Returns 0 or the code. */
export function statsSet(name: string, v: JSONValue): i32 {
  if (!statName(name)) {
    lastError = ERR_INVALID;
    lastErrorMessage = "vitrine: statistic \"" + name + "\": want 1 to 64 of a-z A-Z 0-9 _ . -";
    return ERR_INVALID;
  }
  const n = utf8(name);
  const b = utf8(v.toString());
  return check("stats_set", raw_stats_set(changetype<usize>(n), <usize>n.byteLength, changetype<usize>(b), <usize>b.byteLength));
}

// ---------------------------------------------------------------- logging and rejection

/** The severity of a log line. */
export enum Level {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
}

/** Writes msg to the server's log at level, tagged with the filter's name
 * (cut at 4096 bytes). There is no console in the sandbox: this is the only
 * way to log. */
export function log(level: Level, msg: string): void {
  const b = utf8(msg);
  raw_log(<i32>level, changetype<usize>(b), <usize>b.byteLength);
}

/** Ends the request with the HTTP status (400-499) and message (cut at 1024
 * bytes), the service's usual JSON error, once the export returns. Return
 * from the function right after. Returns 0, or ERR_INVALID for a status
 * outside 400-499 (nothing is sent to the host). */
export function reject(status: i32, message: string): i32 {
  if (status < 400 || status > 499) {
    lastError = ERR_INVALID;
    lastErrorMessage = "vitrine: reject: status " + status.toString() + " is not 400-499";
    return ERR_INVALID;
  }
  let b = utf8(message);
  if (b.byteLength > 1024) {
    // Cut without splitting a UTF-8 sequence.
    let n = 1024;
    const bytes = Uint8Array.wrap(b);
    while (n > 0 && (bytes[n] & 0xc0) == 0x80) n--;
    b = b.slice(0, n);
  }
  return check("reject", raw_reject(status, changetype<usize>(b), <usize>b.byteLength));
}

// ---------------------------------------------------------------- exports

/** A transformation: it gets the image as the chain has made it so far and
 * returns the result, the same image changed in place or a new one of any
 * size; null leaves the image unchanged. The image belongs to the SDK once
 * the function returns (it reuses the buffer): keep nothing of it. */
export type TransformFunc = (img: Image, p: Params) => Image | null;

/** A listener: it gets the event it was called for and acts on it through
 * body, setBody, metadata, setMetadata, statsAdd, statsSet, log, reject
 * and fail. */
export type ListenerFunc = (ev: Event) => void;

/** The body of the vitrine_transform export: call it from the module's
 * export with its function. It returns 0, 1 when the function called fail,
 * 3 when the SDK could not read the input or write the output. */
export function runTransformation(fn: TransformFunc): i32 {
  failed = false;
  const img = readPixels();
  if (img == null) {
    log(Level.Error, lastErrorMessage);
    return 3;
  }
  const out = fn(img, new Params());
  if (failed) return 1;
  if (out == null) return 0;
  if (writePixels(out) < 0) {
    log(Level.Error, lastErrorMessage);
    return 3;
  }
  return 0;
}

/** The body of the vitrine_on_event export: call it from the module's
 * export with its function. It returns 0, 1 when the function called fail,
 * 3 when the SDK could not read the event. */
export function runListener(fn: ListenerFunc): i32 {
  failed = false;
  const b = readValue("event_get", 512, (buf: usize, len: usize): i32 => raw_event_get(buf, len));
  if (b == null) {
    log(Level.Error, lastErrorMessage);
    return 3;
  }
  const ev = Event.parse(text(b));
  if (ev == null) {
    log(Level.Error, "vitrine: event_get: decode: " + jsonError);
    return 3;
  }
  fn(ev);
  return failed ? 1 : 0;
}

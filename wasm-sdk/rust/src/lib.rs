//! The Rust SDK for vitrine filters: typed access to the host functions of
//! the filter ABI, version 1 (`wasm-sdk/ABI.md`, the normative contract),
//! for modules built for `wasm32-wasi`. It depends on nothing beyond `std`.
//!
//! A transformation:
//!
//! ```ignore
//! fn invert(img: &mut vitrine::Image, _p: &vitrine::Params) -> vitrine::Result<()> {
//!     for px in img.pix.chunks_exact_mut(4) {
//!         px[0] = 255 - px[0];
//!         px[1] = 255 - px[1];
//!         px[2] = 255 - px[2];
//!     }
//!     Ok(())
//! }
//!
//! vitrine::transformation!(invert);
//! ```
//!
//! built as a `cdylib`:
//!
//! ```sh
//! rustc --edition 2021 --crate-type rlib --crate-name vitrine --target wasm32-wasi -O -o libvitrine.rlib $VITRINE/wasm-sdk/rust/src/lib.rs
//! rustc --edition 2021 --crate-type cdylib --target wasm32-wasi -O --extern vitrine=libvitrine.rlib -o filter.wasm src/lib.rs
//! ```
//!
//! Outside `wasm32` (a native `rustc --test`), every host function answers
//! [`ErrorKind::NoHost`], so the pure parts of a filter unit test natively.

use std::fmt;

pub mod json;

pub use json::Value;

// The raw ABI: the host functions of ABI.md section 5, imported from the
// module "vitrine". Pointers and lengths are i32 on wasm32.
#[cfg(target_arch = "wasm32")]
mod raw {
    #[link(wasm_import_module = "vitrine")]
    extern "C" {
        pub fn param_get(name: *const u8, name_len: usize, buf: *mut u8, buf_len: usize) -> i32;
        pub fn settings_get(buf: *mut u8, buf_len: usize) -> i32;
        pub fn image_width() -> i32;
        pub fn image_height() -> i32;
        pub fn pixels_read(buf: *mut u8, buf_len: usize) -> i32;
        pub fn pixels_write(width: i32, height: i32, buf: *const u8, buf_len: usize) -> i32;
        pub fn event_get(buf: *mut u8, buf_len: usize) -> i32;
        pub fn body_read(buf: *mut u8, buf_len: usize) -> i32;
        pub fn body_write(buf: *const u8, len: usize) -> i32;
        pub fn metadata_get(buf: *mut u8, buf_len: usize) -> i32;
        pub fn metadata_set(json: *const u8, len: usize) -> i32;
        pub fn stats_add(name: *const u8, name_len: usize, delta: i64) -> i32;
        pub fn stats_set(name: *const u8, name_len: usize, json: *const u8, json_len: usize) -> i32;
        pub fn log(level: i32, msg: *const u8, len: usize) -> i32;
        pub fn reject(status: i32, msg: *const u8, len: usize) -> i32;
    }
}

// Native builds: no host. Every function answers CODE_NO_HOST.
#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::missing_safety_doc)]
mod raw {
    use super::CODE_NO_HOST as N;
    pub unsafe fn param_get(_: *const u8, _: usize, _: *mut u8, _: usize) -> i32 { N }
    pub unsafe fn settings_get(_: *mut u8, _: usize) -> i32 { N }
    pub unsafe fn image_width() -> i32 { N }
    pub unsafe fn image_height() -> i32 { N }
    pub unsafe fn pixels_read(_: *mut u8, _: usize) -> i32 { N }
    pub unsafe fn pixels_write(_: i32, _: i32, _: *const u8, _: usize) -> i32 { N }
    pub unsafe fn event_get(_: *mut u8, _: usize) -> i32 { N }
    pub unsafe fn body_read(_: *mut u8, _: usize) -> i32 { N }
    pub unsafe fn body_write(_: *const u8, _: usize) -> i32 { N }
    pub unsafe fn metadata_get(_: *mut u8, _: usize) -> i32 { N }
    pub unsafe fn metadata_set(_: *const u8, _: usize) -> i32 { N }
    pub unsafe fn stats_add(_: *const u8, _: usize, _: i64) -> i32 { N }
    pub unsafe fn stats_set(_: *const u8, _: usize, _: *const u8, _: usize) -> i32 { N }
    pub unsafe fn log(_: i32, _: *const u8, _: usize) -> i32 { N }
    pub unsafe fn reject(_: i32, _: *const u8, _: usize) -> i32 { N }
}

/// Not part of the ABI: what the native stand-ins answer.
const CODE_NO_HOST: i32 = -1000;

// ---------------------------------------------------------------- errors

/// What went wrong; the host's return codes (ABI.md section 5) and the
/// SDK's own cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// `ERR_NOT_FOUND` (-1): a parameter that is absent, settings the
    /// manifest does not have, metadata where there is no image.
    NotFound,
    /// `ERR_FAULT` (-2): a buffer outside the guest's memory.
    Fault,
    /// `ERR_INVALID` (-3): an invalid argument (bad JSON, a pixel buffer of
    /// the wrong length, a status that is not 4xx), or a value the SDK
    /// cannot read as the type asked for.
    Invalid,
    /// `ERR_UNAVAILABLE` (-4): not available in this call, such as pixels
    /// in a listener or `stats_set` outside `stats.get`.
    Unavailable,
    /// `ERR_LIMIT` (-5): a limit exceeded.
    Limit,
    /// The code does not run inside vitrine (a native build).
    NoHost,
    /// A deliberate rejection: [`reject`] succeeded.
    Rejected,
    /// An error of the filter's own ([`Error::new`], or a `String`).
    Other,
}

/// An error of a host call, of the SDK or of the filter. Host errors name
/// the host function, as the Go SDK's do:
/// `vitrine: metadata_set: not available in this call`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    status: u16,
}

/// The result of the SDK's functions and of a filter's function.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of the filter's own: the call fails (500) and `message` goes
    /// to the server's log.
    pub fn new(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Other, message: message.into(), status: 0 }
    }

    fn of(kind: ErrorKind, message: String) -> Error {
        Error { kind, message, status: 0 }
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status of a rejection, 0 for other errors.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The message (for a rejection, the public message).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Rejected => write!(f, "vitrine: rejected with {}: {}", self.status, self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::new(s)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Error {
        Error::new(s)
    }
}

/// The error for a negative return code of the host function `function`.
fn code_error(function: &str, code: i32) -> Error {
    let (kind, what) = match code {
        -1 => (ErrorKind::NotFound, "not found"),
        -2 => (ErrorKind::Fault, "buffer outside guest memory"),
        -3 => (ErrorKind::Invalid, "invalid argument"),
        -4 => (ErrorKind::Unavailable, "not available in this call"),
        -5 => (ErrorKind::Limit, "limit exceeded"),
        CODE_NO_HOST => (ErrorKind::NoHost, "no vitrine host: host functions work only in a wasm32 build loaded by vitrine"),
        _ => return Error::of(ErrorKind::Other, format!("vitrine: {}: unknown host error code {}", function, code)),
    };
    Error::of(kind, format!("vitrine: {}: {}", function, what))
}

fn status(function: &str, code: i32) -> Result<()> {
    if code < 0 {
        Err(code_error(function, code))
    } else {
        Ok(())
    }
}

/// Reads a value through a host function that copies into a buffer and
/// returns the value's full size (ABI.md section 5, "Return codes"): first
/// with `hint` bytes, then once more with exactly the size it reported.
fn read_value(function: &str, hint: usize, read: impl Fn(&mut [u8]) -> i32) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; hint];
    let n = read(&mut buf);
    if n < 0 {
        return Err(code_error(function, n));
    }
    if n as usize > buf.len() {
        buf = vec![0u8; n as usize];
        let m = read(&mut buf);
        if m < 0 {
            return Err(code_error(function, m));
        }
        if m as usize > buf.len() {
            return Err(Error::of(ErrorKind::Invalid, format!("vitrine: {}: value grew from {} to {} bytes between two reads", function, n, m)));
        }
        buf.truncate(m as usize);
        return Ok(buf);
    }
    buf.truncate(n as usize);
    Ok(buf)
}

fn read_json(function: &str, read: impl Fn(&mut [u8]) -> i32) -> Result<Value> {
    let b = read_value(function, 1024, read)?;
    let text = std::str::from_utf8(&b).map_err(|_| Error::of(ErrorKind::Invalid, format!("vitrine: {}: not UTF-8", function)))?;
    Value::parse(text).map_err(|e| Error::of(ErrorKind::Invalid, format!("vitrine: {}: decode: {}", function, e)))
}

// ---------------------------------------------------------------- parameters

/// A colour, 8 bits a channel, straight alpha.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Color {
    /// red
    pub r: u8,
    /// green
    pub g: u8,
    /// blue
    pub b: u8,
    /// alpha, 255 opaque
    pub a: u8,
}

/// Parses a colour as vitrine writes it: hexadecimal `rgb`, `rrggbb` or
/// `rrggbbaa`, with or without a leading `#`, in either case. A colour
/// without alpha is opaque.
pub fn parse_color(s: &str) -> Result<Color> {
    let h = s.strip_prefix('#').unwrap_or(s).as_bytes();
    let mut digits = [b'f'; 8];
    match h.len() {
        3 => {
            for i in 0..3 {
                digits[2 * i] = h[i];
                digits[2 * i + 1] = h[i];
            }
        }
        6 | 8 => digits[..h.len()].copy_from_slice(h),
        _ => return Err(Error::of(ErrorKind::Invalid, format!("vitrine: colour {:?}: want rgb, rrggbb or rrggbbaa hexadecimal", s))),
    }
    let mut c = [0u8; 4];
    for (i, v) in c.iter_mut().enumerate() {
        let hi = (digits[2 * i] as char).to_digit(16);
        let lo = (digits[2 * i + 1] as char).to_digit(16);
        match (hi, lo) {
            (Some(hi), Some(lo)) => *v = (hi * 16 + lo) as u8,
            _ => return Err(Error::of(ErrorKind::Invalid, format!("vitrine: colour {:?}: not hexadecimal", s))),
        }
    }
    Ok(Color { r: c[0], g: c[1], b: c[2], a: c[3] })
}

/// A transformation's parameters for one call. The host has validated them
/// against the manifest's schema and applied defaults, so a getter fails
/// only for a parameter that is absent ([`ErrorKind::NotFound`]: no default,
/// not required, not in the request) or whose type the manifest declares
/// differently from the getter used ([`ErrorKind::Invalid`]).
pub struct Params {
    values: Option<Vec<(String, String)>>,
}

impl Params {
    /// Parameters that answer from `values`, in the normalised forms of
    /// ABI.md section 2 (a colour as `rrggbbaa`, a bool as `true`): for
    /// unit tests of a transformation function.
    pub fn new(values: &[(&str, &str)]) -> Params {
        Params { values: Some(values.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()) }
    }

    fn host() -> Params {
        Params { values: None }
    }

    /// The parameter `name` as text: a string or enum parameter's value, or
    /// any other parameter's normalised form.
    pub fn string(&self, name: &str) -> Result<String> {
        let found = match &self.values {
            Some(values) => match values.iter().find(|(k, _)| k == name) {
                Some((_, v)) => Ok(v.clone()),
                None => Err(code_error("param_get", -1)),
            },
            None => read_value("param_get", 64, |buf| unsafe { raw::param_get(name.as_ptr(), name.len(), buf.as_mut_ptr(), buf.len()) })
                .and_then(|b| String::from_utf8(b).map_err(|_| code_error("param_get", -3))),
        };
        found.map_err(|e| Error::of(e.kind, format!("vitrine: parameter {:?}: {}", name, e.message.trim_start_matches("vitrine: "))))
    }

    /// Whether the parameter `name` has a value.
    pub fn has(&self, name: &str) -> bool {
        self.string(name).is_ok()
    }

    fn parse<T>(&self, name: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T> {
        let s = self.string(name)?;
        parse(&s).ok_or_else(|| Error::of(ErrorKind::Invalid, format!("vitrine: parameter {:?}: {:?} is not {}", name, s, what)))
    }

    /// The `int` parameter `name`.
    pub fn int(&self, name: &str) -> Result<i64> {
        self.parse(name, "an int", |s| s.parse().ok())
    }

    /// The `number` parameter `name`.
    pub fn number(&self, name: &str) -> Result<f64> {
        self.parse(name, "a number", |s| s.parse().ok())
    }

    /// The `bool` parameter `name`.
    pub fn bool(&self, name: &str) -> Result<bool> {
        self.parse(name, "a bool", |s| match s {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        })
    }

    /// The `color` parameter `name`.
    pub fn color(&self, name: &str) -> Result<Color> {
        self.parse(name, "a colour", |s| parse_color(s).ok())
    }
}

/// The manifest's `settings`, the operator's configuration of the filter;
/// `None` when the manifest has none.
pub fn settings() -> Result<Option<Value>> {
    match read_json("settings_get", |buf| unsafe { raw::settings_get(buf.as_mut_ptr(), buf.len()) }) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------- pixels

/// An image as the ABI passes it: 8-bit RGBA, straight alpha, sRGB, rows top
/// to bottom, `pix.len() == 4 * width * height`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// width in pixels
    pub width: u32,
    /// height in pixels
    pub height: u32,
    /// the pixels, 4 bytes each
    pub pix: Vec<u8>,
}

impl Image {
    /// A transparent black image of the given size.
    pub fn new(width: u32, height: u32) -> Image {
        Image { width, height, pix: vec![0; 4 * width as usize * height as usize] }
    }

    /// The 4 bytes of the pixel at (x, y).
    pub fn pixel(&self, x: u32, y: u32) -> &[u8] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        &self.pix[i..i + 4]
    }

    /// The 4 bytes of the pixel at (x, y), to change.
    pub fn pixel_mut(&mut self, x: u32, y: u32) -> &mut [u8] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        &mut self.pix[i..i + 4]
    }
}

fn read_pixels() -> Result<Image> {
    let w = unsafe { raw::image_width() };
    if w < 0 {
        return Err(code_error("image_width", w));
    }
    let h = unsafe { raw::image_height() };
    if h < 0 {
        return Err(code_error("image_height", h));
    }
    let n = 4 * w as usize * h as usize;
    let mut pix = vec![0u8; n];
    let got = unsafe { raw::pixels_read(pix.as_mut_ptr(), pix.len()) };
    if got < 0 {
        return Err(code_error("pixels_read", got));
    }
    if got as usize != n {
        return Err(Error::of(ErrorKind::Invalid, format!("vitrine: pixels_read: {} bytes for a {}x{} image, want {}", got, w, h, n)));
    }
    Ok(Image { width: w as u32, height: h as u32, pix })
}

fn write_pixels(img: &Image) -> Result<()> {
    if img.width < 1 || img.height < 1 || img.width > i32::MAX as u32 || img.height > i32::MAX as u32 {
        return Err(Error::of(ErrorKind::Invalid, format!("vitrine: output image is {}x{}, want at least 1x1", img.width, img.height)));
    }
    let n = 4 * img.width as usize * img.height as usize;
    if img.pix.len() != n {
        return Err(Error::of(ErrorKind::Invalid, format!("vitrine: output image is {}x{} with {} bytes of pixels, want {}", img.width, img.height, img.pix.len(), n)));
    }
    status("pixels_write", unsafe { raw::pixels_write(img.width as i32, img.height as i32, img.pix.as_ptr(), n) })
}

// ---------------------------------------------------------------- events

/// An image without its pixels.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ImageInfo {
    /// width in pixels
    pub width: i64,
    /// height in pixels
    pub height: i64,
    /// media type, such as `image/jpeg`
    pub mime: String,
    /// size in bytes
    pub size: i64,
}

/// The event a listener is called for (ABI.md section 5, "Events").
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// the event's name, such as `images.post` or `stats.get`
    pub name: String,
    /// the user of the request's route, `""` on routes without one
    pub user: String,
    /// the public key that signed or authorised the request
    pub public_key: String,
    /// the image of the route, `""` on routes without one
    pub image_identifier: String,
    /// the upload on `images.post`, the stored image on the events of routes
    /// naming an image that exists; `None` elsewhere
    pub image: Option<ImageInfo>,
    /// the whole event object, for fields this version of the SDK does not
    /// know
    pub json: Value,
}

impl Event {
    /// Decodes an event object as the host writes it.
    pub fn parse(text: &str) -> Result<Event> {
        let v = Value::parse(text).map_err(|e| Error::of(ErrorKind::Invalid, format!("vitrine: event: {}", e)))?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let image = v.get("image").filter(|i| !i.is_null()).map(|i| {
            let n = |k: &str| i.get(k).and_then(Value::as_i64).unwrap_or(0);
            ImageInfo { width: n("width"), height: n("height"), mime: i.get("mime").and_then(Value::as_str).unwrap_or("").to_string(), size: n("size") }
        });
        Ok(Event { name: s("event"), user: s("user"), public_key: s("publicKey"), image_identifier: s("imageIdentifier"), image, json: v })
    }
}

/// The bytes of the image being uploaded, on `images.post`.
pub fn body() -> Result<Vec<u8>> {
    read_value("body_read", 64 << 10, |buf| unsafe { raw::body_read(buf.as_mut_ptr(), buf.len()) })
}

/// Replaces the image to be stored, on `images.post`. The host checks the
/// bytes as it checks any upload; when it refuses them
/// ([`ErrorKind::Invalid`], [`ErrorKind::Limit`]) the original stays.
pub fn set_body(b: &[u8]) -> Result<()> {
    status("body_write", unsafe { raw::body_write(b.as_ptr(), b.len()) })
}

// ---------------------------------------------------------------- metadata

/// The metadata of the call's image (the image being transformed, or the
/// event's); `{}` when it has none. On `images.post` it is what the new
/// image will get so far, on `metadata.put` and `metadata.post` the
/// document the client sent. [`ErrorKind::NotFound`] where the event has no
/// image.
pub fn metadata() -> Result<Value> {
    read_json("metadata_get", |buf| unsafe { raw::metadata_get(buf.as_mut_ptr(), buf.len()) })
}

/// Sets metadata from `doc`, a JSON object: merged over the new image's
/// metadata on `images.post`, replacing the client's document on
/// `metadata.put` and `metadata.post`; [`ErrorKind::Unavailable`]
/// elsewhere.
pub fn set_metadata(doc: &Value) -> Result<()> {
    let text = doc.to_string();
    status("metadata_set", unsafe { raw::metadata_set(text.as_ptr(), text.len()) })
}

// ---------------------------------------------------------------- statistics

/// Checks a statistic's name before the host sees it, so the error names
/// the problem.
fn check_stat_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 64 {
        return Err(Error::of(ErrorKind::Invalid, format!("vitrine: statistic {:?}: want 1 to 64 characters", name)));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.' || *c == '-')) {
        return Err(Error::of(ErrorKind::Invalid, format!("vitrine: statistic {:?}: {:?} is not one of a-z A-Z 0-9 _ . -", name, c)));
    }
    Ok(())
}

/// Adds `delta` to the filter's counter `name` (`[a-zA-Z0-9_.-]{1,64}`),
/// kept by the host and shown in `GET /stats` under
/// `custom.<filter>.<name>`. A counter stops at the i64 bounds; past 256
/// names, a new one fails with [`ErrorKind::Limit`].
pub fn stats_add(name: &str, delta: i64) -> Result<()> {
    check_stat_name(name)?;
    status("stats_add", unsafe { raw::stats_add(name.as_ptr(), name.len(), delta) })
}

/// Sets `custom.<filter>.<name>` of this `GET /stats` response to `v`, in
/// a listener called for `stats.get` ([`ErrorKind::Unavailable`]
/// elsewhere); [`ErrorKind::Limit`] past 64 KiB a value, 256 KiB or 256
/// names a call.
pub fn stats_set(name: &str, v: &Value) -> Result<()> {
    check_stat_name(name)?;
    let text = v.to_string();
    status("stats_set", unsafe { raw::stats_set(name.as_ptr(), name.len(), text.as_ptr(), text.len()) })
}

// ---------------------------------------------------------------- logging and rejection

/// The severity of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// 0
    Debug = 0,
    /// 1
    Info = 1,
    /// 2
    Warn = 2,
    /// 3
    Error = 3,
}

/// Writes `msg` to the server's log at `level`, tagged with the filter's
/// name (cut at 4096 bytes). Standard output and error are discarded in the
/// sandbox: this is the only way to log.
pub fn log(level: Level, msg: &str) {
    // A failed log line has nowhere to be reported.
    unsafe { raw::log(level as i32, msg.as_ptr(), msg.len()) };
}

/// The longest public message the host takes.
const MAX_REJECT_MESSAGE: usize = 1024;

/// Ends the request with the HTTP `status` (400-499) and `message` (cut at
/// 1024 bytes), the service's usual JSON error, once the export returns.
/// It returns the error to return at once:
///
/// ```ignore
/// return Err(vitrine::reject(400, "images must be at least 100 pixels wide"));
/// ```
///
/// A status outside 400-499 is not sent to the host and gives an
/// [`ErrorKind::Invalid`] error, which fails the call as any error does.
pub fn reject(status: u16, message: &str) -> Error {
    if !(400..=499).contains(&status) {
        return Error::of(ErrorKind::Invalid, format!("vitrine: reject: status {} is not 400-499", status));
    }
    let mut n = message.len().min(MAX_REJECT_MESSAGE);
    while !message.is_char_boundary(n) {
        n -= 1;
    }
    let message = &message[..n];
    let code = unsafe { raw::reject(status as i32, message.as_ptr(), message.len()) };
    if code < 0 {
        return code_error("reject", code);
    }
    Error { kind: ErrorKind::Rejected, message: message.to_string(), status }
}

// ---------------------------------------------------------------- exports

/// The codes an export returns when a call fails (the host logs them).
const EXIT_OK: i32 = 0;
const EXIT_FUNC_ERROR: i32 = 1;
const EXIT_SDK_ERROR: i32 = 3;

/// A transformation: it gets the image as the chain has made it so far and
/// may change it in place, or replace it by an image of any size (set
/// `width`, `height` and `pix` together). An error fails the request with
/// 500 and is logged; to refuse it with a 4xx, return [`reject`]'s error.
pub type TransformFn = fn(&mut Image, &Params) -> Result<()>;

/// A listener: it gets the event it was called for and acts on it through
/// [`body`], [`set_body`], [`metadata`], [`set_metadata`], [`stats_add`],
/// [`stats_set`], [`log`] and [`reject`].
pub type ListenerFn = fn(&Event) -> Result<()>;

/// Logs the message of a panic at error level before the runtime traps, so
/// the server's log says why the call failed.
fn panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| log(Level::Error, &format!("panic: {}", info))));
    });
}

/// Logs a failed call's error (a rejection is not an error of the filter)
/// and returns the export's code.
fn outcome(r: Result<()>, code: i32) -> i32 {
    match r {
        Ok(()) => EXIT_OK,
        Err(e) => {
            if e.kind != ErrorKind::Rejected {
                log(Level::Error, &e.to_string());
            }
            code
        }
    }
}

/// The body of the `vitrine_transform` export; [`transformation!`] calls it.
#[doc(hidden)]
pub fn run_transformation(f: TransformFn) -> i32 {
    panic_hook();
    let mut img = match read_pixels() {
        Ok(img) => img,
        Err(e) => return outcome(Err(e), EXIT_SDK_ERROR),
    };
    if let Err(e) = f(&mut img, &Params::host()) {
        return outcome(Err(e), EXIT_FUNC_ERROR);
    }
    outcome(write_pixels(&img), EXIT_SDK_ERROR)
}

/// The body of the `vitrine_on_event` export; [`listener!`] calls it.
#[doc(hidden)]
pub fn run_listener(f: ListenerFn) -> i32 {
    panic_hook();
    let ev = read_value("event_get", 512, |buf| unsafe { raw::event_get(buf.as_mut_ptr(), buf.len()) })
        .and_then(|b| String::from_utf8(b).map_err(|_| code_error("event_get", -3)))
        .and_then(|text| Event::parse(&text));
    match ev {
        Ok(ev) => outcome(f(&ev), EXIT_FUNC_ERROR),
        Err(e) => outcome(Err(e), EXIT_SDK_ERROR),
    }
}

/// Makes the crate a transformation running `f` (a [`TransformFn`]): it
/// defines the exports `vitrine_abi_v1` and `vitrine_transform`. Use it once,
/// at the top level of a `cdylib`.
#[macro_export]
macro_rules! transformation {
    ($f:path) => {
        #[no_mangle]
        pub extern "C" fn vitrine_abi_v1() {}

        #[no_mangle]
        pub extern "C" fn vitrine_transform() -> i32 {
            $crate::run_transformation($f)
        }
    };
}

/// Makes the crate a listener running `f` (a [`ListenerFn`]): it defines
/// the exports `vitrine_abi_v1` and `vitrine_on_event`. Use it once, at the
/// top level of a `cdylib`.
#[macro_export]
macro_rules! listener {
    ($f:path) => {
        #[no_mangle]
        pub extern "C" fn vitrine_abi_v1() {}

        #[no_mangle]
        pub extern "C" fn vitrine_on_event() -> i32 {
            $crate::run_listener($f)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let p = Params::new(&[("c", "ff800080"), ("n", "0.5"), ("i", "-3"), ("b", "true")]);
        assert_eq!(p.color("c").unwrap(), Color { r: 255, g: 128, b: 0, a: 128 });
        assert_eq!(p.number("n").unwrap(), 0.5);
        assert_eq!(p.int("i").unwrap(), -3);
        assert!(p.bool("b").unwrap());
        assert_eq!(p.int("absent").unwrap_err().kind(), ErrorKind::NotFound);
        let e = p.int("c").unwrap_err();
        assert_eq!((e.kind(), e.to_string()), (ErrorKind::Invalid, "vitrine: parameter \"c\": \"ff800080\" is not an int".to_string()));
        assert!(!p.has("absent") && p.has("c"));
    }

    #[test]
    fn colors() {
        assert_eq!(parse_color("#F80").unwrap(), Color { r: 255, g: 136, b: 0, a: 255 });
        assert_eq!(parse_color("102030").unwrap(), Color { r: 16, g: 32, b: 48, a: 255 });
        for bad in ["", "12", "1234567", "ggg", "#12345g"] {
            assert_eq!(parse_color(bad).unwrap_err().kind(), ErrorKind::Invalid, "{}", bad);
        }
    }

    #[test]
    fn no_host() {
        assert_eq!(metadata().unwrap_err().kind(), ErrorKind::NoHost);
        assert_eq!(stats_add("a b", 1).unwrap_err().kind(), ErrorKind::Invalid);
        assert_eq!(stats_add("ok", 1).unwrap_err().kind(), ErrorKind::NoHost);
        assert_eq!(reject(500, "x").kind(), ErrorKind::Invalid);
        assert_eq!(reject(400, "x").kind(), ErrorKind::NoHost);
        assert_eq!(Params::host().string("x").unwrap_err().to_string(), "vitrine: parameter \"x\": param_get: no vitrine host: host functions work only in a wasm32 build loaded by vitrine");
    }

    #[test]
    fn event() {
        let ev = Event::parse(r#"{"event":"images.post","user":"alice","publicKey":"k","imageIdentifier":"","image":{"width":640,"height":480,"mime":"image/png","size":1234},"new":1}"#).unwrap();
        assert_eq!(ev.name, "images.post");
        assert_eq!(ev.image, Some(ImageInfo { width: 640, height: 480, mime: "image/png".into(), size: 1234 }));
        assert_eq!(ev.json.get("new").and_then(Value::as_i64), Some(1));
        assert_eq!(Event::parse(r#"{"event":"stats.get","user":"","publicKey":"k","imageIdentifier":""}"#).unwrap().image, None);
    }
}

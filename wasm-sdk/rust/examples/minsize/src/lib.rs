//! minsize: a vitrine listener in Rust. On `images.post` it refuses uploads
//! smaller than its settings' minimum width and height with a 400, counts
//! what it checked and refused, and tags the images it lets through:
//!
//!     {"minsize": {"checked": true, "width": 1920, "height": 1080, "minWidth": 200, "minHeight": 200}}
//!
//! On `stats.get` it shows its minimum in `GET /stats`, beside its counters.

use vitrine::{Event, Level, Result, Value};

/// The filter's settings in filter.json: (minWidth, minHeight).
fn limits() -> Result<(i64, i64)> {
    let s = vitrine::settings()?.unwrap_or_else(Value::object);
    let get = |k: &str| match s.get(k) {
        None => Ok(0),
        Some(v) => v.as_i64().ok_or_else(|| vitrine::Error::new(format!("minsize: settings: {} is {}, want a whole number", k, v))),
    };
    Ok((get("minWidth")?, get("minHeight")?))
}

fn on_event(ev: &Event) -> Result<()> {
    let (min_w, min_h) = limits()?;
    if ev.name == "stats.get" {
        return vitrine::stats_set("minimum", &Value::object().set("width", min_w).set("height", min_h));
    }
    let img = match &ev.image {
        Some(img) => img,
        None => return Err(format!("minsize: event {} has no image; subscribe it to images.post", ev.name).into()),
    };
    vitrine::stats_add("checked", 1)?;
    if let Some(refusal) = check(img.width, img.height, min_w, min_h) {
        vitrine::stats_add("rejected", 1)?;
        vitrine::log(Level::Info, &format!("minsize: refused a {}x{} upload", img.width, img.height));
        return Err(vitrine::reject(400, &refusal));
    }
    let tag = Value::object().set("checked", true).set("width", img.width).set("height", img.height)
        .set("minWidth", min_w).set("minHeight", min_h);
    vitrine::set_metadata(&Value::object().set("minsize", tag))
}

/// The message to refuse an upload of w x h with, if it is too small.
fn check(w: i64, h: i64, min_w: i64, min_h: i64) -> Option<String> {
    if w < min_w || h < min_h {
        Some(format!("The image is {}x{} pixels; images must be at least {}x{}", w, h, min_w, min_h))
    } else {
        None
    }
}

vitrine::listener!(on_event);

#[cfg(test)]
mod tests {
    #[test]
    fn check() {
        assert_eq!(super::check(100, 300, 200, 200).as_deref(), Some("The image is 100x300 pixels; images must be at least 200x200"));
        assert_eq!(super::check(200, 200, 200, 200), None);
    }
}

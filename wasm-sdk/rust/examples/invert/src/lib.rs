//! invert: a vitrine transformation in Rust that inverts the colours of the
//! image, keeping its alpha; with the parameter `alpha=true` it inverts the
//! alpha channel too.
//!
//!     t[]=invert
//!     t[]=invert:alpha=true

fn transform(img: &mut vitrine::Image, p: &vitrine::Params) -> vitrine::Result<()> {
    let alpha = p.bool("alpha")?;
    invert(&mut img.pix, alpha);
    Ok(())
}

/// Inverts RGBA pixels in place: the colour channels, and alpha too when
/// `alpha` is set.
fn invert(pix: &mut [u8], alpha: bool) {
    for px in pix.chunks_exact_mut(4) {
        px[0] = 255 - px[0];
        px[1] = 255 - px[1];
        px[2] = 255 - px[2];
        if alpha {
            px[3] = 255 - px[3];
        }
    }
}

vitrine::transformation!(transform);

#[cfg(test)]
mod tests {
    #[test]
    fn invert() {
        let mut pix = vec![0, 100, 255, 40];
        super::invert(&mut pix, false);
        assert_eq!(pix, [255, 155, 0, 40]);
        super::invert(&mut pix, true);
        assert_eq!(pix, [0, 100, 255, 215]);
    }
}

//! duotone: a vitrine transformation in Rust that maps the image's tones
//! onto a gradient from a dark to a light colour, the same arithmetic as the
//! Go example's, so both give the same bytes:
//!
//!     t[]=duotone:dark=222244,light=ffeecc,mix=0.8

use vitrine::{Color, Image, Params, Result};

fn transform(img: &mut Image, p: &Params) -> Result<()> {
    let dark = p.color("dark")?;
    let light = p.color("light")?;
    let mix = p.number("mix")?;
    duotone(&mut img.pix, dark, light, mix);
    Ok(())
}

/// Replaces each pixel by the colour its luma (BT.601 weights on the sRGB
/// values) takes on the gradient from `dark` to `light`, blended over the
/// original by `mix`: 0 keeps the image, 1 is pure duotone. Alpha is kept.
fn duotone(pix: &mut [u8], dark: Color, light: Color, mix: f64) {
    // One lookup table per channel from luma to the blended-in colour.
    let mut lut = [[0u8; 256]; 3];
    for y in 0..256 {
        lut[0][y] = lerp(dark.r, light.r, y as u32);
        lut[1][y] = lerp(dark.g, light.g, y as u32);
        lut[2][y] = lerp(dark.b, light.b, y as u32);
    }
    let m = (mix.max(0.0).min(1.0) * 256.0 + 0.5) as u32; // the duotone's weight, 0..256
    let keep = 256 - m;
    // Eight pixels per iteration (the compiler unrolls the inner loop): the
    // host checks for a timeout at every loop back-edge, so fewer, longer
    // iterations run faster.
    let mut chunks = pix.chunks_exact_mut(32);
    for q in &mut chunks {
        for px in q.chunks_exact_mut(4) {
            blend(px, &lut, m, keep);
        }
    }
    for px in chunks.into_remainder().chunks_exact_mut(4) {
        blend(px, &lut, m, keep);
    }
}

#[inline(always)]
fn blend(px: &mut [u8], lut: &[[u8; 256]; 3], m: u32, keep: u32) {
    let l = ((77 * px[0] as u32 + 150 * px[1] as u32 + 29 * px[2] as u32 + 128) >> 8) as usize;
    for c in 0..3 {
        px[c] = ((px[c] as u32 * keep + lut[c][l] as u32 * m + 128) >> 8) as u8;
    }
}

/// The value at t/255 of the way from a to b, rounded.
fn lerp(a: u8, b: u8, t: u32) -> u8 {
    ((a as u32 * (255 - t) + b as u32 * t + 127) / 255) as u8
}

vitrine::transformation!(transform);

#[cfg(test)]
mod tests {
    use vitrine::Params;

    #[test]
    fn ends_of_the_gradient() {
        let p = Params::new(&[("dark", "102030ff"), ("light", "f0e0d0ff"), ("mix", "1")]);
        let mut img = vitrine::Image { width: 2, height: 1, pix: vec![0, 0, 0, 255, 255, 255, 255, 7] };
        super::transform(&mut img, &p).unwrap();
        assert_eq!(img.pix, [16, 32, 48, 255, 240, 224, 208, 7]);
    }
}

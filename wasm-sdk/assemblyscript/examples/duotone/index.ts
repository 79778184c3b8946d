// duotone: a vitrine transformation in AssemblyScript that maps the image's
// tones onto a gradient from a dark to a light colour, the same arithmetic
// as the Go example's, so both give the same bytes:
//
//   t[]=duotone:dark=222244,light=ffeecc,mix=0.8
import { Color, Image, Params, runTransformation } from "../../assembly/index";
export { vitrine_abi_v1 } from "../../assembly/index";

export function vitrine_transform(): i32 {
  return runTransformation(transform);
}

function transform(img: Image, p: Params): Image | null {
  duotone(img.pixels, p.color("dark"), p.color("light", new Color(255, 255, 255)), p.number("mix", 1));
  return img;
}

// One lookup table per channel from luma to the blended-in colour.
const lut = new StaticArray<u8>(3 * 256);

/** Replaces each pixel by the colour its luma (BT.601 weights on the sRGB
 * values) takes on the gradient from dark to light, blended over the
 * original by mix: 0 keeps the image, 1 is pure duotone. Alpha is kept. */
function duotone(pix: Uint8Array, dark: Color, light: Color, mix: f64): void {
  for (let y: u32 = 0; y < 256; y++) {
    lut[y] = lerp(dark.r, light.r, y);
    lut[256 + y] = lerp(dark.g, light.g, y);
    lut[512 + y] = lerp(dark.b, light.b, y);
  }
  const m = <u32>(Math.min(Math.max(mix, 0), 1) * 256 + 0.5); // the duotone's weight, 0..256
  const keep = 256 - m;
  const n = pix.length;
  let i = 0;
  // Four pixels per iteration: the host checks for a timeout at every loop
  // back-edge, so fewer, longer iterations run faster.
  for (; i + 16 <= n; i += 16) {
    blend(pix, i, m, keep);
    blend(pix, i + 4, m, keep);
    blend(pix, i + 8, m, keep);
    blend(pix, i + 12, m, keep);
  }
  for (; i < n; i += 4) blend(pix, i, m, keep);
}

// @inline: a call per pixel would cost more than the pixel's work.
@inline
function blend(pix: Uint8Array, i: i32, m: u32, keep: u32): void {
  const r = <u32>unchecked(pix[i]), g = <u32>unchecked(pix[i + 1]), b = <u32>unchecked(pix[i + 2]);
  const l = (77 * r + 150 * g + 29 * b + 128) >> 8;
  unchecked(pix[i] = <u8>((r * keep + <u32>unchecked(lut[l]) * m + 128) >> 8));
  unchecked(pix[i + 1] = <u8>((g * keep + <u32>unchecked(lut[256 + l]) * m + 128) >> 8));
  unchecked(pix[i + 2] = <u8>((b * keep + <u32>unchecked(lut[512 + l]) * m + 128) >> 8));
}

/** The value at t/255 of the way from a to b, rounded. */
function lerp(a: u8, b: u8, t: u32): u8 {
  return <u8>((<u32>a * (255 - t) + <u32>b * t + 127) / 255);
}

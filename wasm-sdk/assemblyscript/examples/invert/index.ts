// invert: a vitrine transformation in AssemblyScript that inverts the
// colours of the image, keeping its alpha; with the parameter alpha=true it
// inverts the alpha channel too.
//
//   t[]=invert
//   t[]=invert:alpha=true
import { Image, Params, runTransformation } from "../../assembly/index";
export { vitrine_abi_v1 } from "../../assembly/index";

export function vitrine_transform(): i32 {
  return runTransformation(transform);
}

function transform(img: Image, p: Params): Image | null {
  invert(img.pixels, p.bool("alpha"));
  return img;
}

/** Inverts RGBA pixels in place: the colour channels, and alpha too when
 * alpha is set. */
function invert(pix: Uint8Array, alpha: bool): void {
  const n = pix.length;
  for (let i = 0; i < n; i += 4) {
    pix[i] = 255 - pix[i];
    pix[i + 1] = 255 - pix[i + 1];
    pix[i + 2] = 255 - pix[i + 2];
    if (alpha) pix[i + 3] = 255 - pix[i + 3];
  }
}

package engine

import "fmt"

// The output metadata policy. Originals are never touched: Process returns
// the stored bytes for a request without transformations or conversion.
// Every other output is re-encoded, and by default carries no EXIF, XMP,
// IPTC or comments, because they leak where and with what a photo was taken
// (GPS position, camera serial numbers, owner names). Before they go:
//
//   - the EXIF orientation is applied to the pixels, so that an image that
//     displayed upright with its tag still displays upright without it. The
//     chain itself works on the stored pixels, as Imbo does, so
//     geometry parameters mean what they always meant;
//   - colours are already sRGB (toWorkingColour ran at decode), so dropping
//     the ICC profile loses nothing: untagged images are read as sRGB.
//
// The one profile an output keeps is the one the icc transformation
// converted to, without which its pixels would be misread.
//
// Config.Output.KeepMetadata turns the policy off (outputs keep what the source had,
// with an sRGB profile where the colours were converted); the strip
// transformation turns it back on for one request.

// finishMetadata applies the policy to s just before encoding.
func (e *Engine) finishMetadata(s *State) error {
	s.Output.clean = !e.cfg.Output.KeepMetadata || s.Output.Strip
	if !s.Output.clean {
		return nil
	}
	if s.Image.Orientation() > 1 {
		if err := s.Image.AutoRotate(); err != nil {
			return fmt.Errorf("engine: apply orientation: %w", err)
		}
	}
	// The encoders' strip option alone is not enough: govips' WebP export
	// ignores it. Removing the fields from the image works for every format.
	s.Output.Strip = !s.Output.KeepProfile
	if err := s.Image.RemoveMetadata(); err != nil {
		return fmt.Errorf("engine: remove metadata: %w", err)
	}
	if err := s.Image.RemoveOrientation(); err != nil {
		return fmt.Errorf("engine: remove orientation: %w", err)
	}
	if !s.Output.KeepProfile && s.Image.HasICCProfile() {
		if err := s.Image.RemoveICCProfile(); err != nil {
			return fmt.Errorf("engine: remove profile: %w", err)
		}
	}
	return nil
}

// finishEncoded applies the policy to encoded bytes where an encoder does
// not honour it (WebP, see stripWebPMetadata).
func (e *Engine) finishEncoded(data []byte, out *Output) ([]byte, error) {
	if out.Format != "webp" || !out.clean {
		return data, nil
	}
	clean, err := stripWebPMetadata(data, out.KeepProfile)
	if err != nil {
		return nil, fmt.Errorf("engine: encode webp: %w", err)
	}
	return clean, nil
}

package e2e

import (
	"bytes"
	bin "encoding/binary"
	"image"
	"image/color/palette"
	"image/gif"
	"net/http"
	"slices"
	"testing"
)

// animatedGIF is an n-frame 40x30 GIF, each frame another colour, with
// delays of 10+i hundredths of a second and the given loop count.
func animatedGIF(t *testing.T, n, loop int) ([]byte, []int) {
	t.Helper()
	a := &gif.GIF{LoopCount: loop}
	for i := 0; i < n; i++ {
		f := image.NewPaletted(image.Rect(0, 0, 40, 30), palette.WebSafe)
		for p := range f.Pix {
			f.Pix[p] = uint8(20*i + 5) // a different web-safe colour per frame
		}
		a.Image = append(a.Image, f)
		a.Delay = append(a.Delay, 10+i)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, a); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), a.Delay
}

// webpFrames counts the ANMF (animation frame) chunks of a WebP file.
func webpFrames(data []byte) int {
	n := 0
	for p := 12; p+8 <= len(data); {
		size := int(bin.LittleEndian.Uint32(data[p+4:]))
		if string(data[p:p+4]) == "ANMF" {
			n++
		}
		p += 8 + size + size%2
	}
	return n
}

// TestAnimationsAndFormats runs the binary with the animation limits and
// upload types configured: animated GIFs stay animated through a
// transformation, as GIF and as WebP; an animation over the frame limit is
// refused at upload; TIFF uploads are accepted and served as stored, other
// types answer 415.
func TestAnimationsAndFormats(t *testing.T) {
	admin := key{Public: "admin", Private: "admin-private"}
	s := startServer(t, adminOnlyConfig+`limits:
  maxFrames: 12
uploads:
  formats: [jpg, png, gif, tif]
`)
	anim, delays := animatedGIF(t, 10, 2)
	r := s.write(t, http.MethodPost, "/users/alice/images", anim, admin)
	wantStatus(t, "upload a 10-frame GIF", r, http.StatusCreated)
	base := "/users/alice/images/" + md5Hex(anim)

	r = s.get(t, base+".gif?t[]=resize:width=20&t[]=border:width=1,height=1", admin)
	if checkStatus(t, "resized GIF", r, http.StatusOK) {
		g, err := gif.DecodeAll(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("resized GIF: %v", err)
		}
		if len(g.Image) != 10 || !slices.Equal(g.Delay, delays) || g.LoopCount != 2 {
			t.Errorf("resized GIF: %d frames, delays %v, loop %d; want 10, %v, 2", len(g.Image), g.Delay, g.LoopCount, delays)
		}
		if g.Config.Width != 22 || g.Config.Height != 17 {
			t.Errorf("frame size %dx%d, want 22x17", g.Config.Width, g.Config.Height)
		}
	}
	r = s.get(t, base+".webp?t[]=thumbnail:width=16,height=16", admin)
	if checkStatus(t, "GIF as WebP", r, http.StatusOK) {
		if n := webpFrames(r.Body); n != 10 {
			t.Errorf("GIF as WebP: %d frames, want 10", n)
		}
	}

	tooMany, _ := animatedGIF(t, 13, 0)
	s.checkError(t, "upload a 13-frame GIF", s.write(t, http.MethodPost, "/users/alice/images", tooMany, admin),
		http.StatusRequestEntityTooLarge, "Too many animation frames: 13 (the limit is 12)")

	// TIFF is allowed here: stored and served as uploaded, converted on request.
	tif := rgbTIFF(8, 6)
	r = s.write(t, http.MethodPost, "/users/alice/images", tif, admin)
	wantStatus(t, "upload a TIFF", r, http.StatusCreated)
	var created struct {
		Extension string `json:"extension"`
	}
	r.JSON(t, &created)
	if created.Extension != "tif" {
		t.Errorf("TIFF stored with extension %q", created.Extension)
	}
	tifPath := "/users/alice/images/" + md5Hex(tif)
	if r := s.get(t, tifPath+".tif", admin); r.Status != http.StatusOK || !bytes.Equal(r.Body, tif) || r.Header.Get("Content-Type") != "image/tiff" {
		t.Errorf("TIFF by its extension: %d %q, identical %v", r.Status, r.Header.Get("Content-Type"), bytes.Equal(r.Body, tif))
	}
	if format, w, h := decodeSize(t, "TIFF as PNG", s.get(t, tifPath+".png", admin).Body); format != "png" || w != 8 || h != 6 {
		t.Errorf("TIFF as PNG: %s %dx%d", format, w, h)
	}
	// WebP is not in this server's list.
	webp := s.get(t, tifPath+".webp", admin).Body
	s.checkError(t, "upload a WebP", s.write(t, http.MethodPost, "/users/alice/images", webp, admin),
		http.StatusUnsupportedMediaType, "Unsupported image type: image/webp")
}

// adminOnlyConfig configures one key, admin (private key admin-private),
// allowed everything on every user.
const adminOnlyConfig = `accessControl:
  keys:
    - publicKey: admin
      privateKey: admin-private
      rules:
        - users: "*"
          group: all
`

// rgbTIFF is an uncompressed little-endian w x h RGB TIFF of a gradient.
func rgbTIFF(w, h int) []byte {
	le := bin.LittleEndian
	pixels := make([]byte, 3*w*h)
	for i := range pixels {
		pixels[i] = byte(i * 7)
	}
	type entry struct {
		tag, typ uint16
		count    uint32
		value    uint32
	}
	const ifdAt = 8
	entries := []entry{
		{256, 3, 1, uint32(w)}, {257, 3, 1, uint32(h)},
		{258, 3, 3, 0}, // BitsPerSample 8,8,8: at bitsAt
		{259, 3, 1, 1}, {262, 3, 1, 2},
		{273, 4, 1, 0}, // StripOffsets: at pixAt
		{277, 3, 1, 3}, {278, 3, 1, uint32(h)}, {279, 4, 1, uint32(len(pixels))}, {284, 3, 1, 1},
	}
	bitsAt := uint32(ifdAt + 2 + 12*len(entries) + 4)
	pixAt := bitsAt + 6
	entries[2].value, entries[5].value = bitsAt, pixAt
	b := le.AppendUint32([]byte("II*\x00"), ifdAt)
	b = le.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = le.AppendUint16(b, e.tag)
		b = le.AppendUint16(b, e.typ)
		b = le.AppendUint32(b, e.count)
		b = le.AppendUint32(b, e.value) // SHORT values sit in the low bytes (little-endian)
	}
	b = le.AppendUint32(b, 0)
	b = le.AppendUint16(b, 8)
	b = le.AppendUint16(b, 8)
	b = le.AppendUint16(b, 8)
	return append(b, pixels...)
}

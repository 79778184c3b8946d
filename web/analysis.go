package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// What the analysis at upload learnt about an image (engine/README.md "Image
// analysis"), as the image page and the grids show it: placeholder colours
// and BlurHash, the original's EXIF from metadata.exif, and the images
// whose perceptual hash is near.

// analysisView is the image page's placeholder, colours and EXIF.
type analysisView struct {
	// Analysed is false for an image stored before analysis or with it
	// switched off.
	Analysed     bool
	AverageColor string
	Palette      []string
	BlurHash     string
	Ratio        string
	// EXIF is the summary of the original's tags; EXIFAll every tag.
	EXIF, EXIFAll []kv
	// EXIFNote says why no EXIF is shown.
	EXIFNote string
}

// similarMax and similarDistance bound the image page's similar strip: the
// nearest images within that many differing bits of the perceptual hash.
const (
	similarMax      = 8
	similarDistance = 10
)

// hexColor is s as a CSS colour, #rrggbb (or #rrggbbaa when not opaque),
// when it is a colour of the one colour syntax (api.ParseColor), else "".
func hexColor(s string) string {
	c, ok := api.ParseColor(s)
	if !ok {
		return ""
	}
	h := c.Hex()
	if c.A == 255 {
		h = h[:6]
	}
	return "#" + h
}

// blurHashChars are BlurHash's base-83 digits.
const blurHashChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~"

// blurHash is s when it is a well-formed BlurHash (its size digit agrees
// with its length), else "": app.js decodes only what the server vouched
// for.
func blurHash(s string) string {
	if len(s) < 6 || strings.Trim(s, blurHashChars) != "" {
		return ""
	}
	size := strings.IndexByte(blurHashChars, s[0])
	if nx, ny := size%9+1, size/9+1; len(s) != 4+2*nx*ny {
		return ""
	}
	return s
}

// analysis builds the image page's analysis view from the listed image and
// its metadata (nil when the key may not read it; note says why).
func analysis(im imageEntry, md json.RawMessage, note string) *analysisView {
	a := &analysisView{AverageColor: hexColor(im.AverageColor), BlurHash: blurHash(im.BlurHash)}
	for _, c := range im.Palette {
		if c = hexColor(c); c != "" {
			a.Palette = append(a.Palette, c)
		}
	}
	a.Analysed = a.AverageColor != "" || a.BlurHash != "" || len(a.Palette) > 0 || im.PHash != ""
	if im.Width > 0 && im.Height > 0 {
		a.Ratio = strconv.FormatFloat(float64(im.Width)/float64(im.Height), 'f', 3, 64)
	}
	if md == nil {
		a.EXIFNote = note
		return a
	}
	var doc struct {
		EXIF map[string]any `json:"exif"`
	}
	if err := json.Unmarshal(md, &doc); err != nil || len(doc.EXIF) == 0 {
		a.EXIFNote = noEXIFNote(im)
		return a
	}
	a.EXIF = exifSummary(doc.EXIF)
	for k, val := range doc.EXIF {
		a.EXIFAll = append(a.EXIFAll, kv{k, exifText(val)})
	}
	sort.Slice(a.EXIFAll, func(i, j int) bool { return a.EXIFAll[i].Key < a.EXIFAll[j].Key })
	return a
}

// noEXIFNote says why an image's metadata holds no exif key, without
// claiming the original has none: the page shows the metadata's copy, and
// a metadata change (a PUT replaces the whole document) may have dropped
// it after upload.
func noEXIFNote(im imageEntry) string {
	again := " vitrine analyze --force --user " + im.User + " copies them from the original again."
	if im.Updated != "" && im.Updated != im.Added {
		return "The metadata holds no exif key. It was changed after upload (" + im.Updated + "), and a change " +
			"replaces the whole document, so tags copied at upload may have gone with it; the original may also carry none." + again
	}
	return "The metadata holds no exif key: the original may carry no EXIF, IPTC or XMP tags, or they were not " +
		"copied (analysis.exif off, the image stored before analysis, or a metadata change that left them out)." + again
}

// exifSummary picks what a person wants to know first from the tags:
// camera, lens, exposure, dates, dimensions, author, and the position only
// when it was kept (analysis.exifGps).
func exifSummary(x map[string]any) []kv {
	get := func(k string) string { return exifText(x[k]) }
	var rows []kv
	add := func(label, value string) {
		if strings.TrimSpace(value) != "" {
			rows = append(rows, kv{label, value})
		}
	}
	camera := get("Model")
	if mk := get("Make"); mk != "" && !strings.HasPrefix(strings.ToLower(camera), strings.ToLower(mk)) {
		camera = strings.TrimSpace(mk + " " + camera)
	}
	add("Camera", camera)
	lens := get("LensModel")
	if lens == "" {
		lens = get("XMP:aux:Lens")
	}
	add("Lens", lens)
	add("Exposure", exposure(x))
	add("Taken", isoDate(get("DateTimeOriginal")))
	add("Digitised", isoDate(get("DateTimeDigitized")))
	add("Modified", isoDate(get("DateTime")))
	if w, h := get("PixelXDimension"), get("PixelYDimension"); w != "" && h != "" {
		add("Dimensions", w+" × "+h+" px")
	} else if w, h := get("ImageWidth"), get("ImageLength"); w != "" && h != "" {
		add("Dimensions", w+" × "+h+" px")
	}
	add("Software", get("Software"))
	add("Artist", get("Artist"))
	add("Copyright", get("Copyright"))
	lat, okLat := x["GPSLatitude"].(float64)
	lon, okLon := x["GPSLongitude"].(float64)
	if okLat && okLon {
		pos := fmt.Sprintf("%.5f, %.5f", lat, lon)
		if alt, ok := x["GPSAltitude"].(float64); ok {
			pos += fmt.Sprintf(" · %s m", strconv.FormatFloat(alt, 'f', -1, 64))
		}
		add("Position (GPS)", pos)
	}
	return rows
}

// exposure is "1/250 s · f/2.8 · ISO 400 · 50 mm" from the tags present.
func exposure(x map[string]any) string {
	var parts []string
	if t, ok := x["ExposureTime"].(float64); ok && t > 0 {
		if t < 1 {
			parts = append(parts, "1/"+strconv.Itoa(int(math.Round(1/t)))+" s")
		} else {
			parts = append(parts, strconv.FormatFloat(t, 'f', -1, 64)+" s")
		}
	}
	if f, ok := x["FNumber"].(float64); ok && f > 0 {
		parts = append(parts, "f/"+strconv.FormatFloat(f, 'f', -1, 64))
	}
	if iso := exifText(x["ISOSpeedRatings"]); iso != "" {
		parts = append(parts, "ISO "+iso)
	}
	if f, ok := x["FocalLength"].(float64); ok && f > 0 {
		parts = append(parts, strconv.FormatFloat(f, 'f', -1, 64)+" mm")
	}
	return strings.Join(parts, " · ")
}

// isoDate shows an ISO 8601 date with a space for its T.
func isoDate(s string) string { return strings.Replace(s, "T", " ", 1) }

// exifText writes a tag's JSON value as text: arrays joined by commas.
func exifText(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = exifText(e)
		}
		return strings.Join(parts, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// loadSimilar fills the image page's strip of the nearest images by
// perceptual hash. It stays empty for an image without a hash, and when
// the listing refuses (a key that may not list, a reference not analysed).
func (q *request) loadSimilar(ctx context.Context, v *imageView, im imageEntry) error {
	if im.PHash == "" {
		return nil
	}
	l, err := q.list(ctx, "/users/"+url.PathEscape(v.User)+"/images", url.Values{"similarTo": {v.ID},
		"maxDistance": {strconv.Itoa(similarDistance)}, "limit": {strconv.Itoa(similarMax)}})
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < http.StatusInternalServerError {
		return nil
	} else if err != nil {
		return fmt.Errorf("similar images of %s: %w", v.ID, err)
	}
	v.Similar = q.thumbs(l.Images)
	for i, e := range l.Images {
		if e.Distance != nil {
			v.Similar[i].Caption = distanceLabel(*e.Distance)
		}
	}
	return nil
}

// distanceLabel says how far apart two perceptual hashes are.
func distanceLabel(d int) string {
	switch d {
	case 0:
		return "same hash (0 bits apart)"
	case 1:
		return "1 bit apart"
	}
	return strconv.Itoa(d) + " bits apart"
}

package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// cameraJPEG returns a JPEG whose EXIF, GPS, IPTC and XMP exiftool wrote
// as a camera and a photo editor would.
func cameraJPEG(t *testing.T) []byte {
	t.Helper()
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		t.Skip("exiftool is not installed (apt-get install libimage-exiftool-perl)")
	}
	path := filepath.Join(t.TempDir(), "camera.jpg")
	if err := os.WriteFile(path, source(t, 96, 64, "jpg", false), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-q", "-overwrite_original",
		"-EXIF:Make=Canon", "-EXIF:Model=Canon EOS R5", "-EXIF:DateTimeOriginal=2024:05:01 13:45:10",
		"-EXIF:FNumber=2.8", "-EXIF:ExposureTime=0.004", "-EXIF:ISO=400", "-EXIF:FocalLength=35",
		"-EXIF:Orientation#=1", "-EXIF:Artist=Ada", "-EXIF:Copyright=CC-BY",
		"-GPS:GPSLatitude=48.8584", "-GPS:GPSLatitudeRef=N", "-GPS:GPSLongitude=2.2945", "-GPS:GPSLongitudeRef=W",
		"-IPTC:Keywords=tower", "-IPTC:Keywords=paris", "-IPTC:City=Paris", "-IPTC:DateCreated=2024:05:01",
		"-XMP-dc:Title=The tower", "-XMP-dc:Subject=tower", "-XMP-dc:Subject=night", "-XMP-xmp:Rating=5",
		"-XMP-exif:GPSLatitude=48.8584 N",
		path).CombinedOutput()
	if err != nil {
		t.Fatalf("exiftool: %v: %s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestReadEXIF(t *testing.T) {
	data := cameraJPEG(t)
	all := ReadEXIF(data, EXIFOptions{Tags: []string{"*"}})
	for k, want := range map[string]any{
		"Make": "Canon", "Model": "Canon EOS R5", "DateTimeOriginal": "2024-05-01T13:45:10",
		"FNumber": 2.8, "ExposureTime": 0.004, "ISOSpeedRatings": int64(400), "FocalLength": 35.0,
		"Orientation": int64(1), "Artist": "Ada", "Copyright": "CC-BY",
		"IPTC:Keywords": []any{"tower", "paris"}, "IPTC:City": "Paris", "IPTC:DateCreated": "2024-05-01",
		"XMP:dc:title": "The tower", "XMP:dc:subject": []any{"tower", "night"}, "XMP:xmp:Rating": "5",
	} {
		if got := all[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	for k := range all {
		if k[:3] == "GPS" || k == "XMP:exif:GPSLatitude" || k == "MakerNote" || k == "ExifIFDPointer" {
			t.Errorf("%s kept without GPS or as structure", k)
		}
	}
	t.Run("GPS", func(t *testing.T) {
		md := ReadEXIF(data, EXIFOptions{Tags: []string{"GPS*", "XMP:exif:*"}, GPS: true})
		lat, _ := md["GPSLatitude"].(float64)
		long, _ := md["GPSLongitude"].(float64)
		if lat < 48.858 || lat > 48.859 || long > -2.294 || long < -2.295 {
			t.Errorf("GPS = %v, %v, want 48.8584, -2.2945 (%v)", md["GPSLatitude"], md["GPSLongitude"], md)
		}
		if _, ok := md["XMP:exif:GPSLatitude"]; !ok {
			t.Errorf("XMP GPS dropped with GPS allowed: %v", md)
		}
	})
	t.Run("AllowedTags", func(t *testing.T) {
		md := ReadEXIF(data, EXIFOptions{Tags: []string{"make", "Date*", "IPTC:K*"}})
		want := map[string]any{"Make": "Canon", "DateTimeOriginal": "2024-05-01T13:45:10", "IPTC:Keywords": []any{"tower", "paris"}}
		if !reflect.DeepEqual(md, want) {
			t.Errorf("ReadEXIF = %v, want %v", md, want)
		}
	})
	t.Run("None", func(t *testing.T) {
		if md := ReadEXIF(data, EXIFOptions{}); len(md) != 0 {
			t.Errorf("no tags allowed: %v", md)
		}
		if md := ReadEXIF(source(t, 8, 8, "png", false), EXIFOptions{Tags: []string{"*"}}); len(md) != 0 {
			t.Errorf("PNG without metadata: %v", md)
		}
	})
}

// TestReadEXIFChunks reads the EXIF chunk exiftool writes into PNG (eXIf)
// and WebP (EXIF) files.
func TestReadEXIFChunks(t *testing.T) {
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		t.Skip("exiftool is not installed (apt-get install libimage-exiftool-perl)")
	}
	for _, ext := range []string{"png", "webp", "tif"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "camera."+ext)
			if err := os.WriteFile(path, source(t, 32, 24, ext, false), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(tool, "-q", "-overwrite_original", "-EXIF:Make=Fujifilm",
				"-EXIF:DateTimeOriginal=2020:02:29 23:59:59", path).CombinedOutput(); err != nil {
				t.Fatalf("exiftool: %v: %s", err, out)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			md := ReadEXIF(data, EXIFOptions{Tags: []string{"Make", "DateTimeOriginal"}})
			want := map[string]any{"Make": "Fujifilm", "DateTimeOriginal": "2020-02-29T23:59:59"}
			if !reflect.DeepEqual(md, want) {
				t.Errorf("ReadEXIF = %v, want %v", md, want)
			}
		})
	}
}

// FuzzReadEXIF feeds damaged metadata to the readers: they may find
// nothing, never panic.
func FuzzReadEXIF(f *testing.F) {
	f.Add(source(f, 8, 8, "jpg", false))
	f.Add(source(f, 8, 8, "png", false))
	f.Add(append([]byte{0xff, 0xd8, 0xff, 0xe1, 0x00, 0x10}, "Exif\x00\x00MM\x00*\x00\x00\x00\x08"...))
	f.Add(append([]byte{0xff, 0xd8, 0xff, 0xed, 0x00, 0x20}, "Photoshop 3.0\x008BIM\x04\x04\x00\x00\x00\x00\x00\x05\x1c\x02\x19\x00\x09"...))
	f.Add([]byte("<x:xmpmeta><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'><rdf:Description><rdf:li>x</rdf:li></rdf:Description></rdf:RDF></x:xmpmeta>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ReadEXIF(data, EXIFOptions{Tags: []string{"*"}, GPS: true})
	})
}

package vitrine

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseEvent(t *testing.T) {
	t.Parallel()
	data := []byte(`{"event":"images.post","user":"alice","publicKey":"alice-key","imageIdentifier":"",` +
		`"image":{"width":1920,"height":1080,"mime":"image/jpeg","size":482113},"future":{"x":1}}`)
	ev, err := ParseEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	want := ImageInfo{Width: 1920, Height: 1080, Mime: "image/jpeg", Size: 482113}
	if ev.Name != "images.post" || ev.User != "alice" || ev.PublicKey != "alice-key" || ev.Image == nil || *ev.Image != want {
		t.Errorf("ParseEvent = %+v (image %+v)", ev, ev.Image)
	}
	// Fields the SDK does not know stay readable.
	var raw struct{ Future struct{ X int } }
	if err := json.Unmarshal(ev.JSON, &raw); err != nil || raw.Future.X != 1 {
		t.Errorf("JSON lost the unknown field: %s", ev.JSON)
	}

	ev, err = ParseEvent([]byte(`{"event":"stats.get","user":"","publicKey":"k","imageIdentifier":""}`))
	if err != nil || ev.Image != nil || ev.Name != "stats.get" {
		t.Errorf("ParseEvent(stats.get) = %+v, %v", ev, err)
	}

	for _, bad := range []string{``, `[]`, `{"event":1}`, `{"event":"x"`} {
		if _, err := ParseEvent([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseEvent(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

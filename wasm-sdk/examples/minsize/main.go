// Command minsize is a vitrine listener on images.post: it refuses uploads
// smaller than the minimum width and height of its settings with a 400,
// counts what it checked and refused (custom.minsize in GET /stats), and
// tags every image it lets through with metadata:
//
//	{"minsize": {"checked": true, "width": 1920, "height": 1080, "minWidth": 200, "minHeight": 200}}
//
// On stats.get it shows its minimum beside its counters. The same listener
// is written in C (minsize-c), Rust and AssemblyScript
// (wasm-sdk/rust/examples/minsize, wasm-sdk/assemblyscript/examples/minsize).
package main

import (
	"fmt"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Listener(onUpload)
}

func main() {}

// limits are the filter's settings in filter.json.
type limits struct {
	MinWidth  int `json:"minWidth"`
	MinHeight int `json:"minHeight"`
}

// tag is the metadata minsize adds under "minsize".
type tag struct {
	Checked   bool `json:"checked"`
	Width     int  `json:"width"`
	Height    int  `json:"height"`
	MinWidth  int  `json:"minWidth"`
	MinHeight int  `json:"minHeight"`
}

func onUpload(ev *vitrine.Event) error {
	var l limits
	if err := vitrine.Settings(&l); err != nil {
		return err
	}
	if ev.Name == "stats.get" {
		return vitrine.StatsSet("minimum", map[string]int{"width": l.MinWidth, "height": l.MinHeight})
	}
	if ev.Image == nil {
		return fmt.Errorf("minsize: event %s has no image; subscribe it to images.post", ev.Name)
	}
	if err := vitrine.StatsAdd("checked", 1); err != nil {
		return err
	}
	t, refusal := check(*ev.Image, l)
	if refusal != "" {
		if err := vitrine.StatsAdd("rejected", 1); err != nil {
			return err
		}
		vitrine.Logf(vitrine.LevelInfo, "minsize: refused a %dx%d upload", ev.Image.Width, ev.Image.Height)
		return vitrine.Reject(400, refusal)
	}
	return vitrine.SetMetadata(map[string]tag{"minsize": t})
}

// check decides on an upload: the tag to add, or the message to refuse it
// with.
func check(img vitrine.ImageInfo, l limits) (t tag, refusal string) {
	if img.Width < l.MinWidth || img.Height < l.MinHeight {
		return tag{}, fmt.Sprintf("The image is %dx%d pixels; images must be at least %dx%d",
			img.Width, img.Height, l.MinWidth, l.MinHeight)
	}
	return tag{Checked: true, Width: img.Width, Height: img.Height, MinWidth: l.MinWidth, MinHeight: l.MinHeight}, ""
}

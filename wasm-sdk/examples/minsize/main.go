// Command minsize is a vitrine listener on images.post: it refuses uploads
// smaller than the minimum width and height of its settings with a 400, and
// tags every image it lets through with metadata:
//
//	{"minsize": {"checked": true, "width": 1920, "height": 1080, "minWidth": 200, "minHeight": 200}}
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
	if ev.Image == nil {
		return fmt.Errorf("minsize: event %s has no image; subscribe it to images.post only", ev.Name)
	}
	var l limits
	if err := vitrine.Settings(&l); err != nil {
		return err
	}
	t, refusal := check(*ev.Image, l)
	if refusal != "" {
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

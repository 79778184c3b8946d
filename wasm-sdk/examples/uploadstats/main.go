// Command uploadstats is a vitrine listener that counts uploads by size
// class and describes its counters in GET /stats:
//
//	"custom": {
//	  "uploadstats": {"uploads": 12, "bytes": 5242880, "small": 3, "medium": 8, "large": 1,
//	    "uploadSizeClasses": {"small": "under 1 MP", ...}}
//	}
package main

import (
	"fmt"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Listener(onEvent)
}

func main() {}

// classes are the filter's settings: where the size classes start, in
// megapixels.
type classes struct {
	MediumMP float64 `json:"mediumMP"`
	LargeMP  float64 `json:"largeMP"`
}

// defaults are used when the manifest has no settings.
var defaults = classes{MediumMP: 1, LargeMP: 12}

func onEvent(ev *vitrine.Event) error {
	c := defaults
	if err := vitrine.Settings(&c); err != nil {
		return err
	}
	switch ev.Name {
	case "images.post":
		if ev.Image == nil {
			return fmt.Errorf("uploadstats: images.post without an image")
		}
		for name, delta := range counts(*ev.Image, c) {
			if err := vitrine.StatsAdd(name, delta); err != nil {
				return err
			}
		}
		return nil
	case "stats.get":
		// Counters show under custom.uploadstats, and so does this value,
		// beside them.
		return vitrine.StatsSet("uploadSizeClasses", describe(c))
	}
	return nil
}

// counts returns what one upload adds to each counter.
func counts(img vitrine.ImageInfo, c classes) map[string]int64 {
	return map[string]int64{"uploads": 1, "bytes": img.Size, class(img, c): 1}
}

// class returns the size class of img.
func class(img vitrine.ImageInfo, c classes) string {
	mp := float64(img.Width) * float64(img.Height) / 1e6
	switch {
	case mp >= c.LargeMP:
		return "large"
	case mp >= c.MediumMP:
		return "medium"
	}
	return "small"
}

// describe says in words what each class counts.
func describe(c classes) map[string]string {
	return map[string]string{
		"small":  fmt.Sprintf("under %g MP", c.MediumMP),
		"medium": fmt.Sprintf("%g to %g MP", c.MediumMP, c.LargeMP),
		"large":  fmt.Sprintf("%g MP and more", c.LargeMP),
	}
}

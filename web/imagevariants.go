package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// variantView is one cached variant of the image: the steps and format
// that made it (Recorded false for a variant cached before the service
// recorded them, shown by its hash alone).
type variantView struct {
	Steps                         []string
	Format                        string
	Recorded                      bool
	Hash, Size, Created, LastUsed string
}

// loadVariants fills the image page's list of the image's cached variants
// (transformed outputs), or says why it is not shown.
func (q *request) loadVariants(ctx context.Context, v *imageView) error {
	var got api.VariantList
	err := q.api.getJSON(ctx, q.imagePath(v.User, v.ID)+"/variants", nil, &got)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Message != "Image does not exist":
		// A service without the variant list (an older API): no section.
		v.VariantsNote = "This service does not list cached variants."
		return nil
	case err != nil:
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.VariantsNote = "Your key may not list this image's cached variants: " + msg
		return nil
	}
	v.Variants = make([]variantView, 0, len(got.Variants))
	for _, x := range got.Variants {
		vv := variantView{Format: x.Format, Recorded: x.Format != "", Hash: shortID(x.Hash), Size: humanBytes(x.Size),
			Created: x.Created, LastUsed: x.LastUsed}
		if x.Chain != "" {
			vv.Steps = strings.Split(x.Chain, "|")
		}
		v.Variants = append(v.Variants, vv)
	}
	return nil
}

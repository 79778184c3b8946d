package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/vitrine/vitrine/api"
)

// variantView is one cached variant of the image.
type variantView struct {
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
		v.Variants = append(v.Variants, variantView{Hash: shortID(x.Hash), Size: humanBytes(x.Size), Created: x.Created, LastUsed: x.LastUsed})
	}
	return nil
}

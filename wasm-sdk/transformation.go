package vitrine

import (
	"errors"
	"image"
)

// TransformFunc is a transformation: it gets the image as the chain has made
// it so far and its parameters, and returns the result.
//
// It may change img in place and return it, or return a new image of any
// size. Returning a nil image and a nil error leaves the image unchanged.
// img and its pixels belong to the SDK once the function returns (the SDK
// reuses the buffer for the next call): keep nothing of it.
//
// An error fails the request with 500 and is logged; to refuse a request
// with a 4xx, return Reject's result.
type TransformFunc func(img *image.NRGBA, p Params) (*image.NRGBA, error)

var transformation TransformFunc

// Transformation registers fn as the module's transformation. Call it once,
// from an init function. It panics when fn is nil or when a transformation is
// already registered.
func Transformation(fn TransformFunc) {
	if fn == nil {
		panic("vitrine: Transformation: nil function")
	}
	if transformation != nil {
		panic("vitrine: Transformation called twice")
	}
	transformation = fn
}

// runTransformation is the body of the vitrine_transform export.
func runTransformation() int32 {
	return call(func() (int32, error) {
		if transformation == nil {
			return exitUnregistered, errors.New("vitrine: no transformation registered: call vitrine.Transformation from an init function")
		}
		img, err := readPixels()
		if err != nil {
			return exitSDKError, err
		}
		out, err := transformation(img, hostParams())
		if err != nil {
			return exitFuncError, err
		}
		if out == nil {
			return exitOK, nil
		}
		if err := writePixels(out); err != nil {
			return exitSDKError, err
		}
		return exitOK, nil
	})
}

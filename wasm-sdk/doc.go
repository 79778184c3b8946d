// Package vitrine is the Go SDK for vitrine filters: WebAssembly modules that
// add transformations and event listeners to a vitrine server.
//
// A filter is an ordinary Go main package built for WASI as a reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o filter.wasm .
//
// It registers one function in init and leaves main empty:
//
//	func init() {
//		vitrine.Transformation(func(img *image.NRGBA, p vitrine.Params) (*image.NRGBA, error) {
//			// change img in place, or return a new image
//			return img, nil
//		})
//	}
//
//	func main() {}
//
// The SDK exports what ABI.md requires (vitrine_abi_v1, vitrine_transform,
// vitrine_on_event) and turns the host's functions into typed calls: Params
// for a transformation's parameters, Settings for the operator's settings,
// Event, Body, SetBody, Metadata and SetMetadata for listeners, StatsAdd and
// StatsSet for custom statistics, Log, and Reject to end a request with a 4xx.
// Errors from the host are Go errors that match ErrNotFound, ErrFault,
// ErrInvalid, ErrUnavailable and ErrLimit with errors.Is.
//
// Outside a GOOS=wasip1 build the package compiles so that the pure parts of a
// filter can be unit tested natively, but every call to the host answers
// ErrNoHost.
//
// When a call fails, the export returns one of these codes, which the host
// logs: 1 the registered function returned an error (or rejected), 2 it
// panicked, 3 the SDK could not read the input or write the output, 4 no
// function of that kind is registered.
package vitrine

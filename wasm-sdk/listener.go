package vitrine

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ListenerFunc is an event listener: it gets the event it was called for and
// acts on it through Body, SetBody, Metadata, SetMetadata, StatsAdd,
// StatsSet, Log and Reject.
//
// An error fails the request when the manifest says the listener is fatal
// (the default) and is logged; to refuse a request with a 4xx and a message
// for the client, return Reject's result.
type ListenerFunc func(ev *Event) error

var listener ListenerFunc

// Listener registers fn as the module's event listener. Call it once, from an
// init function; the manifest's events decide which events reach it. It
// panics when fn is nil or when a listener is already registered.
func Listener(fn ListenerFunc) {
	if fn == nil {
		panic("vitrine: Listener: nil function")
	}
	if listener != nil {
		panic("vitrine: Listener called twice")
	}
	listener = fn
}

// Event is the event a listener is called for (ABI.md section 5, "Events").
type Event struct {
	// Name is the event's name, such as "images.post" or "stats.get".
	Name string `json:"event"`
	// User is the user of the request's route, "" on routes without one.
	User string `json:"user"`
	// PublicKey is the public key that signed or authorised the request.
	PublicKey string `json:"publicKey"`
	// ImageIdentifier is the image of the route, "" on routes without one.
	ImageIdentifier string `json:"imageIdentifier"`
	// Image describes the upload on images.post and the stored image on
	// the events of routes naming an image that exists (image.*,
	// metadata.*, shorturls.*, shorturl.*); it is nil on other events.
	Image *ImageInfo `json:"image"`
	// JSON is the event object exactly as the host gave it, for fields this
	// version of the SDK does not know.
	JSON json.RawMessage `json:"-"`
}

// ImageInfo describes an image without its pixels.
type ImageInfo struct {
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Mime   string `json:"mime"`
	Size   int64  `json:"size"`
}

// ParseEvent decodes an event object as the host writes it.
func ParseEvent(data []byte) (*Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("vitrine: event: %v: %w", err, ErrInvalid)
	}
	ev.JSON = data
	return &ev, nil
}

// runListener is the body of the vitrine_on_event export.
func runListener() int32 {
	return call(func() (int32, error) {
		if listener == nil {
			return exitUnregistered, errors.New("vitrine: no listener registered: call vitrine.Listener from an init function")
		}
		data, err := readValue("event_get", 512, hostEventGet)
		if err != nil {
			return exitSDKError, err
		}
		ev, err := ParseEvent(data)
		if err != nil {
			return exitSDKError, err
		}
		if err := listener(ev); err != nil {
			return exitFuncError, err
		}
		return exitOK, nil
	})
}

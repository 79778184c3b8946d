package vitrine

import (
	"errors"
	"image"
	"testing"
)

// These tests change the package's registrations, so they do not run in
// parallel.

func TestRunUnregistered(t *testing.T) {
	if got := runTransformation(); got != exitUnregistered {
		t.Errorf("runTransformation() = %d, want %d", got, exitUnregistered)
	}
	if got := runListener(); got != exitUnregistered {
		t.Errorf("runListener() = %d, want %d", got, exitUnregistered)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	t.Cleanup(func() { transformation, listener = nil, nil })
	noop := func(img *image.NRGBA, _ Params) (*image.NRGBA, error) { return img, nil }
	Transformation(noop)
	Listener(func(*Event) error { return nil })
	cases := []struct {
		name string
		f    func()
	}{
		{"Transformation twice", func() { Transformation(noop) }},
		{"Listener twice", func() { Listener(func(*Event) error { return nil }) }},
		{"nil Transformation", func() { transformation = nil; Transformation(nil) }},
		{"nil Listener", func() { listener = nil; Listener(nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", c.name)
				}
			}()
			c.f()
		})
	}
}

func TestCall(t *testing.T) {
	cases := []struct {
		name string
		f    func() (int32, error)
		want int32
	}{
		{"ok", func() (int32, error) { return exitOK, nil }, exitOK},
		{"error", func() (int32, error) { return exitFuncError, errors.New("boom") }, exitFuncError},
		{"rejection", func() (int32, error) { return exitFuncError, &Rejection{Status: 400} }, exitFuncError},
		{"panic", func() (int32, error) { panic("boom") }, exitPanic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := call(c.f); got != c.want {
				t.Errorf("call = %d, want %d", got, c.want)
			}
		})
	}
}

// Natively the registered function is never reached: reading the input needs
// the host.
func TestRunWithoutHost(t *testing.T) {
	t.Cleanup(func() { transformation, listener = nil, nil })
	reached := false
	Transformation(func(img *image.NRGBA, _ Params) (*image.NRGBA, error) { reached = true; return img, nil })
	Listener(func(*Event) error { reached = true; return nil })
	if got := runTransformation(); got != exitSDKError {
		t.Errorf("runTransformation() = %d, want %d", got, exitSDKError)
	}
	if got := runListener(); got != exitSDKError {
		t.Errorf("runListener() = %d, want %d", got, exitSDKError)
	}
	if reached {
		t.Error("a registered function ran without a host")
	}
}

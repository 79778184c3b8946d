package vitrine

import (
	"errors"
	"testing"
)

// reader follows the copy protocol of ABI.md for value: it returns the full
// size and copies only when the buffer is large enough. It counts its calls.
type reader struct {
	values [][]byte // the value at each call; the last one repeats
	calls  int
}

func (r *reader) read(buf []byte) int32 {
	v := r.values[min(r.calls, len(r.values)-1)]
	r.calls++
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func TestReadValue(t *testing.T) {
	t.Parallel()
	long := make([]byte, 1000)
	for i := range long {
		long[i] = byte(i)
	}
	cases := []struct {
		name   string
		values [][]byte
		hint   int
		calls  int
		want   string
		err    error
	}{
		{name: "fits", values: [][]byte{[]byte("0.5")}, hint: 64, calls: 1, want: "0.5"},
		{name: "exact fit", values: [][]byte{[]byte("abcd")}, hint: 4, calls: 1, want: "abcd"},
		{name: "empty", values: [][]byte{{}}, hint: 64, calls: 1, want: ""},
		{name: "zero hint", values: [][]byte{[]byte("x")}, hint: 0, calls: 2, want: "x"},
		{name: "retry once", values: [][]byte{long}, hint: 64, calls: 2, want: string(long)},
		{name: "grew", values: [][]byte{long[:100], long}, hint: 64, calls: 2, err: ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := &reader{values: c.values}
			got, err := readValue("event_get", c.hint, r.read)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got %d bytes %q, want %d bytes", len(got), got[:min(len(got), 16)], len(c.want))
			}
			if r.calls != c.calls {
				t.Errorf("%d calls, want %d", r.calls, c.calls)
			}
		})
	}
	t.Run("error code", func(t *testing.T) {
		t.Parallel()
		calls := 0
		_, err := readValue("body_read", 64, func([]byte) int32 { calls++; return codeUnavailable })
		if !errors.Is(err, ErrUnavailable) || calls != 1 {
			t.Errorf("err = %v after %d calls, want ErrUnavailable after 1", err, calls)
		}
	})
}

func TestReadJSON(t *testing.T) {
	t.Parallel()
	answer := func(v string) func([]byte) int32 {
		return (&reader{values: [][]byte{[]byte(v)}}).read
	}
	var got struct{ MinWidth int }
	if err := readJSON("settings_get", answer(`{"minWidth": 200}`), &got); err != nil || got.MinWidth != 200 {
		t.Errorf("readJSON = %+v, %v", got, err)
	}
	if err := readJSON("settings_get", answer(`{"minWidth": `), &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("readJSON(truncated) = %v, want ErrInvalid", err)
	}
	if err := readJSON("settings_get", answer(`{"minWidth": "wide"}`), &got); !errors.Is(err, ErrInvalid) {
		t.Errorf("readJSON(wrong type) = %v, want ErrInvalid", err)
	}
}

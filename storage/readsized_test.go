package storage

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadSized(t *testing.T) {
	t.Parallel()
	const body = "0123456789"
	tests := []struct {
		name string
		size int64
	}{
		{"exact", 10},
		{"announced too small", 4},
		{"announced too large", 64},
		{"unknown", -1},
		{"zero", 0},
	}
	for _, tc := range tests {
		// Without a buffer, with one too small, and with one to reuse.
		for _, buf := range [][]byte{nil, make([]byte, 0, 3), make([]byte, 5, 100)} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := readSized(strings.NewReader(body), tc.size, buf)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, []byte(body)) {
					t.Errorf("got %q, want %q", got, body)
				}
				if tc.size >= int64(len(body)) && cap(buf) >= 64 && &got[0] != &buf[:1][0] {
					t.Error("a buffer with room was not reused")
				}
			})
		}
	}
}

package engine

import (
	"fmt"
	"os"
	"testing"
)

// TestMain starts libvips once for every test of the package, as New does
// for a server.
func TestMain(m *testing.M) {
	if err := startVips(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

package engine

import (
	"os"
	"testing"
)

// TestMain starts libvips once for every test of the package, as New does
// for a server.
func TestMain(m *testing.M) {
	startVips()
	os.Exit(m.Run())
}

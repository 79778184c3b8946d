package cdn

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEVCL checks that the VCL of api/cdn/README.md is the file
// TestVarnish runs.
func TestREADMEVCL(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	vcl, err := os.ReadFile(vclFile)
	if err != nil {
		t.Fatal(err)
	}
	block := "```vcl\n" + string(vcl) + "```\n"
	if !strings.Contains(string(readme), block) {
		t.Errorf("api/cdn/README.md has no ```vcl block equal to %s; copy the file into its section CDN", vclFile)
	}
}

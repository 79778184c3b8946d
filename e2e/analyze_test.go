package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestCLIAnalyze: images uploaded with analysis off have no properties;
// `vitrine analyze` computes them, a second run finds nothing left to do
// (it resumes where a run stopped), --force does them all again, and a
// server started afterwards lists the properties.
func TestCLIAnalyze(t *testing.T) {
	user := uniqueName("analyze")
	k := key{Public: user, Private: "private-" + user}
	off := "analysis:\n  placeholders: false\n  colors: false\n  perceptualHash: false\n"
	s := startServer(t, readWriteKey(k, user)+off)
	for i := range 3 {
		r := s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 40, 30+i, byte(i)), k)
		wantStatus(t, "upload", r, http.StatusCreated)
	}
	s.Stop()
	run := func(args ...string) (sum struct{ Analyzed, Failed int }) {
		t.Helper()
		out, errOut, err := runCLI(t, nil, append([]string{"analyze", "--data", s.DataDir}, args...)...)
		if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
			t.Fatalf("analyze %v: %v\n%s\n%s", args, err, out, errOut)
		}
		return sum
	}
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"First", nil, 3},
		{"Resumed", []string{"--user", user}, 0},
		{"Force", []string{"--force", "--json"}, 3},
		{"OtherUser", []string{"--user", "nobody", "--force"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if sum := run(c.args...); sum.Analyzed != c.want || sum.Failed != 0 {
				t.Errorf("summary %+v, want %d analysed", sum, c.want)
			}
		})
	}
	s2 := startServerData(t, readWriteKey(k, user), s.DataDir)
	var listing struct {
		Images []map[string]any `json:"images"`
	}
	r := s2.get(t, "/users/"+user+"/images?fields[]=blurhash&fields[]=phash", k)
	wantStatus(t, "listing", r, http.StatusOK)
	r.JSON(t, &listing)
	if len(listing.Images) != 3 || listing.Images[0]["blurhash"] == nil || listing.Images[0]["phash"] == nil {
		t.Fatalf("listing after analyze: %s", r)
	}
}

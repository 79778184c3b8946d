package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPprofListen checks that debug.pprofListen serves Go's profiles on its
// own address, and that the API's address never does.
func TestPprofListen(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	t.Run("set", func(t *testing.T) {
		t.Parallel()
		addr := freeAddr(t)
		s := startServer(t, "debug:\n  pprofListen: "+addr+"\n")
		if status, body := get(t, "http://"+addr+"/debug/pprof/"); status != http.StatusOK || !strings.Contains(body, "goroutine") {
			t.Errorf("pprof index: %d %.200s", status, body)
		}
		if status, body := get(t, "http://"+addr+"/debug/pprof/heap?debug=1"); status != http.StatusOK || !strings.Contains(body, "heap profile") {
			t.Errorf("heap profile: %d %.200s", status, body)
		}
		if status, _ := get(t, s.URL+"/debug/pprof/"); status == http.StatusOK {
			t.Error("the API address serves pprof")
		}
	})
	t.Run("unset", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, "")
		if status, _ := get(t, s.URL+"/debug/pprof/"); status == http.StatusOK {
			t.Error("the API address serves pprof")
		}
	})
}

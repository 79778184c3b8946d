package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vitrine/vitrine/e2e/load/loadkit"
)

// uploadAll uploads sources 0..n-1 of dir, a few at a time, and returns
// their image identifiers in order.
func uploadAll(base, user, pub, priv, dir string, n int) ([]string, error) {
	start := time.Now()
	ids := make([]string, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				data, err := os.ReadFile(filepath.Join(dir, sourceName(i)))
				if err == nil {
					ids[i], err = loadkit.Upload(base, user, pub, priv, data)
				}
				errs[i] = err
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("upload %s: %w", sourceName(i), err)
		}
	}
	fmt.Fprintf(os.Stderr, "mixed: uploaded %d sources in %s\n", n, time.Since(start).Round(time.Millisecond))
	return ids, nil
}

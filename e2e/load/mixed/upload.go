package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
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
					ids[i], err = upload(base, user, pub, priv, data)
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

// upload POSTs data with a signature and returns the image identifier.
func upload(base, user, pub, priv string, data []byte) (string, error) {
	u := base + "/users/" + user + "/images"
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Service-PublicKey", pub)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hmacHex(priv, "POST|"+u+"|"+pub+"|"+ts))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d %s", res.StatusCode, body)
	}
	var r struct {
		ImageIdentifier string `json:"imageIdentifier"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.ImageIdentifier == "" {
		return "", fmt.Errorf("no imageIdentifier in %s", body)
	}
	return r.ImageIdentifier, nil
}

func hmacHex(key, data string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}

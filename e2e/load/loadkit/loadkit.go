// Package loadkit is what the load tools (e2e/load/gen, e2e/load/mixed)
// share: their synthetic source pictures and the signed upload.
package loadkit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"net/http"
	"time"
)

// Photo is a w x h gradient with +-8 of noise, shifted per seed, so every
// source is distinct (the source of api/bench_test.go too).
func Photo(w, h int, seed uint32) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	s := seed * 2654435761
	shift := int(seed * 37 % 64)
	for y := range h {
		row := img.Pix[y*img.Stride:]
		for x := range w {
			s = s*1664525 + 1013904223
			n := int(s>>28) - 8
			p := row[4*x:]
			p[0] = Clamp8(x*255/w + n + shift - 32)
			p[1] = Clamp8(y*255/h + n)
			p[2] = Clamp8((x+y)*127/(w+h) + 64 - n)
			p[3] = 255
		}
	}
	return img
}

// Clamp8 is v clamped to 0..255.
func Clamp8(v int) uint8 { return uint8(min(max(v, 0), 255)) }

// HMACHex is the hex HMAC-SHA256 of data under key.
func HMACHex(key, data string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}

// Upload POSTs data for user with a signature by pub/priv and returns the
// image identifier.
func Upload(base, user, pub, priv string, data []byte) (string, error) {
	u := base + "/users/" + user + "/images"
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Service-PublicKey", pub)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", HMACHex(priv, "POST|"+u+"|"+pub+"|"+ts))
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

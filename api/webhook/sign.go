package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// secretPrefix starts every secret.
const secretPrefix = "whsec_"

// NewSecret returns a new random secret: "whsec_" and 32 random bytes in
// base64.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ErrSecret: a secret is not "whsec_" and base64 of 24 to 64 bytes.
var ErrSecret = errors.New("webhook: a secret is whsec_ followed by base64 of 24 to 64 bytes")

// secretKey returns the HMAC key of secret.
func secretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, ErrSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, ErrSecret
	}
	return key, nil
}

// Sign returns the webhook-signature value of the message id sent at ts
// with body: "v1," and base64(HMAC-SHA256(key, id.timestamp.body)).
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// CheckSecret reports whether secret is one Sign accepts.
func CheckSecret(secret string) error {
	_, err := secretKey(secret)
	return err
}

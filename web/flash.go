package web

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
)

// A flash is what a form post shows once on the page it redirects to (post,
// redirect, get), such as a new private key that must not go into a URL.
// It travels in a short-lived cookie, sealed with AES-GCM under a key
// derived from the session's private key, which never leaves the server:
// the cookie alone reveals nothing, and the page that shows it deletes it.

const (
	flashCookie = "vitrine_flash"
	// flashMaxAge is how long a flash waits for its page, in seconds.
	flashMaxAge = 120
)

// flashKey is the AES-256 key of the session's flashes.
func (q *request) flashKey() []byte {
	m := hmac.New(sha256.New, []byte(q.sess.PrivateKey))
	m.Write([]byte("vitrine flash " + q.sess.IDHash))
	return m.Sum(nil)
}

func (q *request) flashAEAD() (cipher.AEAD, error) {
	b, err := aes.NewCipher(q.flashKey())
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// setFlash seals v (JSON) into the flash cookie for the next page.
func (q *request) setFlash(v any) error {
	plain, err := json.Marshal(v)
	if err != nil {
		return err
	}
	aead, err := q.flashAEAD()
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := aead.Seal(nonce, nonce, plain, nil)
	http.SetCookie(q.w, q.ui.cookie(q.r, flashCookie, base64.RawURLEncoding.EncodeToString(sealed), flashMaxAge))
	return nil
}

// takeFlash opens the flash cookie into v and deletes the cookie; it
// reports whether there was a flash of this session.
func (q *request) takeFlash(v any) bool {
	c, err := q.r.Cookie(flashCookie)
	if err != nil {
		return false
	}
	http.SetCookie(q.w, q.ui.cookie(q.r, flashCookie, "", -1))
	return q.openFlash(c.Value, v) == nil
}

func (q *request) openFlash(value string, v any) error {
	sealed, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return err
	}
	aead, err := q.flashAEAD()
	if err != nil {
		return err
	}
	if len(sealed) < aead.NonceSize() {
		return errors.New("web: short flash")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(plain, v)
}

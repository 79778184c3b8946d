package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// sealedPrefix marks a private key encrypted by sealer, format version 1:
// "v1:" + base64(nonce || AES-256-GCM ciphertext and tag).
const sealedPrefix = "v1:"

// sealer encrypts private keys at rest.
type sealer struct {
	aead cipher.AEAD
}

func newSealer(secret []byte) (*sealer, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, "vitrine private keys v1", 32)
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("cipher: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts plain; publicKey is bound as additional data so that a
// stored value cannot be moved to another key's row.
func (s *sealer) seal(publicKey, plain string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	out := s.aead.Seal(nonce, nonce, []byte(plain), []byte(publicKey))
	return sealedPrefix + base64.StdEncoding.EncodeToString(out), nil
}

// open decrypts a value written by seal.
func (s *sealer) open(publicKey, stored string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(stored, sealedPrefix))
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", ErrDecrypt
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(publicKey))
	if err != nil {
		return "", ErrDecrypt
	}
	return string(plain), nil
}

// sealKey is the value stored for a private key.
func (db *DB) sealKey(publicKey, private string) (string, error) {
	if db.sealer == nil {
		return private, nil
	}
	return db.sealer.seal(publicKey, private)
}

// openKey turns a stored value back into a private key. With a secret, a
// value without the "v1:" prefix was stored before a secret was set and is
// returned as is (PutKey re-encrypts it). Without a secret, a "v1:" value
// is ErrDecrypt.
func (db *DB) openKey(publicKey, stored string) (string, error) {
	if !strings.HasPrefix(stored, sealedPrefix) {
		return stored, nil
	}
	if db.sealer == nil {
		return "", ErrDecrypt
	}
	return db.sealer.open(publicKey, stored)
}

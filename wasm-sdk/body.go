package vitrine

// Body returns the bytes of the image being uploaded, on images.post.
// Elsewhere it fails with ErrUnavailable.
func Body() ([]byte, error) {
	return readValue("body_read", 64<<10, hostBodyRead)
}

// SetBody replaces the image to be stored with b, on images.post. The host
// checks b as it checks any upload; when it refuses them (ErrInvalid,
// ErrLimit) the original upload stays. Elsewhere it fails with
// ErrUnavailable.
func SetBody(b []byte) error {
	return status("body_write", hostBodyWrite(b))
}

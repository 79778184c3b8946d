package api

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"time"
)

// The two files of a filter bundle (wasm-sdk/ABI.md section 2).
const (
	bundleManifest = "filter.json"
	bundleModule   = "filter.wasm"
)

// MaxFilterBundleBytes bounds the body of PUT /filters/<name>: well above
// filters.maxModuleBytes' default, which the filters check on their own.
const MaxFilterBundleBytes = 128 << 20

// FilterBundleTar is the tar of a filter's two files, as PUT
// /filters/<name> takes it and the blob store keeps it: filter.json, then
// filter.wasm, with fixed modes and times, so that the same files always
// make the same bytes.
func FilterBundleTar(manifest, wasm []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{bundleManifest, manifest}, {bundleModule, wasm}} {
		// Writing into a bytes.Buffer cannot fail.
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: time.Unix(0, 0),
			Typeflag: tar.TypeReg, Format: tar.FormatPAX})
		_, _ = tw.Write(f.data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// BundleLimits bound what reading a filter bundle may unpack, each
// checked before anything is allocated at that size: a 1 MB gzip of a
// GiB of zeros is refused after reading Total bytes at most.
type BundleLimits struct {
	// Module bounds filter.wasm (filters.maxModuleBytes), Manifest
	// filter.json, Total every byte the tar unpacks to (skipped entries
	// included).
	Module, Manifest, Total int64
}

// MaxManifestBytes bounds a bundle's filter.json.
const MaxManifestBytes = 1 << 20

// DefaultBundleLimits are the limits for a module bound of maxModule.
func DefaultBundleLimits(maxModule int64) BundleLimits {
	return BundleLimits{Module: maxModule, Manifest: MaxManifestBytes, Total: maxModule + MaxManifestBytes + 1<<20}
}

// errBundleTotal is the error of a bundle that unpacks past its Total.
type errBundleTotal struct{ limit int64 }

func (e errBundleTotal) Error() string {
	return fmt.Sprintf("it unpacks to more than %d bytes (filters.maxModuleBytes and 2 MiB for the rest)", e.limit)
}

// cappedReader fails once more than n bytes were read from r.
type cappedReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n > c.limit {
		return 0, errBundleTotal{c.limit}
	}
	if int64(len(p)) > c.limit-c.n+1 {
		p = p[:c.limit-c.n+1]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, errBundleTotal{c.limit}
	}
	return n, err
}

// ReadFilterBundle reads a filter's filter.json and filter.wasm from a tar
// (gzip-compressed or not) within lim. The files may sit in one folder of
// the tar (duotone/filter.json); other files are skipped.
func ReadFilterBundle(r io.Reader, lim BundleLimits) (manifest, wasm []byte, err error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	tr := tar.NewReader(&cappedReader{r: r, limit: lim.Total})
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var total errBundleTotal
		if errors.As(err, &total) {
			return nil, nil, total
		}
		if err != nil {
			return nil, nil, fmt.Errorf("tar: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		var dst *[]byte
		limit, setting := lim.Module, "filters.maxModuleBytes"
		switch path.Base(h.Name) {
		case bundleManifest:
			dst, limit, setting = &manifest, lim.Manifest, "the manifest's limit"
		case bundleModule:
			dst = &wasm
		default:
			continue
		}
		if *dst != nil {
			return nil, nil, fmt.Errorf("tar: %s appears twice", path.Base(h.Name))
		}
		if h.Size > limit {
			return nil, nil, fmt.Errorf("%s is %d bytes, over %s of %d bytes", path.Base(h.Name), h.Size, setting, limit)
		}
		if *dst, err = io.ReadAll(io.LimitReader(tr, h.Size)); err != nil {
			if errors.As(err, &total) {
				return nil, nil, total
			}
			return nil, nil, fmt.Errorf("tar: %w", err)
		}
	}
	return manifest, wasm, checkBundle(manifest, wasm)
}

func checkBundle(manifest, wasm []byte) error {
	switch {
	case manifest == nil && wasm == nil:
		return errors.New("the bundle holds neither filter.json nor filter.wasm")
	case manifest == nil:
		return errors.New("the bundle holds no filter.json")
	case wasm == nil:
		return errors.New("the bundle holds no filter.wasm")
	}
	return nil
}

// readFilterBody reads the bundle of PUT /filters/<name>: a tar (any
// type but multipart, gzip-compressed or not), or multipart/form-data
// with the parts manifest (or filter.json) and module (or filter.wasm).
func (c *call) readFilterBody(lim BundleLimits) (manifest, wasm []byte, err error) {
	data, err := readBody(c, min(MaxFilterBundleBytes, lim.Total))
	if err != nil {
		return nil, nil, err
	}
	bad := func(err error) error {
		return errorf(http.StatusBadRequest, "Invalid filter bundle: %v", err)
	}
	mt, params, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		m, w, err := ReadFilterBundle(bytes.NewReader(data), lim)
		if err != nil {
			return nil, nil, bad(err)
		}
		return m, w, nil
	}
	mr := multipart.NewReader(bytes.NewReader(data), params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, bad(fmt.Errorf("multipart: %w", err))
		}
		var dst *[]byte
		limit := lim.Module
		switch p.FormName() {
		case "manifest", bundleManifest:
			dst, limit = &manifest, lim.Manifest
		case "module", bundleModule:
			dst = &wasm
		default:
			continue
		}
		if *dst, err = io.ReadAll(io.LimitReader(p, limit+1)); err != nil {
			return nil, nil, bad(fmt.Errorf("multipart: %w", err))
		}
		if int64(len(*dst)) > limit {
			return nil, nil, bad(fmt.Errorf("the part %s is over its limit of %d bytes", p.FormName(), limit))
		}
	}
	if err := checkBundle(manifest, wasm); err != nil {
		return nil, nil, bad(err)
	}
	return manifest, wasm, nil
}

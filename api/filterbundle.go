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

// ReadFilterBundle reads a filter's filter.json and filter.wasm from a tar
// (gzip-compressed or not). The files may sit in one folder of the tar
// (duotone/filter.json); other files are skipped.
func ReadFilterBundle(r io.Reader) (manifest, wasm []byte, err error) {
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
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("tar: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		var dst *[]byte
		switch path.Base(h.Name) {
		case bundleManifest:
			dst = &manifest
		case bundleModule:
			dst = &wasm
		default:
			continue
		}
		if *dst != nil {
			return nil, nil, fmt.Errorf("tar: %s appears twice", path.Base(h.Name))
		}
		if *dst, err = io.ReadAll(tr); err != nil {
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
func (c *call) readFilterBody() (manifest, wasm []byte, err error) {
	data, err := readBody(c, MaxFilterBundleBytes)
	if err != nil {
		return nil, nil, err
	}
	bad := func(err error) error {
		return errorf(http.StatusBadRequest, "Invalid filter bundle: %v", err)
	}
	mt, params, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		m, w, err := ReadFilterBundle(bytes.NewReader(data))
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
		switch p.FormName() {
		case "manifest", bundleManifest:
			dst = &manifest
		case "module", bundleModule:
			dst = &wasm
		default:
			continue
		}
		if *dst, err = io.ReadAll(p); err != nil {
			return nil, nil, bad(fmt.Errorf("multipart: %w", err))
		}
	}
	if err := checkBundle(manifest, wasm); err != nil {
		return nil, nil, bad(err)
	}
	return manifest, wasm, nil
}

package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// listDir is List on a folder (file://): the walk fileblob's listing
// makes, but a file that vanishes while it is walked (a write's temporary
// file renamed into place, a deletion) is left out instead of failing the
// whole listing, which on a serving store it would, now and then; and the
// keys come in key order (a folder "a" sorts as "a/", after "a-b").
func (b *Blobs) listDir(ctx context.Context, prefix string, fn func(BlobInfo) error) error {
	o, err := b.op(ctx, "list", prefix)
	if err != nil {
		return err
	}
	defer o.end()
	// The bound runs while the folder is read, not while fn runs (fn may
	// wait on a consumer, as a copy's does on its workers).
	o.timer.Stop()
	start := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = prefix[:i+1]
	}
	return o.wrap(b.walkDir(o, start, prefix, fn))
}

// walkDir lists the folder of keys starting with dir ("" or ending in
// "/").
func (b *Blobs) walkDir(o *blobOp, dir, prefix string, fn func(BlobInfo) error) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	answered := o.waiting()
	entries, err := os.ReadDir(filepath.Join(b.dir, filepath.FromSlash(dir)))
	answered()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	type entry struct {
		key string
		e   fs.DirEntry
	}
	list := make([]entry, 0, len(entries))
	for _, e := range entries {
		k := dir + unescapeFileKey(e.Name())
		if e.IsDir() {
			k += "/"
		}
		list = append(list, entry{k, e})
	}
	slices.SortFunc(list, func(x, y entry) int { return strings.Compare(x.key, y.key) })
	for _, x := range list {
		switch {
		case x.e.IsDir():
			if strings.HasPrefix(x.key, prefix) || strings.HasPrefix(prefix, x.key) {
				if err := b.walkDir(o, x.key, prefix, fn); err != nil {
					return err
				}
			}
		case strings.HasSuffix(x.key, ".attrs") || !strings.HasPrefix(x.key, prefix):
		default:
			answered := o.waiting()
			fi, err := x.e.Info()
			answered()
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone since the folder was read
			} else if err != nil {
				return err
			}
			if err := fn(BlobInfo{Key: x.key, Size: fi.Size(), ModTime: fi.ModTime().UTC()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// unescapeFileKey undoes fileblob's escaping of a name ("__0x2f__" for a
// character a file name may not hold).
func unescapeFileKey(name string) string {
	if !strings.Contains(name, "__0x") {
		return name
	}
	var b strings.Builder
	for {
		i := strings.Index(name, "__0x")
		if i < 0 {
			break
		}
		j := strings.Index(name[i+4:], "__")
		if j < 0 {
			break
		}
		r, err := strconv.ParseUint(name[i+4:i+4+j], 16, 32)
		if err != nil {
			b.WriteString(name[:i+4])
			name = name[i+4:]
			continue
		}
		b.WriteString(name[:i])
		b.WriteRune(rune(r))
		name = name[i+4+j+2:]
	}
	b.WriteString(name)
	return b.String()
}

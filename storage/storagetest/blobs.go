package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// TestBlobs runs the blob-store conformance suite. open returns a fresh,
// empty Blobs; it must arrange its own cleanup.
func TestBlobs(t *testing.T, open func(t *testing.T) *storage.Blobs) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b *storage.Blobs)
	}{
		{"PutGet", testPutGet},
		{"NotFound", testBlobNotFound},
		{"Overwrite", testOverwrite},
		{"Delete", testBlobDelete},
		{"DeletePrefix", testDeletePrefix},
		{"CancelledPut", testCancelledPut},
		{"ConcurrentPut", testConcurrentPut},
		{"Keys", testBlobKeys},
		{"List", testBlobList},
		{"Timeout", testBlobTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

func testPutGet(t *testing.T, b *storage.Blobs) {
	if err := b.Ping(ctx(t)); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	key := storage.ImageKey("alice", "abc", "t1")
	before := time.Now().Add(-2 * time.Second)
	if err := b.Put(ctx(t), key, data); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx(t), key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %d bytes, %v; want %d equal bytes", len(got), err, len(data))
	}
	r, err := b.Open(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("Open read %d bytes, %v", buf.Len(), err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	size, mod, err := b.Attributes(ctx(t), key)
	if err != nil || size != int64(len(data)) {
		t.Fatalf("Attributes = %d, %v, %v; want size %d", size, mod, err, len(data))
	}
	if mod.Before(before) || mod.After(time.Now().Add(time.Minute)) {
		t.Fatalf("ModTime %v not around now", mod)
	}
	ok, err := b.Exists(ctx(t), key)
	if err != nil || !ok {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if err := b.Put(ctx(t), "empty", nil); err != nil {
		t.Fatal(err)
	}
	got, err = b.Get(ctx(t), "empty")
	if err != nil || len(got) != 0 {
		t.Fatalf("Get(empty) = %q, %v", got, err)
	}
}

func testBlobNotFound(t *testing.T, b *storage.Blobs) {
	_, err := b.Get(ctx(t), "images/nobody/none")
	wantErr(t, "Get(missing)", err, storage.ErrNotExist)
	_, err = b.Open(ctx(t), "images/nobody/none")
	wantErr(t, "Open(missing)", err, storage.ErrNotExist)
	_, _, err = b.Attributes(ctx(t), "images/nobody/none")
	wantErr(t, "Attributes(missing)", err, storage.ErrNotExist)
	ok, err := b.Exists(ctx(t), "images/nobody/none")
	if err != nil || ok {
		t.Fatalf("Exists(missing) = %v, %v", ok, err)
	}
}

func testOverwrite(t *testing.T, b *storage.Blobs) {
	for _, v := range []string{"first version", "second"} {
		if err := b.Put(ctx(t), "k", []byte(v)); err != nil {
			t.Fatal(err)
		}
		got, err := b.Get(ctx(t), "k")
		if err != nil || string(got) != v {
			t.Fatalf("Get = %q, %v; want %q", got, err, v)
		}
	}
}

func testBlobDelete(t *testing.T, b *storage.Blobs) {
	if err := b.Put(ctx(t), "a/b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx(t), "a/b"); err != nil {
		t.Fatal(err)
	}
	_, err := b.Get(ctx(t), "a/b")
	wantErr(t, "Get after Delete", err, storage.ErrNotExist)
	if err := b.Delete(ctx(t), "a/b"); err != nil {
		t.Fatalf("Delete(missing) = %v, want nil", err)
	}
}

func testDeletePrefix(t *testing.T, b *storage.Blobs) {
	keep := []string{
		storage.ImageKey("alice", "abc", "t1"),
		storage.VariantKey("alice", "abcd", "t1", "h1"), // shares a string prefix, not the folder
		storage.VariantKey("alice", "abc", "t2", "h1"),  // another upload of the same bytes
		storage.VariantKey("alice", "abc", "", "h1"),    // and one from before tokens
		storage.VariantKey("bob", "abc", "t1", "h1"),
	}
	gone := []string{
		storage.VariantKey("alice", "abc", "t1", "h1"),
		storage.VariantKey("alice", "abc", "t1", "h2"),
		storage.VariantKey("alice", "abc", "t1", "deep/er"),
	}
	for _, k := range append(append([]string{}, keep...), gone...) {
		if err := b.Put(ctx(t), k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeletePrefix(ctx(t), storage.VariantPrefix("alice", "abc", "t1")); err != nil {
		t.Fatal(err)
	}
	for _, k := range gone {
		if ok, err := b.Exists(ctx(t), k); err != nil || ok {
			t.Fatalf("Exists(%s) after DeletePrefix = %v, %v", k, ok, err)
		}
	}
	for _, k := range keep {
		if got, err := b.Get(ctx(t), k); err != nil || string(got) != k {
			t.Fatalf("Get(%s) after DeletePrefix = %q, %v", k, got, err)
		}
	}
	if err := b.DeletePrefix(ctx(t), "nothing/here/"); err != nil {
		t.Fatalf("DeletePrefix(none) = %v", err)
	}
	wantErr(t, "DeletePrefix(\"\")", b.DeletePrefix(ctx(t), ""), storage.ErrInvalid)
}

func testCancelledPut(t *testing.T, b *storage.Blobs) {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Put(c, "cancelled", []byte("data")); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if ok, err := b.Exists(ctx(t), "cancelled"); err != nil || ok {
		t.Fatalf("cancelled Put left a blob: %v, %v", ok, err)
	}
	// A cancelled overwrite keeps the old blob.
	if err := b.Put(ctx(t), "kept", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(c, "kept", []byte("new")); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if got, err := b.Get(ctx(t), "kept"); err != nil || string(got) != "old" {
		t.Fatalf("after cancelled overwrite Get = %q, %v; want old", got, err)
	}
}

func testConcurrentPut(t *testing.T, b *storage.Blobs) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	values := make([]string, 8)
	for i := range 8 {
		values[i] = fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte{'x'}, 10_000))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Put(ctx(t), "shared", []byte(values[i]))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx(t), "shared")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(values)
	if i := sort.SearchStrings(values, string(got)); i == len(values) || values[i] != string(got) {
		t.Fatalf("concurrent Puts left a torn blob of %d bytes", len(got))
	}
}

func testBlobKeys(t *testing.T, b *storage.Blobs) {
	for _, c := range []struct{ got, want string }{
		{storage.ImageKey("u", "id", ""), "images/u/id"},
		{storage.ImageKey("u", "id", "tok"), "images/u/id.tok"},
		{storage.VariantPrefix("u", "id", ""), "variants/u/id/"},
		{storage.VariantPrefix("u", "id", "tok"), "variants/u/id.tok/"},
		{storage.VariantKey("u", "id", "", "h"), "variants/u/id/h"},
		{storage.VariantKey("u", "id", "tok", "h"), "variants/u/id.tok/h"},
	} {
		if c.got != c.want {
			t.Fatalf("key %q, want %q", c.got, c.want)
		}
	}
}

// testBlobList lists a prefix over several small pages: every key under
// it once, in key order, with its size and modification time, and none
// beside it (a key that only shares its string prefix included).
func testBlobList(t *testing.T, b *storage.Blobs) {
	b.SetListPageSize(3)
	prefix := storage.VariantPrefix("alice", "abc", "t1")
	var want []string
	for i := range 10 {
		k := prefix + fmt.Sprintf("h%02d", 9-i)
		want = append(want, k)
		if err := b.Put(ctx(t), k, bytes.Repeat([]byte{'x'}, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, prefix+"sub/deeper")
	for _, k := range []string{want[len(want)-1], storage.VariantKey("alice", "abcd", "t1", "h"), "variants/alice/abc"} {
		if err := b.Put(ctx(t), k, []byte("y")); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(want)
	var got []string
	err := b.List(ctx(t), prefix, func(o storage.BlobInfo) error {
		got = append(got, o.Key)
		if o.Size < 1 || o.Size > 10 || o.ModTime.IsZero() || o.ModTime.After(time.Now().Add(time.Minute)) {
			return fmt.Errorf("listed %s with size %d, mod time %v", o.Key, o.Size, o.ModTime)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List = %v\nwant %v", got, want)
	}
	stop := errors.New("stop")
	n := 0
	err = b.List(ctx(t), prefix, func(storage.BlobInfo) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List with a failing fn = %v after %d calls; want stop after 1", err, n)
	}
}

// testBlobTimeout runs operations with a timeout too short for any store
// to answer within. The bound is on the store's silence (the one a stalled
// store runs into), so a store that answers without waiting (memory) may
// still succeed; a write fails as unavailable, naming the timeout, or
// succeeds, and one that failed leaves the old blob or the new one whole; a
// read either fails the same way or was answered; and the store works
// again with the default timeout.
func testBlobTimeout(t *testing.T, b *storage.Blobs) {
	if err := b.Put(ctx(t), "old", []byte("old")); err != nil {
		t.Fatal(err)
	}
	b.SetTimeout(time.Nanosecond)
	timedOut := func(err error) bool {
		var u *storage.UnavailableError
		return errors.As(err, &u) && u.Timeout == time.Nanosecond
	}
	putNew, putOld := b.Put(ctx(t), "new", []byte("new")), b.Put(ctx(t), "old", []byte("new"))
	for name, err := range map[string]error{"Put": putNew, "Put(old)": putOld} {
		if err != nil && !timedOut(err) {
			t.Errorf("%s past the timeout = %v; want nil or an *UnavailableError with the timeout", name, err)
		}
	}
	for name, err := range map[string]error{
		"Ping":         b.Ping(ctx(t)),
		"List":         b.List(ctx(t), "o", func(storage.BlobInfo) error { return nil }),
		"Get(missing)": func() error { _, err := b.Get(ctx(t), "missing"); return err }(),
		"Delete":       b.Delete(ctx(t), "missing"),
	} {
		if err != nil && !errors.Is(err, storage.ErrNotExist) && !timedOut(err) {
			t.Errorf("%s past the timeout = %v; want an *UnavailableError with the timeout", name, err)
		}
	}
	b.SetTimeout(0)
	// A write the bound cut may still have landed whole at the store (it
	// answered just after the cut, as with any timeout: the blob queue
	// collects a reserved blob nobody commits), never in part.
	if got, err := b.Get(ctx(t), "new"); putNew == nil && (err != nil || string(got) != "new") ||
		putNew != nil && err == nil && string(got) != "new" {
		t.Fatalf("after a Put that answered %v Get = %q, %v", putNew, got, err)
	}
	if got, err := b.Get(ctx(t), "old"); err != nil || string(got) != "new" && (putOld == nil || string(got) != "old") {
		t.Fatalf("after an overwrite that answered %v Get = %q, %v; want the old or the new bytes whole", putOld, got, err)
	}
}

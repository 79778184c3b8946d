package storagetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

func testKeys(t *testing.T, db *storage.DB) {
	keys, err := db.Keys(ctx(t))
	if err != nil || len(keys) != 0 {
		t.Fatalf("Keys(empty) = %v, %v", keys, err)
	}
	created, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv"})
	if err != nil || !created {
		t.Fatalf("PutKey(new) = %v, %v", created, err)
	}
	created, err = db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv2"})
	if err != nil || created {
		t.Fatalf("PutKey(existing) = %v, %v", created, err)
	}
	created, err = db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv2"})
	if err != nil || created {
		t.Fatalf("PutKey(unchanged) = %v, %v", created, err)
	}
	k, err := db.Key(ctx(t), "pub")
	if err != nil || k.PublicKey != "pub" || k.PrivateKey != "priv2" || time.Since(k.Created) > time.Minute {
		t.Fatalf("Key = %+v, %v; want pub, priv2, created just now", k, err)
	}
	raw, err := db.RawPrivateKey(ctx(t), "pub")
	if err != nil || raw != "priv2" {
		t.Fatalf("RawPrivateKey without secret = %q, %v; want stored as given", raw, err)
	}
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "another", PrivateKey: "x"}); err != nil {
		t.Fatal(err)
	}
	keys, err = db.Keys(ctx(t))
	for i := range keys {
		if time.Since(keys[i].Created) > time.Minute {
			t.Errorf("key %s created %v, want just now", keys[i].PublicKey, keys[i].Created)
		}
		keys[i].Created = time.Time{}
	}
	want := []storage.Key{{PublicKey: "another", PrivateKey: "x"}, {PublicKey: "pub", PrivateKey: "priv2"}}
	if err != nil || !reflect.DeepEqual(keys, want) {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	_, err = db.PutKey(ctx(t), storage.Key{PublicKey: "", PrivateKey: "x"})
	wantErr(t, "PutKey(empty public)", err, storage.ErrInvalid)
	_, err = db.PutKey(ctx(t), storage.Key{PublicKey: "p", PrivateKey: ""})
	wantErr(t, "PutKey(empty private)", err, storage.ErrInvalid)
	if err := db.DeleteKey(ctx(t), "pub"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Key(ctx(t), "pub")
	wantErr(t, "Key(deleted)", err, storage.ErrNotExist)
	wantErr(t, "DeleteKey(deleted)", db.DeleteKey(ctx(t), "pub"), storage.ErrNotExist)
	_, err = db.RawPrivateKey(ctx(t), "pub")
	wantErr(t, "RawPrivateKey(deleted)", err, storage.ErrNotExist)
}

// testCreateKey checks that a key and its first rules are stored together
// or not at all.
func testCreateKey(t *testing.T, db *storage.DB) {
	rule := storage.Rule{Group: "read-only", Users: []string{"*"}}
	added, err := db.CreateKey(ctx(t), storage.Key{PublicKey: "new", PrivateKey: "p1"}, []storage.Rule{rule})
	if err != nil || len(added) != 1 || added[0].ID == 0 || added[0].Group != "read-only" {
		t.Fatalf("CreateKey = %+v, %v", added, err)
	}
	_, err = db.CreateKey(ctx(t), storage.Key{PublicKey: "new", PrivateKey: "p2"}, []storage.Rule{rule})
	wantErr(t, "CreateKey(existing)", err, storage.ErrExist)
	if k, err := db.Key(ctx(t), "new"); err != nil || k.PrivateKey != "p1" {
		t.Fatalf("a refused CreateKey changed the key: %+v, %v", k, err)
	}
	if rules, err := db.Rules(ctx(t), "new"); err != nil || len(rules) != 1 {
		t.Fatalf("a refused CreateKey added rules: %+v, %v", rules, err)
	}
	bad := []storage.Rule{rule, {Group: "all"}} // the second has no users
	_, err = db.CreateKey(ctx(t), storage.Key{PublicKey: "half", PrivateKey: "p"}, bad)
	wantErr(t, "CreateKey(invalid rule)", err, storage.ErrInvalid)
	_, err = db.Key(ctx(t), "half")
	wantErr(t, "Key after a refused CreateKey", err, storage.ErrNotExist)
	if _, err := db.CreateKey(ctx(t), storage.Key{PublicKey: "bare", PrivateKey: "p"}, nil); err != nil {
		t.Fatalf("CreateKey without rules: %v", err)
	}
	if rules, err := db.Rules(ctx(t), "bare"); err != nil || len(rules) != 0 {
		t.Fatalf("Rules(bare) = %+v, %v", rules, err)
	}
}

func testGroups(t *testing.T, db *storage.DB) {
	groups, total, err := db.Groups(ctx(t), 1, 10)
	if err != nil || len(groups) != 0 || total != 0 {
		t.Fatalf("Groups(empty) = %v, %d, %v", groups, total, err)
	}
	created, err := db.PutGroup(ctx(t), storage.Group{Name: "g", Resources: []string{"image.get", "images.get"}})
	if err != nil || !created {
		t.Fatalf("PutGroup(new) = %v, %v", created, err)
	}
	created, err = db.PutGroup(ctx(t), storage.Group{Name: "g", Resources: []string{"user.get"}})
	if err != nil || created {
		t.Fatalf("PutGroup(existing) = %v, %v", created, err)
	}
	g, err := db.Group(ctx(t), "g")
	if err != nil || !reflect.DeepEqual(g, storage.Group{Name: "g", Resources: []string{"user.get"}}) {
		t.Fatalf("Group = %+v, %v", g, err)
	}
	if _, err := db.PutGroup(ctx(t), storage.Group{Name: "empty"}); err != nil {
		t.Fatal(err)
	}
	g, err = db.Group(ctx(t), "empty")
	if err != nil || g.Resources == nil || len(g.Resources) != 0 {
		t.Fatalf("Group(empty) = %#v, %v; want empty non-nil resources", g, err)
	}
	for _, n := range []string{"c", "a", "b"} {
		if _, err := db.PutGroup(ctx(t), storage.Group{Name: n, Resources: []string{n}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(gs []storage.Group) []string {
		out := []string{}
		for _, g := range gs {
			out = append(out, g.Name)
		}
		return out
	}
	for _, c := range []struct {
		page, limit int
		want        []string
	}{
		{1, 0, []string{"a", "b", "c", "empty", "g"}},
		{0, 2, []string{"a", "b"}},
		{2, 2, []string{"c", "empty"}},
		{3, 2, []string{"g"}},
		{4, 2, []string{}},
	} {
		groups, total, err := db.Groups(ctx(t), c.page, c.limit)
		if err != nil || total != 5 || !reflect.DeepEqual(names(groups), c.want) {
			t.Fatalf("Groups(%d, %d) = %q, %d, %v; want %q, 5", c.page, c.limit, names(groups), total, err, c.want)
		}
	}
	_, _, err = db.Groups(ctx(t), -1, 0)
	wantErr(t, "Groups(-1)", err, storage.ErrInvalid)
	_, err = db.PutGroup(ctx(t), storage.Group{})
	wantErr(t, "PutGroup(no name)", err, storage.ErrInvalid)
	if err := db.DeleteGroup(ctx(t), "g"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Group(ctx(t), "g")
	wantErr(t, "Group(deleted)", err, storage.ErrNotExist)
	wantErr(t, "DeleteGroup(deleted)", db.DeleteGroup(ctx(t), "g"), storage.ErrNotExist)
}

func testRules(t *testing.T, db *storage.DB) {
	_, err := db.Rules(ctx(t), "pub")
	wantErr(t, "Rules(missing key)", err, storage.ErrNotExist)
	_, err = db.AddRules(ctx(t), "pub", []storage.Rule{{Resources: []string{"a"}, Users: []string{"*"}}})
	wantErr(t, "AddRules(missing key)", err, storage.ErrNotExist)
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutGroup(ctx(t), storage.Group{Name: "readers", Resources: []string{"image.get"}}); err != nil {
		t.Fatal(err)
	}
	rules, err := db.Rules(ctx(t), "pub")
	if err != nil || rules == nil || len(rules) != 0 {
		t.Fatalf("Rules(no rules) = %#v, %v", rules, err)
	}
	added, err := db.AddRules(ctx(t), "pub", []storage.Rule{
		{Resources: []string{"images.get", "images.post"}, Users: []string{"alice", "bob"}},
		{Group: "readers", Users: []string{"*"}},
	})
	if err != nil || len(added) != 2 {
		t.Fatalf("AddRules = %+v, %v", added, err)
	}
	if added[0].ID == 0 || added[1].ID <= added[0].ID {
		t.Fatalf("rule IDs %d, %d; want increasing non-zero", added[0].ID, added[1].ID)
	}
	more, err := db.AddRules(ctx(t), "pub", []storage.Rule{{Resources: []string{"user.get"}, Users: []string{"carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Rule{
		{ID: added[0].ID, PublicKey: "pub", Resources: []string{"images.get", "images.post"}, Users: []string{"alice", "bob"}},
		{ID: added[1].ID, PublicKey: "pub", Group: "readers", Users: []string{"*"}},
		{ID: more[0].ID, PublicKey: "pub", Resources: []string{"user.get"}, Users: []string{"carol"}},
	}
	if !reflect.DeepEqual(append(added, more...), want) {
		t.Fatalf("AddRules returned %+v\nwant %+v", append(added, more...), want)
	}
	rules, err = db.Rules(ctx(t), "pub")
	if err != nil || !reflect.DeepEqual(rules, want) {
		t.Fatalf("Rules = %+v, %v\nwant %+v", rules, err, want)
	}
	r, err := db.Rule(ctx(t), "pub", want[1].ID)
	if err != nil || !reflect.DeepEqual(r, want[1]) {
		t.Fatalf("Rule = %+v, %v", r, err)
	}
	// Invalid rules add nothing, even when others in the batch are valid.
	for _, bad := range [][]storage.Rule{
		{{Resources: []string{"a"}, Users: []string{"*"}}, {Resources: []string{"a"}}},
		{{Users: []string{"*"}}},
		{{Group: "readers", Resources: []string{"a"}, Users: []string{"*"}}},
		{{Resources: []string{"a"}, Users: []string{"*"}}, {Group: "readers", Users: nil}},
	} {
		_, err := db.AddRules(ctx(t), "pub", bad)
		wantErr(t, fmt.Sprintf("AddRules(%+v)", bad), err, storage.ErrInvalid)
	}
	rules, err = db.Rules(ctx(t), "pub")
	if err != nil || len(rules) != 3 {
		t.Fatalf("after invalid AddRules, %d rules, %v; want 3", len(rules), err)
	}
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "other", PrivateKey: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Rule(ctx(t), "other", want[0].ID)
	wantErr(t, "Rule(other key)", err, storage.ErrNotExist)
	wantErr(t, "DeleteRule(other key)", db.DeleteRule(ctx(t), "other", want[0].ID), storage.ErrNotExist)
	if err := db.DeleteRule(ctx(t), "pub", want[0].ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteRule(again)", db.DeleteRule(ctx(t), "pub", want[0].ID), storage.ErrNotExist)
	_, err = db.Rule(ctx(t), "pub", want[0].ID)
	wantErr(t, "Rule(deleted)", err, storage.ErrNotExist)
	rules, err = db.Rules(ctx(t), "pub")
	if err != nil || !reflect.DeepEqual(rules, want[1:]) {
		t.Fatalf("Rules after delete = %+v, %v", rules, err)
	}
}

func testRulesCascade(t *testing.T, db *storage.DB) {
	for _, k := range []string{"k1", "k2"} {
		if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: k, PrivateKey: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"g1", "g2"} {
		if _, err := db.PutGroup(ctx(t), storage.Group{Name: g, Resources: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"k1", "k2"} {
		_, err := db.AddRules(ctx(t), k, []storage.Rule{
			{Group: "g1", Users: []string{"*"}},
			{Group: "g2", Users: []string{"*"}},
			{Resources: []string{"r"}, Users: []string{"u"}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	count := func(k string) int {
		t.Helper()
		rules, err := db.Rules(ctx(t), k)
		if err != nil {
			t.Fatal(err)
		}
		return len(rules)
	}
	if err := db.DeleteGroup(ctx(t), "g1"); err != nil {
		t.Fatal(err)
	}
	if count("k1") != 2 || count("k2") != 2 {
		t.Fatalf("after DeleteGroup: %d, %d rules; want 2, 2", count("k1"), count("k2"))
	}
	rules, _ := db.Rules(ctx(t), "k1")
	for _, r := range rules {
		if r.Group == "g1" {
			t.Fatalf("rule %+v survived its group", r)
		}
	}
	if err := db.DeleteKey(ctx(t), "k1"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Rules(ctx(t), "k1")
	wantErr(t, "Rules(deleted key)", err, storage.ErrNotExist)
	if count("k2") != 2 {
		t.Fatalf("other key lost rules")
	}
	// A re-created key starts with no rules.
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "k1", PrivateKey: "p"}); err != nil {
		t.Fatal(err)
	}
	if n := count("k1"); n != 0 {
		t.Fatalf("re-created key has %d rules", n)
	}
}

func testKeyEncryption(t *testing.T, openSecret func(t *testing.T, secret []byte) (*storage.DB, func(secret []byte) *storage.DB)) {
	db, reopen := openSecret(t, []byte("correct horse battery staple"))
	const priv = "my-very-private-key"
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	raw, err := db.RawPrivateKey(ctx(t), "pub")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, priv) || !strings.HasPrefix(raw, "v1:") {
		t.Fatalf("stored private key %q is not encrypted", raw)
	}
	k, err := db.Key(ctx(t), "pub")
	if err != nil || k.PrivateKey != priv {
		t.Fatalf("Key = %+v, %v", k, err)
	}
	keys, err := db.Keys(ctx(t))
	if err != nil || len(keys) != 1 || keys[0].PrivateKey != priv {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	// Same value twice gives a different ciphertext (random nonce).
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	raw2, err := db.RawPrivateKey(ctx(t), "pub")
	if err != nil || raw2 == raw {
		t.Fatalf("re-encrypted value %q equals the first, %v", raw2, err)
	}
	if reopen == nil {
		return
	}
	wrong := reopen([]byte("wrong secret"))
	_, err = wrong.Key(ctx(t), "pub")
	wantErr(t, "Key with wrong secret", err, storage.ErrDecrypt)
	_, err = wrong.Keys(ctx(t))
	wantErr(t, "Keys with wrong secret", err, storage.ErrDecrypt)
	none := reopen(nil)
	_, err = none.Key(ctx(t), "pub")
	wantErr(t, "Key without secret", err, storage.ErrDecrypt)
	right := reopen([]byte("correct horse battery staple"))
	k, err = right.Key(ctx(t), "pub")
	if err != nil || k.PrivateKey != priv {
		t.Fatalf("Key after reopen = %+v, %v", k, err)
	}
}

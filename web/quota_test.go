package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestUserQuotas: a user's page shows each quota beside what the user
// stores; a key holding quota.put sets the user's own quotas there (an
// empty field keeps the default, the API's refusal is shown next to the
// form with what was typed), an upload past the quota says which quota
// it met, and a key that may only read sees the quotas without the form.
func TestUserQuotas(t *testing.T) {
	e := newEnv(t, web.Config{})
	e.db.SetQuotas(storage.Quotas{Images: 2, VariantsPerImage: 5})
	ctx := context.Background()
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	b.uploadForm("alice", pngBytes(t, 1))

	p := b.do(http.MethodGet, "/admin/users/alice", nil, nil)
	for _, want := range []string{`id="quota-h"`, "<meter", `max="2"`, `value="1"`, `action="/admin/users/alice/quota"`,
		`placeholder="default: 2"`, `placeholder="default: unlimited"`, "Not counted: 0 cached variants"} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("the user's page lacks %q:\n%s", want, p.body)
		}
	}

	post := func(form url.Values) page {
		t.Helper()
		form.Set("csrf", b.token("/admin/users/alice"))
		return b.do(http.MethodPost, "/admin/users/alice/quota", form, nil)
	}
	p = post(url.Values{"images": {"1"}, "bytes": {""}, "variantsPerImage": {""}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("save quotas: %d\n%s", p.status, p.body)
	}
	p = b.follow(p)
	if !strings.Contains(p.body, "Quotas saved.") || !strings.Contains(p.body, `name="images" value="1"`) || !strings.Contains(p.body, ">own<") {
		t.Fatalf("after saving:\n%s", p.body)
	}
	uq, err := e.db.UserQuota(ctx, "alice")
	if err != nil || uq.Override.Images == nil || *uq.Override.Images != 1 || uq.Override.Bytes != nil || uq.Limits.VariantsPerImage != 5 {
		t.Fatalf("stored quota = %+v, %v", uq, err)
	}

	p = post(url.Values{"images": {"many"}, "bytes": {"10"}, "variantsPerImage": {""}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Quota &#39;images&#39; must be a whole number") ||
		!strings.Contains(p.body, `name="images" value="many"`) || !strings.Contains(p.body, `name="bytes" value="10"`) {
		t.Fatalf("a refused quota: %d\n%s", p.status, p.body)
	}
	if uq, _ := e.db.UserQuota(ctx, "alice"); uq.Override.Bytes != nil {
		t.Fatal("a refused form changed the quota")
	}

	if p := b.uploadForm("alice", pngBytes(t, 2)); !strings.Contains(p.body, "Quota exceeded: 1 images of 1 (quotas.images)") {
		t.Fatalf("an upload past the quota:\n%s", p.body)
	}

	if _, err := e.db.CreateKey(ctx, storage.Key{PublicKey: "eve", PrivateKey: "eve-secret"},
		[]storage.Rule{{Group: "read-only", Users: []string{"alice"}}}); err != nil {
		t.Fatal(err)
	}
	reader := e.browser(t)
	reader.signIn("eve", "eve-secret")
	p = reader.do(http.MethodGet, "/admin/users/alice", nil, nil)
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="quota-h"`) || strings.Contains(p.body, `action="/admin/users/alice/quota"`) {
		t.Fatalf("a read-only key's view of the quotas: %d\n%s", p.status, p.body)
	}
}

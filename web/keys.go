package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// keysView lists keys and groups and offers a new key.
type keysView struct {
	Page   pageView
	Keys   []keyRow
	Groups []groupRow
	Form   keyForm
	// ReadOnly is set when the service keeps its keys read-only
	// (accessControl.database off): no key can be created or changed here.
	ReadOnly bool
	// What the key may do: list keys and groups, create keys.
	CanListKeys, CanListGroups, CanCreate bool
}

type keyRow struct {
	PublicKey, Source, Href string
	Mutable                 bool
	// Usage is set when the key may read the usage counters: Created and
	// LastUsed ("—" when unknown) and the requests per day are shown.
	Usage             bool
	Created, LastUsed string
	Spark             sparkView
	// Rules are the key's access rules in short; RulesNote says why they
	// are not shown.
	Rules     []ruleSummary
	RulesNote string
}

// ruleSummary is one rule in the keys list: what it grants, to whom.
type ruleSummary struct{ Grants, Users string }

type groupRow struct {
	Name      string
	Resources int
}

// keyForm is the new-key form with the API's complaints per field.
type keyForm struct {
	PublicKey, Group, Users string
	// Resources are the resources ticked in the picker.
	Resources           []string
	KeyError, RuleError string
	Groups              []string
}

// createdKey is shown once, right after a key is created or rotated (a
// flash: the private key never goes into a URL).
type createdKey struct {
	Title, PublicKey, PrivateKey string
}

func (q *request) loadKeys(v *keysView) error {
	ctx := q.r.Context()
	v.CanListKeys, v.CanListGroups, v.CanCreate = q.mayAny("keys.get"), q.mayAny("groups.get"), q.mayAny("keys.put")
	var keys api.KeyList
	if !v.CanListKeys {
		// A key may always see its own rules, so it is listed alone.
		keys.Keys = append(keys.Keys, api.KeyEntry{PublicKey: q.sess.PublicKey})
	} else if err := q.api.getJSON(ctx, "/keys", nil, &keys); err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.Page.Denied = append(v.Page.Denied, "listing keys ("+msg+")")
	} else {
		// Only an answer says that keys cannot change.
		v.ReadOnly = !keys.Mutable
	}
	for _, k := range keys.Keys {
		v.Keys = append(v.Keys, keyRow{PublicKey: k.PublicKey, Source: k.Source, Mutable: k.Mutable,
			Href: q.path("/keys/" + url.PathEscape(k.PublicKey))})
	}
	if err := q.keyRules(ctx, v.Keys); err != nil {
		return err
	}
	if err := q.keyUsage(ctx, v.Keys); err != nil {
		return err
	}
	var groups api.GroupList
	if !v.CanListGroups {
		v.Form.Groups = api.BuiltinGroups()
		return nil
	}
	if err := q.api.getJSON(ctx, "/groups", url.Values{"limit": {"1000"}}, &groups); err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.Page.Denied = append(v.Page.Denied, "listing groups ("+msg+")")
	}
	for _, g := range groups.Groups {
		v.Groups = append(v.Groups, groupRow{Name: g.Name, Resources: len(g.Resources)})
		v.Form.Groups = append(v.Form.Groups, g.Name)
	}
	return nil
}

// keyRules adds each key's access rules (GET /keys/<pk>/access), or why
// they cannot be read.
func (q *request) keyRules(ctx context.Context, keys []keyRow) error {
	for i := range keys {
		k := &keys[i]
		var rules []api.Rule
		if err := q.api.getJSON(ctx, "/keys/"+url.PathEscape(k.PublicKey)+"/access", nil, &rules); err != nil {
			msg, denied := denial(err)
			if !denied {
				return err
			}
			k.RulesNote = "not readable: " + msg
			continue
		}
		for _, r := range rules {
			k.Rules = append(k.Rules, ruleSummary{Grants: shortGrants(r), Users: strings.Join(r.Users, ", ")})
		}
	}
	return nil
}

// shortGrants is what a rule grants, its group or up to three of its
// resources and how many more.
func shortGrants(r api.Rule) string {
	if r.Group != "" || len(r.Resources) <= 3 {
		return grants(r)
	}
	return strings.Join(r.Resources[:3], ", ") + " and " + itoa(len(r.Resources)-3) + " more"
}

func (u *UI) keys(q *request) error {
	v := keysView{Page: q.page("Keys & access", "keys"), Form: keyForm{Group: "read-only"}}
	if d := q.r.URL.Query().Get("deleted"); d != "" {
		v.Page.Notice = "Key " + d + " and its access rules were deleted."
	}
	if err := q.loadKeys(&v); err != nil {
		return err
	}
	return q.render(http.StatusOK, keysPage(v))
}

// createKey creates a key pair and, when given, its first rule, in one
// request (PUT /keys/<pk> with access), so the API stores both or neither.
// The private key is shown once, on the key's page.
func (u *UI) createKey(q *request) error {
	ctx := q.r.Context()
	f := ruleForm(q.r)
	f.PublicKey = strings.TrimSpace(q.r.PostFormValue("publicKey"))
	v := keysView{Page: q.page("Keys & access", "keys"), Form: f}
	priv := strings.TrimSpace(q.r.PostFormValue("privateKey"))
	if priv == "" {
		priv = randomToken()
	}
	keyPath := "/keys/" + url.PathEscape(f.PublicKey)
	req := map[string]any{"privateKey": priv}
	if f.Group != "" || len(f.Resources) > 0 {
		req["access"] = f.rule()
	}
	body, _ := json.Marshal(req)
	status := http.StatusBadRequest
	// Why the HEAD first: PUT without access on an existing key replaces
	// its private key, which a form meant to create keys must never do by
	// accident (with access, the API answers 409 instead).
	if r, err := q.api.do(ctx, http.MethodHead, keyPath, nil, nil, ""); err != nil {
		return err
	} else if r.Status == http.StatusOK {
		v.Form.KeyError = "Key " + f.PublicKey + " exists already; rotate its private key on its own page."
	} else if _, err := q.api.send(ctx, http.MethodPut, keyPath, body, ""); err != nil {
		msg, st, err := refusal(err)
		if err != nil {
			return err
		}
		status = st
		// A refusal that is not about the key is about the rule.
		if req["access"] != nil && st == http.StatusBadRequest && !strings.Contains(strings.ToLower(msg), "key") {
			v.Form.RuleError = msg
		} else {
			v.Form.KeyError = msg
		}
	}
	if err := q.loadKeys(&v); err != nil {
		return err
	}
	if v.Form.KeyError != "" || v.Form.RuleError != "" {
		return q.render(status, keysPage(v))
	}
	if err := q.setFlash(createdKey{Title: "Key " + f.PublicKey + " created", PublicKey: f.PublicKey, PrivateKey: priv}); err != nil {
		return err
	}
	return q.redirect(keyPath + "?done=created")
}

// refusal returns the API's message when it refused the request (a 4xx),
// to be shown next to the form field, with the status of the page that
// shows it (403 when the key may not, 400 for wrong input); any other
// error is returned.
func refusal(err error) (string, int, error) {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < 500 {
		return refusalMessage(ae), ae.formStatus(), nil
	}
	return "", 0, err
}

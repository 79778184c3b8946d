package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// keyView is one key: its rules, a rule editor, rotation and deletion.
type keyView struct {
	Page      pageView
	PublicKey string
	Base      string
	Rules     []ruleRow
	Form      keyForm
	Created   *createdKey
	Access    string // link to the effective-access view
	// ReadOnly says why the key cannot be changed here, empty when it can.
	ReadOnly string
	// What the signed-in key may do to this key.
	CanAddRule, CanDeleteRule, CanRotate, CanDelete bool
}

// Why a key may be read-only, and what to do about it.
const (
	readOnlyStore = "readOnlyStore" // accessControl.database is off
	configuredKey = "configuredKey" // the key is defined in the configuration file
)

type ruleRow struct {
	ID, Grants, Users, DeleteHref string
}

func (q *request) loadKey(v *keyView) error {
	ctx := q.r.Context()
	v.Base = q.path("/keys/" + url.PathEscape(v.PublicKey))
	v.Access = q.path("/access?key=" + url.QueryEscape(v.PublicKey))
	v.CanAddRule, v.CanDeleteRule = q.mayAny("accessrules.post"), q.mayAny("accessrule.delete")
	v.CanRotate, v.CanDelete = q.mayAny("keys.put"), q.mayAny("keys.delete")
	var rules []api.Rule
	if err := q.api.getJSON(ctx, "/keys/"+url.PathEscape(v.PublicKey)+"/access", nil, &rules); err != nil {
		msg, denied := denial(err)
		if !denied {
			return notFoundAs(err, noSuch("key", v.PublicKey, ""))
		}
		v.Page.Denied = append(v.Page.Denied, "reading the access rules of "+v.PublicKey+" ("+msg+")")
	}
	for _, r := range rules {
		v.Rules = append(v.Rules, ruleRow{ID: ruleID(r), Grants: grants(r), Users: strings.Join(r.Users, ", "),
			DeleteHref: v.Base + "/rules/" + ruleID(r) + "/delete"})
	}
	var keys api.KeyList
	if !q.mayAny("keys.get") {
		// Whether the key may change is unknown; what the key may do decides.
	} else if err := q.api.getJSON(ctx, "/keys", nil, &keys); err == nil {
		for _, k := range keys.Keys {
			switch {
			case k.PublicKey != v.PublicKey || k.Mutable:
			case k.Source == "config":
				v.ReadOnly = configuredKey
			default:
				v.ReadOnly = readOnlyStore
			}
		}
	}
	var groups api.GroupList
	if !q.mayAny("groups.get") {
		v.Form.Groups = api.BuiltinGroups()
	} else if err := q.api.getJSON(ctx, "/groups", url.Values{"limit": {"1000"}}, &groups); err == nil {
		for _, g := range groups.Groups {
			v.Form.Groups = append(v.Form.Groups, g.Name)
		}
	}
	return nil
}

func (u *UI) key(q *request) error {
	v := keyView{Page: q.page("Key "+q.r.PathValue("pk"), "keys"), PublicKey: q.r.PathValue("pk"),
		Form: keyForm{Group: "read-only", Users: q.r.PathValue("pk")}}
	switch q.r.URL.Query().Get("done") {
	case "created":
		v.Page.Notice = "Key " + v.PublicKey + " created."
	case "rule":
		v.Page.Notice = "Access rule added."
	case "rule-deleted":
		v.Page.Notice = "Access rule deleted."
	case "rotated-own":
		v.Page.Notice = "You rotated the key you are signed in with: this browser stays signed in with the new private key; other sessions of " + v.PublicKey + " have ended."
	}
	var created createdKey
	if q.takeFlash(&created) && created.PublicKey == v.PublicKey {
		v.Created = &created
	}
	if err := q.loadKey(&v); err != nil {
		return err
	}
	return q.render(http.StatusOK, keyPage(v))
}

// addRule posts a rule built from the form; the API validates it, and its
// message is shown next to the rule editor.
func (u *UI) addRule(q *request) error {
	pk := q.r.PathValue("pk")
	f := ruleForm(q.r)
	_, err := q.api.send(q.r.Context(), http.MethodPost, "/keys/"+url.PathEscape(pk)+"/access", f.ruleBody(), "")
	if err == nil {
		return q.redirect("/keys/" + url.PathEscape(pk) + "?done=rule")
	}
	v := keyView{Page: q.page("Key "+pk, "keys"), PublicKey: pk, Form: f}
	status := 0
	if v.Form.RuleError, status, err = refusal(err); err != nil {
		return err
	}
	if err := q.loadKey(&v); err != nil {
		return err
	}
	return q.render(status, keyPage(v))
}

// confirmDeleteRule asks before a rule is deleted.
func (u *UI) confirmDeleteRule(q *request) error {
	pk, id := q.r.PathValue("pk"), q.r.PathValue("id")
	var r api.Rule
	if err := q.api.getJSON(q.r.Context(), "/keys/"+url.PathEscape(pk)+"/access/"+url.PathEscape(id), nil, &r); err != nil {
		return err
	}
	base := "/keys/" + url.PathEscape(pk)
	v := actionConfirmView{Page: q.page("Delete rule "+id+" of "+pk+"?", "keys"),
		Message: "The rule grants " + grants(r) + " on " + strings.Join(r.Users, ", ") + ". " + pk +
			" loses that access at once, unless another of its rules grants it.",
		Action: q.path(base + "/rules/" + url.PathEscape(id) + "/delete"), Button: "Delete rule", Cancel: q.path(base), Danger: true}
	return q.render(http.StatusOK, actionConfirmPage(v))
}

func (u *UI) deleteRule(q *request) error {
	pk := q.r.PathValue("pk")
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, "/keys/"+url.PathEscape(pk)+"/access/"+url.PathEscape(q.r.PathValue("id")), nil, ""); err != nil {
		return err
	}
	return q.redirect("/keys/" + url.PathEscape(pk) + "?done=rule-deleted")
}

// confirmRotate asks before a key's private key is replaced.
func (u *UI) confirmRotate(q *request) error {
	pk := q.r.PathValue("pk")
	base := "/keys/" + url.PathEscape(pk)
	msg := "The key gets a new random private key, shown once on the next page. Its current private key stops working at once, for every client that uses it."
	if pk == q.sess.PublicKey {
		msg += " You are signed in with this key: this browser stays signed in, other sessions of it end."
	}
	v := actionConfirmView{Page: q.page("Rotate the private key of "+pk+"?", "keys"), Message: msg,
		Action: q.path(base + "/rotate"), Button: "Rotate private key", Cancel: q.path(base)}
	return q.render(http.StatusOK, actionConfirmPage(v))
}

// rotateKey gives the key a new random private key, shown once on the
// key's page. Rotating the signed-in key renews the session with the new
// private key, so the browser stays signed in.
func (u *UI) rotateKey(q *request) error {
	pk := q.r.PathValue("pk")
	priv := randomToken()
	body, _ := json.Marshal(map[string]string{"privateKey": priv})
	if _, err := q.api.send(q.r.Context(), http.MethodPut, "/keys/"+url.PathEscape(pk), body, ""); err != nil {
		return err
	}
	done := "rotated"
	if pk == q.sess.PublicKey {
		if err := q.renew(priv); err != nil {
			return err
		}
		done = "rotated-own"
	}
	if err := q.setFlash(createdKey{Title: "New private key for " + pk, PublicKey: pk, PrivateKey: priv}); err != nil {
		return err
	}
	return q.redirect("/keys/" + url.PathEscape(pk) + "?done=" + done)
}

func (u *UI) deleteKey(q *request) error {
	pk := q.r.PathValue("pk")
	if q.r.PostFormValue("confirm") != "yes" {
		return &apiError{Status: http.StatusBadRequest, Message: "Tick the box to confirm that " + pk + " is to be deleted."}
	}
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, "/keys/"+url.PathEscape(pk), nil, ""); err != nil {
		return err
	}
	return q.redirect("/keys?deleted=" + url.QueryEscape(pk))
}

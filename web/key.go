package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"vitrine/api"
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
	ID, Grants, Users, DeleteAction string
}

func (q *request) loadKey(v *keyView) error {
	ctx := q.r.Context()
	v.Base = q.path("/keys/" + url.PathEscape(v.PublicKey))
	v.Access = q.path("/access?key=" + url.QueryEscape(v.PublicKey))
	v.CanAddRule, v.CanDeleteRule = q.mayAny("accessrules.post"), q.mayAny("accessrule.delete")
	v.CanRotate, v.CanDelete = q.mayAny("keys.put"), q.mayAny("keys.delete")
	var rules []struct {
		ID        json.Number `json:"id"`
		Group     string      `json:"group"`
		Resources []string    `json:"resources"`
		Users     any         `json:"users"`
	}
	if err := q.api.getJSON(ctx, "/keys/"+url.PathEscape(v.PublicKey)+"/access", nil, &rules); err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.Page.Denied = append(v.Page.Denied, "reading the access rules of "+v.PublicKey+" ("+msg+")")
	}
	for _, r := range rules {
		row := ruleRow{ID: r.ID.String(), DeleteAction: v.Base + "/rules/" + r.ID.String() + "/delete"}
		if r.Group != "" {
			row.Grants = "group " + r.Group
		} else {
			row.Grants = strings.Join(r.Resources, ", ")
		}
		switch us := r.Users.(type) {
		case string:
			row.Users = us
		case []any:
			var names []string
			for _, x := range us {
				if s, ok := x.(string); ok {
					names = append(names, s)
				}
			}
			row.Users = strings.Join(names, ", ")
		}
		v.Rules = append(v.Rules, row)
	}
	var keys keyList
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
	var groups struct {
		Groups []struct {
			Name string `json:"name"`
		} `json:"groups"`
	}
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
	case "rule":
		v.Page.Notice = "Access rule added."
	case "rule-deleted":
		v.Page.Notice = "Access rule deleted."
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
	f := keyForm{Group: q.r.PostFormValue("group"), Resources: q.r.PostFormValue("resources"), Users: q.r.PostFormValue("users")}
	_, err := q.api.send(q.r.Context(), http.MethodPost, "/keys/"+url.PathEscape(pk)+"/access", ruleBody(f.Group, f.Resources, f.Users), "")
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

func (u *UI) deleteRule(q *request) error {
	pk := q.r.PathValue("pk")
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, "/keys/"+url.PathEscape(pk)+"/access/"+url.PathEscape(q.r.PathValue("id")), nil, ""); err != nil {
		return err
	}
	return q.redirect("/keys/" + url.PathEscape(pk) + "?done=rule-deleted")
}

// rotateKey gives the key a new random private key, shown once. Rotating
// the signed-in key renews the session with the new private key, so the
// browser stays signed in.
func (u *UI) rotateKey(q *request) error {
	pk := q.r.PathValue("pk")
	priv := randomToken()
	body, _ := json.Marshal(map[string]string{"privateKey": priv})
	if _, err := q.api.send(q.r.Context(), http.MethodPut, "/keys/"+url.PathEscape(pk), body, ""); err != nil {
		return err
	}
	if pk == q.sess.PublicKey {
		if err := q.renew(priv); err != nil {
			return err
		}
	}
	v := keyView{Page: q.page("Key "+pk, "keys"), PublicKey: pk, Form: keyForm{Group: "read-only", Users: pk}}
	v.Created = &createdKey{Title: "New private key for " + pk, PublicKey: pk, PrivateKey: priv}
	if pk == q.sess.PublicKey {
		v.Page.Notice = "You rotated the key you are signed in with: this browser stays signed in with the new private key; other sessions of " + pk + " have ended."
	}
	if err := q.loadKey(&v); err != nil {
		return err
	}
	return q.render(http.StatusOK, keyPage(v))
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

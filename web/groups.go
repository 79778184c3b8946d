package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// groupsView lists the resource groups and creates new ones.
type groupsView struct {
	Page   pageView
	Groups []groupEntry
	Form   groupForm
	// ReadOnly is set when no group can change through the API
	// (accessControl.database off).
	ReadOnly bool
	// UsesNote says why the rules using each group are not shown.
	UsesNote string
	// CanCreate is whether the key may create groups.
	CanCreate bool
}

// groupEntry is one group as GET /groups returns it, with the rules that
// use it.
type groupEntry struct {
	api.Group
	Uses []groupUse
	Href string
}

// groupUse is one rule that grants a group: its key and id.
type groupUse struct {
	PublicKey, RuleID, Users, Href string
}

// groupForm is the create or edit form of a group with the API's
// complaint.
type groupForm struct {
	Name      string
	Resources []string
	Error     string
}

// groupList is GET /groups as the pages use it.
type groupList struct {
	Groups []groupEntry
	// ReadOnly is set when no group can change through the API.
	ReadOnly bool
}

// loadGroups reads every group and, when the key may list keys and their
// rules, which rules use each.
func (q *request) loadGroups(ctx context.Context) (groupList, string, error) {
	var got api.GroupList
	if err := q.api.getJSON(ctx, "/groups", url.Values{"limit": {"1000"}}, &got); err != nil {
		return groupList{}, "", err
	}
	l := groupList{ReadOnly: !got.Mutable}
	for _, g := range got.Groups {
		l.Groups = append(l.Groups, groupEntry{Group: g, Href: q.path("/groups/" + url.PathEscape(g.Name))})
	}
	uses, note, err := q.groupUses(ctx)
	if err != nil {
		return l, "", err
	}
	for i := range l.Groups {
		l.Groups[i].Uses = uses[l.Groups[i].Name]
	}
	return l, note, nil
}

// groupUses maps group names to the rules that grant them, reading every
// key's rules; the note says why it could not when the key may not.
func (q *request) groupUses(ctx context.Context) (map[string][]groupUse, string, error) {
	if !q.mayAny("keys.get") || !q.mayAny("accessrules.get") {
		return nil, "Your key may not list keys and their rules, so the rules using each group are not shown.", nil
	}
	var keys api.KeyList
	if err := q.api.getJSON(ctx, "/keys", nil, &keys); err != nil {
		if msg, denied := denial(err); denied {
			return nil, "The rules using each group are not shown: " + msg, nil
		}
		return nil, "", err
	}
	uses := map[string][]groupUse{}
	for _, k := range keys.Keys {
		var rules []api.Rule
		path := "/keys/" + url.PathEscape(k.PublicKey)
		if err := q.api.getJSON(ctx, path+"/access", nil, &rules); err != nil {
			if _, denied := denial(err); denied {
				continue
			}
			return nil, "", err
		}
		for _, r := range rules {
			if r.Group != "" {
				uses[r.Group] = append(uses[r.Group], groupUse{PublicKey: k.PublicKey, RuleID: ruleID(r),
					Users: strings.Join(r.Users, ", "), Href: q.path(path)})
			}
		}
	}
	return uses, "", nil
}

func (u *UI) groups(q *request) error {
	v := groupsView{Page: q.page("Groups", "groups")}
	if d := q.r.URL.Query().Get("deleted"); d != "" {
		v.Page.Notice = "Group " + d + " and the rules that granted it were deleted."
	}
	return q.renderGroups(http.StatusOK, v)
}

func (q *request) renderGroups(status int, v groupsView) error {
	l, note, err := q.loadGroups(q.r.Context())
	if err != nil {
		return err
	}
	v.Groups, v.UsesNote, v.ReadOnly = l.Groups, note, l.ReadOnly
	v.CanCreate = q.mayAny("group.put")
	return q.render(status, groupsPage(v))
}

// groupFormOf reads the group form: a name and the resources ticked.
func groupFormOf(r *http.Request) groupForm {
	f := groupForm{Name: strings.TrimSpace(r.PostFormValue("name"))}
	for _, v := range r.PostForm["resources"] {
		f.Resources = append(f.Resources, splitFields(v)...)
	}
	return f
}

// putGroup writes the form's group with PUT /groups/<name>; create is
// whether the group must not exist yet.
func (q *request) putGroup(f *groupForm, create bool) (int, error) {
	ctx := q.r.Context()
	path := "/groups/" + url.PathEscape(f.Name)
	if !validName(f.Name) {
		f.Error = "A group name is 1 to 64 letters, digits, - and _."
		return http.StatusBadRequest, nil
	}
	if create {
		if r, err := q.api.do(ctx, http.MethodGet, path, nil, nil, ""); err != nil {
			return 0, err
		} else if r.Status == http.StatusOK {
			f.Error = "Group " + f.Name + " exists already; change it on its own page."
			return http.StatusBadRequest, nil
		}
	}
	body, _ := json.Marshal(append([]string{}, f.Resources...))
	if _, err := q.api.send(ctx, http.MethodPut, path, body, ""); err != nil {
		var status int
		if f.Error, status, err = refusal(err); err != nil {
			return 0, err
		}
		return status, nil
	}
	return 0, nil
}

// createGroup creates a group from the form; the API checks its
// resources.
func (u *UI) createGroup(q *request) error {
	f := groupFormOf(q.r)
	status, err := q.putGroup(&f, true)
	if err != nil {
		return err
	}
	if f.Error == "" {
		return q.redirect("/groups/" + url.PathEscape(f.Name) + "?done=created")
	}
	return q.renderGroups(status, groupsView{Page: q.page("Groups", "groups"), Form: f})
}

// groupView is one group: its resources (editable when it may change),
// the rules that use it, and deletion.
type groupView struct {
	Page     pageView
	Group    groupEntry
	Form     groupForm
	UsesNote string
	ReadOnly bool
	// ReadOnlyWhy is "builtin", "config" or "database" (the store is
	// read-only) when the group cannot change.
	ReadOnlyWhy        string
	CanEdit, CanDelete bool
}

func (u *UI) group(q *request) error {
	v := groupView{Page: q.page("Group "+q.r.PathValue("group"), "groups")}
	switch q.r.URL.Query().Get("done") {
	case "created":
		v.Page.Notice = "Group created."
	case "saved":
		v.Page.Notice = "Group saved."
	}
	return q.renderGroup(http.StatusOK, v)
}

// renderGroup fills the group page from the API and writes it.
func (q *request) renderGroup(status int, v groupView) error {
	name := q.r.PathValue("group")
	l, note, err := q.loadGroups(q.r.Context())
	if err != nil {
		return err
	}
	i := slices.IndexFunc(l.Groups, func(g groupEntry) bool { return g.Name == name })
	if i < 0 {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("group", name, "")}
	}
	v.Group, v.UsesNote = l.Groups[i], note
	if v.Form.Name == "" {
		v.Form = groupForm{Name: name, Resources: v.Group.Resources}
	}
	if !v.Group.Mutable {
		v.ReadOnly, v.ReadOnlyWhy = true, v.Group.Source
	}
	v.CanEdit, v.CanDelete = q.mayAny("group.put"), q.mayAny("group.delete")
	return q.render(status, groupPage(v))
}

// saveGroup replaces a group's resources with those ticked.
func (u *UI) saveGroup(q *request) error {
	f := groupFormOf(q.r)
	f.Name = q.r.PathValue("group")
	status, err := q.putGroup(&f, false)
	if err != nil {
		return err
	}
	if f.Error == "" {
		return q.redirect("/groups/" + url.PathEscape(f.Name) + "?done=saved")
	}
	return q.renderGroup(status, groupView{Page: q.page("Group "+f.Name, "groups"), Form: f})
}

// confirmDeleteGroup asks before a group is deleted, saying how many rules
// go with it.
func (u *UI) confirmDeleteGroup(q *request) error {
	name := q.r.PathValue("group")
	uses, _, err := q.groupUses(q.r.Context())
	if err != nil {
		return err
	}
	msg := "Group " + name + " will be deleted."
	if n := len(uses[name]); n > 0 {
		msg += " The " + plural(n, "rule", "rules") + " granting it will be deleted too, and their keys lose that access at once."
	}
	base := "/groups/" + url.PathEscape(name)
	v := actionConfirmView{Page: q.page("Delete group "+name+"?", "groups"), Message: msg,
		Action: q.path(base + "/delete"), Button: "Delete group", Cancel: q.path(base), Danger: true}
	return q.render(http.StatusOK, actionConfirmPage(v))
}

func (u *UI) deleteGroup(q *request) error {
	name := q.r.PathValue("group")
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, "/groups/"+url.PathEscape(name), nil, ""); err != nil {
		return err
	}
	return q.redirect("/groups?deleted=" + url.QueryEscape(name))
}

// plural is n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}

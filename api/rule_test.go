package api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
)

// TestValidateRule checks the one rule validation the API, the
// configuration and `vitrine keys add` share.
func TestValidateRule(t *testing.T) {
	exists := func(_ context.Context, name string) (bool, error) { return name == "all" || name == "mine", nil }
	for _, tt := range []struct {
		name string
		rule storage.Rule
		msg  string // "" when valid
	}{
		{"group", storage.Rule{Group: "mine", Users: []string{"alice"}}, ""},
		{"resources on everyone", storage.Rule{Resources: []string{"image.get"}, Users: []string{"*"}}, ""},
		{"both", storage.Rule{Group: "all", Resources: []string{"image.get"}, Users: []string{"a"}}, "Both resources and group found in rule"},
		{"neither", storage.Rule{Users: []string{"a"}}, "Neither group nor resources found in rule"},
		{"unknown resource", storage.Rule{Resources: []string{"image.gett"}, Users: []string{"a"}}, "Resource 'image.gett' does not exist"},
		{"unknown group", storage.Rule{Group: "nope", Users: []string{"a"}}, "Group 'nope' does not exist"},
		{"no users", storage.Rule{Group: "all"}, "Users not specified in rule"},
		{"star among names", storage.Rule{Group: "all", Users: []string{"*", "bob"}}, "Illegal value for users property"},
		{"invalid name", storage.Rule{Group: "all", Users: []string{"no/slash"}}, "Illegal value for users property"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateRule(context.Background(), tt.rule, exists)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != 400 || !strings.HasPrefix(e.Msg, tt.msg) {
				t.Fatalf("error %v, want 400 %q", err, tt.msg)
			}
		})
	}
}

// TestConfigRefusesUnknownResource checks that a configured rule is
// validated as one posted to the API.
func TestConfigRefusesUnknownResource(t *testing.T) {
	c := Config{AccessControl: AccessControl{Keys: []ConfigKey{{PublicKey: "k", PrivateKey: "p",
		Rules: []ConfigRule{{Users: Users{"k"}, Resources: []string{"image.gett"}}}}}}}
	c.Authentication.Protocol = "incoming"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "accessControl.keys[0].rules[0]: Resource 'image.gett' does not exist") {
		t.Errorf("Validate: %v", err)
	}
}

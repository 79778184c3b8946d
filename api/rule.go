package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/vitrine/vitrine/storage"
)

// GroupExists tells whether a group name is defined (built in, configured
// or stored).
type GroupExists func(ctx context.Context, name string) (bool, error)

// ValidateRule checks an access rule the one way the API, the
// configuration file and `vitrine keys add` all use: exactly one of group
// and resources, every resource one a rule may grant (Resources), the
// group defined, and users either `*` alone or valid names. Its errors are
// 400 *Error values carrying the API's messages.
func ValidateRule(ctx context.Context, r storage.Rule, exists GroupExists) error {
	if err := validateGrant(ctx, r, exists); err != nil {
		return err
	}
	return validateUsers(r.Users)
}

// validateGrant checks what a rule grants: its group or its resources.
func validateGrant(ctx context.Context, r storage.Rule, exists GroupExists) error {
	switch {
	case r.Group != "" && len(r.Resources) > 0:
		return errorf(http.StatusBadRequest, "Both resources and group found in rule")
	case r.Group == "" && len(r.Resources) == 0:
		return errorf(http.StatusBadRequest, "Neither group nor resources found in rule")
	case r.Group == "":
		return unknownResource(r.Resources)
	}
	ok, err := exists(ctx, r.Group)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(http.StatusBadRequest, "Group '%s' does not exist", r.Group)
	}
	return nil
}

// validateUsers checks whom a rule applies to.
func validateUsers(users []string) error {
	if len(users) == 0 {
		return errorf(http.StatusBadRequest, "Users not specified in rule")
	}
	if len(users) == 1 && users[0] == "*" {
		return nil
	}
	if slices.ContainsFunc(users, func(u string) bool { return !namePattern.MatchString(u) }) {
		return errorf(http.StatusBadRequest, "Illegal value for users property. Allowed: '*' or array with users")
	}
	return nil
}

package main

import (
	"errors"
	"fmt"

	"github.com/vitrine/vitrine/api/cdn"
)

// cdnConfig is the `cdn` section (README "CDN"): the cache tags api
// writes on its answers, and the purgers that changes are sent to.
type cdnConfig struct {
	// Tags are cdn.tagPrefix and cdn.tagHeaders; compose hands them to api.
	Tags cdn.Tags `yaml:",inline"`
	// Purgers are the caches each change's tags are purged from
	// (cdn.NewPurger builds each one); none purges nothing.
	Purgers []cdn.PurgerConfig `yaml:"purgers"`
}

// resolveTokens reads the tokens that purgers name by tokenEnv, through
// lookup (os.LookupEnv).
func (c *cdnConfig) resolveTokens(lookup func(string) (string, bool)) error {
	var errs []error
	for i := range c.Purgers {
		if err := c.Purgers[i].ResolveToken(lookup); err != nil {
			errs = append(errs, fmt.Errorf("cdn.purgers[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Validate checks the tags' settings and every purger.
func (c cdnConfig) Validate() error {
	errs := []error{c.Tags.Validate()}
	for i, p := range c.Purgers {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("cdn.purgers[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

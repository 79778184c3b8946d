package engine

import (
	"fmt"
	"os"
)

// icc converts the image to a configured ICC profile (Config.ICCProfiles),
// from its embedded profile or sRGB when it has none, and embeds the new
// profile. The name is checked when the step runs, against the engine's
// configuration: with no profiles configured every use answers 400, which is
// how "icc is only available when profiles are configured" shows.
type icc struct {
	profile string
}

func init() {
	register("icc", describe(parseICC, "Converts the image to a configured ICC profile.",
		stringParam("profile", "Name of a profile from the configuration; default the one named default."),
	))
}

func parseICC(p *Params) (Step, error) {
	i := icc{profile: p.String("profile")}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return i, nil
}

func (i icc) Apply(s *State) error {
	var profiles map[string]string
	if s.engine != nil {
		profiles = s.engine.cfg.ICCProfiles
	}
	name := i.profile
	if name == "" {
		name = "default"
		if _, ok := profiles[name]; !ok {
			return invalidf(`icc: No profile name given for which ICC profile to use and no profile is assigned to the "default" name.`)
		}
	}
	path, ok := profiles[name]
	if !ok {
		return invalidf(`icc: The given ICC profile name (%q) is unknown to the server.`, name)
	}
	// A configured file that is gone is the operator's problem: 500.
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("icc: profile %q: %w", name, err)
	}
	if err := s.Image.TransformICCProfile(path); err != nil {
		return fmt.Errorf("icc: transform to %q: %w", name, err)
	}
	s.Output.KeepProfile = true
	return nil
}

var _ Step = icc{}

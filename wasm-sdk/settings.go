package vitrine

import "errors"

// Settings decodes the manifest's settings, the operator's configuration of
// the filter, into v, as json.Unmarshal does. When the manifest has no
// settings it leaves v as it is and returns nil, so v can hold the defaults:
//
//	cfg := config{MinWidth: 100}
//	if err := vitrine.Settings(&cfg); err != nil {
//		return err
//	}
func Settings(v any) error {
	err := readJSON("settings_get", hostSettingsGet, v)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

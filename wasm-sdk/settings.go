package vitrine

// Settings decodes the manifest's settings, the operator's configuration of
// the filter, into v, as json.Unmarshal does. It fails with ErrNotFound when
// the manifest has none.
func Settings(v any) error {
	return readJSON("settings_get", hostSettingsGet, v)
}

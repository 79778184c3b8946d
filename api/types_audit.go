package api

// The JSON bodies of the audit log and the usage counters (types.go says
// how the answer types are used).

// AuditEntry is one entry of the audit log.
type AuditEntry struct {
	ID      int64          `json:"id"`
	Time    string         `json:"time"`
	Actor   string         `json:"actor"`
	Address string         `json:"address,omitempty"`
	Action  string         `json:"action"`
	Target  string         `json:"target"`
	Detail  map[string]any `json:"detail"`
}

// AuditList is GET /audit.
type AuditList struct {
	Search  Search       `json:"search"`
	Entries []AuditEntry `json:"entries"`
}

// UsageDay is one counter of GET /usage.
type UsageDay struct {
	Day   string `json:"day"`
	Label string `json:"label"`
	Value int64  `json:"value"`
}

// KeyTimes is when a key was created and last used (RFC 3339; empty when
// unknown).
type KeyTimes struct {
	Created  string `json:"created"`
	LastUsed string `json:"lastUsed"`
}

// Usage is GET /usage; Keys is set for the metric key.requests only.
type Usage struct {
	Metric string              `json:"metric"`
	Since  string              `json:"since"`
	Days   []UsageDay          `json:"days"`
	Keys   map[string]KeyTimes `json:"keys"`
}

package storage

import (
	"net/url"
	"slices"
	"strings"
)

// RedactURL is raw (a database, blob store, broker or receiver URL, or a
// comma-separated list of them) fit for logs and errors: the user
// information and the value of every query parameter whose name says it
// holds a secret (password=, sslpassword=, secret_access_key=, token=...)
// become ***.
func RedactURL(raw string) string {
	if parts := strings.Split(raw, ","); len(parts) > 1 && !slices.ContainsFunc(parts, func(p string) bool {
		return !strings.Contains(p, "://")
	}) {
		for i, p := range parts {
			parts[i] = RedactURL(strings.TrimSpace(p))
		}
		return strings.Join(parts, ",")
	}
	p, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if p.User != nil {
		p.User = url.User("***")
	}
	if p.RawQuery != "" {
		q := p.Query()
		for k := range q {
			if secretParam(k) {
				q[k] = []string{"***"}
			}
		}
		p.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(p.String(), "%2A%2A%2A", "***")
}

// secretParam reports whether a URL query parameter's name says it holds a
// secret.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"pass", "pwd", "secret", "token", "credential", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

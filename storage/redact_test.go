package storage

import (
	"strings"
	"testing"
)

// TestRedactURL: store, broker and receiver URLs reach logs and errors
// without their credentials, in the user information or in the query, in
// a list of servers too.
func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:hunter2@db:5432/vitrine", "postgres://***@db:5432/vitrine"},
		{"postgres://db/vitrine?user=app&password=hunter2&sslmode=require", "postgres://db/vitrine?password=***&sslmode=require&user=app"},
		{"mysql://db/v?sslpassword=x", "mysql://db/v?sslpassword=***"},
		{"s3://bucket?region=eu-west-1&secret_access_key=abc&session_token=t", "s3://bucket?region=eu-west-1&secret_access_key=***&session_token=***"},
		{"sqlite:///data/vitrine.db", "sqlite:///data/vitrine.db"},
		{"nats://s3cret@host:4222", "nats://***@host:4222"},
		{"nats://u:p1@a:4222,nats://u:p2@b:4222", "nats://***@a:4222,nats://***@b:4222"},
		{"amqp://guest:guest@127.0.0.1:5672/vhost", "amqp://***@127.0.0.1:5672/vhost"},
		{"https://hooks.example/in?token=hunter2", "https://hooks.example/in?token=***"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"postgres://app:hunter2@db/v?options=a,b", "postgres://***@db/v?options=a%2Cb"},
	} {
		got := RedactURL(tc.in)
		if got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") {
			t.Errorf("RedactURL(%q) leaks the password", tc.in)
		}
	}
}

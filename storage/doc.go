// Package storage persists vitrine's data: image records, metadata, short
// URLs, public keys, resource groups and access rules in SQL through bun
// (SQLite, PostgreSQL, MySQL/MariaDB), and image bytes through gocloud.dev
// blob buckets (file, mem, s3). The conformance suites in storagetest are run
// by every backend.
package storage

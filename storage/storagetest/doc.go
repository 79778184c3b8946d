// Package storagetest holds the conformance suites that every storage
// backend passes: TestDB for SQL databases and TestBlobs for blob buckets.
// A backend's test opens a fresh, empty store per call of open.
package storagetest

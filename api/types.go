package api

// The types below are the JSON bodies of the API's answers as clients
// read them, described in api/openapi.yaml; the admin UI (package web)
// decodes the API's answers into them. Where the API builds an answer
// from a map (to keep its field order or leave out fields not asked for),
// TestResponseTypes checks that every field the API sends has its place
// in them. This file holds the answers every part of the API shares; each
// resource's are in types_<resource>.go beside it.

// Status is GET /status: whether the database and the blob store answer.
type Status struct {
	Timestamp string `json:"timestamp"`
	Date      string `json:"date"`
	Database  bool   `json:"database"`
	Storage   bool   `json:"storage"`
	// UploadFormats are the extensions uploads may use (uploads.formats,
	// with svg and pdf when uploads.svg and uploads.pdf are on).
	UploadFormats []string `json:"uploadFormats"`
	// Sinks are the events outbox's sinks, where events are on.
	Sinks []SinkStatus `json:"sinks,omitempty"`
}

// Stats is GET /stats.
type Stats struct {
	// Users holds each user's counts, by name.
	Users map[string]UserStats `json:"users"`
	Total StatsTotal           `json:"total"`
	// Custom is what stats.get listeners added.
	Custom    map[string]any `json:"custom"`
	NumImages int64          `json:"numImages"`
	NumUsers  int64          `json:"numUsers"`
	NumBytes  int64          `json:"numBytes"`
}

// UserStats are one user's counts in GET /stats.
type UserStats struct {
	NumImages int64 `json:"numImages"`
	NumBytes  int64 `json:"numBytes"`
}

// StatsTotal are the totals of GET /stats.
type StatsTotal struct {
	NumImages int64 `json:"numImages"`
	NumUsers  int64 `json:"numUsers"`
	NumBytes  int64 `json:"numBytes"`
}

// Search is the paging block of a listing.
type Search struct {
	Hits  int `json:"hits"`
	Page  int `json:"page"`
	Limit int `json:"limit"`
	Count int `json:"count"`
}

// ErrorBody is the JSON error model.
type ErrorBody struct {
	Error           ErrorDetail `json:"error"`
	ImageIdentifier string      `json:"imageIdentifier,omitempty"`
}

// ErrorDetail is the error model's error.
type ErrorDetail struct {
	Code             int    `json:"code"`
	Message          string `json:"message"`
	Date             string `json:"date"`
	ServiceErrorCode int    `json:"serviceErrorCode"`
}

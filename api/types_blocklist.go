package api

// The JSON bodies of the takedown blocklist routes (types.go says how the
// answer types are used).

// BlocklistEntry is one entry of the takedown blocklist: Checksum, or
// PHash with Distance, is set.
type BlocklistEntry struct {
	ID       int64   `json:"id"`
	Checksum *string `json:"checksum"`
	PHash    *string `json:"phash"`
	Distance *int    `json:"distance"`
	Reason   string  `json:"reason"`
	// Actor is the public key that added the entry.
	Actor   string `json:"actor"`
	Created string `json:"created"`
}

// BlocklistList is GET /blocklist.
type BlocklistList struct {
	Search  Search           `json:"search"`
	Entries []BlocklistEntry `json:"entries"`
}

// BlocklistMatch is a stored image a blocklist entry matches.
type BlocklistMatch struct {
	User             string  `json:"user"`
	ImageIdentifier  string  `json:"imageIdentifier"`
	Extension        string  `json:"extension"`
	Size             int64   `json:"size"`
	Width            int     `json:"width"`
	Height           int     `json:"height"`
	Checksum         string  `json:"checksum"`
	OriginalChecksum *string `json:"originalChecksum"`
	// Distance is the bits between the image's perceptual hash and the
	// entry's (0 for a checksum entry).
	Distance int    `json:"distance"`
	Added    string `json:"added"`
}

// BlocklistResult is an entry with the images removed by the request and
// a page of the stored images it matches (POST /blocklist, GET
// /blocklist/{entry}, POST /blocklist/{entry}/remove).
type BlocklistResult struct {
	Entry   BlocklistEntry   `json:"entry"`
	Removed []BlocklistMatch `json:"removed"`
	Search  Search           `json:"search"`
	Matches []BlocklistMatch `json:"matches"`
}

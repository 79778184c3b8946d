package storage

import "github.com/uptrace/bun"

// MetadataMatch selects images whose metadata document has the top-level
// key Key holding a JSON scalar whose text equals Value: a string as is, a
// number as its JSON text as written (3, 1.50, 1e3), a boolean as true or false. Objects,
// arrays and null never match.
type MetadataMatch struct {
	Key, Value string
}

// metadataFilters adds one condition per match (ANDed) to s. Keys and
// values are always query parameters, never spliced into SQL or into a JSON
// path: SQLite walks the document with json_each, PostgreSQL indexes json
// with ->, and MariaDB builds the path from JSON_QUOTE of the key.
func metadataFilters(s *bun.SelectQuery, k kind, matches []MetadataMatch) *bun.SelectQuery {
	const in = "(user_name, identifier) IN (SELECT m.user_name, m.identifier FROM metadata m "
	for _, m := range matches {
		switch k {
		case postgresKind:
			// Why json, not jsonb: json keeps a number's text as written
			// (1.50, 1e3); jsonb would normalise it.
			s = s.Where(in+"WHERE json_typeof(m.document::json -> ?) IN ('string', 'number', 'boolean') "+
				"AND m.document::json ->> ? = ?)", m.Key, m.Key, m.Value)
		case mysqlKind:
			s = s.Where(in+"WHERE JSON_TYPE(JSON_EXTRACT(m.document, CONCAT('$.', JSON_QUOTE(?)))) "+
				"IN ('STRING', 'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL', 'BOOLEAN') "+
				"AND JSON_UNQUOTE(JSON_EXTRACT(m.document, CONCAT('$.', JSON_QUOTE(?)))) = ?)", m.Key, m.Key, m.Value)
		default:
			// Why -> j.fullkey for numbers: atom is an SQL number, whose
			// text loses the JSON text as written (1.50, 1e3).
			s = s.Where(in+", json_each(m.document) j WHERE j.key = ? AND "+
				"CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'text' THEN j.atom "+
				"WHEN 'integer' THEN m.document -> j.fullkey WHEN 'real' THEN m.document -> j.fullkey END = ?)",
				m.Key, m.Value)
		}
	}
	return s
}

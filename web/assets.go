package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets are the UI's stylesheet, scripts and icon, built into the binary:
// nothing is fetched from anywhere else at run time.
//
//go:embed assets
var assets embed.FS

// assetHandler serves the embedded assets; they change only with the
// binary, so browsers may cache them for an hour.
func assetHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded above; it always exists
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

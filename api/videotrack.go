package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// spriteTrack answers `GET .../<id>.vtt?t[]=sprite:...`: a WebVTT
// thumbnails track whose cue i names tile i of the same sprite as a JPEG
// (`<id>.jpg?<the same query>#xywh=x,y,w,h`), for players' scrub bars. A
// track asked for with an access token names sprite URLs signed with the
// same key, so the player can fetch them.
func (s *Server) spriteTrack(c *call, img storage.Image, chain engine.Chain) error {
	if !isVideo(img) {
		return errorf(http.StatusBadRequest, "A .vtt is a video's sprite track: %s is a %s, not a video", img.Identifier, img.Mime)
	}
	info := engine.Info{Width: img.Width, Height: img.Height, Video: videoInfo(img.Video)}
	sp, ok := chain.SpriteOf(info)
	if !ok || chain.Len() != 1 {
		return errorf(http.StatusBadRequest, "A .vtt describes a sprite: ask for .vtt?t[]=sprite:columns=5,rows=5,width=160 with the sprite as the only transformation")
	}
	imageURL, err := s.spriteURL(c)
	if err != nil {
		return err
	}
	return c.writeBody([]byte(spriteVTT(sp, img.Video.Duration, imageURL)), "text/vtt; charset=utf-8",
		out{cache: cacheImages, etag: true, lastModified: img.Updated})
}

// spriteURL is the URL of the sprite a .vtt request describes: its own
// URL as .jpg, signed again when the request carried an access token.
func (s *Server) spriteURL(c *call) (string, error) {
	path, _, rawQuery := requestTarget(c.r)
	path = path[:strings.LastIndexByte(path, '.')] + ".jpg"
	u := stripAccessToken(s.bases(c)[0] + path + "?" + rawQuery)
	if c.query.Get("accessToken") == "" || c.publicKey == "" {
		return u, nil
	}
	priv, err := s.privateKey(c.ctx(), c)
	if err != nil {
		return "", err
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "accessToken=" + sign(priv, u), nil
}

// spriteVTT writes the WebVTT track of a sprite: one cue per tile, the last
// ending with the video.
func spriteVTT(sp engine.Sprite, duration float64, imageURL string) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	for i := range sp.Tiles {
		start, end := float64(i)*sp.Interval, float64(i+1)*sp.Interval
		if i == sp.Tiles-1 {
			end = duration
		}
		x, y := (i%sp.Columns)*sp.Width, (i/sp.Columns)*sp.Height
		fmt.Fprintf(&b, "\n%s --> %s\n%s#xywh=%d,%d,%d,%d\n", vttTime(start), vttTime(end), imageURL, x, y, sp.Width, sp.Height)
	}
	return b.String()
}

// vttTime formats seconds as WebVTT's HH:MM:SS.mmm.
func vttTime(t float64) string {
	ms := int64(t*1000 + 0.5)
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}

package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// Videos (uploads.video) are uploaded like images and stored as sent; at
// upload the engine checks them and chooses a poster, which is kept as a
// stored variation of the video (a JPEG of its full size), and the
// variations worker builds the smaller copies from it as from an image's
// original. Every chain, format and analysis of a video works on its
// poster and those copies, so `GET .../<id>.jpg` and the rest answer at
// image speed; a video whose poster went missing gets one made again on
// its first render.

// videoStore keeps posters: the database and blob store of the server.
type videoStore struct {
	db    *storage.DB
	blobs *storage.Blobs
}

// uploadLimit is the largest upload body and the setting that says so:
// limits.maxBodyBytes, or uploads.videoMaxBytes when videos are on and it
// is larger (an image over limits.maxBodyBytes is still refused, by
// checkImageSize).
func (s *Server) uploadLimit() (int64, string) {
	limit, what := s.cfg.Limits.MaxBodyBytes, "limits.maxBodyBytes"
	if v := s.engine.Config().Uploads.VideoUploads; v.Video && v.VideoMaxBytes > limit {
		limit, what = v.VideoMaxBytes, "uploads.videoMaxBytes"
	}
	return limit, what
}

// checkImageSize refuses an image (not a video) over limits.maxBodyBytes
// that the larger video limit let through.
func (s *Server) checkImageSize(data []byte) error {
	if limit := s.cfg.Limits.MaxBodyBytes; int64(len(data)) > limit {
		return errorf(http.StatusRequestEntityTooLarge, "Request body too large: %d bytes; the limit for an image is %d bytes (limits.maxBodyBytes)", len(data), limit)
	}
	return nil
}

// isVideo reports whether the stored image is a video.
func isVideo(img storage.Image) bool { return img.Video != nil }

// videoOf is storage's record of what the engine read of a video.
func videoOf(info engine.Info) *storage.Video {
	if info.Video == nil {
		return nil
	}
	return &storage.Video{Duration: info.Video.Duration, FPS: info.Video.FPS, Codec: info.Video.Codec}
}

// videoInfo is videoOf's inverse: what the engine needs to know of a
// stored video.
func videoInfo(v *storage.Video) *engine.VideoInfo {
	return &engine.VideoInfo{Duration: v.Duration, FPS: v.FPS, Codec: v.Codec}
}

// picture is the upload's picture: its bytes, or a video's poster.
func (u *pendingUpload) picture() []byte {
	if p := u.call.upload.poster; p != nil {
		return p
	}
	return u.data
}

// storePoster keeps a new video's poster as its stored variation. A
// failure is logged: the first render makes it again.
func (s *Server) storePoster(ctx context.Context, img storage.Image, poster []byte) {
	if poster == nil || s.videos.db == nil {
		return
	}
	built := []storage.BuiltVariation{{Width: img.Width, Height: img.Height, OrigWidth: img.Width, OrigHeight: img.Height, Ext: "jpg", Data: poster}}
	if _, err := s.videos.db.StoreVariations(context.WithoutCancel(ctx), s.videos.blobs, img, built); err != nil {
		s.log.Warn("store a video's poster (its first render makes it again)", "user", img.User, "image", img.Identifier, "err", err)
	}
}

// posterKey returns the blob key of a video's poster, making it when it
// is missing.
func (s *Server) posterKey(ctx context.Context, img storage.Image) (string, error) {
	if key, ok, err := s.storedPoster(ctx, img); ok || err != nil {
		return key, err
	}
	data, err := s.blobs.Get(ctx, img.Key())
	if err != nil {
		return "", fmt.Errorf("video %s/%s: %w", img.User, img.Identifier, err)
	}
	_, poster, err := s.engine.InspectVideo(ctx, data)
	if err != nil {
		return "", err
	}
	s.storePoster(ctx, img, poster)
	if key, ok, err := s.storedPoster(ctx, img); ok || err != nil {
		return key, err
	}
	return "", fmt.Errorf("video %s/%s: %w", img.User, img.Identifier, errPosterNotStored)
}

var errPosterNotStored = errors.New("its poster is not stored (the video was deleted or replaced meanwhile)")

// storedPoster finds a video's poster among its stored variations.
func (s *Server) storedPoster(ctx context.Context, img storage.Image) (string, bool, error) {
	return StoredPoster(ctx, s.videos.db, img)
}

// StoredPoster finds the blob key of a video's poster among its stored
// variations; ok is false when none is stored (its first render makes it).
func StoredPoster(ctx context.Context, db *storage.DB, img storage.Image) (key string, ok bool, err error) {
	vs, err := db.Variations(ctx, img)
	if err != nil {
		return "", false, err
	}
	for _, v := range vs {
		if isPosterOf(img, v) {
			return v.Key, true, nil
		}
	}
	return "", false, nil
}

// isPosterOf reports whether v is the poster of the video img: the JPEG
// of its full size (the copies built from it are TIFFs).
func isPosterOf(img storage.Image, v storage.Variation) bool {
	return v.Ext == "jpg" && v.Width == img.Width && v.Height == img.Height
}

// renderVideo renders a chain that starts with a video step (frame,
// sprite, preview) on the video itself.
func (s *Server) renderVideo(ctx context.Context, img storage.Image, req engine.Request) (*engine.Result, error) {
	req.Source.Video = videoInfo(img.Video)
	return s.engine.ProcessVideo(ctx, func(ctx context.Context) (io.ReadCloser, error) {
		r, err := s.blobs.Open(ctx, img.Key())
		if err != nil {
			return nil, fmt.Errorf("video %s/%s: %w", img.User, img.Identifier, err)
		}
		return r, nil
	}, req)
}

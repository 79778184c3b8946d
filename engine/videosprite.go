package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"
)

// sprite tiles frames of a video for scrubbing: columns x rows tiles of
// width pixels, tile i the frame at i*interval where interval is the
// duration over the number of tiles, left to right, then top to bottom.
// Sprite.VTT (api's `.vtt`) describes the tiles as a WebVTT thumbnails
// track.
type sprite struct {
	columns, rows, width int
	exact                bool
}

// spriteRuns is how many ffmpeg runs one sprite has going at once.
const spriteRuns = 2

func init() {
	register("sprite", describe(parseSprite, "A tiled sprite of a video's frames for scrubbing, described by the image's .vtt track (first step only; videos only).",
		intParam("columns", 1, 20, "Tiles across.").def(5),
		intParam("rows", 1, 20, "Tiles down; columns*rows is at most 100.").def(5),
		intParam("width", 16, 640, "Width of a tile in pixels; its height keeps the video's aspect ratio.").def(160),
		intParam("exact", 0, 1, "1 (default): each tile is its exact frame; 0: the keyframe at or before it, much faster.").def(1)))
}

func parseSprite(p *Params) (Step, error) {
	st := &sprite{columns: p.Int("columns"), rows: p.Int("rows"), width: p.Int("width"), exact: p.Int("exact") == 1}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if n := st.columns * st.rows; n > 100 {
		return nil, invalidf("sprite: columns*rows must be at most 100, got %d", n)
	}
	return st, nil
}

func (*sprite) Apply(*State) error {
	return invalidf("sprite: the image is not a video (sprite is for videos, as a chain's first step)")
}

// Sprite describes a sprite's tiles: Tiles of Width x Height, Columns
// across, tile i showing the video from i*Interval seconds for Interval.
type Sprite struct {
	Columns, Rows, Width, Height, Tiles int
	Interval                            float64
}

// SpriteOf describes the sprite of the chain's first step on a video of
// info (Info.Video set); ok is false when the chain is not a sprite's.
func (c Chain) SpriteOf(info Info) (Sprite, bool) {
	src, ok := c.videoSource()
	st, isSprite := src.(*sprite)
	if !ok || !isSprite || info.Video == nil || info.Width <= 0 {
		return Sprite{}, false
	}
	n := st.columns * st.rows
	return Sprite{Columns: st.columns, Rows: st.rows, Width: st.width, Height: scaledHeight(info, st.width),
		Tiles: n, Interval: info.Video.Duration / float64(n)}, true
}

func (st *sprite) picture(ctx context.Context, e *Engine, vf *videoFile, f format, info Info) ([]byte, map[string]string, error) {
	sp := Sprite{Columns: st.columns, Rows: st.rows, Width: st.width, Height: scaledHeight(info, st.width), Tiles: st.columns * st.rows}
	sp.Interval = info.Video.Duration / float64(sp.Tiles)
	tiles := make([][]byte, sp.Tiles)
	errs := make([]error, sp.Tiles)
	next := make(chan int)
	var wg sync.WaitGroup
	for range spriteRuns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := math.Min(float64(i)*sp.Interval, math.Max(info.Video.Duration-1/math.Max(info.Video.FPS, 1), 0))
				tiles[i], errs[i] = e.extractFrame(ctx, vf, f, info, t, st.exact, st.width)
			}
		}()
	}
	for i := range tiles {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	out, err := joinTiles(tiles, sp)
	if err != nil {
		return nil, nil, err
	}
	return out, map[string]string{"Sprite-Interval": strconv.FormatFloat(sp.Interval, 'f', 3, 64)}, nil
}

// joinTiles lays the tiles out on one black canvas, as a lossless TIFF.
func joinTiles(tiles [][]byte, sp Sprite) ([]byte, error) {
	canvas, err := vips.Black(sp.Columns*sp.Width, sp.Rows*sp.Height)
	if err != nil {
		return nil, fmt.Errorf("engine: sprite: %w", err)
	}
	defer canvas.Close()
	if err := canvas.BandJoinConst([]float64{0, 0}); err != nil {
		return nil, fmt.Errorf("engine: sprite: %w", err)
	}
	if err := canvas.ToColorSpace(vips.InterpretationSRGB); err != nil {
		return nil, fmt.Errorf("engine: sprite: %w", err)
	}
	for i, b := range tiles {
		tile, err := vips.LoadImageFromBuffer(b, vips.NewImportParams())
		if err != nil {
			return nil, fmt.Errorf("engine: sprite tile %d: %w", i, err)
		}
		err = canvas.Insert(tile, (i%sp.Columns)*sp.Width, (i/sp.Columns)*sp.Height, false, nil)
		tile.Close()
		if err != nil {
			return nil, fmt.Errorf("engine: sprite tile %d: %w", i, err)
		}
	}
	out, _, err := canvas.ExportTiff(vips.NewTiffExportParams())
	if err != nil {
		return nil, fmt.Errorf("engine: sprite: %w", err)
	}
	return out, nil
}

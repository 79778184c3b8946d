package main

import (
	"context"
	"errors"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// webSessions keeps the admin UI's sessions in the database, so every
// instance shares them.
type webSessions struct{ *storage.DB }

func (s webSessions) CreateSession(ctx context.Context, x web.Session) error {
	return s.DB.CreateSession(ctx, storage.Session(x))
}

func (s webSessions) Session(ctx context.Context, idHash string) (web.Session, error) {
	x, err := s.DB.Session(ctx, idHash)
	if errors.Is(err, storage.ErrNotExist) {
		return web.Session{}, web.ErrNoSession
	}
	return web.Session(x), err
}

package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// erasureStore asks for the erasure of users and reads where it is.
type erasureStore interface {
	RequestErasure(ctx context.Context, user string) (storage.Erasure, bool, error)
	LatestErasure(ctx context.Context, user string, finished bool) (storage.Erasure, error)
	Erasing(ctx context.Context, user string) (bool, error)
	WriteReceipt(ctx context.Context, w io.Writer, user string) error
}

var _ erasureStore = (*storage.DB)(nil)

// Erasure is an erasure of a user as the API shows it (api/README.md, "Erasing
// a user"; api/openapi.yaml, Erasure).
type Erasure struct {
	ID          int64            `json:"id"`
	User        string           `json:"user"`
	State       string           `json:"state"`
	Phase       string           `json:"phase"`
	RequestedBy string           `json:"requestedBy"`
	Requested   string           `json:"requested"`
	Started     *string          `json:"started"`
	Finished    *string          `json:"finished"`
	Counts      map[string]int64 `json:"counts"`
	Failures    int              `json:"failures"`
	LastError   string           `json:"lastError"`
	// ReceiptSHA256 and Receipt are set once it is done: the SHA-256 of
	// the receipt and where to download it.
	ReceiptSHA256 *string `json:"receiptSha256"`
	Receipt       *string `json:"receipt"`
}

// erasurePath is the status resource of user's erasure.
func erasurePath(user string) string { return "/users/" + url.PathEscape(user) + "/erasure" }

func erasureOf(e storage.Erasure) Erasure {
	stamp := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := t.UTC().Format(time.RFC3339Nano)
		return &s
	}
	out := Erasure{ID: e.ID, User: e.User, State: string(e.State), Phase: e.Phase, RequestedBy: e.Actor,
		Requested: *stamp(e.Requested), Started: stamp(e.Started), Finished: stamp(e.Finished),
		Counts: e.Counts, Failures: e.Failures, LastError: e.LastError}
	if out.Counts == nil {
		out.Counts = map[string]int64{}
	}
	if e.State == storage.ErasureDone {
		sum, receipt := e.ReceiptSHA256, erasurePath(e.User)+"/receipt"
		out.ReceiptSHA256, out.Receipt = &sum, &receipt
	}
	return out
}

// deleteUser serves DELETE /users/<user> (resource user.delete, in the
// built-in group all): it asks for everything of the user to be erased
// in the background and answers 202 with the erasure, its status
// resource in Location. A DELETE while the user is being erased answers
// the same erasure; one when nothing of the user is left answers 200
// with the last finished erasure, and 404 when the user was never erased.
func (s *Server) deleteUser(c *call) error {
	user := c.params["user"]
	e, created, err := s.erasures.RequestErasure(c.ctx(), user)
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "User '%s' has nothing to erase", user)
	}
	if err != nil {
		return err
	}
	s.erasureWorker.Wake()
	c.w.Header().Set("Location", erasurePath(user))
	status := http.StatusAccepted
	if !created && e.State == storage.ErasureDone {
		status = http.StatusOK
	}
	return c.writeJSON(erasureOf(e), out{status: status, cache: cacheNone})
}

// getErasure serves GET /users/<user>/erasure (resource user.get): the
// user's latest erasure, where it is and what went so far; 404 when the
// user was never erased.
func (s *Server) getErasure(c *call) error {
	user := c.params["user"]
	e, err := s.erasures.LatestErasure(c.ctx(), user, false)
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "User '%s' was never erased", user)
	}
	if err != nil {
		return err
	}
	return c.writeJSON(erasureOf(e), out{cache: cacheNone})
}

// getReceipt serves GET /users/<user>/erasure/receipt (resource
// user.get): the receipt of the user's latest finished erasure, as
// storage writes it (its SHA-256 is the erasure's receiptSha256), for
// download; 404 when none finished.
func (s *Server) getReceipt(c *call) error {
	user := c.params["user"]
	if err := c.negotiateJSON(); err != nil {
		return err
	}
	e, err := s.erasures.LatestErasure(c.ctx(), user, true)
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "User '%s' has no finished erasure", user)
	}
	if err != nil {
		return err
	}
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cacheNone)
	h.Set("Content-Disposition", `attachment; filename="erasure-`+user+`-`+strconv.FormatInt(e.ID, 10)+`.json"`)
	c.commonHeaders()
	c.setCacheTags()
	c.w.WriteHeader(http.StatusOK)
	if c.method == http.MethodHead {
		return nil
	}
	if err := s.erasures.WriteReceipt(c.ctx(), c.w, user); err != nil {
		// The status is sent: the body stops short, which its hash shows.
		s.log.Error("erasure receipt", "user", user, "err", err)
	}
	return nil
}

// refuseErasing answers 409 for an upload while user is being erased
// (the image's own transaction refuses it too, storage.ErrErasing).
func (s *Server) refuseErasing(ctx context.Context, user string) error {
	busy, err := s.erasures.Erasing(ctx, user)
	if err != nil {
		return err
	}
	if busy {
		return storage.Erasing(user)
	}
	return nil
}

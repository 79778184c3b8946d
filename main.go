// Command vitrine is a self-hosted image storage and transformation service.
//
//	vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
//
// With no configuration it runs on the embedded default: SQLite at
// DIR/vitrine.db and image files under DIR/images, DIR being ./data.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"vitrine/api"
	"vitrine/engine"
	"vitrine/storage"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "keys":
		err = runKeys(os.Args[2:])
	case "sign":
		err = runSign(os.Args[2:])
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "vitrine: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vitrine:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
  vitrine keys add|list|delete|rotate ...   (vitrine keys -h)
  vitrine sign [--public KEY] [--private KEY] [--method M] URL   (vitrine sign -h)
`)
}

// commonFlags are the flags every subcommand that opens the stores takes.
type commonFlags struct {
	config, data string
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&f.data, "data", "./data", "data directory of the embedded default (SQLite and image files)")
}

// stores are the opened persistence components.
type stores struct {
	cfg   *fileConfig
	db    *storage.DB
	blobs *storage.Blobs
}

func (s *stores) Close() {
	if s.blobs != nil {
		s.blobs.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
}

// open loads the configuration and opens the database and blob store.
func open(ctx context.Context, f commonFlags) (*stores, error) {
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return nil, err
	}
	secret, err := loadSecret(cfg, f.data)
	if err != nil {
		return nil, err
	}
	st := &stores{cfg: cfg}
	if st.db, err = storage.Open(ctx, cfg.Database, storage.Options{Secret: secret}); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	if st.blobs, err = storage.OpenBlobs(ctx, cfg.Storage); err != nil {
		st.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	return st, nil
}

// loadSecret returns the configured secret, or the one kept in
// <data>/secret, creating it on first use.
func loadSecret(cfg *fileConfig, dataDir string) ([]byte, error) {
	if cfg.Secret != "" {
		return []byte(cfg.Secret), nil
	}
	path := filepath.Join(dataDir, "secret")
	if b, err := os.ReadFile(path); err == nil {
		return []byte(strings.TrimSpace(string(b))), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	s := randomHex(32)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	return []byte(s), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var f commonFlags
	f.register(fs)
	listen := fs.String("listen", "", "address to listen on (default 127.0.0.1:8080)")
	_ = fs.Parse(args)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	if *listen != "" {
		st.cfg.Listen = *listen
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := bootstrapAdmin(ctx, st); err != nil {
		return err
	}
	eng, err := engine.New(st.cfg.engine())
	if err != nil {
		return err
	}
	defer engine.Shutdown()
	srv, err := api.New(st.cfg.api(), api.Deps{DB: st.db, Blobs: st.blobs, Engine: eng, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", st.cfg.Listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	log.Info("vitrine listening", "addr", "http://"+ln.Addr().String(), "database", redact(st.cfg.Database),
		"storage", redact(st.cfg.Storage))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// redact hides credentials in a URL for the log.
func redact(u string) string {
	if at := strings.Index(u, "@"); at > 0 {
		if scheme := strings.Index(u, "://"); scheme > 0 && scheme < at {
			return u[:scheme+3] + "***" + u[at:]
		}
	}
	return u
}

// bootstrapAdmin creates an admin key pair with every resource on every
// user on a first start with no keys at all, and prints it once.
func bootstrapAdmin(ctx context.Context, st *stores) error {
	if len(st.cfg.AccessControl.Keys) > 0 {
		return nil
	}
	keys, err := st.db.Keys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	k := storage.Key{PublicKey: "admin", PrivateKey: randomHex(32)}
	if _, err := st.db.PutKey(ctx, k); err != nil {
		return err
	}
	if _, err := st.db.AddRules(ctx, k.PublicKey, []storage.Rule{{Group: "all", Users: []string{"*"}}}); err != nil {
		return err
	}
	fmt.Printf("Created an admin key pair (shown only this once; it can read and write every user):\n"+
		"  public key:  %s\n  private key: %s\n", k.PublicKey, k.PrivateKey)
	return nil
}
